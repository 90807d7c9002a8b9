package extract

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pacer keeps one limit scope (both interfaces, or one of them) under the
// service's per-second limit, which the service measures by arrival time.
//
// Two mechanisms work together:
//
//   - a token bucket (golang.org/x/time/rate, burst 1) spaces requests evenly
//     at the configured rate plus a small margin: no bursts;
//   - a window guard makes the limit hold whatever the jitter between the
//     moment a request leaves and the moment the server sees it. With
//     n = max(1, floor(rate)) and window = n/rate (one second for an integer
//     rate), it has n slots; a request takes a free slot, and a slot frees
//     one window (plus the margin) after the response to its request arrived.
//     A server sees a request between its start and its response, so two
//     arrivals on one slot are always more than a window apart and no window
//     holds more than n arrivals. With the evenly spaced bucket the guard
//     never waits on a fast network; on a slow one it trims the pace by about
//     one round trip per window rather than risk a 429.
type pacer struct {
	bucket *rate.Limiter
	guard  *windowGuard
}

// maxWindowSlots bounds the guard's slots for very high rates (the window
// then shrinks to keep n/window = rate).
const maxWindowSlots = 4096

func newPacer(perSecond float64, margin time.Duration) *pacer {
	interval := time.Duration(float64(time.Second)/perSecond) + margin
	n := max(1, int(math.Floor(min(perSecond, maxWindowSlots))))
	window := time.Duration(float64(n)/perSecond*float64(time.Second)) + margin
	return &pacer{
		bucket: rate.NewLimiter(rate.Every(interval), 1),
		guard:  newWindowGuard(n, window),
	}
}

// wait blocks until a request may be sent and returns the function to call
// once its response (or failure) arrived.
func (p *pacer) wait(ctx context.Context) (done func(), err error) {
	if err := p.bucket.Wait(ctx); err != nil {
		return nil, err
	}
	return p.guard.acquire(ctx)
}

// windowGuard is n slots, each free from a given time on or busy.
type windowGuard struct {
	mu      sync.Mutex
	window  time.Duration
	freeAt  []time.Time // per slot; the zero time while a request holds it
	busy    []bool
	changed chan struct{} // closed and replaced when a slot is released
}

func newWindowGuard(n int, window time.Duration) *windowGuard {
	return &windowGuard{
		window:  window,
		freeAt:  make([]time.Time, n),
		busy:    make([]bool, n),
		changed: make(chan struct{}),
	}
}

// acquire takes the slot that frees first, waiting for it if need be.
func (g *windowGuard) acquire(ctx context.Context) (release func(), err error) {
	for {
		g.mu.Lock()
		best := -1
		for i := range g.freeAt {
			if !g.busy[i] && (best < 0 || g.freeAt[i].Before(g.freeAt[best])) {
				best = i
			}
		}
		now := time.Now()
		if best >= 0 && !g.freeAt[best].After(now) {
			g.busy[best] = true
			g.mu.Unlock()
			slot := best
			var once sync.Once
			return func() { once.Do(func() { g.release(slot) }) }, nil
		}
		changed := g.changed
		var t *time.Timer
		var timer <-chan time.Time
		if best >= 0 {
			t = time.NewTimer(g.freeAt[best].Sub(now))
			timer = t.C
		}
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-changed:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return nil, err
		}
	}
}

func (g *windowGuard) release(slot int) {
	g.mu.Lock()
	g.busy[slot] = false
	g.freeAt[slot] = time.Now().Add(g.window)
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}
