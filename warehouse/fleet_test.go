package warehouse_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/warehouse"
)

// TestMigrateFleetConcurrently: workers starting together migrate the job
// queue once between them, none failing on the race; a later start finds
// nothing to apply.
func TestMigrateFleetConcurrently(t *testing.T) {
	pool := warehousetest.Pool(t)
	schema := warehousetest.NewSchemaName(t)
	ctx := context.Background()
	const workers = 3
	applied := make([][]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() { applied[i], errs[i] = warehouse.MigrateFleet(ctx, pool, schema, nil) })
	}
	wg.Wait()
	total := 0
	for i := range workers {
		if errs[i] != nil {
			t.Fatalf("worker %d: %v", i, errs[i])
		}
		if len(applied[i]) > 0 {
			total++
		}
	}
	if total != 1 {
		t.Errorf("%d workers applied migrations (%v), want exactly one", total, applied)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "river_job"}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("the queue's table: %v", err)
	}
	again, err := warehouse.MigrateFleet(ctx, pool, schema, nil)
	if err != nil || len(again) != 0 {
		t.Errorf("a second start applied %v (%v), want nothing", again, err)
	}
}
