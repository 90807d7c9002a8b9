package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/enginetest"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/progress"
)

// TestNextRun: the earliest next run of the schedules, with every stream
// scheduled then; none without a schedule.
func TestNextRun(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 10, 12, 30, 0, 0, time.UTC)
	n := nextRun([]Schedule{{Spec: "0 2 * * *", Streams: []string{"brands", "finance"}}, {Spec: "0 13 * * *", Streams: []string{"communications"}},
		{Spec: "0 13 * * *", Streams: []string{"projects"}}}, time.UTC, now)
	if n == nil || n.At != "2026-05-10 13:00 UTC" || n.In != "30 m 00 s" || n.Streams != "communications, projects" {
		t.Errorf("next run %+v", n)
	}
	if n := nextRun(nil, time.UTC, now); n != nil {
		t.Errorf("next run without schedules: %+v", n)
	}
}

// TestEventsStreamTheLiveView: /events sends the live view at once, again
// when the run moves, and ends when the page is closed (serve's shutdown);
// without live progress it is 404.
func TestEventsStreamTheLiveView(t *testing.T) {
	t.Parallel()
	live := progress.NewLive()
	src := &fakeStatus{rep: &engine.StatusReport{Schema: "agency"}}
	page := NewStatusPage(src, StatusPageOptions{Live: live})
	mux := http.NewServeMux()
	page.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("GET /events: %s %q", resp.Status, ct)
	}
	events := make(chan liveView, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var v liveView
				if json.Unmarshal([]byte(data), &v) == nil {
					events <- v
				}
			}
		}
	}()
	first := <-events
	if first.Live.Running {
		t.Fatalf("first event %+v, want nothing running", first)
	}
	live.Begin("0123456789ab", "serve", []string{"communications"}, 100)
	live.Update("communications", 3, 10)
	live.Committed("communications", 3000, 3000, 1, 4)
	for v := range events {
		if v.Live.Running && len(v.Live.Streams) == 1 && v.Live.Streams[0].Done == 3 {
			if s := v.Live.Streams[0]; s.Pages != "3 / 10" || s.Records != 3000 || s.Requests != 4 || v.Live.Short != "01234567" {
				t.Errorf("event %+v", v.Live)
			}
			break
		}
	}
	page.Close()
	for range events { // the stream ends
	}
	noLive := httptest.NewServer(func() http.Handler {
		m := http.NewServeMux()
		NewStatusPage(src, StatusPageOptions{}).Mount(m)
		return m
	}())
	t.Cleanup(noLive.Close)
	if r, err := http.Get(noLive.URL + "/events"); err != nil || r.StatusCode != http.StatusNotFound {
		t.Errorf("/events without live progress: %v %v", r.Status, err)
	} else {
		r.Body.Close()
	}
}

// gate holds the requests to a server until the test lets them through:
// one per permit, or all once open. A request held longer than hold goes
// through anyway, so that no client times out however slow the machine.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	permits int
	open    bool
	held    atomic.Int64
}

func newGate(t *testing.T, target string, hold time.Duration) (*gate, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{}
	g.cond = sync.NewCond(&g.mu)
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.pass(hold)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.release)
	return g, srv.URL
}

func (g *gate) pass(hold time.Duration) {
	timer := time.AfterFunc(hold, func() { g.mu.Lock(); g.permits++; g.cond.Broadcast(); g.mu.Unlock() })
	defer timer.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held.Add(1)
	defer g.held.Add(-1)
	for !g.open && g.permits == 0 {
		g.cond.Wait()
	}
	if !g.open {
		g.permits--
	}
}

func (g *gate) let(n int) { g.mu.Lock(); g.permits += n; g.cond.Broadcast(); g.mu.Unlock() }

func (g *gate) release() { g.mu.Lock(); g.open = true; g.cond.Broadcast(); g.mu.Unlock() }

// pageState is what the live test reads of the page.
type pageState struct {
	Ready    bool   `json:"ready"`
	Marker   int    `json:"marker"`
	Navs     int    `json:"navs"`
	Running  string `json:"running"`
	Done     int    `json:"done"`
	Total    int    `json:"total"`
	ETA      string `json:"eta"`
	Requests string `json:"requests"`
	Next     string `json:"next"`
	Status   string `json:"status"`
	State    string `json:"state"`
}

const readPage = `JSON.stringify((function () {
  var q = function (s) { return document.querySelector(s); };
  var live = q("#live"), pages = q('[data-live-stream="communications"] [data-field="pages"]');
  var eta = q('[data-live-stream="communications"] [data-field="eta"]'), req = q('#live-run [data-field="requests"]');
  var next = q('#next-run [data-field="next-at"]'), status = q('tr[data-run] [data-field="status"]');
  var state = q('tr[data-stream="communications"] [data-field="state"]');
  return {ready: document.readyState === "complete" && !!live, marker: window.agencysyncMarker || 0,
    navs: performance.getEntriesByType("navigation").length, running: live ? live.getAttribute("data-running") : "",
    done: pages ? +pages.getAttribute("data-done") : -1, total: pages ? +pages.getAttribute("data-total") : -1,
    eta: eta ? eta.textContent : "", requests: req ? req.textContent : "", next: next ? next.textContent : "",
    status: status ? status.textContent : "", state: state ? state.textContent : ""};
})())`

// TestStatusPageLiveInChromium: during a first sync of 100 000 e-mails,
// the status page open in headless Chromium shows the progress moving —
// the e-mails' pages done grow, with an ETA and the requests spent, the
// stream "syncing" rather than "never synced" — updated in place from
// /events, without a reload; when the run ends, the page reloads once and
// shows it recorded. The e-mails' requests pass a gate the test opens page
// by page, so that the page is seen mid-sync however fast or slow the
// machine.
func TestStatusPageLiveInChromium(t *testing.T) {
	t.Parallel()
	chromium(t)
	o := enginetest.SmallSandbox()
	o.Emails, o.HistoryDays = 100_000, 60
	k := enginetest.New(t, o)
	k.RealClock = true
	g, commsURL := newGate(t, k.SB.CommsURL(), 20*time.Second)
	k.CommsURL, k.Live = commsURL, progress.NewLive()
	k.Engine()
	page := NewStatusPage(k.Eng, StatusPageOptions{Live: k.Live, Schedules: []Schedule{{Spec: "0 3 * * *", Streams: engine.AllStreams}}})
	var eventStreams atomic.Int64
	mux := healthMux(Options{StatusPage: page})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/events" {
			eventStreams.Add(1)
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(page.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	result := make(chan *engine.Result, 1)
	go func() {
		res, err := k.Eng.Run(ctx, engine.Request{Trigger: engine.TriggerTest})
		if err != nil {
			t.Errorf("run: %v", err)
		}
		result <- res
	}()
	// The run is under way and waits at the gate for its e-mails.
	for !k.Live.Snapshot().Running || g.held.Load() == 0 {
		select {
		case <-k.Live.Changed():
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the run did not reach the e-mails")
		}
	}
	b := openBrowser(t, srv.URL+"/")
	read := func() pageState {
		var s pageState
		b.eval(readPage, &s)
		return s
	}
	s, err := waitFor(ctx, read, func(s pageState) bool { return s.Ready && s.Running == "true" })
	if err != nil {
		t.Fatalf("the page does not show the run: %+v (%v)", s, err)
	}
	var mark struct{ Marker int }
	b.eval(`JSON.stringify({marker: (window.agencysyncMarker = 42)})`, &mark)
	if s.Next == "" {
		t.Errorf("the page shows no next scheduled run")
	}

	// Page by page: each time, the page shows more pages done.
	seen := []pageState{}
	for range 4 {
		before := s.Done
		g.let(2)
		s, err = waitFor(ctx, read, func(s pageState) bool { return s.Done > before })
		if err != nil {
			t.Fatalf("the page's progress did not move past %d pages: %+v (%v)", before, s, err)
		}
		if s.Marker != 42 || s.Navs != 1 || s.Running != "true" {
			t.Fatalf("the page reloaded or lost the run while it moved: %+v", s)
		}
		seen = append(seen, s)
	}
	last := seen[len(seen)-1]
	if last.Total <= last.Done || last.ETA == "" || last.ETA == "—" || last.Requests == "0" || !strings.HasPrefix(last.State, "syncing") {
		t.Errorf("mid-sync the page shows %+v: want pages of a known total, an ETA, requests spent, the stream syncing", last)
	}
	t.Logf("pages done seen: %d, %d, %d, %d of %d; ETA %s; %s requests", seen[0].Done, seen[1].Done, seen[2].Done, seen[3].Done, last.Total, last.ETA, last.Requests)
	if dir := os.Getenv("AGENCYSYNC_SCREENSHOT_DIR"); dir != "" {
		var shot struct{ Data []byte }
		b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1200, "height": 1500, "deviceScaleFactor": 1, "mobile": false}, nil)
		b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
		_ = os.WriteFile(filepath.Join(dir, "statuspage-live.png"), shot.Data, 0o644)
	}

	g.release()
	res := <-result
	if res == nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("run: %+v", res)
	}
	s, err = waitFor(ctx, read, func(s pageState) bool {
		return s.Ready && s.Running == "false" && s.Status != "" && s.Status != load.RunRunning
	})
	if err != nil {
		t.Fatalf("after the run the page shows %+v (%v)", s, err)
	}
	if s.Marker != 0 || s.Status != string(res.Status) {
		t.Errorf("after the run: %+v, want one reload showing the run %s", s, res.Status)
	}
	// The reloaded page follows the events again: a second stream, and
	// only that one.
	if _, err := waitFor(ctx, func() int64 { return eventStreams.Load() }, func(n int64) bool { return n >= 2 }); err != nil {
		t.Fatalf("the reloaded page opened no event stream: %v", err)
	}
	if s = read(); eventStreams.Load() != 2 || s.Navs != 1 || s.Running != "false" {
		t.Errorf("%d event streams opened, page %+v; want 2 (the page, then the page reloaded once)", eventStreams.Load(), s)
	}
}
