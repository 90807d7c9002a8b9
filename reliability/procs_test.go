package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/sandbox"
	"github.com/agencysync/agencysync/warehouse/warehousetest"
)

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// freePort returns a loopback port that was free a moment ago. The sandbox
// binary needs fixed addresses; a lost race on the port is retried.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// baseStart is the default sandbox clock: yesterday's UTC midnight. The
// worker's own clock is the real one (its backfill ends today, its quota day
// is today), so the sandbox must not live in the future.
func baseStart() time.Time {
	return time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
}

// sandboxOptions are the agencysandbox flags a scenario chooses.
type sandboxOptions struct {
	Emails, Brands, ProjectsPerBrand, Users, HistoryDays int
	Start                                                time.Time
	NoLimits                                             bool
	Rate                                                 float64 // 0: the binary's default (10)
	DailyQuota                                           int     // 0: the binary's default (10 000)
	Latency                                              time.Duration
	Extra                                                []string // faults, bad records, variants
}

func defaultSandbox() sandboxOptions {
	return sandboxOptions{Emails: 5000, Brands: 10, ProjectsPerBrand: 5, Users: 300, HistoryDays: 90,
		Start: baseStart(), NoLimits: true}
}

func (o sandboxOptions) flags() []string {
	f := []string{
		"--seed", "7", "--emails", strconv.Itoa(o.Emails), "--brands", strconv.Itoa(o.Brands),
		"--projects-per-brand", strconv.Itoa(o.ProjectsPerBrand), "--users", strconv.Itoa(o.Users),
		"--history-days", strconv.Itoa(o.HistoryDays), "--start", o.Start.Format(time.RFC3339),
		"--api-key", apiKey, "--comms-key", commsKey, "--foreign-key", foreignKey, "--revoked-key", revokedKey,
		"--admin-token", adminToken, "--log-format", "json", "--log-level", "info",
	}
	if o.NoLimits {
		f = append(f, "--no-limits")
	}
	if o.Rate > 0 {
		f = append(f, "--rate", strconv.FormatFloat(o.Rate, 'f', -1, 64))
	}
	if o.DailyQuota > 0 {
		f = append(f, "--daily-quota", strconv.Itoa(o.DailyQuota))
	}
	if o.Latency > 0 {
		f = append(f, "--latency", o.Latency.String())
	}
	return append(f, o.Extra...)
}

// commsStartDate is AGENCY_COMMS_START_DATE: the day before the history.
func (o sandboxOptions) commsStartDate() string {
	return o.Start.AddDate(0, 0, -o.HistoryDays-1).Format(time.DateOnly)
}

// sandboxProc is a running agencysandbox.
type sandboxProc struct {
	t        *testing.T
	opts     sandboxOptions
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *lockedBuffer
	apiURL   string // {base_url} without /v1, and the admin API
	commsURL string // {communications_url} without the path
	client   *http.Client
}

// startSandbox starts agencysandbox on free ports (retrying a lost race for
// them) and stops it when the test ends.
func startSandbox(t *testing.T, o sandboxOptions) *sandboxProc {
	t.Helper()
	var lastLog []byte
	for attempt := 1; attempt <= 5; attempt++ {
		s, inUse, err := tryStartSandbox(t, o)
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		lastLog = s.log.Bytes()
		if !inUse {
			t.Fatalf("start agencysandbox: %v\n%s", err, lastLog)
		}
		t.Logf("agencysandbox lost the race for its ports (attempt %d); retrying", attempt)
	}
	t.Fatalf("start agencysandbox: ports taken five times\n%s", lastLog)
	return nil
}

func tryStartSandbox(t *testing.T, o sandboxOptions) (s *sandboxProc, portInUse bool, err error) {
	api, comms := freePort(t), freePort(t)
	for comms == api {
		comms = freePort(t)
	}
	args := append([]string{"--api-addr", fmt.Sprintf("127.0.0.1:%d", api), "--comms-addr", fmt.Sprintf("127.0.0.1:%d", comms)}, o.flags()...)
	s = &sandboxProc{t: t, opts: o, cmd: exec.Command(sandboxBin, args...), exited: make(chan struct{}), log: &lockedBuffer{},
		client: &http.Client{Timeout: 2 * time.Minute}}
	pr, pw := io.Pipe()
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		return s, false, err
	}
	ready := make(chan [2]string, 1)
	logged := make(chan struct{}) // the log reader has read everything
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = s.log.Write(append(bytes.Clone(line), '\n'))
			var l struct {
				Msg      string `json:"msg"`
				APIURL   string `json:"api_url"`
				CommsURL string `json:"communications_url"`
			}
			if json.Unmarshal(line, &l) == nil && l.Msg == "agencysandbox listening" {
				ready <- [2]string{l.APIURL, strings.TrimSuffix(l.CommsURL, sandbox.CommsPath)}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() { _ = s.cmd.Wait(); _ = pw.Close(); close(s.exited) }()
	select {
	case urls := <-ready:
		s.apiURL, s.commsURL = urls[0], urls[1]
		return s, false, nil
	case <-s.exited:
		<-logged
		return s, bytes.Contains(s.log.Bytes(), []byte("address already in use")), fmt.Errorf("exited with %v", s.cmd.ProcessState)
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return s, false, errors.New("not listening after 60s")
	}
}

// stop ends the sandbox: SIGTERM, then SIGKILL after 10 seconds.
func (s *sandboxProc) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// admin calls the sandbox's admin API and decodes the answer into out (nil:
// discarded); any status but 200 fails the test.
func (s *sandboxProc) admin(method, path string, body, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.apiURL+"/_sandbox/"+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("X-Admin-Token", adminToken)
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("sandbox admin %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Fatalf("sandbox admin %s %s: %s %v: %s", method, path, resp.Status, err, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("sandbox admin %s %s: decode %s: %v", method, path, b, err)
		}
	}
}

// stats returns the sandbox's counters.
func (s *sandboxProc) stats() sandbox.Stats {
	s.t.Helper()
	var st sandbox.Stats
	s.admin(http.MethodGet, "stats", nil, &st)
	return st
}

// advance moves the sandbox clock.
func (s *sandboxProc) advance(d time.Duration) time.Time {
	s.t.Helper()
	var out struct {
		Now time.Time `json:"now"`
	}
	s.admin(http.MethodPost, "clock", map[string]string{"advance": d.String()}, &out)
	return out.Now
}

// sandboxWorkerEnv is the worker's environment for a sandbox and a schema.
func (s *sandboxProc) workerEnv(dsn, schema string) map[string]string {
	return map[string]string{
		"DATABASE_URL":            dsn,
		"WAREHOUSE_SCHEMA":        schema,
		"AGENCY_BASE_URL":         s.apiURL,
		"AGENCY_COMMS_URL":        s.commsURL,
		"AGENCY_API_KEY":          apiKey,
		"AGENCY_COMMS_KEY":        commsKey,
		"AGENCY_COMMS_DOMAIN_ID":  "1",
		"AGENCY_COMMS_USER_IDS":   fmt.Sprintf("1-%d", s.opts.Users),
		"AGENCY_COMMS_START_DATE": s.opts.commsStartDate(),
		"AGENCY_RATE_LIMIT":       "1000",
		"LOG_FORMAT":              "json",
	}
}

// workerProc is a running agencysync.
type workerProc struct {
	t       *testing.T
	args    []string
	cmd     *exec.Cmd
	stdout  lockedBuffer
	stderr  lockedBuffer
	done    chan struct{}
	started time.Time
	res     *runResult
	once    sync.Once
}

// runResult is how an agencysync process ended.
type runResult struct {
	code    int
	killed  bool
	stdout  string
	stderr  string
	took    time.Duration
	summary map[string]any // the "sync summary" log line, nil without one
}

// startWorker starts agencysync with exactly env (plus PATH, HOME and
// TMPDIR) and args. The process is killed when the test ends.
func startWorker(t *testing.T, env map[string]string, args ...string) *workerProc {
	t.Helper()
	w := &workerProc{t: t, args: args, cmd: exec.Command(agencysyncBin, args...), done: make(chan struct{})}
	w.cmd.Env = []string{}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			w.cmd.Env = append(w.cmd.Env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		w.cmd.Env = append(w.cmd.Env, k+"="+env[k])
	}
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, &w.stderr
	w.started = time.Now()
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start agencysync: %v", err)
	}
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			w.kill()
		}
		w.finish()
	})
	return w
}

// running reports whether the process has not exited yet.
func (w *workerProc) running() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to end.
func (w *workerProc) kill() *runResult {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
	return w.finish()
}

// wait waits for the process to exit; past timeout it is killed and the test
// fails.
func (w *workerProc) wait(timeout time.Duration) *runResult {
	w.t.Helper()
	select {
	case <-w.done:
	case <-time.After(timeout):
		w.kill()
		w.t.Fatalf("agencysync %s did not end within %s; killed\nstderr:\n%s", strings.Join(w.args, " "), timeout, tail(w.stderr.Bytes(), 40))
	}
	return w.finish()
}

// finish collects the result once, and audits the outputs for keys.
func (w *workerProc) finish() *runResult {
	w.once.Do(func() {
		st := w.cmd.ProcessState
		r := &runResult{code: st.ExitCode(), stdout: string(w.stdout.Bytes()), stderr: string(w.stderr.Bytes()), took: time.Since(w.started)}
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.killed, r.code = true, -int(ws.Signal())
		}
		for _, line := range strings.Split(r.stderr, "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			switch msg, _ := m["msg"].(string); {
			case msg == "sync summary":
				r.summary = m
			case strings.HasPrefix(msg, "another sync holds the lock"):
				m["status"] = "skipped" // a skipped run logs this instead of a summary
				r.summary = m
			}
		}
		name := "agencysync " + strings.Join(w.args, " ")
		auditOutput(w.t, "stdout of "+name, []byte(r.stdout))
		auditOutput(w.t, "stderr of "+name, []byte(r.stderr))
		w.res = r
	})
	return w.res
}

// runWorker runs agencysync to its end (at most timeout).
func runWorker(t *testing.T, timeout time.Duration, env map[string]string, args ...string) *runResult {
	t.Helper()
	return startWorker(t, env, args...).wait(timeout)
}

func (r *runResult) status() string { s, _ := r.summary["status"].(string); return s }

// logLines returns the JSON log lines of stderr whose message is msg.
func (r *runResult) logLines(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(r.stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func (r *runResult) num(field string) int {
	f, _ := r.summary[field].(float64)
	return int(f)
}

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
	res := runWorker(r.t, 5*time.Minute, env, args...)
	r.t.Logf("agencysync %s: %s", strings.Join(args, " "), res)
	return res
}

// mustSucceed fails the test unless res exited 0 with a succeeded run.
func mustSucceed(t *testing.T, what string, res *runResult) {
	t.Helper()
	if res.code != 0 || res.status() != "succeeded" {
		t.Fatalf("%s: %s, want exit 0 and a succeeded run\nstderr:\n%s", what, res, tail([]byte(res.stderr), 30))
	}
}

// waitFor polls cond every interval until it holds or timeout passes.
func waitFor(t *testing.T, what string, timeout, interval time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: not within %s", what, timeout)
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
	ok := waitFor(r.t, "sync lock released", 30*time.Second, 20*time.Millisecond, func() bool {
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
