package engine

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// flightRecorder is a hand-written server in front of one sandbox listener:
// it holds every request for latency before passing it on, and records when
// each request arrived and how many of each class were in flight at once.
type flightRecorder struct {
	srv     *httptest.Server
	latency time.Duration

	mu       sync.Mutex
	arrivals []time.Time
	now      map[string]int // in flight by class
	max      map[string]int // the most in flight at once by class
}

// requestClass is "detail" for a brand's or project's detail and a brand's
// contacts, "comms" for the communications endpoint, "list" otherwise.
func requestClass(r *http.Request) string {
	p := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(p, "/")
	switch {
	case r.Method == http.MethodPost:
		return "comms"
	case len(parts) >= 3 && (parts[1] == "brands" || parts[1] == "projects"):
		return "detail" // /v1/brands/{id}, /v1/brands/{id}/contacts, /v1/projects/{id}
	default:
		return "list"
	}
}

func newFlightRecorder(t *testing.T, target string, latency time.Duration) *flightRecorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	f := &flightRecorder{latency: latency, now: map[string]int{}, max: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		class := requestClass(r)
		f.mu.Lock()
		f.arrivals = append(f.arrivals, time.Now())
		f.now[class]++
		f.max[class] = max(f.max[class], f.now[class])
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.now[class]--
			f.mu.Unlock()
		}()
		select {
		case <-time.After(f.latency):
		case <-r.Context().Done():
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// most is the most requests of class that were in flight at once.
func (f *flightRecorder) most(class string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.max[class]
}

// busiestSecond is the most arrivals within any window of one second over
// the arrivals of every recorder given.
func busiestSecond(fs ...*flightRecorder) int {
	var all []time.Time
	for _, f := range fs {
		f.mu.Lock()
		all = append(all, f.arrivals...)
		f.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range all {
		for all[i].Sub(all[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// pacedHarness is a harness whose engine talks to the sandbox through two
// flight recorders (main interface and communications) at the given pace.
func pacedHarness(t *testing.T, rate float64, latency time.Duration, brands, projects, emails int, tune func(*Settings)) (*harness, *flightRecorder, *flightRecorder) {
	t.Helper()
	o := smallSandbox()
	o.Brands, o.ProjectsPerBrand, o.Emails = brands, projects, emails
	// The sandbox enforces the limit itself: a burst above it is a genuine 429.
	o.NoLimits, o.Rate, o.DailyQuota = false, rate, 1_000_000
	h := newHarness(t, o, tune)
	api := newFlightRecorder(t, h.sb.APIURL(), latency)
	comms := newFlightRecorder(t, h.sb.CommsURL(), latency)
	h.eng, _ = h.wire(wiring{apiURL: api.srv.URL, commsURL: comms.srv.URL, rate: rate, perPage: 100,
		dailyQuota: 1_000_000, spoolDir: filepath.Join(t.TempDir(), "spool"), tune: tune})
	return h, api, comms
}

// ledgerCount is the requests the ledger counted over all quota days.
func (h *harness) ledgerCount() int {
	return h.count("SELECT coalesce(sum(requests), 0)::int FROM " + h.table("api_quota_usage"))
}

// At a raised limit (100/s) and 50 ms of latency, one request at a time
// cannot keep the pace: details and communications pages are fetched
// several at a time — paced (no second holds more than the limit, the
// sandbox answers no genuine 429), committed in order (the warehouse equals
// the truth), and costing exactly the requests of a run that fetches one at
// a time.
func TestSeveralRequestsInFlightAtARaisedLimit(t *testing.T) {
	t.Parallel()
	const rate, latency = 100, 50 * time.Millisecond
	h, api, comms := pacedHarness(t, rate, latency, 5, 8, 2500, nil)
	res := h.run(Request{})
	if res.Status != StatusSucceeded {
		t.Fatalf("run: %s %v", res.Status, res.Err)
	}
	h.assertEqualsTruth()
	if n := api.most("detail"); n < 2 {
		t.Errorf("at most %d detail request(s) in flight at once; want several at %v/s with %v latency", n, rate, latency)
	}
	if n := comms.most("comms"); n < 2 {
		t.Errorf("at most %d communications request(s) in flight at once; want several", n)
	}
	if n := busiestSecond(api, comms); n > rate {
		t.Errorf("%d requests arrived within one second; the limit is %v", n, float64(rate))
	}
	st := h.sb.Stats()
	if st.RateLimited != 0 {
		t.Errorf("the sandbox answered %d genuine 429s", st.RateLimited)
	}
	if got := h.ledgerCount(); int64(got) != st.Requests || h.sent.Load() != st.Requests {
		t.Errorf("ledger counted %d, client sent %d, sandbox saw %d requests", got, h.sent.Load(), st.Requests)
	}

	// The same sync one request at a time costs exactly as many requests,
	// retries apart: a loaded machine may drop an answer (a truncated body,
	// retried and counted), and neither way of fetching may need more.
	seq, _, _ := pacedHarness(t, rate, 0, 5, 8, 2500, func(s *Settings) { s.NoPrefetch = true })
	sres := seq.run(Request{})
	if sres.Status != StatusSucceeded {
		t.Fatalf("sequential run %s: %v", sres.Status, sres.Err)
	}
	a, b := st.Requests-int64(res.Retries), seq.sb.Stats().Requests-int64(sres.Retries)
	if a != b {
		t.Errorf("%d requests with several in flight, %d one at a time (retries apart: %d and %d)", a, b, res.Retries, sres.Retries)
	}
}

// At the default limit (10/s) with next to no latency one request in flight
// keeps the pace: the behaviour stays as it was, one at a time.
func TestOneRequestInFlightAtTheDefaultLimit(t *testing.T) {
	t.Parallel()
	h, api, comms := pacedHarness(t, 10, 0, 2, 3, 400, nil)
	h.mustSucceed(Request{}, "run")
	h.assertEqualsTruth()
	for _, c := range []struct {
		f     *flightRecorder
		class string
	}{{api, "detail"}, {api, "list"}, {comms, "comms"}} {
		if n := c.f.most(c.class); n != 1 {
			t.Errorf("at most %d %s request(s) in flight at once; want 1 at the default limit", n, c.class)
		}
	}
	if n := busiestSecond(api, comms); n > 10 {
		t.Errorf("%d requests arrived within one second; the limit is 10", n)
	}
	if st := h.sb.Stats(); st.RateLimited != 0 {
		t.Errorf("the sandbox answered %d genuine 429s", st.RateLimited)
	}
}
