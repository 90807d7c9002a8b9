package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/loopback"
	"github.com/agencysync/agencysync/metrics"
)

// fakeRunner counts runs, can block, and panics on demand.
type fakeRunner struct {
	runs    atomic.Int64
	running atomic.Int64
	overlap atomic.Bool
	panicky bool
	hold    time.Duration
}

func (f *fakeRunner) Run(ctx context.Context, req engine.Request) (*engine.Result, error) {
	if f.running.Add(1) > 1 {
		f.overlap.Store(true)
	}
	defer f.running.Add(-1)
	n := f.runs.Add(1)
	if f.panicky && n == 1 {
		panic("job exploded")
	}
	select {
	case <-time.After(f.hold):
	case <-ctx.Done():
	}
	return &engine.Result{Status: engine.StatusSucceeded}, nil
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	for range 50 {
		resp, err := http.Get(url)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	t.Fatalf("GET %s never answered", url)
	return 0, ""
}

func TestServeSchedulesWithoutOverlapAndRecovers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &fakeRunner{panicky: true, hold: 2500 * time.Millisecond}
	addr := loopback.FreeAddr(t)
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	m.Runs.WithLabelValues("succeeded").Inc()
	var ready atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, r, Options{
			// Every second, from two schedules: jobs of this process never overlap.
			Schedules: []Schedule{{Spec: "@every 1s", Streams: []string{"brands"}}, {Spec: "@every 1s", Streams: []string{"communications"}}},
			HTTPAddr:  addr, Gatherer: reg,
			Ready: func(context.Context) error {
				if !ready.Load() {
					return errors.New("migrations pending")
				}
				return nil
			},
		})
	}()
	if code, body := get(t, "http://"+addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz %d %q", code, body)
	}
	if code, body := get(t, "http://"+addr+"/readyz"); code != 503 || !strings.Contains(body, "migrations pending") {
		t.Fatalf("/readyz before ready %d %q", code, body)
	}
	ready.Store(true)
	if code, _ := get(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz when ready %d", code)
	}
	if code, body := get(t, "http://"+addr+"/metrics"); code != 200 || !strings.Contains(body, `agencysync_runs_total{status="succeeded"} 1`) {
		t.Fatalf("/metrics %d lacks the runs counter", code)
	}
	time.Sleep(4500 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if r.runs.Load() < 2 {
		t.Errorf("only %d runs in 4.5 s: the panicking job stopped the schedule", r.runs.Load())
	}
	if r.overlap.Load() {
		t.Error("two jobs ran at once")
	}
}
