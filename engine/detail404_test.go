package engine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
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
	asked := h.notFoundAt("/v1/brands/" + brand)
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

// TestListedProjectDetail404IsNoted: a project still listed whose detail
// answers 404 (an entity without child lists) lacks its detail's rows: the
// run says so and ends warning rather than succeeded, the project stays
// live, and the next run asks the detail again — also warning while the
// detail is missing.
func TestListedProjectDetail404IsNoted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	project := h.truth()["projects"][0].Key
	asked := h.notFoundAt("/v1/projects/" + project)
	for run := 1; run <= 2; run++ {
		before := asked.Load()
		res := h.run(Request{})
		if res.Status != StatusWarning || res.Err != nil {
			t.Fatalf("run %d %s: %v; want warning (the listed project's detail is missing)", run, res.Status, res.Err)
		}
		noted := false
		for _, n := range res.Notes {
			noted = noted || strings.Contains(n, "project "+project) && strings.Contains(n, "404")
		}
		if !noted {
			t.Errorf("run %d: no note about project %s's missing detail: %q", run, project, res.Notes)
		}
		if asked.Load() != before+1 {
			t.Errorf("run %d asked the missing detail %d times, want once", run, asked.Load()-before)
		}
		if live := h.count("SELECT count(*) FROM "+h.table("projects")+" WHERE project_id = $1 AND _deleted_at IS NULL", project); live != 1 {
			t.Errorf("run %d: the listed project is not live (%d rows)", run, live)
		}
	}
}

// TestInterruptedChildListKeepsTheDetail: a run interrupted while an
// entity's child list is in flight loses only that request: the entity's
// detail, answered before it, waits in the spool, and the next run asks the
// child list alone.
func TestInterruptedChildListKeepsTheDetail(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "spool")
	h := newHarness(t, smallSandbox(), func(s *Settings) { s.SpoolDir = dir })
	brand := h.truth()["brands"][1].Key
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var detail, contacts atomic.Int32
	h.interceptAPI(func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/v1/brands/" + brand:
			detail.Add(1)
		case "/v1/brands/" + brand + "/contacts":
			if contacts.Add(1) == 1 {
				cancel() // the worker is stopped while this request is in flight
				<-r.Context().Done()
				return true
			}
		}
		return false
	})
	h.eng = h.engine(func(s *Settings) { s.SpoolDir = dir })
	res, err := h.eng.Run(ctx, Request{Trigger: TriggerTest})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusPartial || !errors.Is(res.Err, ErrInterrupted) {
		t.Fatalf("interrupted run %s: %v", res.Status, res.Err)
	}
	h.mustSucceed(Request{}, "resumed run")
	if detail.Load() != 1 || contacts.Load() != 2 {
		t.Errorf("brand %s: detail asked %d times, contacts %d; want 1 and 2 (only the request in flight is lost)", brand, detail.Load(), contacts.Load())
	}
}

// interceptAPI puts intercept in front of the harness's sandbox on the main
// interface: a request it answers (returning true) goes no further, the
// others reach the sandbox.
func (h *harness) interceptAPI(intercept func(w http.ResponseWriter, r *http.Request) bool) {
	h.t.Helper()
	target, err := url.Parse(h.sb.APIURL())
	if err != nil {
		h.t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	h.serveAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
}

// notFoundAt answers 404 (the spec's body) to every request for path,
// counting them; the rest reaches the sandbox.
func (h *harness) notFoundAt(path string) *atomic.Int32 {
	var asked atomic.Int32
	h.interceptAPI(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != path {
			return false
		}
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"Data not found","details":["The requested data does not exist."]}}`))
		return true
	})
	return &asked
}
