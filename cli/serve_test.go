package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/loopback"
)

// metricValue reads one sample of a Prometheus text exposition.
func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics lacks %s:\n%s", series, body)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestServeMetricsFromTheStart: right after a restart, /metrics shows the
// warehouse's quota left (from the ledger), each stream's last success (from
// sync_state) and the next scheduled run, before any scheduled sync; SIGTERM
// ends serve with an info line saying why.
func TestServeMetricsFromTheStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vars := sourceVars(t)
	vars["SYNC_SCHEDULE"] = "0 0 1 1 *" // never during the test
	vars["SYNC_STREAM_SCHEDULES"] = "communications=30 4 * * *"
	if code, _, errs := mainWith(vars, "migrate", "up"); code != ExitOK {
		t.Fatalf("migrate up exit %d: %s", code, errs)
	}
	schema := vars["WAREHOUSE_SCHEMA"]
	conn, err := pgx.Connect(ctx, vars["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// No run of this process yet: what it shows comes from the warehouse.
	success := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, q := range []string{
		"INSERT INTO " + pgx.Identifier{schema, "api_quota_usage"}.Sanitize() + " (day, requests) VALUES ((now() AT TIME ZONE 'UTC')::date, 1234)",
		"INSERT INTO " + pgx.Identifier{schema, "sync_state"}.Sanitize() + " (stream, last_success_at) VALUES ('brands', '" + success.Format(time.RFC3339) + "')",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	addr := loopback.FreeAddr(t)
	vars["HTTP_ADDR"] = addr
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var out, errb childproc.Buffer
	env := Env{Stdout: &out, Stderr: &errb, ReadFile: os.ReadFile,
		Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	done := make(chan int, 1)
	go func() { done <- Main(sctx, []string{"serve"}, env) }()
	var body string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && body == ""; time.Sleep(50 * time.Millisecond) {
		select {
		case c := <-done:
			t.Fatalf("serve exited %d:\n%s", c, errb.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}
	now := time.Now().UTC()
	// The oracle: 10 000 a day, 5 % (500) kept back, 1 234 spent.
	if v := metricValue(t, body, "agencysync_quota_left_requests"); v != 10000-500-1234 {
		t.Errorf("quota left %v at start, want %d", v, 10000-500-1234)
	}
	if v := metricValue(t, body, "agencysync_quota_spent_requests"); v != 1234 {
		t.Errorf("quota spent %v at start, want 1234", v)
	}
	if v := metricValue(t, body, `agencysync_last_success_timestamp_seconds{stream="brands"}`); v != float64(success.Unix()) {
		t.Errorf("brands last success %v at start, want %d", v, success.Unix())
	}
	newYear := time.Date(now.Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
	if v := metricValue(t, body, `agencysync_next_run_timestamp_seconds{stream="brands"}`); v != float64(newYear.Unix()) {
		t.Errorf("brands next run %v, want %d (%s)", v, newYear.Unix(), newYear)
	}
	at430 := time.Date(now.Year(), now.Month(), now.Day(), 4, 30, 0, 0, time.UTC)
	if !at430.After(now) {
		at430 = at430.AddDate(0, 0, 1)
	}
	if v := metricValue(t, body, `agencysync_next_run_timestamp_seconds{stream="communications"}`); v != float64(at430.Unix()) {
		t.Errorf("communications next run %v, want %d (%s)", v, at430.Unix(), at430)
	}

	cancel(errors.New("terminated signal received"))
	if c := <-done; c != ExitOK {
		t.Fatalf("serve exit %d after SIGTERM:\n%s", c, errb.String())
	}
	var stopped string
	for line := range strings.SplitSeq(errb.String(), "\n") {
		if strings.Contains(line, `"msg":"serve stopped"`) {
			stopped = line
		}
	}
	if !strings.Contains(stopped, `"level":"info"`) || !strings.Contains(stopped, `"reason":"terminated signal received"`) {
		t.Fatalf("serve's last words %q; want an info line \"serve stopped\" with the reason:\n%s", stopped, errb.String())
	}
}

// TestUnmigratedSchemaSaysMigrateUp: with auto-migrate off, an unmigrated
// schema is named with the command that fixes it, not a raw SQLSTATE.
func TestUnmigratedSchemaSaysMigrateUp(t *testing.T) {
	t.Parallel()
	vars := sourceVars(t)
	vars["SYNC_AUTO_MIGRATE"] = "false"
	for _, args := range [][]string{{"status"}, {"plan"}, {"run", "--streams", "brands"}} {
		code, _, errs := mainWith(vars, args...)
		if code == ExitOK || !strings.Contains(errs, "run `agencysync migrate up`") || strings.Contains(errs, "42P01") {
			t.Fatalf("%v on an unmigrated schema: exit %d, stderr %s", args, code, errs)
		}
	}
	delete(vars, "SYNC_AUTO_MIGRATE")
	code, _, errs := mainWith(vars, "run", "--no-migrate", "--streams", "brands")
	if code == ExitOK || !strings.Contains(errs, "run `agencysync migrate up`") {
		t.Fatalf("run --no-migrate on an unmigrated schema: exit %d, stderr %s", code, errs)
	}
}

// TestMigrateDownAsksForYes: migrate down drops tables only with --yes;
// without it, exit 2 and a message naming what would be dropped.
func TestMigrateDownAsksForYes(t *testing.T) {
	t.Parallel()
	vars := sourceVars(t)
	if code, _, errs := mainWith(vars, "migrate", "up"); code != ExitOK {
		t.Fatalf("migrate up: %d %s", code, errs)
	}
	_, before, _ := mainWith(vars, "migrate", "status")
	// The newest migration, read off the status listing.
	applied := regexp.MustCompile(`(?m)^\s+\d+\s+(\S+\.sql)\s+applied`).FindAllStringSubmatch(before, -1)
	if len(applied) == 0 {
		t.Fatalf("migrate status after up:\n%s", before)
	}
	newest := applied[len(applied)-1][1]
	code, _, errs := mainWith(vars, "migrate", "down")
	if code != ExitUsage || !strings.Contains(errs, "--yes") || !strings.Contains(errs, newest) || !strings.Contains(errs, vars["WAREHOUSE_SCHEMA"]) {
		t.Fatalf("migrate down without --yes: exit %d, stderr %s; want 2 naming the migration, the schema and --yes", code, errs)
	}
	if _, after, _ := mainWith(vars, "migrate", "status"); after != before {
		t.Fatalf("migrate down without --yes changed the schema:\n%s\n%s", before, after)
	}
	if code, _, errs := mainWith(vars, "migrate", "down", "--yes"); code != ExitOK {
		t.Fatalf("migrate down --yes: %d %s", code, errs)
	}
	if _, after, _ := mainWith(vars, "migrate", "status"); !regexp.MustCompile(regexp.QuoteMeta(newest) + `\s+pending`).MatchString(after) {
		t.Fatalf("after migrate down --yes:\n%s", after)
	}
}
