package load

import (
	"context"
	"testing"
	"time"
)

// TestMaxEmailIDOfAWindow: the highest id of the live e-mails in a window,
// soft-deleted and out-of-window e-mails left out; 0 for an empty window;
// an error for a window that ends before it starts.
func TestMaxEmailIDOfAWindow(t *testing.T) {
	t.Parallel()
	_, pool, schema := newStore(t)
	ctx := context.Background()
	ins := emailInserter(t, pool, schema)
	ins(10, "2025-03-01T00:00:00Z", false)
	ins(12, "2025-03-01T23:59:59Z", false)
	ins(14, "2025-03-01T23:00:00Z", true)  // soft-deleted
	ins(16, "2025-03-02T00:00:00Z", false) // the next day
	rc, err := NewReconciler(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		start, end time.Time
		want       int64
	}{
		{d, d.AddDate(0, 0, 1), 12},
		{d, d.AddDate(0, 0, 2), 16},
		{d.AddDate(0, 0, 5), d.AddDate(0, 0, 6), 0},
	} {
		got, err := rc.MaxEmailID(ctx, c.start, c.end)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("MaxEmailID(%s, %s) = %d, want %d", c.start, c.end, got, c.want)
		}
	}
	if _, err := rc.MaxEmailID(ctx, d, d); err == nil {
		t.Error("MaxEmailID of an empty window: no error")
	}
}
