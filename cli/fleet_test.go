package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/fleet"
	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// fleetRig is a FLEET_FILE over in-process sandboxes, its key files in a
// temporary folder, and a fresh queue schema.
type fleetRig struct {
	t       *testing.T
	dir     string
	vars    map[string]string // the fleet worker's environment
	schemas map[string]string // agency → warehouse schema
}

// newFleetRig writes FLEET_FILE with one agency per sandbox, named a0, a1, …
func newFleetRig(t *testing.T, sbs []*sandbox.Server, opts []sandbox.Options) *fleetRig {
	t.Helper()
	r := &fleetRig{t: t, dir: t.TempDir(), schemas: map[string]string{}}
	var b strings.Builder
	b.WriteString("agencies:\n")
	for i, sb := range sbs {
		o := opts[i]
		name := fmt.Sprintf("a%d", i)
		r.schemas[name] = warehousetest.NewSchemaName(t)
		for f, v := range map[string]string{"api": o.APIKey, "comms": o.CommsKey} {
			r.writeKey(name+"_"+f, v)
		}
		fmt.Fprintf(&b, "  - name: %s\n    schema: %s\n    env:\n", name, r.schemas[name])
		for k, v := range map[string]string{
			"AGENCY_BASE_URL": sb.APIURL(), "AGENCY_COMMS_URL": sb.CommsURL(),
			"AGENCY_API_KEY_FILE": name + "_api", "AGENCY_COMMS_KEY_FILE": name + "_comms",
			"AGENCY_COMMS_DOMAIN_ID": "1", "AGENCY_COMMS_USER_IDS": fmt.Sprintf("1-%d", o.Users),
			"AGENCY_COMMS_START_DATE": o.Start.AddDate(0, 0, -o.HistoryDays-1).Format("2006-01-02"),
			"AGENCY_RATE_LIMIT":       "200", "SYNC_SCHEDULE": "0 0 1 1 *",
		} {
			fmt.Fprintf(&b, "      %s: %q\n", k, v)
		}
	}
	r.writeFile("fleet.yaml", b.String())
	r.vars = map[string]string{"DATABASE_URL": warehousetest.DSN(t), "FLEET_FILE": filepath.Join(r.dir, "fleet.yaml"),
		"FLEET_SCHEMA": warehousetest.NewSchemaName(t), "FLEET_WORKER_ID": "cli-test", "HTTP_ADDR": "127.0.0.1:0", "LOG_FORMAT": "json"}
	return r
}

func (r *fleetRig) writeFile(name, content string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *fleetRig) writeKey(name, v string) { r.writeFile(name, v) }

// succeeded counts the succeeded runs of an agency's schema (0 before its
// tables exist).
func (r *fleetRig) succeeded(agency string) int {
	var n int
	err := warehousetest.Pool(r.t).QueryRow(context.Background(), "SELECT count(*) FROM "+
		pgx.Identifier{r.schemas[agency], "sync_runs"}.Sanitize()+" WHERE status = 'succeeded'").Scan(&n)
	if err != nil {
		return 0
	}
	return n
}

// TestFleetServeAndStatus: fleet serve syncs every agency of FLEET_FILE
// through the single-agency path, fleet status --json then lists them idle
// with their succeeded run and quota, and SIGTERM (the context) ends serve
// with exit 0.
func TestFleetServeAndStatus(t *testing.T) {
	t.Parallel()
	var sbs []*sandbox.Server
	var opts []sandbox.Options
	for i := range 2 {
		sb, o := startSandbox(t, func(o *sandbox.Options) { o.Seed = int64(10 + i) })
		sbs, opts = append(sbs, sb), append(opts, o)
	}
	r := newFleetRig(t, sbs, opts)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &lockedBuffer{b: &errb}, ReadFile: os.ReadFile,
		Lookup: func(k string) (string, bool) { v, ok := r.vars[k]; return v, ok }}
	done := make(chan int, 1)
	go func() { done <- Main(ctx, []string{"fleet", "serve"}, env) }()
	// Both synced and their jobs settled: fleet status shows them idle.
	var rep fleet.Report
	var stdout string
	deadline := patience.After(t)
	for !allIdle(&rep) {
		select {
		case code := <-done:
			t.Fatalf("fleet serve ended with %d:\n%s", code, env.Stderr.(*lockedBuffer).String())
		case <-deadline:
			cancel()
			t.Fatalf("the agencies were not synced before the test's deadline: %s\n%s", stdout, env.Stderr.(*lockedBuffer).String())
		case <-time.After(200 * time.Millisecond):
		}
		if r.succeeded("a0") == 0 || r.succeeded("a1") == 0 {
			continue
		}
		var code int
		var errs string
		code, stdout, errs = mainWith(r.vars, "fleet", "status", "--json")
		if code != ExitOK {
			t.Fatalf("fleet status: exit %d\n%s", code, errs)
		}
		rep = fleet.Report{}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("fleet status --json: %v\n%s", err, stdout)
		}
	}
	for _, a := range rep.Agencies {
		if a.LastRun == nil || a.LastRun.Status != "succeeded" || a.QuotaSpent == 0 || a.NextRun == nil || a.Schema != r.schemas[a.Agency] {
			t.Errorf("agency %s: %+v", a.Agency, a)
		}
	}
	if code, text, _ := mainWith(r.vars, "fleet", "status"); code != ExitOK || !strings.Contains(text, "AGENCY") || !strings.Contains(text, "a1") {
		t.Errorf("fleet status: exit %d\n%s", code, text)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("fleet serve after SIGTERM: exit %d", code)
	}
	logs := env.Stderr.(*lockedBuffer).String()
	for _, k := range []string{opts[0].APIKey, opts[0].CommsKey} {
		if strings.Contains(logs+stdout, k) {
			t.Errorf("a key is in the output")
		}
	}
	if !strings.Contains(logs, `"agency":"a0"`) || !strings.Contains(logs, "fleet worker stopped") {
		t.Errorf("the log lacks the agency's lines or the stop:\n%s", logs)
	}
}

// allIdle reports whether the report lists two agencies, both idle.
func allIdle(rep *fleet.Report) bool {
	if len(rep.Agencies) != 2 {
		return false
	}
	for _, a := range rep.Agencies {
		if a.State != fleet.StateIdle {
			return false
		}
	}
	return true
}

// TestFleetRefusesAnInlineKeyAtStart: a key given inline in FLEET_FILE
// stops fleet serve at start with exit 2, naming the agency and the
// variable, never the key.
func TestFleetRefusesAnInlineKeyAtStart(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	r := newFleetRig(t, []*sandbox.Server{sb}, []sandbox.Options{o})
	b, err := os.ReadFile(r.vars["FLEET_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), `AGENCY_API_KEY_FILE: "a0_api"`, `AGENCY_API_KEY: "`+o.APIKey+`"`, 1)
	r.writeFile("fleet.yaml", text)
	for _, cmd := range [][]string{{"fleet", "serve"}, {"fleet", "status"}} {
		code, stdout, errs := mainWith(r.vars, cmd...)
		if code != ExitUsage || !strings.Contains(errs, "agency a0") || !strings.Contains(errs, "AGENCY_API_KEY") || !strings.Contains(errs, "inline") {
			t.Errorf("%v with an inline key: exit %d, stderr %s; want 2 naming agency a0 and AGENCY_API_KEY", cmd, code, errs)
		}
		if strings.Contains(stdout+errs, o.APIKey) {
			t.Errorf("%v: the key is in the output", cmd)
		}
	}
}

// TestFleetUsage: fleet needs serve or status, and DATABASE_URL.
func TestFleetUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		vars map[string]string
		args []string
		says string
	}{
		{map[string]string{}, []string{"fleet"}, "serve or status"},
		{map[string]string{}, []string{"fleet", "run"}, "want serve or status"},
		{map[string]string{"FLEET_FILE": "/nonexistent"}, []string{"fleet", "serve"}, "DATABASE_URL"},
		{map[string]string{}, []string{"fleet", "serve"}, "FLEET_FILE"},
		{map[string]string{"FLEET_FILE": "/nonexistent", "DATABASE_URL": "postgres://x@127.0.0.1:1/x", "FLEET_CONCURRENCY": "0"}, []string{"fleet", "status"}, "FLEET_CONCURRENCY"},
	} {
		code, _, errs := mainWith(c.vars, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.says) {
			t.Errorf("%v %v: exit %d, %s; want 2 saying %q", c.vars, c.args, code, errs, c.says)
		}
	}
}

// TestFleetQuotaReadsTheServiceClock: after a sync the daily quota stopped,
// Quota reads the service's clock (one keyless request) and tells that
// nothing is left and when the service's next quota day starts.
func TestFleetQuotaReadsTheServiceClock(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, func(o *sandbox.Options) {
		o.NoLimits, o.Rate, o.DailyQuota = false, 1000, 12
		o.Start = time.Date(2026, 3, 4, 23, 50, 0, 0, time.UTC) // ten minutes before the service's midnight
	})
	r := newFleetRig(t, []*sandbox.Server{sb}, []sandbox.Options{o})
	r.vars["AGENCY_DAILY_QUOTA"] = "999" // the worker's own: no agency's (FLEET_FILE sets none: the default 10000)
	b, _ := os.ReadFile(r.vars["FLEET_FILE"])
	r.writeFile("fleet.yaml", strings.Replace(string(b), "    env:\n", "    env:\n      AGENCY_DAILY_QUOTA: \"12\"\n      AGENCY_QUOTA_RESERVE: \"0%\"\n", 1))
	a := &app{env: Env{Stderr: io.Discard, ReadFile: os.ReadFile, Lookup: func(k string) (string, bool) { v, ok := r.vars[k]; return v, ok }}}
	cfg, err := config.LoadFrom(context.Background(), config.Environment{Lookup: a.env.Lookup, ReadFile: os.ReadFile}, Known())
	if err != nil {
		t.Fatal(err)
	}
	a.cfg = cfg
	set, err := config.FleetSettingsFrom(context.Background(), a.env.Lookup)
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.newFleetAgencies(set)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.Load(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := f.Sync(ctx, "a0", nil)
	if err != nil || res.Status != "partial" || res.RequestsUsed == 0 || res.RequestsUsed > 12 {
		t.Fatalf("the sync: %s, %d requests, %v; want partial within the quota of 12", res.Status, res.RequestsUsed, err)
	}
	before := sb.Stats()
	q, err := f.Quota(ctx, "a0")
	if err != nil {
		t.Fatal(err)
	}
	after := sb.Stats()
	if q.Left != 0 || q.Day.Format(time.DateOnly) != "2026-03-04" {
		t.Errorf("quota %+v: want nothing left on 2026-03-04", q)
	}
	if d := time.Until(q.NextDay); d < 9*time.Minute || d > 11*time.Minute {
		t.Errorf("the next quota day starts in %s, want about 10 minutes (the service's clock)", d)
	}
	if after.Requests != before.Requests+1 || after.Keyless != before.Keyless+1 || after.QuotaUsed != before.QuotaUsed {
		t.Errorf("Quota sent %d requests (%d keyless, %d counted): want one keyless request", after.Requests-before.Requests,
			after.Keyless-before.Keyless, after.QuotaUsed-before.QuotaUsed)
	}
	if _, err := sb.Advance(15 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if q, err = f.Quota(ctx, "a0"); err != nil || q.Left != 12 || q.Day.Format(time.DateOnly) != "2026-03-05" {
		t.Errorf("after the service's midnight: %+v, %v; want the whole quota of 2026-03-05", q, err)
	}
}

// lockedBuffer is a buffer written by one goroutine and read by another.
type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
