package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// TestQuotaDayIsTheServicesDay: the service's clock runs two days ahead of the
// worker's. Every request lands on the service's quota day in the ledger, the
// offset is kept for the next process, and after the service's clock moves a
// day on, an increment fetches the e-mails of the service's new today —
// which the worker's own calendar has not reached.
func TestQuotaDayIsTheServicesDay(t *testing.T) {
	t.Parallel()
	svcNow := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Second)
	sb, o := startSandbox(t, func(o *sandbox.Options) {
		o.Start = svcNow
		o.Emails, o.HistoryDays = 300, 10
	})
	vars := syncEnv(t, sb, o, nil)

	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("run exit %d:\n%s", code, errs)
	}
	pool := warehousetest.Pool(t)
	schema := vars["WAREHOUSE_SCHEMA"]
	ledger := quotaRows(t, pool, schema)
	st := sb.Stats()
	if len(ledger) != 1 || ledger[st.QuotaDay] != st.Keyed() {
		t.Fatalf("ledger %v; the service counted %d requests on its day %s", ledger, st.Keyed(), st.QuotaDay)
	}
	var offset int64
	if err := pool.QueryRow(context.Background(), "SELECT offset_seconds FROM "+pgx.Identifier{schema, "service_clock"}.Sanitize()).Scan(&offset); err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(offset) * time.Second; d < 47*time.Hour || d > 49*time.Hour {
		t.Fatalf("kept offset %v, want about 48h", d)
	}

	// A day later on the service's clock: 40 new e-mails dated its today.
	if _, err := sb.Advance(24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sb.AppendEmails(40); err != nil {
		t.Fatal(err)
	}
	code, out, errs := mainWith(vars, "plan")
	if code != ExitOK {
		t.Fatalf("plan exit %d: %s", code, errs)
	}
	// plan sends nothing, so its quota day comes from the kept offset: the
	// service's day before the move, on which the first run spent its
	// requests (the worker's own calendar is two days behind).
	if want := fmt.Sprintf("quota day %s: daily quota %s, reserve %s, spent %d,", st.QuotaDay, "10000", "500", st.Keyed()); !strings.Contains(out, want) {
		t.Fatalf("plan output lacks %q:\n%s", want, out)
	}
	if code, _, errs := mainWith(vars, "run", "--streams", "communications"); code != ExitOK {
		t.Fatalf("increment exit %d:\n%s", code, errs)
	}
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{schema, "emails"}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := sb.Stats().Emails; n != want {
		t.Fatalf("warehouse holds %d e-mails, the service %d", n, want)
	}
	st2 := sb.Stats()
	ledger = quotaRows(t, pool, schema)
	if ledger[st2.QuotaDay] != st2.Keyed()-st.Keyed() || len(ledger) != 2 {
		t.Fatalf("ledger %v; the service counted %d requests on its new day %s", ledger, st2.Keyed()-st.Keyed(), st2.QuotaDay)
	}
}

// quotaRows is the quota ledger's requests by day.
func quotaRows(t *testing.T, pool warehousetest.Querier, schema string) map[string]int64 {
	t.Helper()
	return warehousetest.Counts[int64](t, pool, "SELECT day::text, requests FROM "+pgx.Identifier{schema, "api_quota_usage"}.Sanitize())
}
