package extract

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestWindowGuardHoldsUnderJitter simulates a network whose delays vary
// wildly: the server sees each request at a random moment between its start
// and its response. No window may hold more than n arrivals.
func TestWindowGuardHoldsUnderJitter(t *testing.T) {
	const n, window = 3, 100 * time.Millisecond
	g := newWindowGuard(n, window)
	var mu sync.Mutex
	var arrivals []time.Time
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 8 {
				release, err := g.acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				start := time.Now()
				rtt := time.Duration(r.IntN(40)) * time.Millisecond
				seen := start.Add(time.Duration(r.Int64N(int64(rtt) + 1)))
				time.Sleep(rtt)
				mu.Lock()
				arrivals = append(arrivals, seen)
				mu.Unlock()
				release()
				release() // idempotent
			}
		})
	}
	wg.Wait()
	if len(arrivals) != 48 {
		t.Fatalf("%d arrivals", len(arrivals))
	}
	if got := arrivalsWithinWindow(arrivals, window); got > n {
		t.Errorf("%d arrivals within one window, limit %d", got, n)
	}
}

func TestWindowGuardCancel(t *testing.T) {
	g := newWindowGuard(1, time.Hour)
	release, err := g.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	release()
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
