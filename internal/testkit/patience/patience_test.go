package patience

import (
	"testing"
	"time"
)

func TestLeftEndsBeforeTheDeadline(t *testing.T) {
	left := Left(t)
	d, ok := t.Deadline()
	if !ok {
		if left != noDeadline {
			t.Fatalf("no deadline: Left = %s, want %s", left, noDeadline)
		}
		return
	}
	if until := time.Until(d); left > until-margin+time.Second || left < time.Second {
		t.Fatalf("Left = %s with %s to the deadline, want about %s less", left, until, margin)
	}
}

// noDeadlineTB is a testing.TB whose Deadline is not reachable (a
// *testing.B has none).
type noDeadlineTB struct{ testing.TB }

func TestLeftWithoutADeadlineMethod(t *testing.T) {
	if got := Left(noDeadlineTB{t}); got != noDeadline {
		t.Fatalf("Left = %s, want %s", got, noDeadline)
	}
}
