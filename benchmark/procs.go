package benchmark

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agencysync/agencysync/sandbox"
)

// Keys the harness gives the sandbox and the worker (a local sandbox only).
const (
	apiKey     = "agencybench-api-key"
	commsKey   = "agencybench-comms-key"
	adminToken = "agencybench-admin"
)

// lockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
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

// SandboxOptions are the agencysandbox flags of a scenario; zero values keep
// the sandbox's defaults (40 brands, 15 projects a brand, 300 users, 20 000
// e-mails over 730 days ending 2026-11-01, 10 requests/s, 10 000 a day).
type SandboxOptions struct {
	Emails, Brands, ProjectsPerBrand, Users, HistoryDays int
	NoLimits                                             bool
	Rate                                                 float64
	Latency                                              time.Duration
}

func (o SandboxOptions) flags() []string {
	f := []string{"--api-addr", "127.0.0.1:0", "--comms-addr", "127.0.0.1:0",
		"--api-key", apiKey, "--comms-key", commsKey, "--admin-token", adminToken,
		"--log-format", "json", "--log-level", "info"}
	add := func(name string, v int) {
		if v > 0 {
			f = append(f, name, strconv.Itoa(v))
		}
	}
	add("--emails", o.Emails)
	add("--brands", o.Brands)
	add("--projects-per-brand", o.ProjectsPerBrand)
	add("--users", o.Users)
	add("--history-days", o.HistoryDays)
	if o.NoLimits {
		f = append(f, "--no-limits")
	}
	if o.Rate > 0 {
		f = append(f, "--rate", strconv.FormatFloat(o.Rate, 'f', -1, 64))
	}
	if o.Latency > 0 {
		f = append(f, "--latency", o.Latency.String())
	}
	return f
}

func (o SandboxOptions) users() int {
	if o.Users > 0 {
		return o.Users
	}
	return sandbox.DefaultOptions().Users
}

func (o SandboxOptions) historyDays() int {
	if o.HistoryDays > 0 {
		return o.HistoryDays
	}
	return sandbox.DefaultOptions().HistoryDays
}

// Sandbox is a running agencysandbox process.
type Sandbox struct {
	opts     SandboxOptions
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *lockedBuffer
	apiURL   string // {base_url} without /v1, and the admin API
	commsURL string // {communications_url} without the path
	start    time.Time
	client   *http.Client
}

// StartSandbox starts bin (agencysandbox) on free loopback ports and waits
// until it listens. Stop ends it.
func StartSandbox(ctx context.Context, bin string, o SandboxOptions) (*Sandbox, error) {
	s := &Sandbox{opts: o, cmd: exec.Command(bin, o.flags()...), exited: make(chan struct{}), log: &lockedBuffer{},
		client: &http.Client{Timeout: 10 * time.Minute}}
	pr, pw := io.Pipe()
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agencysandbox: %w", err)
	}
	ready := make(chan [2]string, 1)
	go func() {
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
	case <-s.exited:
		time.Sleep(50 * time.Millisecond) // let the reader drain the pipe
		return nil, fmt.Errorf("start agencysandbox: exited with %v: %s", s.cmd.ProcessState, lastLines(s.log.Bytes(), 5))
	case <-ctx.Done():
		s.Stop()
		return nil, fmt.Errorf("start agencysandbox: %w", ctx.Err())
	case <-time.After(2 * time.Minute):
		s.Stop()
		return nil, errors.New("start agencysandbox: not listening after 2 minutes")
	}
	st, err := s.Stats(ctx)
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.start = st.Now
	return s, nil
}

// Stop ends the sandbox: SIGTERM, then SIGKILL after 10 seconds.
func (s *Sandbox) Stop() {
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

// admin calls the admin API and decodes the answer into out (nil: discarded).
func (s *Sandbox) admin(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode admin %s body: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.apiURL+"/_sandbox/"+path, rd)
	if err != nil {
		return fmt.Errorf("build admin request %s: %w", path, err)
	}
	req.Header.Set("X-Admin-Token", adminToken)
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("call sandbox admin %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read sandbox admin %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("call sandbox admin %s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("decode sandbox admin %s %s: %w", method, path, err)
		}
	}
	return nil
}

// Stats returns the sandbox's counters.
func (s *Sandbox) Stats(ctx context.Context) (sandbox.Stats, error) {
	var st sandbox.Stats
	return st, s.admin(ctx, http.MethodGet, "stats", nil, &st)
}

// ResetStats zeroes the counters (not the quota).
func (s *Sandbox) ResetStats(ctx context.Context) error {
	return s.admin(ctx, http.MethodPost, "stats/reset", nil, nil)
}

// Advance moves the sandbox clock forward by d.
func (s *Sandbox) Advance(ctx context.Context, d time.Duration) error {
	return s.admin(ctx, http.MethodPost, "clock", map[string]string{"advance": d.String()}, nil)
}

// AppendEmails adds n e-mails dated in the minute before the clock's now.
func (s *Sandbox) AppendEmails(ctx context.Context, n int) error {
	return s.admin(ctx, http.MethodPost, "emails", map[string]int{"append": n}, nil)
}

// EditProject applies an edit (sandbox.ProjectEdit's JSON) to a project.
func (s *Sandbox) EditProject(ctx context.Context, id string, edit map[string]any) error {
	return s.admin(ctx, http.MethodPost, "projects/"+id, edit, nil)
}

// EditFinance applies an edit to a finance record of kind budgets,
// invoices, collections or payments.
func (s *Sandbox) EditFinance(ctx context.Context, kind, id string, edit map[string]any) error {
	return s.admin(ctx, http.MethodPost, "finance/"+kind+"/"+id, edit, nil)
}

// WorkerEnv is agencysync's environment for this sandbox, a warehouse and a
// schema: the communications backfill starts the day before the sandbox's
// history, so it covers all of it.
func (s *Sandbox) WorkerEnv(dsn, schema string) map[string]string {
	start := s.start.AddDate(0, 0, -s.opts.historyDays()-1)
	return map[string]string{
		"DATABASE_URL":            dsn,
		"WAREHOUSE_SCHEMA":        schema,
		"AGENCY_BASE_URL":         s.apiURL,
		"AGENCY_COMMS_URL":        s.commsURL,
		"AGENCY_API_KEY":          apiKey,
		"AGENCY_COMMS_KEY":        commsKey,
		"AGENCY_COMMS_DOMAIN_ID":  "1",
		"AGENCY_COMMS_USER_IDS":   fmt.Sprintf("1-%d", s.opts.users()),
		"AGENCY_COMMS_START_DATE": start.Format(time.DateOnly),
		"AGENCY_DAILY_QUOTA":      strconv.Itoa(dailyQuota),
		"LOG_FORMAT":              "json",
		"LOG_LEVEL":               "info",
	}
}

// WorkerResult is how one agencysync process ended.
type WorkerResult struct {
	Code      int
	Wall      time.Duration // from start to exit
	MaxRSSKiB int64         // peak resident set size (getrusage ru_maxrss, KiB on Linux)
	CPU       time.Duration // user and system CPU time
	Stderr    []byte
	// Summary is the "sync summary" log line, nil without one.
	Summary map[string]any
}

// Took is the sync's own duration from its summary (0 without one).
func (r *WorkerResult) Took() time.Duration {
	f, _ := r.Summary["took"].(float64)
	return time.Duration(f * float64(time.Second))
}

// Status is the summary's status ("" without one).
func (r *WorkerResult) Status() string { s, _ := r.Summary["status"].(string); return s }

// Err reports a run that did not exit 0 with a succeeded sync.
func (r *WorkerResult) Err(what string) error {
	if r.Code == 0 && (r.Summary == nil || r.Status() == "succeeded") {
		return nil
	}
	return fmt.Errorf("%s: exit %d, status %q: %s", what, r.Code, r.Status(), lastLines(r.Stderr, 6))
}

// RunWorker runs bin (agencysync) with args and exactly env (plus PATH, HOME
// and TMPDIR) until it exits, killing it after timeout.
func RunWorker(ctx context.Context, bin string, timeout time.Duration, env map[string]string, args ...string) (*WorkerResult, error) {
	cmd := exec.Command(bin, args...)
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agencysync: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timedOut error
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		timedOut = ctx.Err()
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		timedOut = fmt.Errorf("did not end within %s", timeout)
	}
	r := &WorkerResult{Code: cmd.ProcessState.ExitCode(), Wall: time.Since(started), Stderr: stderr.Bytes()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSKiB = ru.Maxrss
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for line := range strings.SplitSeq(string(r.Stderr), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "sync summary" {
			r.Summary = m
		}
	}
	if timedOut != nil {
		return r, fmt.Errorf("run agencysync %s: %w: %s", strings.Join(args, " "), timedOut, lastLines(r.Stderr, 6))
	}
	return r, nil
}
