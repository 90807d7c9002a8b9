package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

func TestMain(m *testing.M) { warehousetest.Main(m) }

// syncEnv is the environment of a run against an in-process sandbox and a
// fresh schema, migrated.
func syncEnv(t *testing.T, sb *sandbox.Server, o sandbox.Options, extra map[string]string) map[string]string {
	t.Helper()
	vars := map[string]string{
		"DATABASE_URL":            warehousetest.DSN(t),
		"WAREHOUSE_SCHEMA":        warehousetest.NewSchemaName(t),
		"AGENCY_BASE_URL":         sb.APIURL(),
		"AGENCY_COMMS_URL":        sb.CommsURL(),
		"AGENCY_API_KEY":          o.APIKey,
		"AGENCY_COMMS_KEY":        o.CommsKey,
		"AGENCY_COMMS_DOMAIN_ID":  "1",
		"AGENCY_COMMS_USER_IDS":   fmt.Sprintf("1-%d", o.Users),
		"AGENCY_COMMS_START_DATE": o.Start.AddDate(0, 0, -o.HistoryDays-1).Format("2006-01-02"),
		"AGENCY_RATE_LIMIT":       "200",
		"LOG_FORMAT":              "json",
	}
	for k, v := range extra {
		vars[k] = v
	}
	// The read-only commands (check, plan, status) need a migrated schema.
	if code, _, errs := mainWith(vars, "migrate", "up"); code != ExitOK {
		t.Fatalf("migrate up: exit %d: %s", code, errs)
	}
	return vars
}

func startSandbox(t *testing.T, mutate func(*sandbox.Options)) (*sandbox.Server, sandbox.Options) {
	t.Helper()
	o := sandbox.DefaultOptions()
	o.Brands, o.ProjectsPerBrand, o.Users, o.Emails, o.HistoryDays = 3, 2, 10, 1500, 30
	// The commands run on the real clock: the history ends today, so that
	// the last 30 days (check's first window) always hold e-mails.
	o.Start = time.Now().UTC().Truncate(24 * time.Hour)
	o.NoLimits = true
	o.APIKey, o.CommsKey = testAPIKey, testCommsKey
	if mutate != nil {
		mutate(&o)
	}
	sb, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, o
}

func mainWith(vars map[string]string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, ReadFile: os.ReadFile,
		Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	code := Main(context.Background(), args, env)
	return code, out.String(), errb.String()
}

func TestRunStatusPlanExitCodes(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, nil)

	code, out, errs := mainWith(vars, "plan")
	if code != ExitOK || !strings.Contains(out, "communications-backfill") {
		t.Fatalf("plan exit %d:\n%s\n%s", code, out, errs)
	}
	if st := sb.Stats(); st.Requests != 0 {
		t.Fatalf("plan sent %d requests", st.Requests)
	}
	code, out, errs = mainWith(vars, "run")
	if code != ExitOK {
		t.Fatalf("run exit %d:\n%s", code, errs)
	}
	assertNoSecrets(t, out, errs)
	if !strings.Contains(errs, `"msg":"sync summary"`) || !strings.Contains(errs, `"run_id"`) {
		t.Errorf("no summary line with run_id:\n%s", errs)
	}
	code, out, errs = mainWith(vars, "status", "--json")
	if code != ExitOK {
		t.Fatalf("status exit %d: %s", code, errs)
	}
	var rep struct {
		Streams []struct {
			Stream string `json:"stream"`
			Rows   int    `json:"rows"`
		} `json:"streams"`
		Runs []struct {
			Status string `json:"status"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Status != "succeeded" || len(rep.Streams) != 4 {
		t.Fatalf("status: %+v", rep)
	}
	code, out, _ = mainWith(vars, "status")
	if code != ExitOK || !strings.Contains(out, "communications") || !strings.Contains(out, "succeeded") {
		t.Fatalf("status table exit %d:\n%s", code, out)
	}
	code, _, errs = mainWith(vars, "backfill", "--from", o.Start.AddDate(0, 0, -3).Format("2006-01-02"), "--to", o.Start.Format("2006-01-02"))
	if code != ExitOK {
		t.Fatalf("backfill exit %d: %s", code, errs)
	}
	// Without a range: the days the nightly refresh would re-read next.
	code, _, errs = mainWith(vars, "backfill")
	if code != ExitOK {
		t.Fatalf("backfill without a range exit %d: %s", code, errs)
	}
	code, _, errs = mainWith(vars, "run", "--full-refresh", "communications", "--streams", "communications")
	if code != ExitOK {
		t.Fatalf("full refresh exit %d: %s", code, errs)
	}
	for _, bad := range [][]string{{"run", "--streams", "emails"}, {"backfill", "--from", "yesterday"}, {"backfill", "--stream", "brands", "--from", "2024-01-01"}, {"run", "extra"}} {
		if code, _, errs := mainWith(vars, bad...); code != ExitUsage {
			t.Errorf("%v exit %d, want %d: %s", bad, code, ExitUsage, errs)
		}
	}
}

func TestRunBudgetExits75(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, map[string]string{"AGENCY_DAILY_QUOTA": "8", "AGENCY_QUOTA_RESERVE": "0%"})
	code, _, errs := mainWith(vars, "run")
	if code != ExitIncomplete {
		t.Fatalf("run with a tiny budget exit %d, want %d:\n%s", code, ExitIncomplete, errs)
	}
	if st := sb.Stats(); st.Keyed() != 8 || st.QuotaExceeded != 0 {
		t.Fatalf("sent %d requests with the key (%d daily-quota refusals), want exactly the budget of 8", st.Keyed(), st.QuotaExceeded)
	}
}

// TestExitIncompleteSetting: with SYNC_EXIT_INCOMPLETE=0 (the Kubernetes
// CronJob's setting, where every non-zero exit is a failed Job) a run that
// the day's budget ended exits 0 — still recorded partial — while a signal
// still exits 75.
func TestExitIncompleteSetting(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, map[string]string{"AGENCY_DAILY_QUOTA": "8", "AGENCY_QUOTA_RESERVE": "0%", "SYNC_EXIT_INCOMPLETE": "0"})
	code, _, errs := mainWith(vars, "run")
	if code != ExitOK || !strings.Contains(errs, `"exit_code":0`) {
		t.Fatalf("run with a tiny budget and SYNC_EXIT_INCOMPLETE=0: exit %d, want 0 with the incomplete line saying so:\n%s", code, errs)
	}
	code, out, errs := mainWith(vars, "status", "--json")
	if code != ExitOK || !strings.Contains(out, `"status": "partial"`) {
		t.Fatalf("status after the budget ended the run: exit %d, want the run recorded partial:\n%s\n%s", code, out, errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ob, eb bytes.Buffer
	env := Env{Stdout: &ob, Stderr: &eb, ReadFile: os.ReadFile, Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	if code := Main(ctx, []string{"run"}, env); code != ExitIncomplete {
		t.Fatalf("run stopped by a signal with SYNC_EXIT_INCOMPLETE=0: exit %d, want %d (a signal always exits 75):\n%s", code, ExitIncomplete, eb.String())
	}
	for _, bad := range []string{"1", "x", "-1"} {
		vars["SYNC_EXIT_INCOMPLETE"] = bad
		if code, _, errs := mainWith(vars, "status"); code != ExitUsage || !strings.Contains(errs, "SYNC_EXIT_INCOMPLETE") {
			t.Errorf("SYNC_EXIT_INCOMPLETE=%s: exit %d, want 2 naming it: %s", bad, code, errs)
		}
	}
}

// TestRevokedKeysExit3AfterOneRequestEach: both keys revoked, each
// interface is asked once (a refused key ends only its own interface's
// streams), and the run exits 3.
func TestRevokedKeysExit3AfterOneRequestEach(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, map[string]string{"AGENCY_API_KEY": o.RevokedKey, "AGENCY_COMMS_KEY": o.RevokedKey})
	code, out, errs := mainWith(vars, "run")
	if code != ExitCredential {
		t.Fatalf("revoked key exit %d, want %d:\n%s", code, ExitCredential, errs)
	}
	if st := sb.Stats(); st.Keyed() != 2 || st.Keyless > 1 {
		t.Errorf("%d requests with a revoked key (and %d keyless), want 2, one per interface (and at most the one clock probe)", st.Keyed(), st.Keyless)
	}
	if !strings.Contains(errs, "My Account") {
		t.Errorf("the message does not say where to regenerate the token:\n%s", errs)
	}
	assertNoSecrets(t, out, errs)
}

func TestSecondRunSkipsWhileLocked(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, func(o *sandbox.Options) { o.Latency = 50_000_000 }) // 50ms
	vars := syncEnv(t, sb, o, nil)
	type outcome struct {
		code int
		errs string
	}
	ch := make(chan outcome, 2)
	for range 2 {
		go func() {
			code, _, errs := mainWith(vars, "run")
			ch <- outcome{code, errs}
		}()
	}
	a, b := <-ch, <-ch
	if a.code != ExitOK || b.code != ExitOK {
		t.Fatalf("exit codes %d and %d, want 0 and 0:\n%s\n%s", a.code, b.code, a.errs, b.errs)
	}
	skipped := strings.Contains(a.errs, "holds the lock") != strings.Contains(b.errs, "holds the lock")
	if !skipped {
		t.Fatalf("exactly one run should report the lock:\n%s\n----\n%s", a.errs, b.errs)
	}
}

func TestInterruptCommitsAndExits75Quickly(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, func(o *sandbox.Options) { o.Emails = 20000; o.Latency = 100 * time.Millisecond })
	vars := syncEnv(t, sb, o, map[string]string{"AGENCY_RATE_LIMIT": "10"})
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, ReadFile: os.ReadFile,
		Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	done := make(chan int, 1)
	go func() { done <- Main(ctx, []string{"run"}, env) }()
	// Interrupt once the sync is under way.
	for sb.Stats().Requests < 5 && len(done) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	sent := sb.Stats().Requests
	select {
	case code := <-done:
		if code != ExitIncomplete {
			t.Fatalf("interrupted run exit %d, want %d:\n%s", code, ExitIncomplete, errb.String())
		}
	case <-patience.After(t):
		t.Fatal("no exit after the interrupt before the test's deadline")
	}
	// Stopping at once means no request leaves after the interrupt: at 10/s
	// with 100 ms answers one request is in flight, and one more may have
	// left, paced, as the interrupt came. (The sync left has 20 000
	// e-mails, 20 pages and more.)
	if after := sb.Stats().Requests - sent; after > 2 {
		t.Errorf("%d requests reached the service after the interrupt, want at most 2", after)
	}
	if !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("the log does not say the run was interrupted:\n%s", errb.String())
	}
	// The lock was released: the next run proceeds and completes.
	vars["AGENCY_RATE_LIMIT"] = "500"
	if err := sb.SetLatency(0, 0); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("run after the interrupt exit %d:\n%s", code, errs)
	}
}

// TestSignalBeforeTheRunStartsExits75: a SIGTERM (the context cancelled)
// while the command is still opening the warehouse is an interruption, exit
// 75 like any stopped run, not a failure (exit 1).
func TestSignalBeforeTheRunStartsExits75(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, ReadFile: os.ReadFile,
		Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	if code := Main(ctx, []string{"run"}, env); code != ExitIncomplete {
		t.Fatalf("run stopped before it started: exit %d, want %d\n%s", code, ExitIncomplete, errb.String())
	}
	if st := sb.Stats(); st.Requests != 0 {
		t.Fatalf("%d requests sent after the signal", st.Requests)
	}
}
