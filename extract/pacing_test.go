package extract

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestWindowGuardHoldsUnderJitter simulates a network whose delays vary
// wildly: each round trip is a common delay plus a random jitter, and the
// server sees the request after the common part of the way up plus a random
// share of the jitter (the rest comes after it: processing, the way back).
// No window may hold more than n arrivals. The guard estimates the common
// delay from the fastest round trip it has seen; the first request here is
// that fastest one (in a real run the margin absorbs a first estimate that
// is a little high).
func TestWindowGuardHoldsUnderJitter(t *testing.T) {
	const n, window = 3, 100 * time.Millisecond
	const up, common = 2 * time.Millisecond, 5 * time.Millisecond
	g := newWindowGuard(n, window)
	var mu sync.Mutex
	var arrivals []time.Time
	first, err := g.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wrote := time.Now()
	arrivals = append(arrivals, wrote.Add(up))
	time.Sleep(common)
	first.release(wrote, common)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 8 {
				sl, err := g.acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				wrote := time.Now()
				jitter := time.Duration(r.IntN(40)) * time.Millisecond
				seen := wrote.Add(up + time.Duration(r.Int64N(int64(jitter)+1)))
				rtt := common + jitter
				time.Sleep(rtt)
				mu.Lock()
				arrivals = append(arrivals, seen)
				mu.Unlock()
				sl.release(wrote, rtt)
				sl.release(wrote, rtt) // only the first counts
			}
		})
	}
	wg.Wait()
	if len(arrivals) != 49 {
		t.Fatalf("%d arrivals", len(arrivals))
	}
	if got := arrivalsWithinWindow(arrivals, window); got > n {
		t.Errorf("%d arrivals within one window, limit %d", got, n)
	}
}

// TestWindowGuardRelease: a slot frees one window after the request was
// written, plus the excess of its round trip over the fastest one seen; a
// request without an answer holds it a window from its failure.
func TestWindowGuardRelease(t *testing.T) {
	const window = time.Second
	g := newWindowGuard(3, window)
	t0 := time.Now().Add(-time.Minute)
	for _, c := range []struct {
		name  string
		wrote time.Time
		rtt   time.Duration
		want  time.Time // zero: a window from now
	}{
		{"first answer", t0, 50 * time.Millisecond, t0.Add(window)},
		{"as fast", t0.Add(time.Second), 50 * time.Millisecond, t0.Add(time.Second + window)},
		{"30ms slower", t0.Add(2 * time.Second), 80 * time.Millisecond, t0.Add(2*time.Second + 30*time.Millisecond + window)},
		{"faster: the new minimum", t0.Add(3 * time.Second), 40 * time.Millisecond, t0.Add(3*time.Second + window)},
		{"back to 50ms, now 10ms slower", t0.Add(4 * time.Second), 50 * time.Millisecond, t0.Add(4*time.Second + 10*time.Millisecond + window)},
		{"no answer", time.Time{}, 0, time.Time{}},
		{"written, no answer", t0, 0, time.Time{}},
	} {
		sl, err := g.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		sl.release(c.wrote, c.rtt)
		after := time.Now()
		got := g.freeAt[sl.i]
		if c.want.IsZero() {
			if got.Before(before.Add(window)) || got.After(after.Add(window)) {
				t.Errorf("%s: free at now%+v, want now+%v", c.name, got.Sub(before), window)
			}
		} else if !got.Equal(c.want) {
			t.Errorf("%s: free at t0%+v, want t0%+v", c.name, got.Sub(t0), c.want.Sub(t0))
		}
		g.freeAt[sl.i] = time.Time{} // free again for the next case
	}
}

func TestWindowGuardCancel(t *testing.T) {
	g := newWindowGuard(1, time.Hour)
	sl, err := g.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sl.release(time.Time{}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := g.acquire(ctx); err == nil || time.Since(start) > time.Second {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
}

func TestPacerWindowFromRate(t *testing.T) {
	for _, c := range []struct {
		rate   float64
		n      int
		window time.Duration
	}{{10, 10, time.Second}, {2.5, 2, 800 * time.Millisecond}, {0.5, 1, 2 * time.Second}, {1000, 1000, time.Second}, {1e6, 4096, 4096 * time.Microsecond}} {
		p := newPacer(c.rate, 0)
		if len(p.guard.freeAt) != c.n || p.guard.window != c.window {
			t.Errorf("rate %v: %d slots, window %v", c.rate, len(p.guard.freeAt), p.guard.window)
		}
	}
}

func TestInFlightFor(t *testing.T) {
	for _, c := range []struct {
		rate    float64
		latency time.Duration
		want    int
	}{
		{10, 0, 1}, {10, 50 * time.Millisecond, 1}, {10, 100 * time.Millisecond, 1}, {10, 150 * time.Millisecond, 4},
		{2.5, time.Second, 2}, {0, time.Second, 1}, {-1, time.Second, 1},
		{100, 50 * time.Millisecond, 9}, {100, 52 * time.Millisecond, 9}, {100, 5 * time.Second, 100},
		{1000, 500 * time.Microsecond, 1}, {1000, 3 * time.Millisecond, 6},
	} {
		if got := InFlightFor(c.rate, c.latency); got != c.want {
			t.Errorf("InFlightFor(%v, %v) = %d, want %d", c.rate, c.latency, got, c.want)
		}
	}
	p := newPacer(100, 0)
	if n := p.inFlight(); n != 1 {
		t.Errorf("before any answer: %d in flight, want 1", n)
	}
	for range 20 {
		p.observe(50 * time.Millisecond)
	}
	if n := p.inFlight(); n != 9 {
		t.Errorf("after answers of 50 ms at 100/s: %d in flight, want 9", n)
	}
}

// The spacing margin costs at most 2 % of the pace at any rate (at 10/s the
// full 2 ms; at 100/s, where 2 ms would be a sixth of the interval, less):
// the window guard, not the spacing, keeps each second under the limit.
func TestSpacingMarginCostsAtMostTwoPercent(t *testing.T) {
	for _, r := range []float64{1, 10, 50, 100, 500, 1000} {
		p := newPacer(r, 2*time.Millisecond)
		if got := float64(p.bucket.Limit()); got < 0.98*r-1e-9 || got > r {
			t.Errorf("rate %v: spaced at %.2f/s, want within 2%% below", r, got)
		}
		if p.guard.window < time.Duration(float64(len(p.guard.freeAt))/r*float64(time.Second))+2*time.Millisecond {
			t.Errorf("rate %v: window %v lost its margin", r, p.guard.window)
		}
	}
}
