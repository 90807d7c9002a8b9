package extract

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
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
//   - a window guard makes the limit hold whatever the delays between the
//     moment a request is written and the moment the server counts it. With
//     n = max(1, floor(rate)) and window = n/rate (one second for an integer
//     rate), it has n slots; a request takes a free slot, and the slot frees
//     one window (plus the margin) after the request's arrival. The arrival
//     is not seen by the client; it is bounded from the request's write time
//     and its round trip: a request whose answer came back later than the
//     fastest one seen may have arrived that much later too, so the slot is
//     held for the excess (round trip less the fastest round trip) on top of
//     the window. A delay common to every request shifts all arrivals alike
//     and costs nothing; only its variation (jitter, a stalled server, a
//     retransmission) trims the pace, by that variation, rather than risk a
//     429. A request that got no answer holds its slot for a window from the
//     moment it failed, as it may have arrived as late as that.
type pacer struct {
	perSecond float64
	bucket    *rate.Limiter
	guard     *windowGuard
	latency   atomic.Int64 // moving average of an answer's time, ns; 0 before the first
}

// observe adds an answered request's time (from its send to its body read)
// to the moving average (weight 1/5).
func (p *pacer) observe(d time.Duration) {
	if d <= 0 {
		return
	}
	for {
		old := p.latency.Load()
		v := int64(d)
		if old > 0 {
			v = old + (int64(d)-old)/5
		}
		if p.latency.CompareAndSwap(old, v) {
			return
		}
	}
}

// inFlight is InFlightFor the pace and the answer times seen so far (1
// before the first answer).
func (p *pacer) inFlight() int {
	return InFlightFor(p.perSecond, time.Duration(p.latency.Load()))
}

// InFlightFor is the number of requests to keep in flight so that answers
// that take latency each still let a pace of perSecond requests per second
// through: x = perSecond × latency requests are busy at any moment; one
// request at a time when x ≤ 1 (at the default 10/s, any answer faster than
// 100 ms), else ceil(1.5 x) + 1 (spares for the answers slower than the
// mean: the average hides the slow ones),
// at most max(1, floor(perSecond)) — the window guard's slots. Pacing is
// unchanged by it: requests in flight together still leave one by one,
// evenly spaced, under the window guard.
func InFlightFor(perSecond float64, latency time.Duration) int {
	x := perSecond * latency.Seconds()
	if !(x > 1) {
		return 1
	}
	return max(1, min(int(math.Ceil(1.5*x))+1, int(math.Floor(min(perSecond, maxWindowSlots)))))
}

// maxWindowSlots bounds the guard's slots for very high rates (the window
// then shrinks to keep n/window = rate).
const maxWindowSlots = 4096

func newPacer(perSecond float64, margin time.Duration) *pacer {
	// The margin spaces requests a little wider than the pace, but never by
	// more than 2 % of the interval: at high rates a fixed 2 ms would cost a
	// sixth of the pace at 100/s; the window guard below, which keeps the
	// whole margin, is what keeps every second under the limit.
	spacing := time.Duration(float64(time.Second) / perSecond)
	interval := spacing + min(margin, spacing/50)
	n := max(1, int(math.Floor(min(perSecond, maxWindowSlots))))
	window := time.Duration(float64(n)/perSecond*float64(time.Second)) + margin
	return &pacer{
		perSecond: perSecond,
		bucket:    rate.NewLimiter(rate.Every(interval), 1),
		guard:     newWindowGuard(n, window),
	}
}

// wait blocks until a request may be sent and returns its slot, to release
// once its answer (or failure) is in.
func (p *pacer) wait(ctx context.Context) (*slot, error) {
	if err := p.bucket.Wait(ctx); err != nil {
		return nil, err
	}
	return p.guard.acquire(ctx)
}

// slot is one request's hold on a window guard slot.
type slot struct {
	g    *windowGuard
	i    int
	once sync.Once
}

// release frees the slot. wrote is when the request was written and rtt the
// time from then to the first byte of the answer; without an answer (rtt 0)
// the slot is held a full window from now. Only the first call counts.
func (s *slot) release(wrote time.Time, rtt time.Duration) {
	s.once.Do(func() { s.g.release(s.i, wrote, rtt) })
}

// cancel frees the slot at once, holding no window: its request never
// reached the service. Only the first call of release or cancel counts.
func (s *slot) cancel() {
	s.once.Do(func() { s.g.release(s.i, time.Time{}, -1) })
}

// windowGuard is n slots, each free from a given time on or busy.
type windowGuard struct {
	mu      sync.Mutex
	window  time.Duration
	freeAt  []time.Time // per slot; the zero time while a request holds it
	busy    []bool
	minRTT  time.Duration // the fastest round trip seen; 0 before the first
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
func (g *windowGuard) acquire(ctx context.Context) (_ *slot, err error) {
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
			return &slot{g: g, i: best}, nil
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

// release frees slot i from the estimated arrival of its request (see
// slot.release); a negative rtt frees it at once (slot.cancel).
func (g *windowGuard) release(i int, wrote time.Time, rtt time.Duration) {
	now := time.Now()
	g.mu.Lock()
	free := now.Add(g.window)
	switch {
	case rtt < 0:
		free = now
	case !wrote.IsZero() && rtt > 0:
		if g.minRTT == 0 || rtt < g.minRTT {
			g.minRTT = rtt
		}
		free = wrote.Add(rtt - g.minRTT + g.window)
	}
	g.busy[i] = false
	g.freeAt[i] = free
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}
