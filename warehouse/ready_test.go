package warehouse_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/warehouse"
)

// TestReadinessAgreesWithGoose: the one-statement check says ready exactly
// when goose's own HasPending says nothing is pending, through up, down and a
// binary that carries a migration the schema lacks.
func TestReadinessAgreesWithGoose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := warehousetest.Pool(t)
	schema := warehousetest.NewSchemaName(t)
	mig := func(table string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("-- +goose Up\nCREATE TABLE " + table + " (x int);\n-- +goose Down\nDROP TABLE " + table + ";\n")}
	}
	old := fstest.MapFS{"00001_a.sql": mig("a"), "00002_b.sql": mig("b")}
	newer := fstest.MapFS{"00001_a.sql": mig("a"), "00002_b.sql": mig("b"), "00003_c.sql": mig("c"), "notes.txt": {Data: []byte("x")}}

	m := openMigrator(t, pool, schema, newer)
	mOld := openMigrator(t, pool, schema, old)
	r, err := warehouse.NewReadinessFS(pool, schema, newer)
	if err != nil {
		t.Fatal(err)
	}
	if r.Latest() != 3 {
		t.Fatalf("Latest = %d, want 3", r.Latest())
	}
	agree := func(step string, wantReady bool, missing string) {
		t.Helper()
		pending, err := m.Pending(ctx)
		if err != nil {
			t.Fatalf("%s: goose: %v", step, err)
		}
		got := r.Check(ctx)
		if (got == nil) != !pending || (got == nil) != wantReady {
			t.Fatalf("%s: Check = %v, goose pending = %v, want ready %v", step, got, pending, wantReady)
		}
		if got != nil && (!errors.Is(got, warehouse.ErrMigrationsPending) || !strings.Contains(got.Error(), missing)) {
			t.Fatalf("%s: Check = %v, want ErrMigrationsPending naming %q", step, got, missing)
		}
	}
	// The version table does not exist before the first Pending call (goose
	// creates it then), so ask the check alone first.
	if err := r.Check(ctx); !errors.Is(err, warehouse.ErrMigrationsPending) || !strings.Contains(err.Error(), "no migration") {
		t.Fatalf("Check on an empty schema = %v", err)
	}
	agree("empty", false, "1, 2, 3")
	if err := mOld.Up(ctx); err != nil {
		t.Fatal(err)
	}
	agree("older binary's migrations", false, "3")
	if err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	agree("all up", true, "")
	if err := m.Down(ctx); err != nil {
		t.Fatal(err)
	}
	agree("down one", false, "3")
	if err := m.DownTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	agree("down to 0", false, "1, 2, 3")

	if _, err := warehouse.NewReadinessFS(pool, schema, fstest.MapFS{"x.txt": {}}); err == nil {
		t.Fatal("a readiness check over no migration was accepted")
	}
	if _, err := warehouse.NewReadinessFS(pool, `x"y`, newer); !errors.Is(err, warehouse.ErrBadSchema) {
		t.Fatalf("bad schema: %v", err)
	}
}
