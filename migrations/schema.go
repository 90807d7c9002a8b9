package migrations

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The statements around the migrations themselves: whether the schema
// exists and the role may use or create it, its creation, which migrations
// are applied, and the search_path the migrations (and psql) run under.
// Package warehouse runs them; they live here, beside the migration files,
// because warehouse is below load (load's tests open the warehouse).

// SchemaAccess is what the connected role may do with a schema.
type SchemaAccess struct {
	// Role and Database are current_user and current_database().
	Role, Database string
	// Exists says the schema exists; Usage that the role has USAGE on it.
	Exists, Usage bool
	// CreateOnDatabase says the role may create schemas in the database.
	CreateOnDatabase bool
}

// LookUpSchema reads the role's rights on schema in one catalogue query.
func LookUpSchema(ctx context.Context, pool *pgxpool.Pool, schema string) (SchemaAccess, error) {
	var a SchemaAccess
	err := pool.QueryRow(ctx, `SELECT current_user, current_database(), n.oid IS NOT NULL,
		       coalesce(has_schema_privilege(n.oid, 'USAGE'), false),
		       has_database_privilege(current_database(), 'CREATE')
		  FROM (SELECT 1) AS one LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = $1`, schema).
		Scan(&a.Role, &a.Database, &a.Exists, &a.Usage, &a.CreateOnDatabase)
	if err != nil {
		return a, fmt.Errorf("look up schema %s: %w", schema, err)
	}
	return a, nil
}

// CreateSchema creates schema if it does not exist, under the advisory
// transaction lock lockKey, so that concurrent creators never fail on the race.
func CreateSchema(ctx context.Context, pool *pgxpool.Pool, schema string, lockKey int64) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey); err != nil {
			return fmt.Errorf("lock schema creation: %w", err)
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("create schema %s: %w", schema, err)
		}
		return nil
	})
}

// GrantStatement is what an administrator runs to let role use and migrate schema.
func GrantStatement(schema, role string) string {
	return fmt.Sprintf("GRANT USAGE, CREATE ON SCHEMA %s TO %s", pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize())
}

// CreateSchemaStatement is what an administrator runs to create schema for role.
func CreateSchemaStatement(schema, role string) string {
	return fmt.Sprintf("CREATE SCHEMA %s AUTHORIZATION %s", pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize())
}

// SearchPathParam is the session setting the migrations run under, set to
// SearchPath(schema) in a connection's runtime parameters.
const SearchPathParam = "search_path"

// SearchPath is the value of search_path that makes schema the target of
// unqualified names.
func SearchPath(schema string) string { return pgx.Identifier{schema}.Sanitize() }

// PsqlOption is the libpq options entry that sets psql's search_path to
// schema (a plain identifier).
func PsqlOption(schema string) string { return "-c" + SearchPathParam + "=" + schema }

// ErrNoVersionTable means the schema has no goose version table: no
// migration was ever applied.
var ErrNoVersionTable = errors.New("no migration applied")

// undefinedTable is SQLSTATE 42P01.
const undefinedTable = "42P01"

// AppliedCheck finds which of a list of migration versions a schema lacks,
// in one statement that needs only USAGE on the schema and SELECT on its
// goose_db_version table.
type AppliedCheck struct {
	query string
}

// NewAppliedCheck prepares the check of schema.
func NewAppliedCheck(schema string) *AppliedCheck {
	table := pgx.Identifier{schema, "goose_db_version"}.Sanitize()
	return &AppliedCheck{query: `SELECT coalesce(array_agg(v ORDER BY v), '{}') FROM unnest($1::bigint[]) AS v
	       WHERE NOT EXISTS (SELECT 1 FROM ` + table + ` g WHERE g.version_id = v AND g.is_applied)`}
}

// Missing returns the versions not applied, ascending; an error wrapping
// ErrNoVersionTable when none ever was.
func (c *AppliedCheck) Missing(ctx context.Context, pool *pgxpool.Pool, versions []int64) ([]int64, error) {
	var missing []int64
	err := pool.QueryRow(ctx, c.query, versions).Scan(&missing)
	var pg *pgconn.PgError
	switch {
	case errors.As(err, &pg) && pg.Code == undefinedTable:
		return nil, fmt.Errorf("read applied migrations: %w", ErrNoVersionTable)
	case err != nil:
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	return missing, nil
}
