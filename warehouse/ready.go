package warehouse

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/migrations"
)

// ErrMigrationsPending means the schema lacks migrations this binary carries.
var ErrMigrationsPending = errors.New("migrations pending")

// Readiness answers /readyz cheaply: one statement on a pooled connection
// checks that the database answers and that every migration embedded in the
// binary (listed once, when the Readiness is made) is applied to the schema.
// It never creates anything and needs only USAGE on the schema and SELECT on
// its goose_db_version table.
type Readiness struct {
	pool     *pgxpool.Pool
	schema   string
	check    *migrations.AppliedCheck
	versions []int64
}

// NewReadiness prepares the readiness check of schema over pool, against the
// migrations embedded in the binary.
func NewReadiness(pool *pgxpool.Pool, schema string) (*Readiness, error) {
	return NewReadinessFS(pool, schema, migrations.FS)
}

// NewReadinessFS is NewReadiness against another set of migration files (tests).
func NewReadinessFS(pool *pgxpool.Pool, schema string, fsys fs.FS) (*Readiness, error) {
	if !config.ValidSchema(schema) {
		return nil, fmt.Errorf("prepare readiness check %q: %w", schema, ErrBadSchema)
	}
	versions, err := migrationVersions(fsys)
	if err != nil {
		return nil, err
	}
	return &Readiness{pool: pool, schema: schema, check: migrations.NewAppliedCheck(schema), versions: versions}, nil
}

// migrationVersions lists the versions of the goose SQL files at fsys's root.
func migrationVersions(fsys fs.FS) ([]int64, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var out []int64
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		v, err := goose.NumericComponent(e.Name())
		if err != nil {
			return nil, fmt.Errorf("list migrations: %s: %w", e.Name(), err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("list migrations: no migration files")
	}
	slices.Sort(out)
	return out, nil
}

// Latest is the newest migration version the check expects.
func (r *Readiness) Latest() int64 { return r.versions[len(r.versions)-1] }

// Check returns nil when the database answers and the schema has every
// migration applied; an error wrapping ErrMigrationsPending when some are
// missing (naming them); or the connection's error.
func (r *Readiness) Check(ctx context.Context) error {
	missing, err := r.check.Missing(ctx, r.pool, r.versions)
	switch {
	case errors.Is(err, migrations.ErrNoVersionTable):
		return fmt.Errorf("check readiness: schema %s has no migration applied (latest is %d): %w", r.schema, r.Latest(), ErrMigrationsPending)
	case err != nil:
		return fmt.Errorf("check readiness: %w", err)
	case len(missing) > 0:
		vs := make([]string, len(missing))
		for i, v := range missing {
			vs[i] = fmt.Sprint(v)
		}
		return fmt.Errorf("check readiness: schema %s lacks migration %s (run agencysync migrate up): %w", r.schema, strings.Join(vs, ", "), ErrMigrationsPending)
	}
	return nil
}
