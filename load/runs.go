package load

import (
	"context"
	"errors"
	"fmt"
)

// Run statuses of sync_runs.status.
const (
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunWarning   = "warning"
	RunPartial   = "partial"
	RunFailed    = "failed"
	RunSkipped   = "skipped"
)

// Run describes a sync run as it starts.
type Run struct {
	// ID is the run's UUID; "" lets the database generate one.
	ID string
	// Trigger is what started the run: run, serve, backfill or test.
	Trigger string
	// Streams are the streams the run was asked to sync.
	Streams []string
	// RequestsPlanned is the number of requests the planner allotted.
	RequestsPlanned int
}

// RunResult is how a run ended.
type RunResult struct {
	// Status is RunSucceeded, RunWarning, RunPartial or RunFailed.
	Status       string
	RequestsUsed int
	Retries      int
	// RowsByTable is Counts.RowsByTable summed over the run's pages.
	RowsByTable map[string]int64
	Rejected    int64
	// OpenRejects is the number of the run's streams' rejected records
	// still open when it ended (sync_runs.open_rejects).
	OpenRejects int64
	// RejectsResolved is the number of rejected records the run resolved
	// (sync_runs.rejects_resolved).
	RejectsResolved int64
	// Error says why the run failed or stopped early; it must not contain a key.
	Error string
}

// StartRun inserts a running sync_runs row and returns its run_id.
func (s *Store) StartRun(ctx context.Context, r Run) (string, error) {
	var id string
	if err := s.pool.QueryRow(ctx, s.startRunSQL, r.ID, r.Trigger, nonNil(r.Streams), r.RequestsPlanned).Scan(&id); err != nil {
		return "", fmt.Errorf("start run: %w", err)
	}
	return id, nil
}

// FinishRun records how run runID ended. It commits synchronously (see
// durableBegin), which also flushes every page the run committed before.
func (s *Store) FinishRun(ctx context.Context, runID string, r RunResult) error {
	switch r.Status {
	case RunSucceeded, RunWarning, RunPartial, RunFailed:
	default:
		return fmt.Errorf("finish run %s: status %q is not succeeded, warning, partial or failed", runID, r.Status)
	}
	rows := r.RowsByTable
	if rows == nil {
		rows = map[string]int64{}
	}
	tag, err := durableExec(ctx, s.pool, s.finishRunSQL, runID, r.Status, r.RequestsUsed, r.Retries, rows, r.Rejected, s.red.String(r.Error), r.OpenRejects, r.RejectsResolved) // redacted: analysts read it
	if err != nil {
		return fmt.Errorf("finish run %s: %w", runID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("finish run %s: %w", runID, errors.New("no such run"))
	}
	return nil
}

// RecordSkipped inserts a finished run with status skipped (another sync held
// the lock) and reason as its error, and returns its run_id.
func (s *Store) RecordSkipped(ctx context.Context, r Run, reason string) (string, error) {
	var id string
	if err := s.pool.QueryRow(ctx, s.skippedSQL, r.ID, r.Trigger, nonNil(r.Streams), reason).Scan(&id); err != nil {
		return "", fmt.Errorf("record skipped run: %w", err)
	}
	return id, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
