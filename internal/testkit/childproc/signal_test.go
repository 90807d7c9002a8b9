package childproc

import (
	"context"
	"syscall"
	"testing"
	"time"
)

func TestWorkerSignal(t *testing.T) {
	sh := shell(t)
	// The script reports the signal it got through its exit code.
	w, err := StartWorker(sh, nil, "-c", `trap 'exit 75' TERM; echo ready; while :; do sleep 0.01; done`)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for w.stdout.String() != "ready\n" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r, err := w.Wait(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 75 || r.Killed {
		t.Errorf("after SIGTERM: exit %d, killed %v; want the trap's 75", r.Code, r.Killed)
	}
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("signal after the end: %v", err)
	}
}
