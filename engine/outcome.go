package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/load"
)

// WarningKind is a kind of reason a run that synced everything it was asked
// ends warning rather than succeeded (SYNC_FAIL_ON names them).
type WarningKind string

// The kinds of warnings of a run.
const (
	// WarnWarnings: coverage warnings other than new fields (null_column,
	// rejected_stream) or notes (a total shortfall, a clock not read, ...).
	WarnWarnings WarningKind = "warnings"
	// WarnRejects: the run's streams hold open rejected records, made by
	// this run or an earlier one.
	WarnRejects WarningKind = "rejects"
	// WarnNewFields: new_field coverage warnings (a field never seen before).
	WarnNewFields WarningKind = "new_fields"
)

// WarningKinds lists the kinds of warnings the run ended with, in the order
// warnings, rejects, new_fields; empty when it had none. A run that
// completed with any ends StatusWarning.
func (r *Result) WarningKinds() []WarningKind {
	var out []WarningKind
	coverage, fresh := false, false
	for _, w := range r.Warnings {
		if w.Kind == inventory.KindNewField {
			fresh = true
		} else {
			coverage = true
		}
	}
	if coverage || len(r.Notes) > 0 {
		out = append(out, WarnWarnings)
	}
	if r.OpenRejectsTotal() > 0 {
		out = append(out, WarnRejects)
	}
	if fresh {
		out = append(out, WarnNewFields)
	}
	return out
}

// OpenRejectsTotal is the number of open rejects of the run's streams.
func (r *Result) OpenRejectsTotal() int64 {
	var n int64
	for _, k := range r.OpenRejects {
		n += k
	}
	return n
}

// WarningSummary says in one line why the run ended warning: its coverage
// warnings by kind, its notes, its open rejects by stream; "" when it had
// none.
func (r *Result) WarningSummary() string {
	var parts []string
	byKind := map[inventory.Kind]int{}
	for _, w := range r.Warnings {
		byKind[w.Kind]++
	}
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		parts = append(parts, fmt.Sprintf("%d %s", byKind[k], k))
	}
	if n := len(r.Notes); n > 0 {
		parts = append(parts, fmt.Sprintf("%d notes", n))
	}
	if n := r.OpenRejectsTotal(); n > 0 {
		var by []string
		for _, s := range slices.Sorted(maps.Keys(r.OpenRejects)) {
			if r.OpenRejects[s] > 0 {
				by = append(by, fmt.Sprintf("%s %d", s, r.OpenRejects[s]))
			}
		}
		parts = append(parts, fmt.Sprintf("%d open rejects (%s)", n, strings.Join(by, ", ")))
	}
	return strings.Join(parts, ", ")
}

// finishRun ends a run whose tasks are done: it gathers the result, counts
// the open rejects of the run's streams, decides the status, records the
// run's end in sync_runs (through a database blip too), keeps the service
// clock's offset, and sets the metrics and the summary line.
func (e *Engine) finishRun(ctx context.Context, r *run, res *Result, streams []string, wallStart time.Time) (*Result, error) {
	res.RequestsUsed = r.budget.Spent()
	res.Retries = int(e.retries.Load())
	r.mu.Lock()
	res.Counts = r.counts
	r.mu.Unlock()
	res.Verify = r.mail.verified
	res.RejectsResolved = res.Counts.Resolved
	// Record the end even when the run's context was cancelled, and through
	// a database blip: the error that failed the run may have left dead
	// connections in the pool, and a "running" row would outlive the run.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	res.Tasks = r.stats.detail()
	if err := e.store.SetStreamsDetail(fctx, r.id, res.Tasks); err != nil {
		r.log.Warn("run history: streams detail not recorded", zap.Error(err))
	}
	res.Warnings = r.finishFields(fctx)
	res.OpenRejects = r.openRejects(fctx, streams)
	r.mu.Lock()
	res.Notes = slices.Clone(r.notes)
	r.mu.Unlock()
	res.Status, res.Err = outcome(r.stopped(), res.StreamErrors, r.gaps, r.e.set.Priorities)
	if res.Status == StatusSucceeded && len(res.WarningKinds()) > 0 {
		res.Status = StatusWarning
	}
	errText := runErrorText(res.Err, res.Notes, r.client.Redact)
	for wait := 100 * time.Millisecond; ; wait *= 2 {
		err := e.store.FinishRun(fctx, r.id, load.RunResult{Status: string(res.Status), RequestsUsed: res.RequestsUsed,
			Retries: res.Retries, RowsByTable: res.Counts.RowsByTable(), Rejected: res.Counts.Rejected, Error: errText,
			OpenRejects: res.OpenRejectsTotal(), RejectsResolved: res.RejectsResolved})
		if err == nil {
			break
		}
		select {
		case <-fctx.Done():
			return res, err
		case <-time.After(wait):
		}
	}
	e.saveClock(fctx)
	dur := time.Since(wallStart)
	e.publishRun(fctx, r, res, dur)
	r.log.Info("sync summary", summaryFields(res, dur)...)
	return res, nil
}

// openRejects counts the open rejects of each of streams. A count that
// cannot be read is a note (the run cannot be proven clean).
func (r *run) openRejects(ctx context.Context, streams []string) map[string]int64 {
	out := make(map[string]int64, len(streams))
	var errs []error
	for _, s := range streams {
		n, err := r.e.store.RejectedCount(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[s] = n
	}
	if err := errors.Join(errs...); err != nil {
		r.log.Warn("open rejects not counted", zap.Error(err))
		r.note(fmt.Sprintf("open rejects not counted: %v", err))
	}
	return out
}

// publishRun sets the metrics of a finished run.
func (e *Engine) publishRun(ctx context.Context, r *run, res *Result, dur time.Duration) {
	m := e.metrics
	if m == nil {
		return
	}
	if err := e.PublishFreshness(ctx); err != nil {
		r.log.Warn("metrics: last success not read from the warehouse", zap.Error(err))
	}
	m.Runs.WithLabelValues(string(res.Status)).Inc()
	m.RunDuration.WithLabelValues(string(res.Status)).Observe(dur.Seconds())
	m.QuotaLeft.Set(float64(r.budget.Remaining()))
	m.QuotaSpent.Set(float64(res.Plan.Spent + res.RequestsUsed))
	for s, n := range res.OpenRejects {
		m.OpenRejects.WithLabelValues(s).Set(float64(n))
	}
}

// summaryFields are the fields of a run's "sync summary" line.
func summaryFields(res *Result, dur time.Duration) []zap.Field {
	fields := []zap.Field{zap.String("status", string(res.Status)), zap.Duration("took", dur.Round(time.Millisecond)),
		zap.Int("requests_planned", res.Plan.Allotted()), zap.Int("requests_used", res.RequestsUsed), zap.Int("retries", res.Retries),
		zap.Int64("rows_written", res.Counts.Written()), zap.Any("rows_by_table", res.Counts.RowsByTable()),
		zap.Int64("rejected", res.Counts.Rejected), zap.Int64("open_rejects", res.OpenRejectsTotal()),
		zap.Int64("rejects_resolved", res.RejectsResolved)}
	if res.Status == StatusWarning {
		kinds := make([]string, 0, 3)
		for _, k := range res.WarningKinds() {
			kinds = append(kinds, string(k))
		}
		fields = append(fields, zap.Strings("warning_kinds", kinds), zap.String("warnings", res.WarningSummary()))
	}
	if res.Err != nil {
		fields = append(fields, zap.String("error", res.Err.Error()))
	}
	return fields
}

// ErrIncomplete means a task did not land everything it set out to and
// could not repair it within the run (a listing not proven complete, a range that ended without its last page,
// a shortfall against the server's total). The gap stays open in the cursor; the run ends
// partial and the next run fetches it again.
var ErrIncomplete = errors.New("incomplete")

// ErrGap means a run could not land or repair everything it set out to:
// the difference is recorded in the run's notes and retried.
var ErrGap = errors.New("gap not repaired within the run")

// gap records a difference the run could not repair: a run note, and the
// run ends partial (ErrGap) instead of succeeded.
func (r *run) gap(msg string) {
	r.note(msg)
	r.mu.Lock()
	r.gaps = append(r.gaps, msg)
	r.mu.Unlock()
}

// gapError is the error of a run that recorded gaps.
// It wraps ErrGap and ErrIncomplete: the run did not land everything and
// the next run fetches or reconciles it again.
func gapError(gaps []string) error {
	return fmt.Errorf("%w (%w): %s", ErrGap, ErrIncomplete, strings.Join(gaps, "; "))
}
