package load

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The reads of serve's status page and of the run notifications.

// DayRequests is the number of requests counted on one quota day.
type DayRequests struct {
	// Day is the quota day, as a UTC midnight.
	Day time.Time
	// Requests is what api_quota_usage counted that day (0 when nothing was sent).
	Requests int
}

// History returns the requests counted on each of the days quota days that end
// with today, oldest first, with 0 for the days nothing was sent.
func (l *Ledger) History(ctx context.Context, days int) ([]DayRequests, error) {
	if days <= 0 || days > 3660 {
		return nil, fmt.Errorf("read request history: %d days is out of range 1..3660", days)
	}
	last := l.Today()
	first := last.AddDate(0, 0, -(days - 1))
	q := fmt.Sprintf(`SELECT d::date, coalesce(q.requests, 0)
FROM generate_series($1::date, $2::date, interval '1 day') AS d
LEFT JOIN %s AS q ON q.day = d::date
ORDER BY d`, pgx.Identifier{l.schema, "api_quota_usage"}.Sanitize())
	rows, err := l.pool.Query(ctx, q, first, last)
	if err != nil {
		return nil, fmt.Errorf("read request history: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DayRequests, error) {
		var d DayRequests
		err := r.Scan(&d.Day, &d.Requests)
		y, m, dd := d.Day.Date()
		d.Day = time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("read request history: %w", err)
	}
	return out, nil
}

// ErrNoSuchRun means a run_id is not in sync_runs.
var ErrNoSuchRun = errors.New("no such run")

// PreviousRunStatus returns the status of the last finished sync (succeeded,
// warning, partial or failed; skipped and unfinished runs, and rebuilds, do
// not count) that started
// before run runID, or "" when there is none. Notifications use it to tell a
// recovery (the first success after a failed, partial or warning run).
func (s *Store) PreviousRunStatus(ctx context.Context, runID string) (string, error) {
	runs := pgx.Identifier{s.schema, "sync_runs"}.Sanitize()
	q := fmt.Sprintf(`SELECT (SELECT status FROM %[1]s
  WHERE status IN ('succeeded', 'warning', 'partial', 'failed') AND trigger <> 'rebuild' AND run_id <> r.run_id
    AND (started_at, run_id) < (r.started_at, r.run_id)
  ORDER BY started_at DESC, run_id DESC LIMIT 1)
FROM %[1]s AS r WHERE r.run_id = $1::uuid`, runs)
	var status *string
	if err := s.pool.QueryRow(ctx, q, runID).Scan(&status); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", fmt.Errorf("read run before %s: %w", runID, ErrNoSuchRun)
		}
		return "", fmt.Errorf("read run before %s: %w", runID, err)
	}
	if status == nil {
		return "", nil
	}
	return *status, nil
}
