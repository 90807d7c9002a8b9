package load

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StreamFreshness is one row of the sync_freshness view: the one definition
// of a stream's last success and lag, shared by `agencysync status`, /metrics
// and analysts (see migrations/00012_freshness_fast_views.sql).
type StreamFreshness struct {
	// Stream is the stream's name (sync_state.stream).
	Stream string
	// LastSuccessAt is when the stream last completed: the oldest last
	// success of its regular partitions; nil until each completed once.
	LastSuccessAt *time.Time
	// Lag is the time since LastSuccessAt on the database's clock at Now;
	// nil with LastSuccessAt.
	Lag *time.Duration
	// Watermark is the latest source instant fully synced.
	Watermark *time.Time
	// Now is the database's clock when the view was read (the lag's end).
	Now time.Time
}

// Freshness reads the sync_freshness view: per stream that has state, its
// last success and lag, by stream name.
func (s *Store) Freshness(ctx context.Context) ([]StreamFreshness, error) {
	q := fmt.Sprintf(`SELECT stream, last_success_at, extract(epoch FROM lag)::float8, watermark, now()
FROM %s ORDER BY stream`, pgx.Identifier{s.schema, "sync_freshness"}.Sanitize())
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read freshness: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StreamFreshness, error) {
		var f StreamFreshness
		var lag *float64
		if err := r.Scan(&f.Stream, &f.LastSuccessAt, &lag, &f.Watermark, &f.Now); err != nil {
			return f, err
		}
		if lag != nil {
			d := time.Duration(*lag * float64(time.Second))
			f.Lag = &d
		}
		return f, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read freshness: %w", err)
	}
	return out, nil
}
