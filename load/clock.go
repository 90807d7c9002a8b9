package load

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/extract"
)

// ClockOffset returns the service clock's lead over the worker's clock as a
// previous run saved it (service_clock), and false when none was saved.
func (l *Ledger) ClockOffset(ctx context.Context) (time.Duration, bool, error) {
	var secs int64
	err := l.pool.QueryRow(ctx, "SELECT offset_seconds FROM "+pgx.Identifier{l.schema, "service_clock"}.Sanitize()).Scan(&secs)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read service clock offset: %w", err)
	}
	return time.Duration(secs) * time.Second, true, nil
}

// SaveClockOffset keeps the service clock's lead over the worker's clock for
// the next process (whole seconds: the Date header tells no finer).
func (l *Ledger) SaveClockOffset(ctx context.Context, d time.Duration) error {
	_, err := l.pool.Exec(ctx, "INSERT INTO "+pgx.Identifier{l.schema, "service_clock"}.Sanitize()+
		` AS c (id, offset_seconds) VALUES (true, $1)
ON CONFLICT (id) DO UPDATE SET offset_seconds = excluded.offset_seconds, _synced_at = now()
WHERE c.offset_seconds IS DISTINCT FROM excluded.offset_seconds`, int64(d.Round(time.Second)/time.Second))
	if err != nil {
		return fmt.Errorf("save service clock offset: %w", err)
	}
	return nil
}

var _ extract.QuotaDayMover = (*Ledger)(nil)

// MoveRequest moves one counted request from the quota day of countedAt to
// that of trueAt, when they differ: the service's Date header showed that
// the request fell on another day than the clock told when it was counted.
func (l *Ledger) MoveRequest(ctx context.Context, countedAt, trueAt time.Time) error {
	from, to := l.Day(countedAt), l.Day(trueAt)
	if from.Equal(to) {
		return nil
	}
	table := pgx.Identifier{l.schema, "api_quota_usage"}.Sanitize()
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE "+table+" SET requests = requests - 1, _synced_at = now() WHERE day = $1 AND requests > 0", from)
		if err != nil || tag.RowsAffected() == 0 {
			return err // nothing counted there (a concurrent move): keep the count as it is
		}
		if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE day = $1 AND requests = 0", from); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, l.countSQL, to)
		return err
	})
	if err != nil {
		return fmt.Errorf("move request to quota day %s: %w", to.Format(time.DateOnly), err)
	}
	return nil
}
