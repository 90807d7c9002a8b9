package extract

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// TestTransportResendsAreCounted: when a reused keep-alive connection dies
// before answering, net/http sends the GET again on its own. The service
// saw two requests; the quota counter and the budget must too.
func TestTransportResendsAreCounted(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{} // requests per client connection
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		mu.Lock()
		seen[r.RemoteAddr]++
		n := seen[r.RemoteAddr]
		mu.Unlock()
		if n == 2 { // the second request on a kept-alive connection: drop it
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[],"total":0,"per_page":1000,"current_page":1,"last_page":1}`))
	}))
	t.Cleanup(srv.Close)
	ledger := &countingLedger{}
	var resends atomic.Int32
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k-resend", RateLimit: 1000, Counter: ledger,
		Hook: func(i RequestInfo) { resends.Add(int32(i.Resends)) }})
	if err != nil {
		t.Fatal(err)
	}
	budget := NewBudget(10)
	c = c.WithBudget(budget)
	for range 2 {
		for _, err := range c.List(context.Background(), stream.EndpointBrands, ListQuery{}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if served.Load() != 3 {
		t.Fatalf("the setup no longer provokes a transport resend (served %d, want 3)", served.Load())
	}
	if got := ledger.n.Load(); got != 3 {
		t.Errorf("counter saw %d requests, the service %d", got, served.Load())
	}
	if budget.Spent() != 3 || resends.Load() != 1 {
		t.Errorf("budget spent %d, resends reported %d; want 3 and 1", budget.Spent(), resends.Load())
	}
}
