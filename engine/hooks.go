package engine

import (
	"context"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/stream"
)

// streamHooks run a stream whose behaviour its declaration cannot say: the
// declaration names them (stream.Stream.Hooks), and the engine calls them
// where it would run a generic stream — to list, estimate and run the
// stream's tasks, to end each task, and to report the stream's own state.
type streamHooks interface {
	// open prepares engine e to run stream s; New calls it once for each
	// declared stream that names the hooks.
	open(e *Engine, s *stream.Stream) error
	// tasks are the stream's tasks in their default order: those run
	// before the list tasks, and those run after the details.
	tasks() (first, later []Task)
	// estimate predicts the requests of each of the stream's tasks in a
	// run of the normal tasks.
	estimate(ctx context.Context, e *Engine) ([]Estimate, error)
	// takes reports whether req asks the stream for a run of its own
	// instead of the normal tasks, and whether such a request is valid.
	takes(req Request) (bool, error)
	// estimateRequest is the plan of a run req asks of the stream alone.
	estimateRequest(ctx context.Context, e *Engine, req Request) ([]Estimate, error)
	// run runs task t of the stream, or what req asks of it alone.
	run(ctx context.Context, r *run, t Task, req Request, log *zap.Logger) error
	// afterTask ends task t once it ran with error err, and returns the
	// task's error.
	afterTask(ctx context.Context, r *run, t Task, req Request, log *zap.Logger, err error) error
	// rereads reports whether task t re-reads records an earlier task of
	// the same run may have read (the field inventory counts them once).
	rereads(t Task) bool
	// status adds the stream's own part to a status report.
	status(ctx context.Context, e *Engine, rep *StatusReport) error
}

// hooksRegistry holds the engine's hooks by the name a declaration gives
// them.
var hooksRegistry = map[string]streamHooks{mailHooksName: mailHooks{}}

// hooksNamed returns the hooks named name (nil for "" or an unknown name).
func hooksNamed(name string) streamHooks {
	if name == "" {
		return nil
	}
	return hooksRegistry[name]
}

// requestHooks returns the stream whose hooks take req as a run of their
// own (nil when req asks for the normal tasks), or the request's error.
func (e *Engine) requestHooks(req Request) (string, streamHooks, error) {
	for _, s := range e.set.Streams {
		h := hooksNamed(s.Hooks)
		if h == nil {
			continue
		}
		ok, err := h.takes(req)
		if err != nil || ok {
			return s.Name, h, err
		}
	}
	return "", nil, nil
}
