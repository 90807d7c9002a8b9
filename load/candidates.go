package load

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// EmailAt is a live e-mail: its record id and its email_at.
type EmailAt struct {
	ID int64
	At time.Time
}

// EmailsNotIn lists the live e-mails whose email_at lies in [start, end) and
// whose record_id is not in keep, by record id: the e-mails of a re-fetched
// range that the service did not return for it. Whether they may be
// soft-deleted is the caller's decision (the service may file an e-mail
// under a neighbouring day); SoftDeleteEmails marks those it decides on.
func (r *Reconciler) EmailsNotIn(ctx context.Context, start, end time.Time, keep []int64) ([]EmailAt, error) {
	if !start.Before(end) {
		return nil, fmt.Errorf("list e-mails not returned: empty window %s..%s", start, end)
	}
	if keep == nil {
		keep = []int64{}
	}
	// The email_at index narrows the statement to the window's rows; the
	// array test runs per row of the window (no join a plan could get wrong).
	q := fmt.Sprintf(`SELECT record_id, email_at FROM %s
WHERE _deleted_at IS NULL AND email_at >= $1 AND email_at < $2 AND NOT (record_id = ANY($3::bigint[]))
ORDER BY record_id`, r.emails)
	rows, err := r.pool.Query(ctx, q, start, end, keep)
	if err != nil {
		return nil, fmt.Errorf("list e-mails not returned: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EmailAt, error) {
		var e EmailAt
		return e, row.Scan(&e.ID, &e.At)
	})
	if err != nil {
		return nil, fmt.Errorf("list e-mails not returned: %w", err)
	}
	return out, nil
}

// SoftDeleteEmails sets _deleted_at on the live e-mails among ids and
// returns how many it marked. Call it only for e-mails the service was
// shown not to hold (see EmailsNotIn).
func (r *Reconciler) SoftDeleteEmails(ctx context.Context, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	q := fmt.Sprintf(`UPDATE %s SET _deleted_at = now(), _synced_at = now()
WHERE _deleted_at IS NULL AND record_id = ANY($1::bigint[])`, r.emails)
	tag, err := r.pool.Exec(ctx, q, ids)
	if err != nil {
		return 0, fmt.Errorf("soft-delete e-mails: %w", err)
	}
	return tag.RowsAffected(), nil
}

// LiveEmails returns the email_at of the live e-mails among ids (a
// primary-key lookup each; ids that are not live e-mails are absent).
func (r *Reconciler) LiveEmails(ctx context.Context, ids []int64) (map[int64]time.Time, error) {
	out := make(map[int64]time.Time, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	q := fmt.Sprintf(`SELECT record_id, email_at FROM %s WHERE _deleted_at IS NULL AND record_id = ANY($1::bigint[])`, r.emails)
	rows, err := r.pool.Query(ctx, q, ids)
	if err != nil {
		return nil, fmt.Errorf("read live e-mails: %w", err)
	}
	var id int64
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		out[id] = at
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read live e-mails: %w", err)
	}
	return out, nil
}

// Quarter is the width of a bucket of EmailQuarterCounts: every zone in use
// is a whole number of quarter hours from UTC.
const Quarter = 15 * time.Minute

// EmailQuarterCounts counts the records the warehouse holds per quarter
// hour from start to end (both on a quarter-hour boundary of Unix time):
// the live e-mails and the rejected e-mail records (not also live
// e-mails, not keyed in skip) with a readable email_at. Element i is the
// quarter starting at start + i×Quarter. Summing runs of it gives the
// warehouse's count of a calendar day under any whole-quarter UTC offset.
func (r *Reconciler) EmailQuarterCounts(ctx context.Context, start, end time.Time, skip []string) ([]int, error) {
	if !start.Before(end) || start.Unix()%int64(Quarter/time.Second) != 0 || end.Unix()%int64(Quarter/time.Second) != 0 {
		return nil, errors.New("count e-mails per quarter hour: want a window of whole quarter hours")
	}
	n := int(end.Sub(start) / Quarter)
	out := make([]int, n)
	q := fmt.Sprintf(`SELECT floor(extract(epoch FROM email_at - $1::timestamptz) / 900)::int AS q, count(*)
FROM %s WHERE _deleted_at IS NULL AND email_at >= $1 AND email_at < $2 GROUP BY 1`, r.emails)
	rows, err := r.pool.Query(ctx, q, start, end)
	if err != nil {
		return nil, fmt.Errorf("count e-mails per quarter hour: %w", err)
	}
	var i, c int
	_, err = pgx.ForEachRow(rows, []any{&i, &c}, func() error {
		if i < 0 || i >= n {
			return fmt.Errorf("quarter %d outside 0..%d", i, n-1)
		}
		out[i] += c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count e-mails per quarter hour: %w", err)
	}
	err = r.eachHeldReject(ctx, skip, time.UTC, func(t time.Time) {
		if !t.Before(start) && t.Before(end) {
			out[int(t.Sub(start)/Quarter)]++
		}
	})
	if err != nil {
		return nil, fmt.Errorf("count rejected e-mails per quarter hour: %w", err)
	}
	return out, nil
}
