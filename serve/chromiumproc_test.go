package serve

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// chromiumProfile returns a private, empty profile directory for one
// Chromium. Chromium's helper processes (zygote, renderer, crash handler)
// can still be writing to it for a moment after the browser is stopped, so
// removal is retried while files keep appearing, and a profile that cannot
// be removed is reported rather than failing a test that passed:
// t.TempDir would fail it with "directory not empty".
func chromiumProfile(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agencysync-chromium-")
	if err != nil {
		t.Fatalf("create chromium profile: %v", err)
	}
	t.Cleanup(func() {
		var err error
		for range 100 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("remove chromium profile %s: %v", dir, err)
	})
	return dir
}

// inOwnGroup makes cmd the leader of a new process group, so that
// killGroup stops the helper processes Chromium starts along with it.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group led by cmd (which inOwnGroup set up);
// a group already gone is not an error.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = cmd.Process.Kill()
	}
}
