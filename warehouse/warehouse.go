// Package warehouse opens the PostgreSQL warehouse: the connection pool, the
// schema, goose migrations run under a session lock, and a private local
// cluster for the demo and the tests when no DATABASE_URL is given.
//
// Every table lives in one schema (WAREHOUSE_SCHEMA). Migrations are written
// unqualified and run with search_path set to that schema, so two schemas in
// one database migrate independently; runtime SQL qualifies its tables with
// pgx.Identifier.
package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/migrations"
)

// ErrBadSchema means the schema name is not a plain identifier.
var ErrBadSchema = errors.New("schema name is not a plain identifier")

// PoolOptions tunes the connection pool.
type PoolOptions struct {
	// StatementTimeout bounds every statement (0: none).
	StatementTimeout time.Duration
	// MaxConns caps the pool (0: pgx's default).
	MaxConns int32
	// ApplicationName is shown in pg_stat_activity (default "agencysync").
	ApplicationName string
}

// ParseConfig parses dsn into a pool configuration with agencysync's session
// settings: TimeZone UTC, the statement timeout and the application name. The
// returned error never quotes the DSN, which may hold a password.
func ParseConfig(dsn string, opts PoolOptions) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("parse database url: malformed connection string")
	}
	rp := pc.ConnConfig.RuntimeParams
	rp["timezone"] = "UTC"
	rp["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	rp["application_name"] = opts.ApplicationName
	if rp["application_name"] == "" {
		rp["application_name"] = "agencysync"
	}
	if opts.MaxConns > 0 {
		pc.MaxConns = opts.MaxConns
	}
	return pc, nil
}

// Connect opens a pool on dsn and checks that the server answers.
func Connect(ctx context.Context, dsn string, opts PoolOptions) (*pgxpool.Pool, error) {
	pc, err := ParseConfig(dsn, opts)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to warehouse: %w", err)
	}
	return pool, nil
}

// EnsureSchema makes sure the schema exists and the session's role may use
// it, asking for no more rights than that needs: when the schema exists it
// only checks USAGE on it (one catalogue query, no CREATE on the database),
// and only when it is missing does it create it, which needs CREATE on the
// database. A missing right is a *PrivilegeError (errors.Is
// ErrMissingPrivilege) naming the right, the object and the role. Concurrent
// creators are serialised by an advisory transaction lock, so none fails on
// the race.
func EnsureSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if !config.ValidSchema(schema) {
		return fmt.Errorf("ensure schema %q: %w", schema, ErrBadSchema)
	}
	a, err := migrations.LookUpSchema(ctx, pool, schema)
	if err != nil {
		return err
	}
	if a.Exists {
		if !a.Usage {
			return &PrivilegeError{Role: a.Role, Right: "USAGE", Object: "schema " + schema,
				Hint: migrations.GrantStatement(schema, a.Role) + ", or let the role own it"}
		}
		return nil
	}
	if !a.CreateOnDatabase {
		return &PrivilegeError{Role: a.Role, Right: "CREATE", Object: "database " + a.Database,
			Hint: fmt.Sprintf("schema %s does not exist and only a role with CREATE on the database can create it; "+
				"have an administrator run %s once", schema, migrations.CreateSchemaStatement(schema, a.Role))}
	}
	return migrations.CreateSchema(ctx, pool, schema, lockID("schema:"+schema))
}

// lockID derives a stable advisory-lock key from a name.
func lockID(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("agencysync:" + name))
	return int64(h.Sum64())
}

// SyncLockID is the advisory lock key that allows one sync at a time per
// warehouse schema, across processes and machines.
func SyncLockID(schema string) int64 { return lockID("sync:" + schema) }

// Migrator applies the embedded goose migrations to one schema.
type Migrator struct {
	db       *sql.DB
	provider *goose.Provider
	schema   string
	role     string
	log      *zap.Logger
	fsys     fs.FS // the migration files (DownPreview reads them)
}

// NewMigrator prepares a goose Provider over a dedicated database/sql handle
// whose sessions have search_path set to schema; the goose version table
// lives in that schema and a Postgres session lock (keyed by the schema)
// keeps two processes from migrating it at once. Close releases the handle.
func NewMigrator(ctx context.Context, pool *pgxpool.Pool, schema string, log *zap.Logger) (*Migrator, error) {
	return newMigrator(ctx, pool, schema, migrations.FS, log)
}

// NewMigratorFS is NewMigrator over another set of migration files (tests).
func NewMigratorFS(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS, log *zap.Logger) (*Migrator, error) {
	return newMigrator(ctx, pool, schema, fsys, log)
}

func newMigrator(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS, log *zap.Logger) (*Migrator, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if err := EnsureSchema(ctx, pool, schema); err != nil {
		return nil, err
	}
	cc := pool.Config().ConnConfig.Copy()
	cc.RuntimeParams[migrations.SearchPathParam] = migrations.SearchPath(schema)
	db := stdlib.OpenDB(*cc)
	db.SetMaxOpenConns(2)
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID("migrate:"+schema)), lock.WithLockTimeout(1, 600))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithSessionLocker(locker),
		goose.WithTableName(schema+".goose_db_version"),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create migration provider: %w", err)
	}
	return &Migrator{db: db, provider: p, schema: schema, role: cc.User, log: log, fsys: fsys}, nil
}

// Up applies every pending migration.
func (m *Migrator) Up(ctx context.Context) error {
	res, err := m.provider.Up(ctx)
	for _, r := range res {
		m.log.Info("migration applied", zap.String("schema", m.schema), zap.String("file", r.Source.Path), zap.Duration("took", r.Duration))
	}
	if err != nil {
		return fmt.Errorf("migrate up: %w", m.privilege(err))
	}
	return nil
}

// privilege turns the server's "insufficient privilege" refusal of a
// migration into a PrivilegeError: migrating needs CREATE on the schema (and
// ownership of its tables to alter or drop them).
func (m *Migrator) privilege(err error) error {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != insufficientPrivilege {
		return err
	}
	return &PrivilegeError{Role: m.role, Right: "CREATE", Object: "schema " + m.schema,
		Hint: "migrate creates and alters tables there; run it as the schema's owner", Err: err}
}

// Down rolls back the latest migration.
func (m *Migrator) Down(ctx context.Context) error {
	r, err := m.provider.Down(ctx)
	if r != nil && r.Source != nil && err == nil {
		m.log.Info("migration rolled back", zap.String("schema", m.schema), zap.String("file", r.Source.Path))
	}
	if err != nil {
		return fmt.Errorf("migrate down: %w", m.privilege(err))
	}
	return nil
}

// DownTo rolls back every migration newer than version (0: all of them).
func (m *Migrator) DownTo(ctx context.Context, version int64) error {
	res, err := m.provider.DownTo(ctx, version)
	for _, r := range res {
		m.log.Info("migration rolled back", zap.String("schema", m.schema), zap.String("file", r.Source.Path))
	}
	if err != nil {
		return fmt.Errorf("migrate down to %d: %w", version, m.privilege(err))
	}
	return nil
}

// MigrationStatus is one migration file and whether it is applied.
type MigrationStatus struct {
	Version   int64
	File      string
	Applied   bool
	AppliedAt time.Time
}

// Status lists every migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]MigrationStatus, error) {
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("read migration status: %w", err)
	}
	out := make([]MigrationStatus, 0, len(st))
	for _, s := range st {
		out = append(out, MigrationStatus{Version: s.Source.Version, File: s.Source.Path,
			Applied: s.State == goose.StateApplied, AppliedAt: s.AppliedAt})
	}
	return out, nil
}

// Pending reports whether a migration waits to be applied (for /readyz).
func (m *Migrator) Pending(ctx context.Context) (bool, error) {
	p, err := m.provider.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("check pending migrations: %w", err)
	}
	return p, nil
}

// Close releases the migrator's database handle.
func (m *Migrator) Close() error { return m.db.Close() }

// Migrate applies every pending migration to schema (a convenience for
// NewMigrator, Up, Close).
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string, log *zap.Logger) error {
	m, err := NewMigrator(ctx, pool, schema, log)
	if err != nil {
		return err
	}
	defer m.Close()
	return m.Up(ctx)
}
