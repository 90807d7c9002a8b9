package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
)

// StreamStatus is one stream's health, for `agencysync status`.
type StreamStatus struct {
	Stream      string     `json:"stream"`
	Watermark   *time.Time `json:"watermark,omitempty"`
	LastSuccess *time.Time `json:"last_success,omitempty"` // sync_freshness.last_success_at (load.Store.Freshness)
	LagSeconds  *float64   `json:"lag_seconds,omitempty"`  // sync_freshness.lag, rounded to the second
	Rows        int64      `json:"rows"`                   // rows of its main table (stream.Stream.Main), soft-deleted excluded
	Rejected    int64      `json:"rejected"`               // open rejects of the stream (rejected_records)
	InProgress  bool       `json:"in_progress"`            // a range or listing waits to be resumed
}

// RunSummary is one row of sync_runs (load.RunSummary).
type RunSummary = load.RunSummary

// StatusReport is what `agencysync status` prints.
type StatusReport struct {
	Schema     string         `json:"schema"`
	QuotaDay   string         `json:"quota_day"`
	QuotaSpent int            `json:"quota_spent"`
	QuotaLeft  int            `json:"quota_left"` // after the reserve
	Streams    []StreamStatus `json:"streams"`
	// Verify is the mail hooks' reconciliation with the service (their
	// stream's sync_state partition verify).
	Verify *VerifyStatus `json:"verify,omitempty"`
	// Refresh is the rolling re-read of the e-mail history (partition
	// refresh); nil before it started.
	Refresh *RefreshStatus `json:"refresh,omitempty"`
	Runs    []RunSummary   `json:"runs"`
	// Warnings are the coverage warnings of the last finished run; nil
	// before any.
	Warnings *RunWarnings `json:"warnings,omitempty"`
	// Rebuilds are the tables whose `agencysync rebuild` was interrupted
	// (its cursor waits in sync_state); empty when none is.
	Rebuilds []RebuildPending `json:"rebuilds,omitempty"`
	// Rederive are the tables derived under another field map than the one
	// in force: the next run re-derives them from raw first.
	Rederive []Rederive `json:"rederive,omitempty"`
}

// The stages of a table's rebuild (RebuildPending.Stage).
const (
	RebuildStageRecords  = "stored records"   // re-deriving the stored raw records
	RebuildStageRejected = "rejected records" // retrying rejected_records under the current map
)

// RebuildPending is a table whose rebuild was interrupted: the next
// `agencysync rebuild --streams Stream` continues it.
type RebuildPending struct {
	Table        string    `json:"table"`
	Stream       string    `json:"stream"`
	Stage        string    `json:"stage"`
	LastProgress time.Time `json:"last_progress"`
}

// RunWarnings are the coverage warnings of one run (sync_runs.warnings).
type RunWarnings struct {
	RunID    string              `json:"run_id"`
	Warnings []inventory.Warning `json:"warnings"`
}

// Status reads the warehouse's sync state: per stream the watermark, last
// success, lag, rows and rejects; today's quota; the last runs.
func (e *Engine) Status(ctx context.Context, lastRuns int) (*StatusReport, error) {
	day := e.ledger.Today()
	spent, err := e.ledger.Spent(ctx, day)
	if err != nil {
		return nil, err
	}
	plan := MakePlan(day, e.set.DailyQuota, e.set.QuotaReserve, spent, nil, nil)
	rep := &StatusReport{Schema: e.set.Schema, QuotaDay: day.Format(time.DateOnly), QuotaSpent: spent, QuotaLeft: plan.Budget}
	fresh, err := e.store.Freshness(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range e.set.Streams {
		ss, err := e.streamStatus(ctx, s, fresh)
		if err != nil {
			return nil, err
		}
		rep.Streams = append(rep.Streams, ss)
		if h := hooksNamed(s.Hooks); h != nil {
			if err := h.status(ctx, e, rep); err != nil {
				return nil, err
			}
		}
	}
	if rep.Runs, err = e.store.RecentRuns(ctx, lastRuns); err != nil {
		return nil, err
	}
	if rep.Rebuilds, err = e.pendingRebuilds(ctx); err != nil {
		return nil, err
	}
	if rep.Rederive, _, err = e.stale(ctx, e.streamNames()); err != nil {
		return nil, err
	}
	id, ws, err := e.store.LastRunWarnings(ctx)
	switch {
	case errors.Is(err, load.ErrNoRun):
	case err != nil:
		return nil, err
	default:
		if ws == nil {
			ws = []inventory.Warning{}
		}
		rep.Warnings = &RunWarnings{RunID: id, Warnings: ws}
	}
	return rep, nil
}

// streamStatus is stream s's line of the status: its freshness (from
// fresh), whether a range or listing waits, the rows of its main table and
// its open rejects.
func (e *Engine) streamStatus(ctx context.Context, s *stream.Stream, fresh []load.StreamFreshness) (StreamStatus, error) {
	ss := StreamStatus{Stream: s.Name}
	for _, f := range fresh {
		if f.Stream != s.Name {
			continue
		}
		ss.Watermark, ss.LastSuccess = f.Watermark, f.LastSuccessAt
		if f.Lag != nil {
			lag := math.Round(f.Lag.Seconds())
			ss.LagSeconds = &lag
		}
	}
	var err error
	if ss.InProgress, err = e.store.StreamInProgress(ctx, s.Name); err != nil {
		return ss, err
	}
	n, err := e.store.LiveRows(ctx, s.Main, nil)
	if err != nil {
		return ss, err
	}
	ss.Rows = int64(n)
	ss.Rejected, err = e.store.RejectedCount(ctx, s.Name)
	return ss, err
}

// pendingRebuilds lists the rebuild cursors left in sync_state, by table.
func (e *Engine) pendingRebuilds(ctx context.Context) ([]RebuildPending, error) {
	states, err := e.store.States(ctx, load.RebuildStream)
	if err != nil {
		return nil, err
	}
	var out []RebuildPending
	for _, st := range states {
		var cur rebuildCursor
		if err := json.Unmarshal(st.Cursor, &cur); err != nil {
			return nil, fmt.Errorf("read rebuild cursor of %s: %w", st.Partition, err)
		}
		p := RebuildPending{Table: st.Partition, Stage: RebuildStageRecords, LastProgress: st.SyncedAt}
		if cur.Rejects {
			p.Stage = RebuildStageRejected
		}
		if _, s, ok := e.tableOf(st.Partition); ok {
			p.Stream = s.Name
		}
		out = append(out, p)
	}
	return out, nil
}

// RequestHistory returns the requests counted on each of the last days quota
// days (today included), oldest first.
func (e *Engine) RequestHistory(ctx context.Context, days int) ([]load.DayRequests, error) {
	return e.ledger.History(ctx, days)
}

// DailyQuota returns the configured requests per day of the key.
func (e *Engine) DailyQuota() int { return e.set.DailyQuota }
