package sandbox

import (
	"math"
	"sync"
	"time"
)

// limiter enforces one scope's per-second rate and daily quota.
//
// Rate: with n = max(1, floor(Rate)) and window = n / Rate seconds (one second
// for any integer rate), at most n accepted requests arrive within any
// window-long interval: a request is accepted when fewer than n requests were
// accepted during the window before it. Arrival times come from the
// monotonic wall clock, not the sandbox clock.
//
// Quota: every request that passes authentication and the rate limit counts,
// whatever its answer, except a daily-quota 429 and a spurious-429 fault. The
// count resets when the quota day (the sandbox clock's date in QuotaTZ)
// changes.
type limiter struct {
	name   string
	mu     sync.Mutex
	base   time.Time
	n      int
	window time.Duration
	ring   []time.Duration // arrival times of the last n accepted requests
	head   int
	count  int

	day  string
	used int64
}

func newLimiter(name string, rate float64) *limiter {
	l := &limiter{name: name, base: time.Now(), n: 1, window: time.Second}
	if rate > 0 && !math.IsInf(rate, 0) {
		l.n = max(1, int(math.Floor(rate)))
		l.window = time.Duration(float64(l.n) / rate * float64(time.Second))
	}
	l.ring = make([]time.Duration, l.n)
	return l
}

// allowAt applies the sliding window at time t (since l.base).
func (l *limiter) allowAt(t time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count < l.n {
		l.ring[(l.head+l.count)%l.n] = t
		l.count++
		return true
	}
	if t-l.ring[l.head] >= l.window {
		l.ring[l.head] = t
		l.head = (l.head + 1) % l.n
		return true
	}
	return false
}

func (l *limiter) allow() bool { return l.allowAt(time.Since(l.base)) }

// take counts one request on quota day d; it refuses (and does not count)
// when enforce is set and the quota is spent.
func (l *limiter) take(d string, quota int, enforce bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.day != d {
		l.day, l.used = d, 0
	}
	if enforce && l.used >= int64(quota) {
		return false
	}
	l.used++
	return true
}

// spend adds n requests made elsewhere today.
func (l *limiter) spend(d string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.day != d {
		l.day, l.used = d, 0
	}
	l.used += n
}

// usage returns the requests counted on day d.
func (l *limiter) usage(d string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.day != d {
		return 0
	}
	return l.used
}
