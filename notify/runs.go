package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/engine"
)

// RunEvent is what a run's notification reports.
type RunEvent string

// The events that notify (SYNC_NOTIFY_URL). A successful run after a
// successful one, and a skipped run, notify nothing.
const (
	EventFailed    RunEvent = "failed"    // the run failed
	EventPartial   RunEvent = "partial"   // the run ended partial (budget, quota, signal)
	EventWarnings  RunEvent = "warnings"  // the run ended warning: coverage warnings, notes or open rejects
	EventRecovered RunEvent = "recovered" // the first success after a failed, partial or warning run
)

// maxListed bounds the warnings and notes one message lists; the rest are
// counted ("… and 12 more").
const maxListed = 20

// Sender queues a notification without blocking (*Notifier).
type Sender interface {
	Send(text string) error
}

// RunHistory tells the status of the finished run before a run (*load.Store).
type RunHistory interface {
	PreviousRunStatus(ctx context.Context, runID string) (string, error)
}

// RunOptions configures Notifying.
type RunOptions struct {
	// Schema names the warehouse in the messages.
	Schema string
	// Redact removes secrets from error texts (engine.Engine.Redact); the Sender
	// redacts again.
	Redact func(string) string
	// Logger receives notification problems (nil: none).
	Logger *zap.Logger
}

// Notifying returns a engine.Runner that runs r, then, once the run is recorded,
// tells s when it failed, ended partial, raised warnings or recovered: one
// message per run. Sending never blocks or fails the run: s queues.
func Notifying(r engine.Runner, history RunHistory, s Sender, opts RunOptions) engine.Runner {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Redact == nil {
		opts.Redact = func(s string) string { return s }
	}
	return &notifyingRunner{r: r, history: history, s: s, opts: opts}
}

type notifyingRunner struct {
	r       engine.Runner
	history RunHistory
	s       Sender
	opts    RunOptions
}

func (n *notifyingRunner) Run(ctx context.Context, req engine.Request) (*engine.Result, error) {
	res, err := n.r.Run(ctx, req)
	event, text := n.message(ctx, req, res, err)
	if event != "" {
		if serr := n.s.Send(text); serr != nil {
			n.opts.Logger.Warn("run notification not queued", zap.String("event", string(event)), zap.Error(serr))
		}
	}
	return res, err
}

// RunNotification says which event a run's end is and its message; "" when
// it notifies nothing. previous is the status of the finished run before it
// ("" when none or unknown).
func RunNotification(schema string, req engine.Request, res *engine.Result, runErr error, previous string) (RunEvent, string) {
	trigger := req.Trigger
	if trigger == "" {
		trigger = engine.TriggerRun
	}
	where := fmt.Sprintf("schema %s, trigger %s", schema, trigger)
	if res != nil && res.RunID != "" {
		where = fmt.Sprintf("run %s, %s", shortID(res.RunID), where)
	}
	if res == nil {
		if runErr == nil {
			return "", ""
		}
		return EventFailed, fmt.Sprintf(":x: agencysync sync failed (%s): %v", where, runErr)
	}
	var b strings.Builder
	event := runEvent(res, runErr, previous)
	switch event {
	case EventFailed:
		fmt.Fprintf(&b, ":x: agencysync sync failed (%s)", where)
		if e := firstErr(res.Err, runErr); e != nil {
			fmt.Fprintf(&b, ": %v", e)
		}
	case EventPartial:
		fmt.Fprintf(&b, ":warning: agencysync sync ended partial (%s); the next run continues", where)
		if res.Err != nil {
			fmt.Fprintf(&b, ": %v", res.Err)
		}
	case EventRecovered:
		fmt.Fprintf(&b, ":white_check_mark: agencysync sync recovered (%s): succeeded after a %s run", where, previous)
	case EventWarnings:
		fmt.Fprintf(&b, ":warning: agencysync sync ended with warnings (%s): %s", where, res.WarningSummary())
	default:
		return "", ""
	}
	fmt.Fprintf(&b, " — %d requests, %d rows, %d rejected", res.RequestsUsed, res.Counts.Written(), res.Counts.Rejected)
	if n := res.OpenRejectsTotal(); n > 0 && event != EventWarnings {
		fmt.Fprintf(&b, ", %d open rejects", n)
	}
	writeWarnings(&b, res)
	return event, b.String()
}

// runEvent is the event of a run's end; "" when it notifies nothing.
func runEvent(res *engine.Result, runErr error, previous string) RunEvent {
	switch {
	case res.Status == engine.StatusFailed || runErr != nil:
		return EventFailed
	case res.Status == engine.StatusPartial:
		return EventPartial
	case res.Status == engine.StatusWarning:
		return EventWarnings
	case res.Status == engine.StatusSucceeded && (previous == string(engine.StatusFailed) ||
		previous == string(engine.StatusPartial) || previous == string(engine.StatusWarning)):
		return EventRecovered
	}
	return ""
}

// writeWarnings lists the run's coverage warnings (stream, kind and message)
// and notes, at most maxListed of them.
func writeWarnings(b *strings.Builder, res *engine.Result) {
	var lines []string
	for _, w := range res.Warnings {
		lines = append(lines, fmt.Sprintf("%s %s: %s", w.Stream, w.Kind, w.Message))
	}
	lines = append(lines, res.Notes...)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "\nwarnings (%d):", len(lines))
	for i, l := range lines {
		if i == maxListed {
			fmt.Fprintf(b, "\n… and %d more (agencysync status)", len(lines)-maxListed)
			break
		}
		b.WriteString("\n• " + l)
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// message classifies the run; the previous run's status is read only for a
// success (a recovery), with a short timeout that outlives a cancelled ctx.
func (n *notifyingRunner) message(ctx context.Context, req engine.Request, res *engine.Result, runErr error) (RunEvent, string) {
	previous := ""
	if res != nil && res.Status == engine.StatusSucceeded && runErr == nil && res.RunID != "" && n.history != nil {
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		p, err := n.history.PreviousRunStatus(hctx, res.RunID)
		if err != nil {
			n.opts.Logger.Warn("run notification: cannot read the run before; a recovery goes unreported", zap.Error(err))
		}
		previous = p
	}
	event, text := RunNotification(n.opts.Schema, req, res, runErr, previous)
	return event, n.opts.Redact(text)
}

// shortID is the first 8 characters of a run id.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
