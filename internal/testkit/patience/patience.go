// Package patience gives tests waits bounded by the test binary's deadline
// (go test -timeout) rather than by a guess of how fast the machine is: a
// test waits for an event as long as a loaded machine needs, and a wait
// that never ends is reported, naming what it waited for, a minute before
// the binary would panic on its timeout.
package patience

import (
	"testing"
	"time"
)

// margin is the time left, after a wait gives up, for the test to kill its
// processes and report.
const margin = time.Minute

// noDeadline is how long a wait may last when the test binary has no
// deadline (go test -timeout 0).
const noDeadline = 24 * time.Hour

// Left returns how long a wait of t may last: until a minute before the
// test binary's deadline, at least a second.
func Left(t testing.TB) time.Duration {
	dt, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return noDeadline
	}
	d, ok := dt.Deadline()
	if !ok {
		return noDeadline
	}
	return max(time.Until(d)-margin, time.Second)
}

// After returns a channel that receives when a wait of t should give up
// (after Left(t)).
func After(t testing.TB) <-chan time.Time {
	return time.After(Left(t))
}
