package childproc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/patience"
)

func TestSandboxArgs(t *testing.T) {
	if got, want := (SandboxOptions{}).args(), []string{"--api-addr", "127.0.0.1:0", "--comms-addr", "127.0.0.1:0",
		"--log-format", "json", "--log-level", "info"}; !slices.Equal(got, want) {
		t.Errorf("zero options: %q, want %q", got, want)
	}
	o := SandboxOptions{APIAddr: "127.0.0.1:9001", CommsAddr: "127.0.0.1:9002", Seed: 7, Emails: 5000, Brands: 10,
		ProjectsPerBrand: 5, Users: 300, HistoryDays: 90, Start: time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC),
		APIKey: "a", CommsKey: "c", ForeignKey: "f", RevokedKey: "r", AdminToken: "t", NoLimits: true, Rate: 2.5,
		DailyQuota: 40, Latency: 20 * time.Millisecond, Extra: []string{"--fault-500", "0.05"}}
	want := []string{"--api-addr", "127.0.0.1:9001", "--comms-addr", "127.0.0.1:9002", "--seed", "7",
		"--emails", "5000", "--brands", "10", "--projects-per-brand", "5", "--users", "300", "--history-days", "90",
		"--start", "2026-03-04T00:00:00Z", "--api-key", "a", "--comms-key", "c", "--foreign-key", "f",
		"--revoked-key", "r", "--admin-token", "t", "--log-format", "json", "--log-level", "info", "--no-limits",
		"--rate", "2.5", "--daily-quota", "40", "--latency", "20ms", "--fault-500", "0.05"}
	if got := o.args(); !slices.Equal(got, want) {
		t.Errorf("all options:\n got %q\nwant %q", got, want)
	}
}

func TestSummary(t *testing.T) {
	log := []byte(`not JSON
{"level":"info","msg":"request","path":"/v1/brands"}
{"level":"info","msg":"sync summary","status":"partial","took":1.5,"requests_used":12}
{"level":"info","msg":"request","path":"/v1/projects"}
`)
	r := &Result{Stderr: log, Summary: summaryOf(log)}
	if r.Status() != "partial" || r.Took() != 1500*time.Millisecond || r.Num("requests_used") != 12 || r.Num("none") != 0 {
		t.Errorf("status %q, took %s, requests_used %d", r.Status(), r.Took(), r.Num("requests_used"))
	}
	if ls := r.LogLines("request"); len(ls) != 2 || ls[1]["path"] != "/v1/projects" {
		t.Errorf("log lines: %v", ls)
	}
	if err := r.Err("the run"); err == nil || !strings.HasPrefix(err.Error(), `the run: exit 0, status "partial": `) {
		t.Errorf("a partial run: %v", err)
	}

	skipped := summaryOf([]byte(`{"msg":"another sync holds the lock of this warehouse schema; skipping","run_id":"x"}` + "\n"))
	if skipped["status"] != "skipped" || skipped["run_id"] != "x" {
		t.Errorf("a skipped run: %v", skipped)
	}
	if s := summaryOf([]byte("{\"msg\":\"other\"}\n")); s != nil {
		t.Errorf("no summary: %v", s)
	}
	for _, r := range []*Result{{}, {Summary: map[string]any{"status": "succeeded"}}} {
		if err := r.Err("x"); err != nil {
			t.Errorf("%v: %v", r.Summary, err)
		}
	}
	if err := (&Result{Code: 2}).Err("x"); err == nil {
		t.Error("exit 2 passed")
	}
}

func TestEnviron(t *testing.T) {
	t.Setenv("PATH", "/p")
	t.Setenv("HOME", "/h")
	t.Setenv("TMPDIR", "")
	os.Unsetenv("TMPDIR")
	t.Setenv("SECRET_OF_THE_PARENT", "x")
	got := environ(map[string]string{"B": "2", "A": "1"})
	if want := []string{"PATH=/p", "HOME=/h", "A=1", "B=2"}; !slices.Equal(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// shell returns /bin/sh or skips the test.
func shell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	return sh
}

func TestWorker(t *testing.T) {
	sh := shell(t)
	ctx := context.Background()
	t.Setenv("SECRET_OF_THE_PARENT", "leak")
	r, err := RunWorker(ctx, sh, time.Minute, map[string]string{"X": "1"}, "-c",
		`echo "out $X $SECRET_OF_THE_PARENT"; echo '{"msg":"sync summary","status":"failed"}' >&2; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 3 || r.Killed || string(r.Stdout) != "out 1 \n" || r.Status() != "failed" || r.Wall <= 0 {
		t.Errorf("exit %d, killed %v, stdout %q, status %q, wall %s", r.Code, r.Killed, r.Stdout, r.Status(), r.Wall)
	}

	w, err := StartWorker(sh, nil, "-c", "exec sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	if !w.Running() {
		t.Fatal("not running")
	}
	r, err = w.Wait(ctx, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not end within 50ms") {
		t.Errorf("wait past the timeout: %v", err)
	}
	if !r.Killed || r.Code != -9 || w.Running() {
		t.Errorf("after the timeout: killed %v, exit %d, running %v", r.Killed, r.Code, w.Running())
	}
	select {
	case <-w.Done():
	default:
		t.Error("Done is open after the end")
	}
	if again := w.Kill(); again != r {
		t.Error("Kill after the end gave another result")
	}

	if _, err := StartWorker(filepath.Join(t.TempDir(), "missing"), nil); err == nil || !strings.HasPrefix(err.Error(), "start agencysync: ") {
		t.Errorf("missing binary: %v", err)
	}
}

// fakeSandbox writes a script that logs as agencysandbox does, with
// listening URLs of the admin server srv (or logs line and exits 1 when srv
// is nil), and records its arguments in args.
func fakeSandbox(t *testing.T, srv *httptest.Server, line string) (bin, args string) {
	t.Helper()
	dir := t.TempDir()
	bin, args = filepath.Join(dir, "agencysandbox"), filepath.Join(dir, "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + args + "\n"
	if srv != nil {
		script += `echo '{"msg":"agencysandbox listening","api_url":"` + srv.URL + `","communications_url":"` + srv.URL +
			`/workflow/tools/communications-emails"}' >&2` + "\nexec sleep 30\n"
	} else {
		script += "echo '" + line + "' >&2\nexit 1\n"
	}
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, args
}

func TestStartSandbox(t *testing.T) {
	shell(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Admin-Token") != "tok" || r.URL.Path != "/_sandbox/stats" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(`{"now":"2026-03-04T00:00:00Z"}`))
	}))
	defer srv.Close()
	bin, args := fakeSandbox(t, srv, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := StartSandbox(ctx, bin, SandboxOptions{Users: 20, HistoryDays: 10, AdminToken: "tok", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.APIURL() != srv.URL || s.CommsURL() != srv.URL || s.Pid() <= 0 {
		t.Errorf("API %s, communications %s, pid %d", s.APIURL(), s.CommsURL(), s.Pid())
	}
	if b, _ := os.ReadFile(args); !strings.Contains(string(b), "--seed\n7\n") {
		t.Errorf("arguments:\n%s", b)
	}
	env := s.WorkerEnv("postgres://x", "s1")
	for k, v := range map[string]string{"AGENCY_COMMS_START_DATE": "2026-02-21", "AGENCY_COMMS_USER_IDS": "1-20",
		"AGENCY_API_KEY": "sandbox-api-key", "AGENCY_BASE_URL": srv.URL, "WAREHOUSE_SCHEMA": "s1", "LOG_FORMAT": "json"} {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if err := s.ResetStats(ctx); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("an admin call answered 404: %v", err)
	}
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	select {
	case <-done:
	case <-patience.After(t):
		t.Fatal("Stop did not end the sandbox with SIGTERM before the test's deadline")
	}
	s.Stop() // a second Stop returns at once

	bin, _ = fakeSandbox(t, nil, `{"level":"error","msg":"cannot start the sandbox","error":"listen tcp 127.0.0.1:9: bind: address already in use"}`)
	if _, err := StartSandbox(ctx, bin, SandboxOptions{}); !errors.Is(err, ErrAddrInUse) {
		t.Errorf("address in use: %v", err)
	}
	bin, _ = fakeSandbox(t, nil, `{"level":"error","msg":"bad flag"}`)
	if _, err := StartSandbox(ctx, bin, SandboxOptions{}); err == nil || errors.Is(err, ErrAddrInUse) || !strings.Contains(err.Error(), "bad flag") {
		t.Errorf("exit 1: %v", err)
	}
}
