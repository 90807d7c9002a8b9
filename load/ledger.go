package load

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/extract"
)

var (
	_ extract.QuotaCounter  = (*Ledger)(nil)
	_ extract.QuotaRefunder = (*Ledger)(nil)
)

// Ledger is the durable count of requests per quota day (api_quota_usage).
// CountRequest commits at once, outside any page transaction, so a request
// that was sent is never forgotten, even if the process dies before its page
// commits; a new Ledger (a restarted process) reads the same counts.
type Ledger struct {
	pool     *pgxpool.Pool
	schema   string
	loc      *time.Location
	now      func() time.Time
	countSQL string
	spentSQL string
}

// NewLedger returns the ledger of schema. Quota days are calendar days in loc
// (nil: UTC), whose midnight resets the daily quota; now is the clock (nil:
// time.Now).
func NewLedger(pool *pgxpool.Pool, schema string, loc *time.Location, now func() time.Time) (*Ledger, error) {
	if pool == nil || schema == "" {
		return nil, errors.New("create ledger: nil pool or empty schema")
	}
	if loc == nil {
		loc = time.UTC
	}
	if now == nil {
		now = time.Now
	}
	table := pgx.Identifier{schema, "api_quota_usage"}.Sanitize()
	return &Ledger{
		pool: pool, schema: schema, loc: loc, now: now,
		countSQL: fmt.Sprintf(`INSERT INTO %s AS q (day, requests) VALUES ($1, 1)
ON CONFLICT (day) DO UPDATE SET requests = q.requests + 1, _synced_at = now()`, table),
		spentSQL: fmt.Sprintf("SELECT coalesce((SELECT requests FROM %s WHERE day = $1), 0)", table),
	}, nil
}

// Day returns the quota day of instant t: its calendar day in the ledger's
// zone, as a UTC midnight.
func (l *Ledger) Day(t time.Time) time.Time {
	y, m, d := t.In(l.loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Today returns the current quota day.
func (l *Ledger) Today() time.Time { return l.Day(l.now()) }

// CountRequest counts one request on the current quota day, durably, before
// the request is sent (it implements extract's request counter): its commit
// waits for the WAL flush even where the server commits asynchronously by
// default (see durableBegin).
func (l *Ledger) CountRequest(ctx context.Context) error {
	if _, err := durableExec(ctx, l.pool, l.countSQL, l.Today()); err != nil {
		return fmt.Errorf("count request: %w", err)
	}
	return nil
}

// UncountRequest takes back one request counted at countedAt (on the
// ledger's clock; zero: now) that never left the machine: the client could
// not connect to the service's host, so the service cannot have counted it.
// A day left with no request has no row, as before its first.
func (l *Ledger) UncountRequest(ctx context.Context, countedAt time.Time) error {
	if countedAt.IsZero() {
		countedAt = l.now()
	}
	day := l.Day(countedAt)
	table := pgx.Identifier{l.schema, "api_quota_usage"}.Sanitize()
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE "+table+" SET requests = requests - 1, _synced_at = now() WHERE day = $1 AND requests > 0", day)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, "DELETE FROM "+table+" WHERE day = $1 AND requests = 0", day)
		return err
	})
	if err != nil {
		return fmt.Errorf("uncount request of quota day %s: %w", day.Format(time.DateOnly), err)
	}
	return nil
}

// Spent returns the requests counted on quota day day (its year, month and
// day as given).
func (l *Ledger) Spent(ctx context.Context, day time.Time) (int, error) {
	y, m, d := day.Date()
	var n int
	if err := l.pool.QueryRow(ctx, l.spentSQL, time.Date(y, m, d, 0, 0, 0, 0, time.UTC)).Scan(&n); err != nil {
		return 0, fmt.Errorf("read requests spent: %w", err)
	}
	return n, nil
}
