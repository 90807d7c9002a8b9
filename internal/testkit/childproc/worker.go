package childproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Worker is a running agencysync process.
type Worker struct {
	args           []string
	cmd            *exec.Cmd
	stdout, stderr Buffer
	done           chan struct{}
	wall           time.Duration // from start to exit, set before done is closed
	once           sync.Once
	res            *Result
}

// StartWorker starts bin (agencysync) with args and exactly env, plus PATH,
// HOME and TMPDIR of this process, collecting its stdout and stderr. The
// process runs until it exits or Kill; Wait collects it.
func StartWorker(bin string, env map[string]string, args ...string) (*Worker, error) {
	w := &Worker{args: args, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	w.cmd.Env = environ(env)
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, &w.stderr
	started := time.Now()
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agencysync: %w", err)
	}
	go func() { _ = w.cmd.Wait(); w.wall = time.Since(started); close(w.done) }()
	return w, nil
}

// environ is exactly env (sorted by name) after PATH, HOME and TMPDIR of
// this process, those that are set.
func environ(env map[string]string) []string {
	out := []string{}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// Done is closed when the process has exited.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Running reports whether the process has not exited yet.
func (w *Worker) Running() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL unless the process has exited, waits for its end and
// returns its result.
func (w *Worker) Kill() *Result {
	if w.Running() {
		_ = w.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-w.done
	return w.result()
}

// Wait waits for the process to exit and returns its result. When ctx ends
// or timeout (if positive) passes first, it kills the process and returns
// its result together with an error.
func (w *Worker) Wait(ctx context.Context, timeout time.Duration) (*Result, error) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-w.done:
		return w.result(), nil
	case <-ctx.Done():
		return w.Kill(), fmt.Errorf("wait for agencysync %s: %w; killed", strings.Join(w.args, " "), ctx.Err())
	case <-expired:
		return w.Kill(), fmt.Errorf("wait for agencysync %s: did not end within %s; killed", strings.Join(w.args, " "), timeout)
	}
}

// result collects the result of the exited process, once.
func (w *Worker) result() *Result {
	w.once.Do(func() {
		st := w.cmd.ProcessState
		r := &Result{Code: st.ExitCode(), Wall: w.wall, Stdout: w.stdout.Bytes(), Stderr: w.stderr.Bytes()}
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Killed, r.Code = true, -int(ws.Signal())
		}
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			r.MaxRSSKiB = ru.Maxrss
			r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		r.Summary = summaryOf(r.Stderr)
		w.res = r
	})
	return w.res
}

// RunWorker runs bin (agencysync) as StartWorker does until it exits,
// killing it when ctx ends or after timeout; the error then also carries
// the last lines of its stderr, and the result is returned with it.
func RunWorker(ctx context.Context, bin string, timeout time.Duration, env map[string]string, args ...string) (*Result, error) {
	w, err := StartWorker(bin, env, args...)
	if err != nil {
		return nil, err
	}
	r, err := w.Wait(ctx, timeout)
	if err != nil {
		return r, fmt.Errorf("%w: %s", err, lastLines(r.Stderr, 6))
	}
	return r, nil
}

// Result is how one agencysync process ended.
type Result struct {
	// Code is the exit code; -n when signal n ended the process.
	Code int
	// Killed reports a process ended by a signal.
	Killed         bool
	Stdout, Stderr []byte
	// Wall is the time from start to exit.
	Wall time.Duration
	// MaxRSSKiB is the peak resident set size (getrusage ru_maxrss, KiB on
	// Linux) and CPU the user and system CPU time.
	MaxRSSKiB int64
	CPU       time.Duration
	// Summary is the "sync summary" log line; a run skipped because another
	// sync holds the lock logs that instead, and its line stands here with
	// status "skipped". Nil without either.
	Summary map[string]any
}

// summaryOf finds the last summary line (see Result.Summary) of a JSON log.
func summaryOf(stderr []byte) map[string]any {
	var summary map[string]any
	for line := range bytes.Lines(stderr) {
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch msg, _ := m["msg"].(string); {
		case msg == "sync summary":
			summary = m
		case strings.HasPrefix(msg, "another sync holds the lock"):
			m["status"] = "skipped"
			summary = m
		}
	}
	return summary
}

// Status is the summary's status ("" without one).
func (r *Result) Status() string { s, _ := r.Summary["status"].(string); return s }

// Took is the sync's own duration from its summary (0 without one).
func (r *Result) Took() time.Duration {
	f, _ := r.Summary["took"].(float64)
	return time.Duration(f * float64(time.Second))
}

// Num is a numeric field of the summary, such as requests_used (0 without
// it).
func (r *Result) Num(field string) int {
	f, _ := r.Summary[field].(float64)
	return int(f)
}

// LogLines returns the JSON log lines of stderr whose message is msg.
func (r *Result) LogLines(msg string) []map[string]any {
	var out []map[string]any
	for line := range bytes.Lines(r.Stderr) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Err reports a run that did not exit 0, or whose summary, if any, is not
// of a succeeded sync; what names the run in the error.
func (r *Result) Err(what string) error {
	if r.Code == 0 && (r.Summary == nil || r.Status() == "succeeded") {
		return nil
	}
	return fmt.Errorf("%s: exit %d, status %q: %s", what, r.Code, r.Status(), lastLines(r.Stderr, 6))
}
