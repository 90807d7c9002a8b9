package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// baseStart is the default sandbox clock: yesterday's UTC noon, so that the
// sandbox does not live in the future of the worker's real clock. The
// sandbox's clock stands still between Advance calls while the worker's
// runs: every run reads the service's clock first, and a run that resumes
// after killed ones dates their starts (the database's clock) with the
// offset it reads now, the time since then earlier on the service's clock.
// At a standing midnight every earlier run would fall on the previous
// service day; at noon the scenarios' runs stay on the service's day.
func baseStart() time.Time {
	return time.Now().UTC().Truncate(24 * time.Hour).Add(-12 * time.Hour)
}

// sandboxOptions are the agencysandbox flags a scenario chooses (a zero
// Rate or DailyQuota keeps the binary's default: 10/s, 10 000 a day).
type sandboxOptions = childproc.SandboxOptions

// defaultSandbox is a small agency with the suite's keys and limits off.
func defaultSandbox() sandboxOptions {
	return sandboxOptions{Seed: 7, Emails: 5000, Brands: 10, ProjectsPerBrand: 5, Users: 300, HistoryDays: 90,
		Start: baseStart(), NoLimits: true,
		APIKey: apiKey, CommsKey: commsKey, ForeignKey: foreignKey, RevokedKey: revokedKey, AdminToken: adminToken}
}

// agencyWith is the default sandbox with emails e-mails and the extra
// agencysandbox flags (faults, bad records) of a scenario.
func agencyWith(emails int, flags ...string) sandboxOptions {
	o := defaultSandbox()
	o.Emails, o.Extra = emails, flags
	return o
}

// sandboxProc is a running agencysandbox of a test.
type sandboxProc struct {
	t      *testing.T
	p      *childproc.Sandbox
	apiURL string // {base_url} without /v1, and the admin API
}

// startSandbox starts agencysandbox on loopback ports of the kernel's choice
// (StartSandbox reads them from its "listening" line) and stops it when the
// test ends.
func startSandbox(t *testing.T, o sandboxOptions) *sandboxProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(t))
	defer cancel()
	p, err := childproc.StartSandbox(ctx, sandboxBin, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &sandboxProc{t: t, p: p, apiURL: p.APIURL()}
}

// adminContext bounds one admin call of t by the test's deadline.
func adminContext(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), patience.Left(t))
}

// admin calls the sandbox's admin API and decodes the answer into out (nil:
// discarded); any status but 200 fails the test.
func (s *sandboxProc) admin(method, path string, body, out any) {
	s.t.Helper()
	ctx, cancel := adminContext(s.t)
	defer cancel()
	if err := s.p.Admin(ctx, method, path, body, out); err != nil {
		s.t.Fatal(err)
	}
}

// stats returns the sandbox's counters.
func (s *sandboxProc) stats() sandbox.Stats {
	s.t.Helper()
	ctx, cancel := adminContext(s.t)
	defer cancel()
	st, err := s.p.Stats(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

// advance moves the sandbox clock.
func (s *sandboxProc) advance(d time.Duration) time.Time {
	s.t.Helper()
	ctx, cancel := adminContext(s.t)
	defer cancel()
	now, err := s.p.Advance(ctx, d)
	if err != nil {
		s.t.Fatal(err)
	}
	return now
}

// workerEnv is the worker's environment for a sandbox and a schema, at a
// rate the sandbox (limits off unless a scenario turns them on) allows.
func (s *sandboxProc) workerEnv(dsn, schema string) map[string]string {
	env := s.p.WorkerEnv(dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "1000"
	return env
}

// workerProc is a running agencysync of a test.
type workerProc struct {
	t    *testing.T
	args []string
	p    *childproc.Worker
	done <-chan struct{} // closed when the process has exited
	res  *runResult
	once sync.Once
}

// runResult is how an agencysync process ended.
type runResult struct {
	code    int // -n when signal n ended it
	killed  bool
	stdout  string
	stderr  string
	took    time.Duration
	summary map[string]any // the "sync summary" log line (see childproc.Result.Summary), nil without one
	res     *childproc.Result
}

// startWorker starts agencysync with exactly env (plus PATH, HOME and
// TMPDIR) and args. The process is killed when the test ends.
func startWorker(t *testing.T, env map[string]string, args ...string) *workerProc {
	t.Helper()
	p, err := childproc.StartWorker(agencysyncBin, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{t: t, args: args, p: p, done: p.Done()}
	t.Cleanup(func() { w.kill() })
	return w
}

// running reports whether the process has not exited yet.
func (w *workerProc) running() bool { return w.p.Running() }

// kill sends SIGKILL (unless the process has exited) and waits for its end.
func (w *workerProc) kill() *runResult { return w.finish(w.p.Kill()) }

// wait waits for the process to exit. A process still running when the
// test binary's deadline draws near is killed and the test fails: a slow
// machine is waited for, a hung worker is not.
func (w *workerProc) wait() *runResult {
	w.t.Helper()
	res, err := w.p.Wait(context.Background(), patience.Left(w.t))
	r := w.finish(res)
	if err != nil {
		w.t.Fatalf("agencysync %s did not end before the test's deadline; killed\nstderr:\n%s", strings.Join(w.args, " "), tail(res.Stderr, 40))
	}
	return r
}

// finish keeps the result once, and audits the outputs for keys.
func (w *workerProc) finish(res *childproc.Result) *runResult {
	w.once.Do(func() {
		w.res = &runResult{code: res.Code, killed: res.Killed, stdout: string(res.Stdout), stderr: string(res.Stderr),
			took: res.Wall, summary: res.Summary, res: res}
		name := "agencysync " + strings.Join(w.args, " ")
		auditOutput(w.t, "stdout of "+name, res.Stdout)
		auditOutput(w.t, "stderr of "+name, res.Stderr)
	})
	return w.res
}

// runWorker runs agencysync to its end (at most timeout).
func runWorker(t *testing.T, env map[string]string, args ...string) *runResult {
	t.Helper()
	return startWorker(t, env, args...).wait()
}

func (r *runResult) status() string { return r.res.Status() }

// logLines returns the JSON log lines of stderr whose message is msg.
func (r *runResult) logLines(msg string) []map[string]any { return r.res.LogLines(msg) }

func (r *runResult) num(field string) int { return r.res.Num(field) }

func (r *runResult) String() string {
	return fmt.Sprintf("exit %d, status %q, %d requests, %d retries, %d rejected, %s", r.code, r.status(),
		r.num("requests_used"), r.num("retries"), r.num("rejected"), r.took.Round(time.Millisecond))
}

// errorLines returns the message and error of each error-level log line.
func errorLines(stderr string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		var m struct {
			Level, Msg, Error string
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Level == "error" {
			out = append(out, m.Msg+": "+m.Error)
		}
	}
	return strings.Join(out, "\n")
}

// grepLines returns the lines of s that contain substr.
func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func tail(b []byte, lines int) string {
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// rig is a scenario's sandbox, warehouse schema and worker environment.
type rig struct {
	t      *testing.T
	sc     *scenario
	sb     *sandboxProc
	pool   *pgxpool.Pool
	dsn    string
	schema string
	env    map[string]string
}

// newRig starts a sandbox and picks a fresh schema (dropped at the end, after
// its sync_runs rows were audited for keys).
func newRig(t *testing.T, sc *scenario, o sandboxOptions) *rig {
	t.Helper()
	pool := warehousetest.Pool(t)
	dsn := warehousetest.DSN(t)
	schema := warehousetest.NewSchemaName(t)
	t.Cleanup(func() { auditRuns(t, pool, schema) }) // before the schema is dropped
	sb := startSandbox(t, o)
	return &rig{t: t, sc: sc, sb: sb, pool: pool, dsn: dsn, schema: schema, env: sb.workerEnv(dsn, schema)}
}

// run runs `agencysync run` (or other args) with the rig's environment plus
// extra variables.
func (r *rig) run(extra map[string]string, args ...string) *runResult {
	r.t.Helper()
	if len(args) == 0 {
		args = []string{"run"}
	}
	env := maps.Clone(r.env)
	maps.Copy(env, extra)
	res := runWorker(r.t, env, args...)
	r.t.Logf("agencysync %s: %s", strings.Join(args, " "), res)
	return res
}

// mustSucceed fails the test unless res exited 0 with a succeeded run.
// mustWarn fails the test unless the run exited 0 and ended warning (it
// synced everything, with open rejects or coverage warnings).
func mustWarn(t *testing.T, what string, res *runResult) {
	t.Helper()
	if res.code != 0 || res.status() != "warning" {
		t.Fatalf("%s: %s, want exit 0 and a warning run\nstderr:\n%s", what, res, tail([]byte(res.stderr), 30))
	}
}

func mustSucceed(t *testing.T, what string, res *runResult) {
	t.Helper()
	if res.code != 0 || res.status() != "succeeded" {
		t.Fatalf("%s: %s, want exit 0 and a succeeded run\nstderr:\n%s", what, res, tail([]byte(res.stderr), 30))
	}
}

// waitFor polls cond every interval until it holds. The conditions are
// events (a page committed, a process ended), so it waits as long as the
// machine needs; only when the test binary's deadline draws near does it
// give up, failing the test, so that the suite reports which wait hung
// instead of panicking on its timeout.
func waitFor(t *testing.T, what string, interval time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(patience.Left(t))
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: not before the test's deadline", what)
			return false
		}
		time.Sleep(interval)
	}
}

// syncLockFree waits until no session holds the schema's sync lock (a killed
// worker's backend may outlive it for a moment), so that the next run does
// not skip.
func (r *rig) syncLockFree(lockID int64) {
	r.t.Helper()
	ok := waitFor(r.t, "sync lock released", 20*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := r.pool.Acquire(ctx)
		if err != nil {
			return false
		}
		defer conn.Release()
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lockID).Scan(&got); err != nil || !got {
			return false
		}
		_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockID)
		return true
	})
	if !ok {
		r.t.FailNow()
	}
}
