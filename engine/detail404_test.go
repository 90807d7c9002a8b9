package engine

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBrandDetail404StillAsksContacts: a brand whose detail answers 404
// while its list entry and its contacts are served (a detail endpoint that
// lost it): its contacts are still asked and land, the run says so, and
// the detail is asked again by the next run (it was not fetched).
func TestBrandDetail404StillAsksContacts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	tr := h.truth()
	brand := tr["brands"][1].Key
	var asked atomic.Int32
	target, err := url.Parse(h.sb.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	h.serveAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/brands/"+brand {
			asked.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"Data not found","details":["The requested data does not exist."]}}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	res := h.run(Request{})
	if res.Status != StatusWarning || res.Err != nil {
		t.Fatalf("run %s: %v; want warning (complete, noting the brand whose detail is missing)", res.Status, res.Err)
	}
	want := 0
	for _, l := range tr["contacts"] {
		if l.BrandID == brand && !l.Bad {
			want++
		}
	}
	got := h.count("SELECT count(*) FROM "+h.table("brand_contacts")+" WHERE brand_id = $1", brand)
	if want == 0 || got != want {
		t.Errorf("brand %s: %d contacts landed, the truth has %d", brand, got, want)
	}
	noted := false
	for _, n := range res.Notes {
		noted = noted || strings.Contains(n, brand) && strings.Contains(n, "404")
	}
	if !noted {
		t.Errorf("no note about brand %s's missing detail: %q", brand, res.Notes)
	}
	before := asked.Load()
	h.run(Request{})
	if asked.Load() != before+1 {
		t.Errorf("the next run asked the missing detail %d times, want once", asked.Load()-before)
	}
}
