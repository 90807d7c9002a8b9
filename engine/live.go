package engine

import "github.com/agencysync/agencysync/progress"

// liveRun reports a run's progress to the engine's Live (Deps.Live); its
// methods do nothing without one.
type liveRun struct {
	l  *progress.Live
	id string
}

// liveRun starts the live progress of run id.
func (e *Engine) liveRun(id string, trigger Trigger, streams []string, budget int) *liveRun {
	if e.live == nil {
		return nil
	}
	e.live.Begin(id, string(trigger), streams, budget)
	return &liveRun{l: e.live, id: id}
}

// committed adds a committed page of stream.
func (lr *liveRun) committed(stream string, records, rows, rejected int64, spent int) {
	if lr != nil {
		lr.l.Committed(stream, records, rows, rejected, spent)
	}
}

// spent counts the run's requests so far.
func (lr *liveRun) spent(n int) {
	if lr != nil {
		lr.l.Spent(n)
	}
}

// end ends the live progress once the run is recorded.
func (lr *liveRun) end() {
	if lr != nil {
		lr.l.End(lr.id)
	}
}
