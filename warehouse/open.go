package warehouse

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// Options says which warehouse to open.
type Options struct {
	// DSN is DATABASE_URL. Empty starts a private cluster in LocalDataDir.
	DSN string
	// Schema is WAREHOUSE_SCHEMA.
	Schema string
	// LocalDataDir keeps the private cluster's data between runs.
	LocalDataDir string
	// BinDir holds the private cluster's server binaries (PG_BINDIR);
	// empty: searched for (see LocalOptions.BinDir).
	BinDir string
	// StatementTimeout bounds every statement.
	StatementTimeout time.Duration
	// Logger receives progress lines; nil logs nothing.
	Logger *zap.Logger
}

// Warehouse is an open warehouse: its pool, its schema and, when DATABASE_URL
// was unset, the private cluster behind it.
type Warehouse struct {
	Pool    *pgxpool.Pool
	Schema  string
	cluster *LocalCluster
}

// Open connects to opts.DSN, or starts a private cluster when it is empty,
// and makes sure the schema exists and is usable (EnsureSchema: an existing
// schema needs only USAGE, never CREATE on the database). Close stops what
// Open started.
func Open(ctx context.Context, opts Options) (*Warehouse, error) {
	w := &Warehouse{Schema: opts.Schema}
	dsn := opts.DSN
	if dsn == "" {
		c, err := StartLocal(ctx, LocalOptions{DataDir: opts.LocalDataDir, BinDir: opts.BinDir, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("start private warehouse: %w", err)
		}
		w.cluster, dsn = c, c.DSN()
	}
	pool, err := Connect(ctx, dsn, PoolOptions{StatementTimeout: opts.StatementTimeout})
	if err != nil {
		w.Close()
		return nil, err
	}
	w.Pool = pool
	if err := EnsureSchema(ctx, pool, opts.Schema); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Local reports whether the warehouse is a private cluster started by Open.
func (w *Warehouse) Local() bool { return w.cluster != nil }

// Close closes the pool and stops the private cluster, if any.
func (w *Warehouse) Close() {
	if w.Pool != nil {
		w.Pool.Close()
	}
	if w.cluster != nil {
		_ = w.cluster.Stop()
	}
}
