package warehouse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/migrations"
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
	// Existing opens only a warehouse that exists: it creates no schema,
	// and with DSN empty no private cluster's data folder. A schema (or a
	// private data folder) that does not exist is an error wrapping
	// ErrMigrationsPending. The read-only commands open this way.
	Existing bool
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
	if dsn == "" && opts.Existing {
		if err := localDataExists(opts.LocalDataDir); err != nil {
			return nil, err
		}
	}
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
	ensure := EnsureSchema
	if opts.Existing {
		ensure = schemaExists
	}
	if err := ensure(ctx, pool, opts.Schema); err != nil {
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

// schemaExists checks that schema exists and the session's role may use it,
// creating nothing: a missing schema is an error wrapping
// ErrMigrationsPending.
func schemaExists(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if !config.ValidSchema(schema) {
		return fmt.Errorf("open schema %q: %w", schema, ErrBadSchema)
	}
	a, err := migrations.LookUpSchema(ctx, pool, schema)
	switch {
	case err != nil:
		return err
	case !a.Exists:
		return fmt.Errorf("open schema %s: it does not exist, so no migration is applied (run `agencysync migrate up` first): %w", schema, ErrMigrationsPending)
	case !a.Usage:
		return &PrivilegeError{Role: a.Role, Right: "USAGE", Object: "schema " + schema,
			Hint: migrations.GrantStatement(schema, a.Role) + ", or let the role own it"}
	}
	return nil
}

// localDataExists checks that the private cluster's data folder holds a
// cluster, creating nothing: an error wrapping ErrMigrationsPending when it
// does not. An empty dir is a throwaway cluster: never an existing one.
func localDataExists(dir string) error {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
			return nil
		}
	}
	return fmt.Errorf("open the private warehouse: %s holds no cluster yet, so no migration is applied (run `agencysync migrate up` first): %w", dir, ErrMigrationsPending)
}
