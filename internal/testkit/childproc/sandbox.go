package childproc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// ErrAddrInUse is wrapped by StartSandbox's error when the sandbox exited
// because one of its listen addresses was taken.
var ErrAddrInUse = errors.New("address already in use")

// SandboxOptions are the agencysandbox flags of a sandbox. Zero values keep
// the binary's defaults (seed 1, 40 brands, 15 projects a brand, 300 users,
// 20 000 e-mails over 730 days ending 2026-11-01, 10 requests/s, 10 000 a
// day, the sandbox-* keys), except the admin token: without one a random
// token is used, since StartSandbox needs the admin API.
type SandboxOptions struct {
	// APIAddr and CommsAddr are the listen addresses; empty: a free
	// loopback port (127.0.0.1:0).
	APIAddr, CommsAddr string
	// Seed drives the generated data.
	Seed int64
	// Emails, Brands, ProjectsPerBrand, Users and HistoryDays size the
	// generated agency.
	Emails, Brands, ProjectsPerBrand, Users, HistoryDays int
	// Start is the initial sandbox clock.
	Start time.Time
	// APIKey, CommsKey, ForeignKey and RevokedKey are the sandbox's keys;
	// AdminToken is the X-Admin-Token of its admin API.
	APIKey, CommsKey, ForeignKey, RevokedKey, AdminToken string
	// NoLimits turns the rate limit and the daily quota off; Rate (requests
	// a second) and DailyQuota set them.
	NoLimits   bool
	Rate       float64
	DailyQuota int
	// Latency is added to every answer.
	Latency time.Duration
	// Extra flags (faults, bad records, variants) come last, so they
	// override the ones above.
	Extra []string
}

// args are the command-line arguments of o; logs are always JSON at info
// level, since StartSandbox reads the "listening" line.
func (o SandboxOptions) args() []string {
	addr := func(a string) string {
		if a == "" {
			return "127.0.0.1:0"
		}
		return a
	}
	f := []string{"--api-addr", addr(o.APIAddr), "--comms-addr", addr(o.CommsAddr)}
	add := func(name string, v int64) {
		if v > 0 {
			f = append(f, name, strconv.FormatInt(v, 10))
		}
	}
	str := func(name, v string) {
		if v != "" {
			f = append(f, name, v)
		}
	}
	add("--seed", o.Seed)
	add("--emails", int64(o.Emails))
	add("--brands", int64(o.Brands))
	add("--projects-per-brand", int64(o.ProjectsPerBrand))
	add("--users", int64(o.Users))
	add("--history-days", int64(o.HistoryDays))
	if !o.Start.IsZero() {
		f = append(f, "--start", o.Start.Format(time.RFC3339))
	}
	str("--api-key", o.APIKey)
	str("--comms-key", o.CommsKey)
	str("--foreign-key", o.ForeignKey)
	str("--revoked-key", o.RevokedKey)
	str("--admin-token", o.AdminToken)
	f = append(f, "--log-format", "json", "--log-level", "info")
	if o.NoLimits {
		f = append(f, "--no-limits")
	}
	if o.Rate > 0 {
		f = append(f, "--rate", strconv.FormatFloat(o.Rate, 'f', -1, 64))
	}
	add("--daily-quota", int64(o.DailyQuota))
	if o.Latency > 0 {
		f = append(f, "--latency", o.Latency.String())
	}
	return append(f, o.Extra...)
}

// Sandbox is a running agencysandbox process.
type Sandbox struct {
	opts     SandboxOptions
	cmd      *exec.Cmd
	exited   chan struct{}
	log      Buffer
	apiURL   string    // {base_url} without /v1, and the admin API
	commsURL string    // {communications_url} without the path
	start    time.Time // the sandbox clock when it started
	client   *http.Client
}

// StartSandbox starts bin (agencysandbox) with o and waits until it listens
// and answers its admin API; ctx bounds that wait, not the process, which
// runs until Stop. When one of its addresses is taken the error wraps
// ErrAddrInUse.
func StartSandbox(ctx context.Context, bin string, o SandboxOptions) (*Sandbox, error) {
	if o.AdminToken == "" {
		o.AdminToken = randomToken()
	}
	s := &Sandbox{opts: o, cmd: exec.Command(bin, o.args()...), exited: make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Minute}}
	pr, pw := io.Pipe()
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agencysandbox: %w", err)
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
				select {
				case ready <- [2]string{l.APIURL, strings.TrimSuffix(l.CommsURL, sandbox.CommsPath)}:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() { _ = s.cmd.Wait(); _ = pw.Close(); close(s.exited) }()
	select {
	case urls := <-ready:
		s.apiURL, s.commsURL = urls[0], urls[1]
	case <-s.exited:
		<-logged
		log := s.log.Bytes()
		if bytes.Contains(log, []byte("address already in use")) {
			return nil, fmt.Errorf("start agencysandbox: %w: %s", ErrAddrInUse, lastLines(log, 10))
		}
		return nil, fmt.Errorf("start agencysandbox: exited with %v: %s", s.cmd.ProcessState, lastLines(log, 10))
	case <-ctx.Done():
		s.Stop()
		return nil, fmt.Errorf("start agencysandbox: not listening: %w", ctx.Err())
	}
	st, err := s.Stats(ctx)
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("start agencysandbox: %w", err)
	}
	s.start = st.Now
	return s, nil
}

func randomToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "childproc-admin-" + hex.EncodeToString(b[:])
}

// Stop ends the sandbox: SIGTERM, then SIGKILL after 10 seconds. It returns
// once the process has exited, at once if it already had.
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

// APIURL is the main interface's address ({base_url} without /v1), which
// also serves the admin API under /_sandbox/.
func (s *Sandbox) APIURL() string { return s.apiURL }

// CommsURL is the communications listener's address ({communications_url}
// without its path).
func (s *Sandbox) CommsURL() string { return s.commsURL }

// Pid is the sandbox process's id.
func (s *Sandbox) Pid() int { return s.cmd.Process.Pid }

// Admin calls the admin API (method on /_sandbox/path, body as JSON unless
// nil) and decodes the answer into out (nil: discarded); any status but 200
// is an error.
func (s *Sandbox) Admin(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode sandbox admin %s %s body: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.apiURL+"/_sandbox/"+path, rd)
	if err != nil {
		return fmt.Errorf("build sandbox admin request %s %s: %w", method, path, err)
	}
	req.Header.Set("X-Admin-Token", s.opts.AdminToken)
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
	return st, s.Admin(ctx, http.MethodGet, "stats", nil, &st)
}

// ResetStats zeroes the counters (not the quota).
func (s *Sandbox) ResetStats(ctx context.Context) error {
	return s.Admin(ctx, http.MethodPost, "stats/reset", nil, nil)
}

// Advance moves the sandbox clock forward by d and returns its new time.
func (s *Sandbox) Advance(ctx context.Context, d time.Duration) (time.Time, error) {
	var out struct {
		Now time.Time `json:"now"`
	}
	err := s.Admin(ctx, http.MethodPost, "clock", map[string]string{"advance": d.String()}, &out)
	return out.Now, err
}

// AppendEmails adds n e-mails dated in the minute before the clock's now.
func (s *Sandbox) AppendEmails(ctx context.Context, n int) error {
	return s.Admin(ctx, http.MethodPost, "emails", map[string]int{"append": n}, nil)
}

// EditProject applies an edit (sandbox.ProjectEdit's JSON) to a project.
func (s *Sandbox) EditProject(ctx context.Context, id string, edit map[string]any) error {
	return s.Admin(ctx, http.MethodPost, "projects/"+id, edit, nil)
}

// EditFinance applies an edit to a finance record of kind budgets,
// invoices, collections or payments.
func (s *Sandbox) EditFinance(ctx context.Context, kind, id string, edit map[string]any) error {
	return s.Admin(ctx, http.MethodPost, "finance/"+kind+"/"+id, edit, nil)
}

// Truth opens the sandbox's ground truth (GET /_sandbox/truth: one JSON line
// a record, stream by stream); the caller closes it. Leaving it early
// (cancelling ctx, closing the body) releases the sandbox.
func (s *Sandbox) Truth(ctx context.Context) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.apiURL+"/_sandbox/truth", nil)
	if err != nil {
		return nil, fmt.Errorf("build truth request: %w", err)
	}
	req.Header.Set("X-Admin-Token", s.opts.AdminToken)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch truth: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("fetch truth: %s", resp.Status)
	}
	return resp.Body, nil
}

// WorkerEnv is agencysync's environment for this sandbox, a warehouse (dsn)
// and a schema, with JSON logs: the communications backfill starts the day
// before the sandbox's history, so it covers all of it. Callers add what
// they tune (AGENCY_RATE_LIMIT, LOG_LEVEL, …).
func (s *Sandbox) WorkerEnv(dsn, schema string) map[string]string {
	d := sandbox.DefaultOptions()
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	users, days := d.Users, d.HistoryDays
	if s.opts.Users > 0 {
		users = s.opts.Users
	}
	if s.opts.HistoryDays > 0 {
		days = s.opts.HistoryDays
	}
	return map[string]string{
		"DATABASE_URL":            dsn,
		"WAREHOUSE_SCHEMA":        schema,
		"AGENCY_BASE_URL":         s.apiURL,
		"AGENCY_COMMS_URL":        s.commsURL,
		"AGENCY_API_KEY":          or(s.opts.APIKey, d.APIKey),
		"AGENCY_COMMS_KEY":        or(s.opts.CommsKey, d.CommsKey),
		"AGENCY_COMMS_DOMAIN_ID":  strconv.FormatInt(d.DomainID, 10),
		"AGENCY_COMMS_USER_IDS":   fmt.Sprintf("1-%d", users),
		"AGENCY_COMMS_START_DATE": s.start.AddDate(0, 0, -days-1).Format(time.DateOnly),
		"LOG_FORMAT":              "json",
	}
}

// lastLines returns the last n lines of b, joined with " | ".
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
