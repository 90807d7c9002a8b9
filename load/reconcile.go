package load

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Reconciler holds the statements of the e-mails' reconciliation
// (agencysync verify): how many e-mails the warehouse holds per calendar day
// of a time zone, and the soft deletion of the e-mails a re-fetched day no
// longer holds.
type Reconciler struct {
	pool    *pgxpool.Pool
	emails  string // qualified emails table
	rejects string // qualified rejected_records table
	stream  string // the reject stream of the e-mails' records, and its prefix
}

// NewReconciler returns the reconciliation statements of schema for the
// e-mails of the stream named stream: its rejected records (reject stream
// stream or stream.<table>) count where the e-mails do. An empty stream
// counts no rejects.
func NewReconciler(pool *pgxpool.Pool, schema, stream string) (*Reconciler, error) {
	if pool == nil || schema == "" {
		return nil, errors.New("create reconciler: pool and schema are required")
	}
	return &Reconciler{pool: pool, emails: pgx.Identifier{schema, "emails"}.Sanitize(),
		rejects: pgx.Identifier{schema, "rejected_records"}.Sanitize(), stream: stream}, nil
}

// DayStart is the first instant of the calendar day of d (its year, month
// and day, whatever its location) in loc.
func DayStart(d time.Time, loc *time.Location) time.Time {
	y, m, dd := d.Date()
	return time.Date(y, m, dd, 0, 0, 0, 0, loc)
}

// EmailDayCounts counts the records the warehouse holds for each calendar
// day from..to (inclusive; their dates are taken as calendar dates) of loc:
// the e-mails not soft-deleted whose email_at falls on the day, plus the
// rejected e-mail records (not also live e-mails) whose payload's
// email.email_at does — a record the service returns is in the warehouse
// either way. A rejected record without a readable email_at counts on the
// day of the live e-mails next to it by record id when both lie on the same
// day, else nowhere; the records keyed in skip are not counted.
// Days without records are absent; keys are YYYY-MM-DD.
// The days are cut in Go (time.Date in loc), so the count never depends on
// the database's time zone data or session zone.
func (r *Reconciler) EmailDayCounts(ctx context.Context, from, to time.Time, loc *time.Location, skip []string) (map[string]int, error) {
	if loc == nil {
		return nil, errors.New("count e-mails per day: nil time zone")
	}
	if to.Before(from) {
		return nil, fmt.Errorf("count e-mails per day: range ends (%s) before it starts (%s)", to.Format(time.DateOnly), from.Format(time.DateOnly))
	}
	// One bound per day boundary; the statement buckets each e-mail by the
	// last boundary not after it (width_bucket over a sorted array).
	var bounds []time.Time
	var days []string
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		bounds = append(bounds, DayStart(d, loc))
		days = append(days, d.Format(time.DateOnly))
	}
	end := DayStart(to.AddDate(0, 0, 1), loc)
	q := fmt.Sprintf(`SELECT width_bucket(email_at, $1::timestamptz[]) AS b, count(*)
FROM %s WHERE _deleted_at IS NULL AND email_at >= $2 AND email_at < $3 GROUP BY 1`, r.emails)
	rows, err := r.pool.Query(ctx, q, bounds, bounds[0], end)
	if err != nil {
		return nil, fmt.Errorf("count e-mails per day: %w", err)
	}
	out := make(map[string]int)
	var b, n int
	_, err = pgx.ForEachRow(rows, []any{&b, &n}, func() error {
		if b < 1 || b > len(days) {
			return fmt.Errorf("bucket %d outside 1..%d", b, len(days))
		}
		out[days[b-1]] += n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count e-mails per day: %w", err)
	}
	err = r.eachHeldReject(ctx, skip, loc, func(t time.Time) {
		if !t.Before(bounds[0]) && t.Before(end) {
			out[t.In(loc).Format(time.DateOnly)]++
		}
	})
	if err != nil {
		return nil, fmt.Errorf("count rejected e-mails per day: %w", err)
	}
	return out, nil
}

// eachHeldReject calls fn with the instant of each rejected e-mail
// record that is not also a live e-mail and whose key is not in skip.
// Rejected records are few: their dates are read in Go, which also skips
// the ones that are not timestamps. A record whose email_at cannot be read
// is placed by its neighbours: record ids ascend with time, so when the
// live e-mails just below and just above its id lie on the same day of loc,
// so does it (at the instant of the one below); otherwise it is left out.
func (r *Reconciler) eachHeldReject(ctx context.Context, skip []string, loc *time.Location, fn func(time.Time)) error {
	rq := fmt.Sprintf(`SELECT r.record_key, CASE WHEN jsonb_typeof(r.payload->'email'->'email_at') = 'string' THEN r.payload->'email'->>'email_at' ELSE '' END,
	(SELECT e.email_at FROM %[2]s AS e WHERE e._deleted_at IS NULL AND e.record_id < k.id ORDER BY e.record_id DESC LIMIT 1),
	(SELECT e.email_at FROM %[2]s AS e WHERE e._deleted_at IS NULL AND e.record_id > k.id ORDER BY e.record_id LIMIT 1)
FROM %[1]s AS r
CROSS JOIN LATERAL (SELECT CASE WHEN r.record_key ~ '^[0-9]{1,18}$' THEN r.record_key::bigint END AS id) AS k
WHERE $2 <> '' AND (r.stream = $2 OR starts_with(r.stream, $2 || '.')) AND NOT (r.record_key = ANY($1::text[]))
AND NOT EXISTS (SELECT 1 FROM %[2]s AS e WHERE e._deleted_at IS NULL AND e.record_id = k.id)`, r.rejects, r.emails)
	if skip == nil {
		skip = []string{}
	}
	rows, err := r.pool.Query(ctx, rq, skip, r.stream)
	if err != nil {
		return err
	}
	var key, at string
	var prev, next *time.Time
	_, err = pgx.ForEachRow(rows, []any{&key, &at, &prev, &next}, func() error {
		t, perr := time.Parse(time.RFC3339Nano, at)
		if perr != nil {
			if prev == nil || next == nil || !sameDay(*prev, *next, loc) {
				return nil
			}
			t = *prev
		}
		fn(t)
		return nil
	})
	return err
}

func sameDay(a, b time.Time, loc *time.Location) bool {
	ya, ma, da := a.In(loc).Date()
	yb, mb, db := b.In(loc).Date()
	return ya == yb && ma == mb && da == db
}

// RejectsSeenByRun counts the e-mails' rejects among keys that run
// runID already recorded (rejected_records.last_run_id): a day re-fetched
// in the run that first met them does not count them twice.
func (r *Reconciler) RejectsSeenByRun(ctx context.Context, runID string, keys []string) (int, error) {
	if runID == "" || len(keys) == 0 {
		return 0, nil
	}
	q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE $3 <> '' AND (stream = $3 OR starts_with(stream, $3 || '.'))
AND record_key = ANY($1::text[]) AND last_run_id = $2::uuid`, r.rejects)
	var n int
	if err := r.pool.QueryRow(ctx, q, keys, runID, r.stream).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rejects seen by the run: %w", err)
	}
	return n, nil
}

// MaxEmailID is the highest record_id of the live e-mails whose email_at
// lies in [start, end), or 0 when there are none: the last record of a
// range the warehouse holds (records come in ascending id), which tells an
// increment whether the first page it asks starts with a record it holds.
func (r *Reconciler) MaxEmailID(ctx context.Context, start, end time.Time) (int64, error) {
	if !start.Before(end) {
		return 0, fmt.Errorf("find highest e-mail id: empty window %s..%s", start, end)
	}
	q := fmt.Sprintf(`SELECT coalesce(max(record_id), 0) FROM %s WHERE _deleted_at IS NULL AND email_at >= $1 AND email_at < $2`, r.emails)
	var id int64
	if err := r.pool.QueryRow(ctx, q, start, end).Scan(&id); err != nil {
		return 0, fmt.Errorf("find highest e-mail id: %w", err)
	}
	return id, nil
}
