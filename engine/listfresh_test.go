package engine

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
)

// streamFreshness is stream's last success as the sync_freshness view
// gives it (nil: never synced completely).
func (h *harness) streamFreshness(stream string) (last any) {
	h.t.Helper()
	err := h.pool.QueryRow(context.Background(), "SELECT last_success_at FROM "+h.table("sync_freshness")+" WHERE stream = $1", stream).Scan(&last)
	if err != nil {
		h.t.Fatalf("read %s's freshness: %v", stream, err)
	}
	return last
}

// TestStreamWithAListNeverListedIsNotFresh: a stream of several lists one
// of which the service refuses (403) from the first run on: the run fails
// naming it, the other lists land, and the stream is not shown fresh — one
// of its lists never completed — until that list lands too.
func TestStreamWithAListNeverListedIsNotFresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	var s = h.eng.set.Streams[0]
	for _, st := range h.eng.set.Streams {
		if len(st.Lists) > len(s.Lists) {
			s = st
		}
	}
	if len(s.Lists) < 2 {
		t.Fatal("no declared stream has several lists")
	}
	refused := s.Lists[1]
	ep, ok := s.Endpoint(refused.Endpoint)
	if !ok {
		t.Fatalf("no endpoint %s", refused.Endpoint)
	}
	var forbid atomic.Bool
	forbid.Store(true)
	h.interceptAPI(func(w http.ResponseWriter, r *http.Request) bool {
		if !forbid.Load() || r.URL.Path != ep.Path {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":{"message":"Forbidden access","details":["Your API key does not have access to the requested data"]}}`))
		return true
	})
	res := h.run(Request{Streams: []string{s.Name}})
	if res.Status != StatusFailed {
		t.Fatalf("run %s (%v); want failed (one list refused)", res.Status, res.Err)
	}
	if last := h.streamFreshness(s.Name); last != nil {
		t.Errorf("%s is shown fresh (last success %v) while its list %s never completed", s.Name, last, refused.Partition)
	}
	forbid.Store(false)
	h.mustSucceed(Request{Streams: []string{s.Name}}, "run once the list is served")
	if last := h.streamFreshness(s.Name); last == nil {
		t.Errorf("%s is not fresh after every list landed", s.Name)
	}
}
