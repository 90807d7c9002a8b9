package engine

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// TestEngineWithoutClientOnlyReads: an engine built without a client (the
// status and plan commands, which need no key) plans and reports from the
// warehouse, and refuses to run a sync instead of failing on a nil client.
func TestEngineWithoutClientOnlyReads(t *testing.T) {
	t.Parallel()
	pool, schema := warehousetest.Schema(t)
	log := zaptest.NewLogger(t)
	now := func() time.Time { return time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC) }
	store, ledger := storeAndLedger(t, pool, schema, log, now)
	eng, err := New(Deps{Pool: pool, Store: store, Ledger: ledger, Logger: log},
		Settings{Schema: schema, DailyQuota: 10000, QuotaReserve: 0.05, Mail: MailSettings{StartDate: now().AddDate(0, -1, 0)}, Now: now})
	if err != nil {
		t.Fatalf("New without a client: %v", err)
	}
	ctx := t.Context()
	rep, err := eng.Status(ctx, 5)
	if err != nil || rep.Schema != schema || rep.QuotaLeft != 9500 {
		t.Fatalf("Status = %+v, %v; want schema %s with 9500 requests left", rep, err, schema)
	}
	p, err := eng.Plan(ctx, nil)
	if err != nil || p.Budget != 9500 {
		t.Fatalf("Plan = %+v, %v", p, err)
	}
	if _, err := eng.Run(ctx, Request{Trigger: TriggerTest}); !errors.Is(err, ErrNoClient) {
		t.Fatalf("Run without a client = %v, want ErrNoClient", err)
	}
}
