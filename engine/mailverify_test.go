package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// dayMailServer is a hand-written communications endpoint: e-mails by id with
// their instants, filtered by UTC calendar days, ascending ids, paged. Its
// totals come from its own map, never from the worker's code.
type dayMailServer struct {
	mu    sync.Mutex
	mails map[int64]time.Time
	// offset is where the server cuts its days: date_start and date_end are
	// days of UTC+offset. filed, when it holds an id, is the instant the
	// e-mail is filed at (its arrival), which the day filter reads instead
	// of its email_at.
	offset time.Duration
	filed  map[int64]time.Time
	// beforePage, when set, runs (under the lock) before a page is served.
	beforePage func(s *dayMailServer, start, end string, page, perPage int)
	requests   atomic.Int64
	counts     atomic.Int64 // per_page=1 requests
	// overcount is added to every total the server announces: a count that
	// is not a count of the records it serves.
	overcount atomic.Int64
}

func (s *dayMailServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	var body mailQuery
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	from, err1 := time.Parse(time.DateOnly, body.DateStart)
	to, err2 := time.Parse(time.DateOnly, body.DateEnd)
	if err1 != nil || err2 != nil {
		http.Error(w, `{"error":{"message":"bad dates"}}`, http.StatusBadRequest)
		return
	}
	per := body.PerPage
	if per < 1 {
		per = 20
	}
	page := max(body.Page, 1)
	if per == 1 {
		s.counts.Add(1)
	}
	s.mu.Lock()
	if s.beforePage != nil {
		s.beforePage(s, body.DateStart, body.DateEnd, page, per)
	}
	from = from.Add(-s.offset)
	end := to.AddDate(0, 0, 1).Add(-s.offset)
	var ids []int64
	for id, at := range s.mails {
		if f, ok := s.filed[id]; ok {
			at = f
		}
		if !at.Before(from) && at.Before(end) {
			ids = append(ids, id)
		}
	}
	mails := make(map[int64]time.Time, len(ids))
	for _, id := range ids {
		mails[id] = s.mails[id]
	}
	s.mu.Unlock()
	slices.Sort(ids)
	last := max(1, (len(ids)+per-1)/per)
	var b strings.Builder
	b.WriteString(`{"data":{"rows":{`)
	for i := (page - 1) * per; i < min(page*per, len(ids)); i++ {
		if i > (page-1)*per {
			b.WriteByte(',')
		}
		id := ids[i]
		fmt.Fprintf(&b, `"%d":{"email":{"type_id":1,"type_name":"Email","brand_id":"7","project_id":"70","subject":"mail %d","message":null,"size":1,"mailbox_id":"m%d","mailbox_thread":"t","email_at":%q},`+
			`"users":{"from":[{"first_name":"A","last_name":"B","full_name":"A B","email":"a@x.example","phone":"1","avatar":"a.png","status":"Activ"}],"to":[],"cc":[],"bcc":[]}}`,
			id, id, id, mails[id].UTC().Format("2006-01-02T15:04:05.000000Z"))
	}
	fmt.Fprintf(&b, `},"total":%d,"per_page":%d,"current_page":%d,"last_page":%d}}`, len(ids)+int(s.overcount.Load()), per, page, last)
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(b.String()))
}

func (s *dayMailServer) set(id int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mails[id] = at
}

func (s *dayMailServer) remove(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mails, id)
}

// dayMailHarness is an engine on a dayMailServer and a fresh schema, with a
// clock the test sets.
type dayMailHarness struct {
	mailSchema
	srv *dayMailServer
	eng *Engine
	now atomic.Int64
	url string
	per int
}

// retune rebuilds the harness's engine with other settings on the same
// warehouse (a changed configuration between two runs).
func (h *dayMailHarness) retune(tune func(*Settings)) {
	h.t.Helper()
	h.eng = h.engine(mailEngine{url: h.url, now: func() time.Time { return time.Unix(0, h.now.Load()).UTC() }, start: h.eng.set.Mail.StartDate,
		perPage: h.per, rate: 1000, dailyQuota: 10000, tune: tune})
}

func newDayMailHarness(t *testing.T, mails map[int64]time.Time, start, now time.Time, tune func(*Settings)) *dayMailHarness {
	t.Helper()
	return newDayMailHarnessPaged(t, mails, start, now, 5, tune)
}

// newDayMailHarnessPaged is a dayMailHarness whose client asks pages of per
// records.
func newDayMailHarnessPaged(t *testing.T, mails map[int64]time.Time, start, now time.Time, per int, tune func(*Settings)) *dayMailHarness {
	t.Helper()
	h := &dayMailHarness{srv: &dayMailServer{mails: maps.Clone(mails)}}
	h.now.Store(now.UnixNano())
	ts := httptest.NewServer(h.srv)
	t.Cleanup(ts.Close)
	h.mailSchema = newMailSchema(t)
	h.url, h.per = ts.URL, per
	h.eng = h.engine(mailEngine{url: ts.URL, now: func() time.Time { return time.Unix(0, h.now.Load()).UTC() }, start: start,
		perPage: per, rate: 1000, dailyQuota: 10000, tune: tune})
	return h
}

func (h *dayMailHarness) run(req Request) *Result {
	h.t.Helper()
	return runEngine(context.Background(), h.t, h.eng, req)
}

func (h *dayMailHarness) serverIDs() []int64 {
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	return slices.Sorted(maps.Keys(h.srv.mails))
}

// tenDays is 3 e-mails on each of the ten days from 2025-06-01, ids 1..30.
func tenDays() (map[int64]time.Time, time.Time) {
	start := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	m := map[int64]time.Time{}
	for i := range int64(30) {
		m[i+1] = start.AddDate(0, 0, int(i/3)).Add(time.Duration(1+i%3*7) * time.Hour)
	}
	return m, start
}

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestVerifySoftDeletesWhatTheServiceNoLongerHolds: the service deletes two
// e-mails of one day and gains one on another; verify re-fetches exactly
// those two days, marks the two deleted, loads the new one, and proves
// equality; a second verify costs one request.
func TestVerifySoftDeletesWhatTheServiceNoLongerHolds(t *testing.T) {
	t.Parallel()
	mails, start := tenDays()
	h := newDayMailHarness(t, mails, start, start.AddDate(0, 0, 9).Add(23*time.Hour), nil)
	rg := &Range{From: start, To: start.AddDate(0, 0, 9)}
	if res := h.run(Request{Mail: MailRequest{Backfill: rg}}); res.Status != StatusSucceeded {
		t.Fatalf("backfill: %s %v", res.Status, res.Err)
	}
	if got := h.ids("_deleted_at IS NULL"); len(got) != 30 {
		t.Fatalf("after the backfill %d live e-mails, want 30", len(got))
	}
	h.srv.remove(7) // 2025-06-03
	h.srv.remove(8) // 2025-06-03
	h.srv.set(31, day("2025-06-08").Add(5*time.Hour))
	res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: rg}})
	if res.Status != StatusSucceeded || res.Verify == nil || !res.Verify.Proved {
		t.Fatalf("verify: %s %v %+v", res.Status, res.Err, res.Verify)
	}
	var days []string
	for _, d := range res.Verify.Days {
		days = append(days, d.Day)
	}
	if !slices.Equal(days, []string{"2025-06-03", "2025-06-08"}) {
		t.Errorf("days re-fetched = %v, want 2025-06-03 and 2025-06-08", days)
	}
	if got, want := h.ids("_deleted_at IS NULL"), h.serverIDs(); !slices.Equal(got, want) {
		t.Errorf("live e-mails = %v, want the server's %v", got, want)
	}
	if got := h.ids("_deleted_at IS NOT NULL"); !slices.Equal(got, []int64{7, 8}) {
		t.Errorf("soft-deleted = %v, want [7 8]", got)
	}
	if res.Verify.SoftDeleted != 2 || res.Verify.Filled != 1 {
		t.Errorf("report soft-deleted %d, filled %d; want 2 and 1", res.Verify.SoftDeleted, res.Verify.Filled)
	}
	// ~log2(10) counts per differing day plus one page each, and the first count.
	if limit := 1 + 2*(int(math.Ceil(math.Log2(10)))+1); res.RequestsUsed > limit {
		t.Errorf("verify used %d requests, want at most %d", res.RequestsUsed, limit)
	}
	// The e-mails come back: they are live again.
	h.srv.set(7, mails[7])
	h.srv.set(8, mails[8])
	res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: rg}})
	if got, want := h.ids("_deleted_at IS NULL"), h.serverIDs(); !res.Verify.Proved || !slices.Equal(got, want) {
		t.Errorf("an e-mail that came back is not live again: %+v", res.Verify)
	}
	before := h.srv.requests.Load()
	res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: rg}})
	if sent := h.srv.requests.Load() - before; sent != 1 || res.RequestsUsed != 1 || !res.Verify.Proved || res.Counts.Written() != 0 {
		t.Errorf("verify of an equal warehouse: %d requests sent (%d counted), proved %v, %d rows written; want 1, 1, true, 0",
			sent, res.RequestsUsed, res.Verify.Proved, res.Counts.Written())
	}
	var trigger string
	if err := h.pool.QueryRow(context.Background(), "SELECT trigger FROM "+h.table("sync_runs")+" ORDER BY started_at DESC LIMIT 1").Scan(&trigger); err != nil || trigger != "verify" {
		t.Errorf("last run's trigger = %q, %v; want verify", trigger, err)
	}
}

// TestVerifyDeletesNothingWhileTheTotalMoves: the service's total changes
// while a differing day is re-fetched; nothing may be soft-deleted, and the
// run ends partial with the gap recorded.
func TestVerifyDeletesNothingWhileTheTotalMoves(t *testing.T) {
	t.Parallel()
	mails, start := tenDays()
	h := newDayMailHarness(t, mails, start, start.AddDate(0, 0, 9).Add(23*time.Hour), nil)
	rg := &Range{From: start, To: start.AddDate(0, 0, 9)}
	h.run(Request{Mail: MailRequest{Backfill: rg}})
	h.srv.remove(4) // 2025-06-02: 5 and 6 remain
	moved := false
	next := int64(100)
	h.srv.beforePage = func(s *dayMailServer, a, b string, page, per int) {
		// Each time the worker asks for the day's second page, a new
		// e-mail lands on the day: its total never holds still.
		if a == "2025-06-02" && b == a && per > 1 && page == 2 {
			s.mails[next] = day("2025-06-02").Add(20 * time.Hour)
			next++
			moved = true
		}
	}
	// A day of three e-mails at 5 a page is one page: make it two by adding
	// four more e-mails to the day on the server first.
	for i := int64(41); i <= 44; i++ {
		h.srv.set(i, day("2025-06-02").Add(time.Duration(i-30)*time.Hour))
	}
	res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: rg}})
	if !moved {
		t.Fatal("the test server never moved the total: the day was not paged")
	}
	if got := h.ids("_deleted_at IS NOT NULL"); len(got) != 0 {
		t.Errorf("soft-deleted %v while the total moved, want none", got)
	}
	if res.Status != StatusPartial || !errors.Is(res.Err, ErrGap) {
		t.Errorf("status %s (%v), want partial with a gap", res.Status, res.Err)
	}
	// The next verification, with a quiet service, repairs it.
	h.srv.beforePage = nil
	if next < 102 {
		t.Errorf("the day was paged %d time(s) while it moved, want a retry (2)", next-100)
	}
	res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: rg}})
	if res.Status != StatusSucceeded || !res.Verify.Proved {
		t.Fatalf("second verify: %s %v %+v", res.Status, res.Err, res.Verify)
	}
	if got, want := h.ids("_deleted_at IS NULL"), h.serverIDs(); !slices.Equal(got, want) {
		t.Errorf("live e-mails = %v, want the server's %v", got, want)
	}
}

// TestVerifyNamesAnOvercountingTotal: a service whose totals announce two
// more e-mails than it serves, on every page alike: nothing is
// soft-deleted, the run ends partial, and the days' repair says that the
// pages delivered fewer records than the total — not that the total moved.
func TestVerifyNamesAnOvercountingTotal(t *testing.T) {
	t.Parallel()
	mails, start := tenDays()
	h := newDayMailHarness(t, mails, start, start.AddDate(0, 0, 9).Add(23*time.Hour), nil)
	rg := &Range{From: start, To: start.AddDate(0, 0, 9)}
	h.run(Request{Mail: MailRequest{Backfill: rg}})
	h.srv.overcount.Store(2)
	res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: rg}})
	if res.Status != StatusPartial || res.Verify == nil {
		t.Fatalf("verify over a service that overcounts: %s %v", res.Status, res.Err)
	}
	if got := h.ids("_deleted_at IS NOT NULL"); len(got) != 0 {
		t.Errorf("soft-deleted %v, want none", got)
	}
	said := false
	for _, d := range res.Verify.Days {
		if strings.Contains(d.Reason, "moved") {
			t.Errorf("%s: %q; the total never moved", d.Day, d.Reason)
		}
		said = said || strings.Contains(d.Reason, "fewer records than")
	}
	if !said {
		t.Errorf("no day's repair says its pages delivered fewer records than the total: %+v", res.Verify.Days)
	}
}

// TestVerifyWrongZoneDeletesNothing: the worker assumes a zone 9 hours
// ahead of the service's UTC days; the e-mails a day returns fall outside
// the worker's day, so nothing is soft-deleted and the run is not
// succeeded.
func TestVerifyWrongZoneDeletesNothing(t *testing.T) {
	t.Parallel()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	mails, start := tenDays()
	// Two e-mails of 2025-05-31 UTC fall on 2025-06-01 in Tokyo: that day
	// then holds more in the warehouse's Tokyo count than the service's
	// UTC day returns, and the two would be taken for deleted.
	mails[101] = day("2025-05-31").Add(20 * time.Hour)
	mails[102] = day("2025-05-31").Add(22 * time.Hour)
	h := newDayMailHarness(t, mails, start, start.AddDate(0, 0, 9).Add(23*time.Hour), func(s *Settings) { s.Mail.TZ = tokyo })
	h.run(Request{Mail: MailRequest{Backfill: &Range{From: start.AddDate(0, 0, -1), To: start.AddDate(0, 0, 9)}}})
	if got := h.ids("true"); len(got) != 32 {
		t.Fatalf("backfill loaded %d e-mails, want 32", len(got))
	}
	rg := &Range{From: start, To: start.AddDate(0, 0, 9)}
	res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: rg}})
	if got := h.ids("_deleted_at IS NOT NULL"); len(got) != 0 {
		t.Errorf("soft-deleted %v under a wrong zone, want none", got)
	}
	if res.Status == StatusSucceeded || res.Verify == nil || res.Verify.Proved {
		t.Errorf("verify under a wrong zone: %s, %+v; want not succeeded, not proved", res.Status, res.Verify)
	}
}

// TestClosingRangeIsReconciled: an increment closes a range in which the
// service deleted an e-mail since the last sync; the closing check finds
// the day by bisection and soft-deletes it in the same run. A closing range
// that matches costs no request beyond its pages.
func TestClosingRangeIsReconciled(t *testing.T) {
	t.Parallel()
	mails, start := tenDays()
	h := newDayMailHarness(t, mails, start, start.AddDate(0, 0, 9).Add(23*time.Hour), nil)
	res := h.run(Request{Streams: []string{"communications"}})
	if res.Status != StatusSucceeded {
		t.Fatalf("first run: %s %v", res.Status, res.Err)
	}
	counts := h.srv.counts.Load()
	if counts != 0 {
		// The backfill's closing reconciliation proved the history: the
		// daily verification waits for tomorrow.
		t.Errorf("first run sent %d count requests, want 0", counts)
	}
	verifyPlan := func() Estimate {
		t.Helper()
		p, err := h.eng.Plan(context.Background(), []string{"communications"})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if it.Task == TaskVerify {
				return it.Estimate
			}
		}
		t.Fatalf("plan without a verify task: %+v", p)
		return Estimate{}
	}
	if e := verifyPlan(); e.Requests != 0 || !strings.Contains(e.Note, "not due") {
		t.Errorf("verify planned right after a proved backfill: %+v", e)
	}
	// Next day: the increment covers 2025-06-10..2025-06-11.
	h.now.Store(start.AddDate(0, 0, 10).Add(12 * time.Hour).UnixNano())
	if e := verifyPlan(); e.Requests != 1 {
		t.Errorf("verify not planned a day later: %+v", e)
	}
	res = h.run(Request{Streams: []string{"communications"}})
	if res.Status != StatusSucceeded {
		t.Fatalf("second run: %s %v", res.Status, res.Err)
	}
	if c := h.srv.counts.Load() - counts; c != 1 {
		// The scheduled verify (once a day) is the only count request.
		t.Errorf("%d count requests in a run with equal closing ranges, want 1 (the daily verify)", c)
	}
	h.srv.remove(29) // 2025-06-10
	counts = h.srv.counts.Load()
	h.now.Store(start.AddDate(0, 0, 10).Add(13 * time.Hour).UnixNano())
	res = h.run(Request{Streams: []string{"communications"}})
	if res.Status != StatusSucceeded {
		t.Fatalf("third run: %s %v", res.Status, res.Err)
	}
	if got := h.ids("_deleted_at IS NOT NULL"); !slices.Equal(got, []int64{29}) {
		t.Errorf("soft-deleted %v, want [29]", got)
	}
	if c := h.srv.counts.Load() - counts; c > 2 {
		t.Errorf("%d count requests to bisect a 3-day closing range, want at most 2", c)
	}
}

// TestVerifyTwoYearsThreeGaps is the acceptance: on a two-year
// history, a complete warehouse costs one request and writes nothing;
// three single-day gaps made behind the worker's back are found and filled
// for at most 3 × (2·log2(730) + the gaps' pages) requests.
func TestVerifyTwoYearsThreeGaps(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.HistoryDays, o.Emails = 730, 3000
	h := newHarness(t, o, nil)
	ctx := context.Background()
	if res := h.run(Request{}); res.Status != StatusSucceeded {
		t.Fatalf("first sync: %s %v", res.Status, res.Err)
	}
	emails := h.table("emails")
	versions := func() string {
		var s string
		if err := h.pool.QueryRow(ctx, "SELECT coalesce(string_agg(record_id || ':' || xmin::text, ',' ORDER BY record_id), '') FROM "+emails).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	// A complete warehouse: one request for the whole history, nothing written.
	v0, sent := versions(), h.sent.Load()
	res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{}}})
	if res.Status != StatusSucceeded || res.Verify == nil || !res.Verify.Proved {
		t.Fatalf("verify of a complete warehouse: %s %v %+v", res.Status, res.Err, res.Verify)
	}
	if n := h.sent.Load() - sent; n != 1 || res.RequestsUsed != 1 {
		t.Errorf("verify of a complete warehouse sent %d requests (%d counted), want 1", n, res.RequestsUsed)
	}
	if res.Counts.Written() != 0 || versions() != v0 {
		t.Errorf("verify of a complete warehouse wrote %d rows (versions changed: %v)", res.Counts.Written(), versions() != v0)
	}
	if days := res.Verify.To; days != dateString(h.sb.Now()) || res.Verify.From != dateString(h.eng.set.Mail.StartDate) {
		t.Errorf("whole history = %s..%s, want %s..%s", res.Verify.From, res.Verify.To, dateString(h.eng.set.Mail.StartDate), dateString(h.sb.Now()))
	}

	// Three single-day gaps, deleted straight from the warehouse.
	rows, err := h.pool.Query(ctx, "SELECT d, n FROM (SELECT (email_at AT TIME ZONE 'UTC')::date AS d, count(*) AS n FROM "+emails+" GROUP BY 1) x ORDER BY d")
	if err != nil {
		t.Fatal(err)
	}
	type dayCount struct {
		d time.Time
		n int
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dayCount, error) {
		var dc dayCount
		err := r.Scan(&dc.d, &dc.n)
		return dc, err
	})
	if err != nil || len(all) < 100 {
		t.Fatalf("days with e-mails: %d, %v", len(all), err)
	}
	gaps := []dayCount{all[len(all)/5], all[len(all)/2], all[len(all)*4/5]}
	var want []string
	pages := 0
	for _, g := range gaps {
		from := time.Date(g.d.Year(), g.d.Month(), g.d.Day(), 0, 0, 0, 0, time.UTC)
		if _, err := h.pool.Exec(ctx, "DELETE FROM "+h.table("email_recipients")+" WHERE record_id IN (SELECT record_id FROM "+emails+" WHERE email_at >= $1 AND email_at < $2)", from, from.AddDate(0, 0, 1)); err != nil {
			t.Fatal(err)
		}
		tag, err := h.pool.Exec(ctx, "DELETE FROM "+emails+" WHERE email_at >= $1 AND email_at < $2", from, from.AddDate(0, 0, 1))
		if err != nil || int(tag.RowsAffected()) != g.n {
			t.Fatalf("delete %s: %v, %d rows", from, err, tag.RowsAffected())
		}
		want = append(want, dateString(from))
		pages += (g.n + 999) / 1000
	}
	sent = h.sent.Load()
	res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{}}})
	if res.Status != StatusSucceeded || !res.Verify.Proved {
		t.Fatalf("verify with three gaps: %s %v %+v", res.Status, res.Err, res.Verify)
	}
	var got []string
	for _, d := range res.Verify.Days {
		got = append(got, d.Day)
	}
	if !slices.Equal(got, want) {
		t.Errorf("days found = %v, want %v", got, want)
	}
	bound := 3*2*math.Log2(730) + float64(pages)
	used := int(h.sent.Load() - sent)
	if float64(used) > bound || used != res.RequestsUsed {
		t.Errorf("verify with three gaps sent %d requests (%d counted), want at most %.1f", used, res.RequestsUsed, bound)
	}
	t.Logf("three gaps: %d requests (%d counts, %d pages) for a bound of %.1f: %.2f of it", used, res.Verify.CountRequests, pages, bound, float64(used)/bound)
	h.assertEqualsTruth()

	// Equal again: one request.
	sent = h.sent.Load()
	if res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{}}}); !res.Verify.Proved || h.sent.Load()-sent != 1 {
		t.Errorf("verify after the repair: proved %v, %d requests; want true, 1", res.Verify.Proved, h.sent.Load()-sent)
	}
}

// TestVerifyCountsRejectedRecordsAsHeld: records the warehouse rejected
// (in rejected_records) are held too; a complete warehouse with rejects
// still costs one request to verify.
func TestVerifyCountsRejectedRecordsAsHeld(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.BadRecordRate = 0.02
	h := newHarness(t, o, nil)
	res := h.run(Request{Streams: []string{"communications"}})
	if res.Status != StatusWarning || res.Counts.Rejected == 0 || res.OpenRejects["communications"] != res.Counts.Rejected {
		t.Fatalf("first sync: %s %v, %d rejected (want some), %d open; want warning with every reject open",
			res.Status, res.Err, res.Counts.Rejected, res.OpenRejects["communications"])
	}
	// Rejects whose email_at is unreadable cannot be counted by day until
	// their day is re-fetched once: the first closing pays for that.
	t.Logf("first sync with %d rejected records: %d requests", res.Counts.Rejected, res.RequestsUsed)
	_, bad := h.truth().Counts("communications")
	if res.Counts.Rejected != int64(bad) {
		t.Errorf("the run reports %d rejected, the truth has %d bad (days re-fetched count their rejects once)", res.Counts.Rejected, bad)
	}
	sent := h.sent.Load()
	res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{}}})
	if !res.Verify.Proved || h.sent.Load()-sent != 1 {
		t.Errorf("verify with rejects: %s, %d requests; want proved with 1", res.Verify.Summary(), h.sent.Load()-sent)
	}
	sent = h.sent.Load()
	res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{}}})
	if !res.Verify.Proved || h.sent.Load()-sent != 1 {
		t.Errorf("second verify with rejects: %s, %d requests; want proved with 1", res.Verify.Summary(), h.sent.Load()-sent)
	}
}

// TestVerifyOfAnEmptyWarehouseFetchesTheRangeWhole: nothing was ever
// fetched; verify does not bisect to every day but fetches the range as
// one: one count request plus its pages.
func TestVerifyOfAnEmptyWarehouseFetchesTheRangeWhole(t *testing.T) {
	t.Parallel()
	mails, start := tenDays()
	h := newDayMailHarness(t, mails, start, start.AddDate(0, 0, 9).Add(23*time.Hour), nil)
	res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{From: start, To: start.AddDate(0, 0, 9)}}})
	if res.Status != StatusSucceeded || !res.Verify.Proved {
		t.Fatalf("verify: %s %v %+v", res.Status, res.Err, res.Verify)
	}
	if len(res.Verify.Days) != 1 || res.Verify.Days[0].Day != "2025-06-01..2025-06-10" {
		t.Errorf("re-fetched %+v, want the range 2025-06-01..2025-06-10 whole", res.Verify.Days)
	}
	if want := 1 + 30/5; res.RequestsUsed != want {
		t.Errorf("verify used %d requests, want %d (one count, 6 pages of 5)", res.RequestsUsed, want)
	}
	if got, want := h.ids("_deleted_at IS NULL"), h.serverIDs(); !slices.Equal(got, want) {
		t.Errorf("live e-mails = %v, want %v", got, want)
	}
}

// TestManualBackfillDoesNotVerifyTheHistory: a backfill command's range
// reconciles at its closing, but it is not the history: the daily
// verification stays due.
func TestManualBackfillDoesNotVerifyTheHistory(t *testing.T) {
	t.Parallel()
	mails, start := tenDays()
	h := newDayMailHarness(t, mails, start, start.AddDate(0, 0, 9).Add(23*time.Hour), nil)
	if res := h.run(Request{Streams: []string{"communications"}}); res.Status != StatusSucceeded {
		t.Fatalf("first run: %s %v", res.Status, res.Err)
	}
	h.now.Store(start.AddDate(0, 0, 10).Add(12 * time.Hour).UnixNano())
	if res := h.run(Request{Mail: MailRequest{Backfill: &Range{From: start, To: start.AddDate(0, 0, 2)}}}); res.Status != StatusSucceeded {
		t.Fatalf("manual backfill: %s %v", res.Status, res.Err)
	}
	due, why, err := h.eng.verifyDue(context.Background())
	if err != nil || !due {
		t.Errorf("verify due after a manual backfill = %v (%s, %v), want due", due, why, err)
	}
}
