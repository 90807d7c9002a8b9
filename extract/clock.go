package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ServiceClock is the service's clock as the worker sees it: the worker's own
// clock plus the offset read off the `Date` header of the service's answers.
// The daily quota resets at the service's midnight, not the worker's, so the
// quota day and the run's "today" are taken from this clock; a worker whose
// clock is skewed (or a sandbox whose clock was moved) still plans the right
// day. Until an answer with a usable Date header has been seen — and when the
// service sends none — it is the worker's clock.
//
// A Date header has one-second resolution and is written somewhere between
// the request's send and its answer's arrival, so one observation gives the
// offset within about a second plus the round trip: ample for a quota day.
// The newest observation wins, so a clock that jumps (a sandbox's virtual
// clock, a corrected server) is followed at the next answer.
//
// It is safe for concurrent use. The zero value is not usable: call
// NewServiceClock.
type ServiceClock struct {
	local func() time.Time

	mu       sync.Mutex
	offset   time.Duration
	known    bool
	observed bool // an answer told it (not only SetOffset)
}

// NewServiceClock returns a clock over local (nil: time.Now) with no offset
// known yet.
func NewServiceClock(local func() time.Time) *ServiceClock {
	if local == nil {
		local = time.Now
	}
	return &ServiceClock{local: local}
}

// Now returns the service's current time: the local clock plus the offset
// last observed (none while unknown).
func (c *ServiceClock) Now() time.Time {
	c.mu.Lock()
	off := c.offset
	c.mu.Unlock()
	return c.local().Add(off)
}

// Offset returns the service clock's lead over the local one, and whether an
// answer (or SetOffset) has told it.
func (c *ServiceClock) Offset() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset, c.known
}

// Observed reports whether an answer seen by this process told the offset
// (rather than only SetOffset, from a previous process).
func (c *ServiceClock) Observed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.observed
}

// SetOffset sets the offset, e.g. the one a previous process observed and
// the warehouse kept, until an answer tells a newer one.
func (c *ServiceClock) SetOffset(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset, c.known = d, true
}

// Observe takes the Date header of an answer to a request sent at sent and
// answered at received (both on the local clock). A missing or malformed
// header is ignored and reported false.
func (c *ServiceClock) Observe(header string, sent, received time.Time) bool {
	if header == "" {
		return false
	}
	date, err := http.ParseTime(header)
	if err != nil {
		return false
	}
	c.observe(date, sent, received)
	return true
}

// observe takes a server date (truncated to the second) seen for a request
// between sent and received: the server wrote it at the midpoint of the
// round trip, on average, half a second into the second it names.
func (c *ServiceClock) observe(date, sent, received time.Time) {
	mid := sent.Add(received.Sub(sent) / 2)
	off := date.Add(500 * time.Millisecond).Sub(mid)
	// Within a second of the local clock is no skew worth following: the
	// header cannot tell it, and a jittering offset would move "today" back
	// and forth around midnight.
	if off > -time.Second && off < time.Second {
		off = 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset, c.known, c.observed = off.Round(time.Millisecond), true, true
}

// ProbeClock reads the service's clock without spending quota: one paced GET
// of the brands list WITHOUT the key, whose answer (401 by the spec) carries
// the service's Date header. A request that carries no key cannot be counted
// against the key's quota, so it is neither counted in the ledger nor taken
// from the run's budget. The engine sends it at the start of every run,
// before it plans: the offset it kept from its last answer is stale once the
// service's clock has moved (a clock that jumped), and only the service can
// tell. It returns
// ErrNoServiceClock when the answer has no usable Date header.
func (c *Client) ProbeClock(ctx context.Context) error {
	if c.clock == nil || c.base == "" || c.probePath == "" {
		return ErrNoServiceClock
	}
	sl, err := c.pacer.wait(ctx)
	if err != nil {
		return fmt.Errorf("probe service clock: %w", err)
	}
	defer sl.release(time.Time{}, 0)
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, c.base+c.probePath+"?per_page=1", nil)
	if err != nil {
		return fmt.Errorf("probe service clock: %s", c.redact(err.Error()))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "agencysync-extract")
	sent := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("probe service clock: %s", c.redact(err.Error()))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if !c.clock.Observe(resp.Header.Get("Date"), sent, time.Now()) {
		return fmt.Errorf("probe service clock: status %d: %w", resp.StatusCode, ErrNoServiceClock)
	}
	c.log.Info("read the service's clock with a request that carries no key (no quota spent)",
		zap.Int("status", resp.StatusCode), zap.String("service_time", c.clock.Now().UTC().Format(time.RFC3339)))
	return nil
}

// ErrNoServiceClock means the service's answer carried no usable Date header.
var ErrNoServiceClock = errors.New("the service sends no Date header")
