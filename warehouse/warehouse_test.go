package warehouse_test

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/migrations"
	"github.com/agencysync/agencysync/warehouse"
)

func TestMain(m *testing.M) { warehousetest.Main(m) }

// openMigrator opens a migrator of schema through pool, closed when the test
// ends: of the binary's migrations when fsys is nil, else of fsys's.
func openMigrator(t *testing.T, pool *pgxpool.Pool, schema string, fsys fs.FS) *warehouse.Migrator {
	t.Helper()
	if fsys == nil {
		fsys = migrations.FS
	}
	m, err := warehouse.NewMigratorFS(context.Background(), pool, schema, fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func tableCount(t *testing.T, schema string) int {
	t.Helper()
	var n int
	err := warehousetest.Pool(t).QueryRow(context.Background(),
		"SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename <> 'goose_db_version'", schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMigrateUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := warehousetest.Pool(t)
	schema := warehousetest.NewSchemaName(t)
	m := openMigrator(t, pool, schema, nil)
	if err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	up := tableCount(t, schema)
	for _, want := range []string{"sync_runs", "sync_state", "api_quota_usage", "rejected_records"} {
		var ok bool
		if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", pgx.Identifier{schema, want}.Sanitize()).Scan(&ok); err != nil || !ok {
			t.Fatalf("table %s missing after up (err %v)", want, err)
		}
	}
	if pending, err := m.Pending(ctx); err != nil || pending {
		t.Fatalf("Pending after up = %v, %v", pending, err)
	}
	if err := m.DownTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n := tableCount(t, schema); n != 0 {
		t.Fatalf("%d tables left after down to 0", n)
	}
	st, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Applied {
			t.Fatalf("%s still applied", s.File)
		}
	}
	if err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if n := tableCount(t, schema); n != up {
		t.Fatalf("%d tables after up again, want %d", n, up)
	}
	// Down one step removes exactly the newest migration.
	if err := m.Down(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = m.Status(ctx)
	if len(st) == 0 || st[len(st)-1].Applied {
		t.Fatalf("newest migration still applied after down: %+v", st)
	}
}

func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := warehousetest.Pool(t)
	schema := warehousetest.NewSchemaName(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = warehouse.Migrate(ctx, pool, schema, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migration %d: %v", i, err)
		}
	}
	var applied int
	err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "goose_db_version"}.Sanitize()+" WHERE version_id > 0").Scan(&applied)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(mustStatus(t, schema)); applied != want {
		t.Fatalf("%d versions recorded, want %d (each once)", applied, want)
	}
}

func mustStatus(t *testing.T, schema string) []warehouse.MigrationStatus {
	t.Helper()
	st, err := openMigrator(t, warehousetest.Pool(t), schema, nil).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSchemasAreIndependent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, a := warehousetest.Schema(t)
	b := warehousetest.NewSchemaName(t)
	if err := warehouse.Migrate(ctx, pool, b, nil); err != nil {
		t.Fatal(err)
	}
	if err := openMigrator(t, pool, b, nil).DownTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if tableCount(t, a) == 0 {
		t.Fatal("rolling back schema b emptied schema a")
	}
	if tableCount(t, b) != 0 {
		t.Fatal("schema b not rolled back")
	}
}

func TestBadSchemaRefused(t *testing.T) {
	t.Parallel()
	err := warehouse.EnsureSchema(context.Background(), warehousetest.Pool(t), `x"; drop table y; --`)
	if !errors.Is(err, warehouse.ErrBadSchema) {
		t.Fatalf("EnsureSchema = %v, want ErrBadSchema", err)
	}
}

func TestMigrationFailureRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := warehousetest.Pool(t)
	schema := warehousetest.NewSchemaName(t)
	fsys := fstest.MapFS{
		"00001_ok.sql":  {Data: []byte("-- +goose Up\nCREATE TABLE a (x int);\n-- +goose Down\nDROP TABLE a;\n")},
		"00002_bad.sql": {Data: []byte("-- +goose Up\nCREATE TABLE b (x int);\nSELECT no_such_function();\n-- +goose Down\nDROP TABLE b;\n")},
	}
	if err := openMigrator(t, pool, schema, fsys).Up(ctx); err == nil {
		t.Fatal("a failing migration reported success")
	}
	var hasB bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", pgx.Identifier{schema, "b"}.Sanitize()).Scan(&hasB); err != nil {
		t.Fatal(err)
	}
	if hasB {
		t.Fatal("half of a failed migration was left behind")
	}
}
