package warehouse_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/warehouse"
)

// TestMigrateAsSchemaOwner: a role that owns its schema and has no CREATE on
// the database opens the warehouse and migrates it, twice (every start).
func TestMigrateAsSchemaOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := warehousetest.NewSchemaOwner(t)
	for i := range 2 {
		w, err := warehouse.Open(ctx, warehouse.Options{DSN: own.DSN, Schema: own.Schema})
		if err != nil {
			t.Fatalf("open %d as %s: %v", i, own.Role, err)
		}
		err = warehouse.Migrate(ctx, w.Pool, w.Schema, nil)
		w.Close()
		if err != nil {
			t.Fatalf("migrate %d as %s: %v", i, own.Role, err)
		}
	}
	var owner string
	err := warehousetest.Pool(t).QueryRow(ctx,
		"SELECT tableowner FROM pg_tables WHERE schemaname = $1 AND tablename = 'sync_runs'", own.Schema).Scan(&owner)
	if err != nil || owner != own.Role {
		t.Fatalf("sync_runs owner %q (err %v), want %q", owner, err, own.Role)
	}
}

// TestMissingRightsAreNamed: each right the role lacks is a PrivilegeError
// naming it, not a bare "permission denied".
func TestMissingRightsAreNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := warehousetest.Pool(t)
	own := warehousetest.NewSchemaOwner(t)
	pool, err := warehouse.Connect(ctx, own.DSN, warehouse.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	role := pgx.Identifier{own.Role}.Sanitize()

	// A schema that does not exist needs CREATE on the database.
	missing := warehousetest.UnusedSchemaName(t)
	err = warehouse.EnsureSchema(ctx, pool, missing)
	assertPrivilege(t, err, "CREATE", "database", missing)

	// A schema of another role without USAGE for this one.
	foreign := warehousetest.UnusedSchemaName(t)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{foreign}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	_, err = warehouse.NewMigrator(ctx, pool, foreign, nil)
	assertPrivilege(t, err, "USAGE", "schema "+foreign, "GRANT")

	// USAGE alone lets the role start but not migrate: migrate names CREATE on the schema.
	if _, err := admin.Exec(ctx, "GRANT USAGE ON SCHEMA "+pgx.Identifier{foreign}.Sanitize()+" TO "+role); err != nil {
		t.Fatal(err)
	}
	if err := warehouse.EnsureSchema(ctx, pool, foreign); err != nil {
		t.Fatalf("EnsureSchema with USAGE: %v", err)
	}
	assertPrivilege(t, openMigrator(t, pool, foreign, nil).Up(ctx), "CREATE", "schema "+foreign, "")
}

func assertPrivilege(t *testing.T, err error, right, object, hint string) {
	t.Helper()
	var pe *warehouse.PrivilegeError
	if !errors.Is(err, warehouse.ErrMissingPrivilege) || !errors.As(err, &pe) {
		t.Fatalf("error %v, want a PrivilegeError", err)
	}
	if pe.Right != right || !strings.Contains(pe.Object, object) && !strings.Contains(err.Error(), object) || !strings.Contains(err.Error(), hint) {
		t.Fatalf("error %q (right %q object %q), want %s on %s mentioning %q", err, pe.Right, pe.Object, right, object, hint)
	}
}
