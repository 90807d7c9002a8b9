package migrations

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// WithSessionLock runs fn while one connection of pool holds the advisory
// session lock lockKey, so that processes migrating the same schema at once
// (fleet workers starting together) take turns: the second finds the
// first's work done. fn migrates through other connections, each migration
// in its own transaction (an enum value a migration adds cannot be used
// within the transaction that adds it).
func WithSessionLock(ctx context.Context, pool *pgxpool.Pool, lockKey int64, fn func() error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", lockKey); err != nil {
			// A connection whose unlock failed goes, and its lock with it.
			_ = conn.Conn().Close(uctx)
		}
	}()
	return fn()
}
