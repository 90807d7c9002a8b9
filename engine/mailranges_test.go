package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agencysync/agencysync/load"
)

// mailServer is a hand-written communications endpoint: records in
// ascending id, filtered by date, paged by the asked (or a forced) per_page.
// Its own list of ids is the truth the tests compare the warehouse with.
type mailServer struct {
	mu        sync.Mutex
	at        map[int64]time.Time
	perForce  int  // >0: every answer has this page size, whatever was asked
	perCap    int  // >0: the page size answered is at most this
	noPaging  bool // answer no total/per_page/current_page/last_page
	ignoreEnd bool // date_end is not applied (future-dated records come back)
	renumber  bool // adversarial: every answer renumbers the records (ids above all before) and changes the total
	// before runs before a page is answered (without the lock); n counts the
	// requests (1-based). It may block on r.Context().
	before   func(r *http.Request, n int, page int)
	requests atomic.Int64
}

func newMailServer(n int, from time.Time, days int) *mailServer {
	m := &mailServer{at: map[int64]time.Time{}}
	for i := 1; i <= n; i++ {
		id := int64(i * 10) // room for older records inserted in between
		m.at[id] = from.AddDate(0, 0, (i-1)*days/n).Add(time.Duration(i) * time.Minute)
	}
	return m
}

func (m *mailServer) add(id int64, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.at[id] = at
}

func (m *mailServer) remove(ids ...int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.at, id)
	}
}

// ids lists the server's records, ascending.
func (m *mailServer) ids() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.at))
}

func (m *mailServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(m.requests.Add(1))
	var q mailQuery
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if m.before != nil {
		m.before(r, n, q.Page)
		if r.Context().Err() != nil {
			return
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var match []int64
	for id, at := range m.at {
		d := at.UTC().Format(time.DateOnly)
		if d >= q.DateStart && (m.ignoreEnd || d <= q.DateEnd) {
			match = append(match, id)
		}
	}
	slices.Sort(match)
	per := q.PerPage
	if m.perForce > 0 {
		per = m.perForce
	}
	if m.perCap > 0 && per > m.perCap {
		per = m.perCap
	}
	page := max(q.Page, 1)
	lo, hi := min((page-1)*per, len(match)), min(page*per, len(match))
	var b bytes.Buffer
	b.WriteString(`{"data":{"rows":`)
	if lo == hi {
		b.WriteString(`[]`)
	} else {
		b.WriteString(`{`)
		for i, id := range match[lo:hi] {
			if i > 0 {
				b.WriteString(",")
			}
			at := m.at[id]
			if m.renumber {
				id = int64(n)*100000 + int64(lo+i+1)
			}
			fmt.Fprintf(&b, `"%d":{"email":{"type_id":1,"type_name":"mail","brand_id":"7","project_id":"70","subject":"s%d","message":null,"has_attachments":null,"size":10,"mailbox_id":"m%d","mailbox_thread":"t%d","email_at":%q},`+
				`"users":{"from":[{"first_name":"Ann","last_name":"Lee","full_name":"Ann Lee","email":"ann@example.com","phone":"","avatar":"https://example.com/a.png","status":"Activ"}],"to":[],"cc":[],"bcc":[]}}`,
				id, id, id, id, at.UTC().Format("2006-01-02T15:04:05.000000Z"))
		}
		b.WriteString(`}`)
	}
	if !m.noPaging {
		last := max((len(match)+per-1)/per, 1)
		total := len(match)
		if m.renumber {
			total += n % 2
		}
		fmt.Fprintf(&b, `,"total":%d,"per_page":%d,"current_page":%d,"last_page":%d`, total, per, page, last)
	}
	b.WriteString(`}}`)
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(b.Bytes())
}

// mailHarness is an engine syncing communications only from a mailServer
// into a fresh schema, on a fixed clock.
type mailHarness struct {
	mailSchema
	srv    *mailServer
	now    time.Time
	tune   func(*Settings)
	perReq int // the client's per_page (0: default)
	url    string
}

var mailNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newMailHarness(t *testing.T, srv *mailServer, tune func(*Settings)) *mailHarness {
	t.Helper()
	w := newMailSchema(t)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &mailHarness{mailSchema: w, srv: srv, now: mailNow, tune: tune, url: ts.URL}
}

func (h *mailHarness) engine() *Engine {
	return h.mailSchema.engine(mailEngine{url: h.url, now: func() time.Time { return h.now }, start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		perPage: h.perReq, rate: 2000, maxAttempts: 2, dailyQuota: 1_000_000, tune: h.tune})
}

func (h *mailHarness) run(ctx context.Context) *Result {
	h.t.Helper()
	return runEngine(ctx, h.t, h.engine(), Request{Streams: []string{"communications"}})
}

// landed lists the e-mail ids in the warehouse, ascending.
func (h *mailHarness) landed() []int64 { return h.ids("true") }

// missing lists the server's ids the warehouse lacks.
func (h *mailHarness) missing() []int64 {
	return missingIDs(h.landed(), h.srv.ids())
}

func (h *mailHarness) cursor() commsCursor {
	h.t.Helper()
	c, err := h.commsCursor()
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

func windowed(days int) func(*Settings) {
	return func(s *Settings) { s.Mail.BackfillWindow = time.Duration(days) * 24 * time.Hour }
}

// TestCancelWhileAPageIsInFlightKeepsTheRangeOpen: SIGTERM while page 3 is
// being fetched (page 2 committed, the page loop waiting for page 3). The
// range must stay open at page 3 and the run must not succeed; the next run
// lands everything.
func TestCancelWhileAPageIsInFlightKeepsTheRangeOpen(t *testing.T) {
	for _, v := range []struct {
		name       string
		window     int
		noPrefetch bool
	}{{"one range", 0, false}, {"windows", 40, false}, {"one range, no prefetch", 0, true}} {
		t.Run(v.name, func(t *testing.T) {
			// The race the bug needs is a coin toss: try several times.
			for try := range 4 {
				srv := newMailServer(50, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
				srv.perCap = 10
				h := newMailHarness(t, srv, func(s *Settings) {
					windowed(v.window)(s)
					s.NoPrefetch = v.noPrefetch
				})
				res := h.runCancelledAt(3)
				if res.Status == StatusSucceeded {
					t.Fatalf("try %d: a cancelled run ended succeeded (notes %v)", try, res.Notes)
				}
				c := h.cursor()
				cur := c.Backfill.Current
				if cur == nil || cur.NextPage != 3 || c.Backfill.DoneUntil != "" {
					t.Fatalf("try %d: the cancelled range was closed or moved: backfill %+v current %+v", try, c.Backfill, cur)
				}
				srv.before = nil
				res = h.run(context.Background())
				if res.Status != StatusSucceeded {
					t.Fatalf("try %d: resume: status %s err %v", try, res.Status, res.Err)
				}
				if miss := h.missing(); len(miss) > 0 {
					t.Fatalf("try %d: %d records lost: %v", try, len(miss), miss)
				}
			}
		})
	}
}

// runCancelledAt runs the engine and cancels the run when page is first
// asked, once the pages before it have committed (so the page loop waits
// for that page); the request is left hanging until the run gives it up.
func (h *mailHarness) runCancelledAt(page int) *Result {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var asked atomic.Bool
	h.srv.before = func(r *http.Request, _ int, p int) {
		if p == page && asked.CompareAndSwap(false, true) {
			for h.committedPages() < page-1 {
				time.Sleep(2 * time.Millisecond)
			}
			cancel()
			<-r.Context().Done()
		}
	}
	return h.run(ctx)
}

// committedPages is the backfill's pages committed in its current range.
func (h *mailHarness) committedPages() int {
	c, err := h.commsCursor()
	if err != nil || c.Backfill == nil || c.Backfill.Current == nil {
		return 0
	}
	return c.Backfill.Current.NextPage - 1
}

// TestRecordsDeletedMidRangeAreNotSkipped: five e-mails already loaded are
// deleted between pages 2 and 3; the rest shift toward the start, so page 3
// under the new layout starts five records later. Every record must land —
// one page at a time, with the next page prefetched, or with pages 3 and
// later fetched ahead (the records shifted toward the start are found by
// stepping back, as with one page at a time).
func TestRecordsDeletedMidRangeAreNotSkipped(t *testing.T) {
	for _, v := range []struct {
		name       string
		noPrefetch bool
		inFlight   int // pages fetched at a time through the spool (0: none)
	}{
		{"noPrefetch=false", false, 0},
		{"noPrefetch=true", true, 0},
		{"fetched ahead", false, 4},
	} {
		t.Run(v.name, func(t *testing.T) {
			srv := newMailServer(50, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
			srv.perCap = 10
			all := srv.ids()
			var once sync.Once
			var h *mailHarness
			srv.before = func(r *http.Request, _ int, page int) {
				if page >= 3 {
					// Pages may be asked several at a time: the records go
					// once page 2 is in (committed), as the test says.
					for h.committedPages() < 2 && r.Context().Err() == nil {
						time.Sleep(2 * time.Millisecond)
					}
					once.Do(func() { srv.remove(all[2], all[5], all[8], all[12], all[17]) })
				}
			}
			dir := filepath.Join(t.TempDir(), "spool")
			h = newMailHarness(t, srv, func(s *Settings) {
				s.NoPrefetch = v.noPrefetch
				if v.inFlight > 0 {
					s.SpoolDir, s.MaxInFlight = dir, v.inFlight
				}
			})
			res := h.run(context.Background())
			if miss := missingIDs(h.landed(), all); len(miss) > 0 {
				t.Errorf("records %v skipped (status %s)", miss, res.Status)
			}
			if res.Status != StatusSucceeded {
				t.Errorf("status %s, err %v", res.Status, res.Err)
			}
			t.Logf("%d requests for 50 records at 10 a page, 5 deleted after page 2", srv.requests.Load())
		})
	}
}

// TestRecordsInsertedMidRangeAreNotLost: older e-mails inserted before the
// position already paged shift the rest toward the end (duplicates only)
// but are themselves behind the pager: the run must not claim success, and
// the next run must fetch the gap.
func TestRecordsInsertedMidRangeAreNotLost(t *testing.T) {
	srv := newMailServer(50, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
	srv.perCap = 10
	var once sync.Once
	srv.before = func(_ *http.Request, _ int, page int) {
		if page == 3 {
			once.Do(func() {
				for _, id := range []int64{15, 25, 35} {
					srv.add(id, time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
				}
			})
		}
	}
	h := newMailHarness(t, srv, nil)
	res := h.run(context.Background())
	if miss := h.missing(); len(miss) > 0 && res.Status == StatusSucceeded {
		t.Fatalf("run succeeded with %d records missing: %v", len(miss), miss)
	}
	// The closing reconciliation (mailverify.go) finds the range short and
	// re-fetches the days that differ within the run; a run that could not
	// would end partial and leave it to the next one.
	if miss := h.missing(); len(miss) > 0 && res.Status != StatusPartial {
		t.Fatalf("run with %d records missing ended %s, want partial", len(miss), res.Status)
	}
	srv.before = nil
	res = h.run(context.Background())
	if miss := h.missing(); len(miss) > 0 {
		t.Fatalf("after the next run %d records still missing: %v (status %s)", len(miss), miss, res.Status)
	}
	if res.Status != StatusSucceeded {
		t.Fatalf("next run: status %s err %v", res.Status, res.Err)
	}
}

// TestPerPageChangeBetweenRunsLosesNothing: a run stops after three pages
// of ten; the server then answers fifteen per page whatever is asked. The
// resume must start from the thirty records committed, not at page 4 of the
// new layout (records 46..60).
func TestPerPageChangeBetweenRunsLosesNothing(t *testing.T) {
	for _, v := range []struct{ before, after int }{{10, 15}, {10, 7}, {10, 40}} {
		t.Run(fmt.Sprintf("%d→%d", v.before, v.after), func(t *testing.T) {
			srv := newMailServer(80, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
			srv.perForce = v.before
			h := newMailHarness(t, srv, nil)
			res := h.runCancelledAt(4)
			if res.Status == StatusSucceeded {
				t.Fatalf("cancelled run succeeded")
			}
			if n := len(h.landed()); n != 30 {
				t.Fatalf("first run landed %d, want 30", n)
			}
			srv.before = nil
			srv.perForce = v.after
			res = h.run(context.Background())
			if miss := h.missing(); len(miss) > 0 {
				t.Fatalf("%d records lost after the page size changed: %v (status %s)", len(miss), miss, res.Status)
			}
			if res.Status != StatusSucceeded {
				t.Fatalf("status %s err %v", res.Status, res.Err)
			}
			t.Logf("%d requests in all for 80 records (%d a page, then %d)", srv.requests.Load(), v.before, v.after)
		})
	}
}

// TestNoPagingFieldsPagesWhilePagesAreFull: a server that answers no
// total/last_page: paging goes on while pages come back full. Nothing can
// be reconciled without totals: the run completes but ends warning, with a
// note saying so.
func TestNoPagingFieldsPagesWhilePagesAreFull(t *testing.T) {
	srv := newMailServer(50, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
	srv.noPaging = true
	h := newMailHarness(t, srv, nil)
	h.perReq = 10
	res := h.run(context.Background())
	if miss := h.missing(); len(miss) > 0 {
		t.Fatalf("%d of 50 records missing: %v (status %s)", len(miss), miss, res.Status)
	}
	if res.Status != StatusWarning || res.Err != nil || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "no totals") }) {
		t.Fatalf("status %s err %v notes %q, want warning with a note on the missing totals", res.Status, res.Err, res.Notes)
	}
}

// TestFutureDatedEmailsDoNotStopIncrements: e-mails dated 9999-12-31 and
// now + 30 days are kept and reported, the watermark stays at now, and a
// later run still fetches the new e-mails.
func TestFutureDatedEmailsDoNotStopIncrements(t *testing.T) {
	srv := newMailServer(20, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
	srv.ignoreEnd = true
	srv.add(5000, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
	srv.add(5010, mailNow.AddDate(0, 0, 30))
	h := newMailHarness(t, srv, nil)
	res := h.run(context.Background())
	if miss := h.missing(); len(miss) > 0 {
		t.Fatalf("missing %v", miss)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "dated after now") {
		t.Errorf("no note of the future-dated e-mails: %v", res.Notes)
	}
	var wm time.Time
	if err := h.pool.QueryRow(context.Background(), "SELECT watermark FROM "+h.table("sync_state")+
		" WHERE stream = $1 AND partition = ''", "communications").Scan(&wm); err != nil {
		t.Fatal(err)
	}
	if wm.After(h.now) {
		t.Fatalf("watermark %s passed now %s", wm, h.now)
	}
	// Two days later, a new e-mail of yesterday must land.
	h.now = h.now.AddDate(0, 0, 2)
	srv.add(6000, h.now.AddDate(0, 0, -1))
	h.run(context.Background())
	if miss := h.missing(); len(miss) > 0 {
		t.Fatalf("the next increment missed %v", miss)
	}
}

// TestWatermarkInTheFutureIsHeldAtNow: a watermark a previous version left
// past now must not stop the increments.
func TestWatermarkInTheFutureIsHeldAtNow(t *testing.T) {
	srv := newMailServer(20, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
	h := newMailHarness(t, srv, nil)
	h.run(context.Background())
	future := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	if _, err := h.pool.Exec(context.Background(), "UPDATE "+h.table("sync_state")+
		" SET watermark = $2 WHERE stream = $1 AND partition = ''", "communications", future); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.AddDate(0, 0, 1)
	srv.add(6000, h.now.Add(-time.Hour))
	res := h.run(context.Background())
	if miss := h.missing(); len(miss) > 0 {
		t.Fatalf("increment skipped after a future watermark: missing %v", miss)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "in the future") {
		t.Errorf("no note of the future watermark: %v", res.Notes)
	}
}

// TestRandomCancellationsLoseNothing: a backfill stopped at 20 pseudo-random
// moments (requests in flight, answers just sent), each followed by a new
// run; no run may end succeeded while records are missing, and at the end
// the warehouse holds every id the server holds.
func TestRandomCancellationsLoseNothing(t *testing.T) {
	for _, v := range []struct {
		name   string
		window int
		spool  bool
	}{{"one range", 0, false}, {"windows", 9, false}, {"windows, spool", 9, true}, {"one range, spool", 0, true}} {
		t.Run(v.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(12, uint64(v.window)))
			srv := newMailServer(400, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 58)
			srv.perCap = 10
			dir := ""
			if v.spool {
				dir = t.TempDir() + "/spool"
			}
			h := newMailHarness(t, srv, func(s *Settings) {
				windowed(v.window)(s)
				s.SpoolDir = dir
			})
			succeededShort, stopped := 0, 0
			for i := range 20 {
				ctx, cancel := context.WithCancel(context.Background())
				at := int(srv.requests.Load()) + 1 + rng.IntN(8)
				inFlight := rng.IntN(2) == 0
				srv.before = func(r *http.Request, n int, _ int) {
					if n != at {
						return
					}
					if inFlight {
						cancel()
						<-r.Context().Done()
						return
					}
					// Cancel just after this answer is on its way.
					go func() { time.Sleep(time.Millisecond); cancel() }()
				}
				res := h.run(ctx)
				cancel()
				if res.Status != StatusSucceeded {
					stopped++
				}
				if res.Status == StatusSucceeded && len(h.missing()) > 0 {
					succeededShort++
					t.Errorf("cancellation %d: run succeeded with %d records missing", i, len(h.missing()))
				}
				// The clock moves on a little (increments after the backfill).
				h.now = h.now.Add(time.Hour)
			}
			srv.before = nil
			var res *Result
			for range 3 {
				if res = h.run(context.Background()); res.Status == StatusSucceeded {
					break
				}
			}
			if res.Status != StatusSucceeded {
				t.Fatalf("final run: %s %v", res.Status, res.Err)
			}
			if miss := h.missing(); len(miss) > 0 {
				t.Fatalf("%d records lost: %v", len(miss), miss)
			}
			if succeededShort > 0 {
				t.Fatalf("%d runs succeeded with a shortfall", succeededShort)
			}
			if stopped < 10 {
				t.Fatalf("only %d of 20 runs were stopped: the test does not test", stopped)
			}
			t.Logf("%d of 20 runs stopped; %d records, all landed", stopped, len(srv.ids()))
		})
	}
}

// TestChurnAtTheStartIsFollowed: records vanish from the start of the range
// on every request (each page's records shift toward the start): stepping
// back follows them; no run may succeed while a record is missing.
func TestChurnAtTheStartIsFollowed(t *testing.T) {
	srv := newMailServer(400, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
	srv.perCap = 10
	srv.before = func(*http.Request, int, int) {
		if ids := srv.ids(); len(ids) > 100 {
			srv.remove(ids[:9]...)
		}
	}
	h := newMailHarness(t, srv, nil)
	res := h.run(context.Background())
	if miss := h.missing(); len(miss) > 0 && res.Status == StatusSucceeded {
		t.Fatalf("run succeeded with %d records missing", len(miss))
	}
	srv.before = nil
	if res.Status != StatusSucceeded {
		res = h.run(context.Background())
	}
	if miss := h.missing(); len(miss) > 0 || res.Status != StatusSucceeded {
		t.Fatalf("status %s, %d missing", res.Status, len(miss))
	}
}

// TestUnstableRangeEndsPartial: a service whose every answer renumbers the
// range and changes its total can never be paged to a stable end: the run
// ends partial with the range still open and the gap named in
// sync_runs.error, never succeeded.
func TestUnstableRangeEndsPartial(t *testing.T) {
	srv := newMailServer(100, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
	srv.perCap = 10
	srv.renumber = true
	h := newMailHarness(t, srv, nil)
	res := h.run(context.Background())
	if res.Status != StatusPartial || !errors.Is(res.Err, ErrIncomplete) {
		t.Fatalf("status %s err %v, want partial and ErrIncomplete", res.Status, res.Err)
	}
	if c := h.cursor(); c.Backfill == nil || c.Backfill.Current == nil {
		t.Fatalf("the unstable range was closed: %+v", c.Backfill)
	}
	var errText string
	if err := h.pool.QueryRow(context.Background(), "SELECT coalesce(error, '') FROM "+h.table("sync_runs")+
		" ORDER BY started_at DESC LIMIT 1").Scan(&errText); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errText, "keeps changing") {
		t.Errorf("sync_runs.error does not name the gap: %q", errText)
	}
}

// spoolCrashStore fails the commit of the communications page after `after`
// pages, once the spool holds `files` pages (the page in hand and the one
// prefetched), as if the worker died then.
type spoolCrashStore struct {
	warehouseStore
	dir          string
	after, files int
	pages        atomic.Int64
}

func (c *spoolCrashStore) Commit(ctx context.Context, runID string, p load.Commit) (load.Counts, error) {
	if p.StreamName() == "communications" && p.Rows().Len("emails") > 0 && c.pages.Add(1) == int64(c.after+1) {
		for {
			entries, _ := os.ReadDir(c.dir)
			n := 0
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".json") {
					n++
				}
			}
			if n >= c.files {
				return load.Counts{}, errCrash
			}
			time.Sleep(time.Millisecond)
		}
	}
	return c.warehouseStore.Commit(ctx, runID, p)
}

// TestSpoolResumeWithPrefetchSharesNoCursor: a run resumes from two spooled
// pages with prefetching on. The prefetcher must not read the cursor the
// page loop writes (rc.PerPage); run it under -race. The spooled
// pages are used, not fetched again, and nothing is lost.
func TestSpoolResumeWithPrefetchSharesNoCursor(t *testing.T) {
	srv := newMailServer(80, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50)
	srv.perCap = 10
	dir := filepath.Join(t.TempDir(), "spool")
	h := newMailHarness(t, srv, func(s *Settings) { s.SpoolDir = dir })
	eng := h.engine()
	eng.store = &spoolCrashStore{warehouseStore: eng.store, dir: dir, after: 3, files: 2}
	res, err := eng.Run(context.Background(), Request{Trigger: TriggerTest, Streams: []string{"communications"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == StatusSucceeded || !errors.Is(res.Err, errCrash) {
		t.Fatalf("crashing run: %s %v", res.Status, res.Err)
	}
	var pages []int
	srv.before = func(_ *http.Request, _ int, page int) { pages = append(pages, page) }
	res = h.run(context.Background())
	if res.Status != StatusSucceeded {
		t.Fatalf("resume: %s %v", res.Status, res.Err)
	}
	if slices.Contains(pages, 4) || slices.Contains(pages, 5) {
		t.Errorf("pages asked again although spooled: %v", pages)
	}
	if miss := h.missing(); len(miss) > 0 {
		t.Fatalf("%d records lost: %v", len(miss), miss)
	}
}

// TestMailArrivingDuringARangeIsNotInstability: new e-mails (higher ids)
// arrive at the end of the range between every two page requests, as today's
// mail does during a long backfill. Nothing shifts at the pager's position:
// the range must complete and every record must land, one page at a time or
// several fetched ahead; the re-requests the changed totals cause must stay
// within one per page, plus the requests then in flight for pages fetched
// ahead under a layout that changed.
func TestMailArrivingDuringARangeIsNotInstability(t *testing.T) {
	for _, c := range []struct {
		name     string
		inFlight int // pages fetched at a time (0: one, no spool)
	}{
		{"one page at a time", 0},
		{"fetched ahead", 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newMailServer(300, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 59)
			srv.perCap = 10
			var next atomic.Int64 // pages may be asked several at a time
			next.Store(100000)
			srv.before = func(*http.Request, int, int) {
				srv.add(next.Add(1), mailNow.Add(-time.Minute))
			}
			var tune func(*Settings)
			if c.inFlight > 0 {
				dir := filepath.Join(t.TempDir(), "spool")
				tune = func(s *Settings) { s.SpoolDir, s.MaxInFlight = dir, c.inFlight }
			}
			h := newMailHarness(t, srv, tune)
			if res := h.run(context.Background()); res.Status != StatusSucceeded {
				t.Fatalf("status %s err %v", res.Status, res.Err)
			}
			srv.before = nil
			n := int(srv.requests.Load())
			pages := (len(srv.ids()) + 9) / 10
			// Mail that arrived after the range's last page was answered is the
			// next increment's.
			h.now = h.now.Add(time.Hour)
			if res := h.run(context.Background()); res.Status != StatusSucceeded {
				t.Fatalf("next run: %s %v", res.Status, res.Err)
			}
			if miss := h.missing(); len(miss) > 0 {
				t.Fatalf("%d records missing: %v", len(miss), miss)
			}
			t.Logf("%d requests for %d pages (%.2f×) while mail kept arriving, %d in flight", n, pages, float64(n)/float64(pages), c.inFlight)
			if n > 2*pages+c.inFlight {
				t.Errorf("%d requests for %d pages: more than one re-request per page and the %d in flight", n, pages, c.inFlight)
			}
		})
	}
}
