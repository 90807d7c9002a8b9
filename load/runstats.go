package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TaskDetail is what one task of a run did, stored in
// sync_runs.streams_detail under the task's name.
type TaskDetail struct {
	// Stream is the stream the task belongs to (the streams, joined by
	// commas, whose details it asked).
	Stream string `json:"stream"`
	// Requests is the number of requests the task sent, retries included.
	Requests int `json:"requests"`
	// RecordsRead is the number of records read from the service: loaded
	// or rejected.
	RecordsRead int64 `json:"records_read"`
	// DurationSeconds is how long the task ran.
	DurationSeconds float64 `json:"duration_seconds"`
	// Ranges are the date ranges of a date-windowed endpoint the task
	// fetched, in order.
	Ranges []RangeFetched `json:"ranges,omitempty"`
	// Changed are the rows the task changed, by table: inserted, updated
	// (only rows whose content changed are rewritten) and soft-deleted,
	// the reconciliation of the ranges it closed included.
	Changed map[string]int64 `json:"changed,omitempty"`
}

// RangeFetched is one date range of a date-windowed endpoint a task paged
// through.
type RangeFetched struct {
	// From and To are the range's days, YYYY-MM-DD, inclusive.
	From string `json:"from"`
	To   string `json:"to"`
	// Pages is the number of pages committed by this run.
	Pages int `json:"pages"`
	// Records is the number of records those pages carried.
	Records int64 `json:"records"`
	// Complete says the range's last page was committed in this run.
	Complete bool `json:"complete"`
}

// ErrNoRun is returned for a run_id that sync_runs does not hold.
var ErrNoRun = errors.New("no such run")

// SetStreamsDetail stores what each task of run runID did
// (sync_runs.streams_detail), replacing what was stored.
func (s *Store) SetStreamsDetail(ctx context.Context, runID string, detail map[string]TaskDetail) error {
	if detail == nil {
		detail = map[string]TaskDetail{}
	}
	return s.setRunJSON(ctx, runID, "streams_detail", "streams detail", detail)
}

// setRunJSON stores v as JSON in column of run runID's sync_runs row,
// replacing what was stored; what names the column in errors ("set what of
// run …"), ErrNoRun when there is no such run.
func (s *Store) setRunJSON(ctx context.Context, runID, column, what string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("set %s of run %s: %w", what, runID, err)
	}
	q := fmt.Sprintf(`UPDATE %s SET %s = $2::jsonb, _synced_at = now() WHERE run_id = $1::text::uuid`,
		pgx.Identifier{s.schema, "sync_runs"}.Sanitize(), pgx.Identifier{column}.Sanitize())
	tag, err := s.pool.Exec(ctx, q, runID, string(b))
	if err != nil {
		return fmt.Errorf("set %s of run %s: %w", what, runID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("set %s of run %s: %w", what, runID, ErrNoRun)
	}
	return nil
}

// StreamsDetail reads sync_runs.streams_detail of run runID.
func (s *Store) StreamsDetail(ctx context.Context, runID string) (map[string]TaskDetail, error) {
	q := fmt.Sprintf(`SELECT streams_detail FROM %s WHERE run_id = $1::text::uuid`, pgx.Identifier{s.schema, "sync_runs"}.Sanitize())
	var b []byte
	if err := s.pool.QueryRow(ctx, q, runID).Scan(&b); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			err = ErrNoRun
		}
		return nil, fmt.Errorf("read streams detail of run %s: %w", runID, err)
	}
	var out map[string]TaskDetail
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("read streams detail of run %s: %w", runID, err)
	}
	return out, nil
}
