package engine

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// TestPerPageChangeMidRangeWithPagesAhead: the service changes per_page in
// the middle of a range while pages are fetched ahead (spool, prefetch and
// several requests in flight). The page loop rewrites the range's cursor
// (per_page, offset, next page) on every page while the producer and the
// pages-ahead goroutines keep paging: run under -race, nothing may be read
// by them that the loop writes, and nothing may be lost.
func TestPerPageChangeMidRangeWithPagesAhead(t *testing.T) {
	for _, v := range []struct {
		name          string
		before, after int
		at            int // the page from which the new size is answered
	}{
		{"10 then 13", 10, 13, 4},
		{"10 then 7", 10, 7, 3},
		{"25 then 40", 25, 40, 2},
	} {
		t.Run(v.name, func(t *testing.T) {
			srv := newMailServer(160, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
			srv.perForce = v.before
			srv.before = func(_ *http.Request, _ int, page int) {
				if page >= v.at {
					srv.mu.Lock()
					srv.perForce = v.after
					srv.mu.Unlock()
				}
			}
			dir := filepath.Join(t.TempDir(), "spool")
			h := newMailHarness(t, srv, func(s *Settings) { s.SpoolDir, s.MaxInFlight = dir, 4 })
			res := h.run(context.Background())
			if miss := h.missing(); len(miss) > 0 {
				t.Fatalf("%d records lost (status %s, err %v): %v", len(miss), res.Status, res.Err, miss)
			}
			if res.Status != StatusSucceeded {
				t.Fatalf("status %s, err %v", res.Status, res.Err)
			}
			t.Logf("%d requests for 160 records, %d a page then %d", srv.requests.Load(), v.before, v.after)
		})
	}
}
