package cli

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/warehouse"
)

// countingTracer counts the statements and the new connections of every
// connection made from the configuration it is set on (copies included).
type countingTracer struct{ queries, connects atomic.Int64 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *countingTracer) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	c.connects.Add(1)
	return ctx
}

func (c *countingTracer) TraceConnectEnd(context.Context, pgx.TraceConnectEndData) {}

// TestReadyzIsCheap: a /readyz probe is one statement on a pooled connection,
// not a migrator with its own connections per probe.
func TestReadyzIsCheap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, schema := warehousetest.Schema(t)
	pc, err := warehouse.ParseConfig(warehousetest.DSN(t), warehouse.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := &countingTracer{}
	pc.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ready, err := readiness(&warehouse.Warehouse{Pool: pool, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err != nil { // opens the pool's first connection
		t.Fatalf("ready on a migrated schema: %v", err)
	}
	tr.queries.Store(0)
	tr.connects.Store(0)
	const probes = 20
	for range probes {
		if err := ready(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if q, c := tr.queries.Load(), tr.connects.Load(); q > probes || c != 0 {
		t.Fatalf("%d probes ran %d statements and opened %d connections; want at most one statement each and no connection", probes, q, c)
	}

	// A schema behind the binary is not ready, and the probe says why.
	behind := warehousetest.NewSchemaName(t)
	ready, err = readiness(&warehouse.Warehouse{Pool: pool, Schema: behind})
	if err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err == nil || !strings.Contains(err.Error(), "pending") {
		t.Fatalf("ready on an unmigrated schema = %v, want migrations pending", err)
	}
}
