package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/metrics"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

func TestMain(m *testing.M) { warehousetest.Main(m) }

// harness is an engine wired to an in-process sandbox and a fresh schema,
// with the engine's clock following the sandbox's.
type harness struct {
	t      *testing.T
	sb     *sandbox.Server
	opts   sandbox.Options
	pool   *pgxpool.Pool
	schema string
	eng    *Engine
	sent   atomic.Int64 // requests the client sent (hook)
	apiURL string       // the main interface's address (default the sandbox's)
	// realClock runs the engine and its ledger on the real clock instead of
	// the sandbox's (the quota day then matches sync_runs' timestamps).
	realClock bool
}

// smallSandbox is the small agency (sandbox.SmallOptions).
func smallSandbox() sandbox.Options { return sandbox.SmallOptions() }

func newHarness(t *testing.T, o sandbox.Options, tune func(*Settings)) *harness {
	t.Helper()
	pool, schema := warehousetest.Schema(t)
	return newHarnessOn(t, o, pool, schema, tune)
}

func newHarnessOn(t *testing.T, o sandbox.Options, pool *pgxpool.Pool, schema string, tune func(*Settings)) *harness {
	t.Helper()
	sb := sandbox.StartT(t, o)
	h := &harness{t: t, sb: sb, opts: o, pool: pool, schema: schema}
	h.eng = h.engine(tune)
	return h
}

// engine builds an engine on the harness's sandbox and schema (a second
// one plays a second worker).
func (h *harness) engine(tune func(*Settings)) *Engine {
	eng, _ := h.wire(wiring{tune: tune})
	return eng
}

// wiring is what the engines the tests build differ in. Its zero value is
// harness.engine's: the sandbox's addresses (h.apiURL for the main
// interface when set), 500 requests/s, the sandbox's clock (the real one with
// h.realClock), a daily quota of 10000 and the test's logs.
type wiring struct {
	apiURL, commsURL string // the interfaces' addresses ("" the default)
	rate             float64
	perPage          int
	timeout          time.Duration
	dailyQuota       int
	spoolDir         string
	// clock is a service clock the ledger, client and engine read, seeded
	// with the offset the warehouse kept, as `agencysync run` wires it.
	clock *extract.ServiceClock
	log   *zap.Logger
	tune  func(*Settings)
	// streams are the declarations the client pages by (nil: stream.All()).
	streams []*stream.Stream
	reg     prometheus.Registerer // the metrics' registry (nil: none)
}

// wire builds an engine on the harness's sandbox and schema as w says, and
// returns it with its ledger.
func (h *harness) wire(w wiring) (*Engine, *load.Ledger) {
	t := h.t
	t.Helper()
	log := w.log
	if log == nil {
		log = zaptest.NewLogger(t)
	}
	now := h.sb.Now
	switch {
	case w.clock != nil:
		now = w.clock.Now
	case h.realClock:
		now = time.Now
	}
	store, ledger := storeAndLedger(t, h.pool, h.schema, log, now)
	if w.clock != nil {
		off, known, err := ledger.ClockOffset(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if known {
			w.clock.SetOffset(off)
		}
	}
	var eng *Engine
	client, err := extract.New(extract.Options{
		BaseURL: cmp.Or(w.apiURL, h.apiURL, h.sb.APIURL()), APIKey: h.opts.APIKey,
		CommsURL: cmp.Or(w.commsURL, h.sb.CommsURL()), CommsKey: h.opts.CommsKey,
		RateLimit: cmp.Or(w.rate, 500), PerPage: w.perPage, Timeout: w.timeout, Clock: w.clock, Counter: ledger, Logger: log,
		RetryInitialInterval: 10 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond, Streams: w.streams,
		Hook: func(info extract.RequestInfo) { h.sent.Add(1); eng.ObserveRequest(info) },
	})
	if err != nil {
		t.Fatal(err)
	}
	users := make([]int64, h.opts.Users)
	for i := range users {
		users[i] = int64(i + 1)
	}
	s := Settings{Schema: h.schema, Mail: MailSettings{DomainID: h.opts.DomainID, UserIDs: users, StartDate: h.opts.Start.AddDate(0, 0, -h.opts.HistoryDays-1)},
		DailyQuota: cmp.Or(w.dailyQuota, 10000), QuotaReserve: 0.05, Now: now, SpoolDir: w.spoolDir}
	if w.tune != nil {
		w.tune(&s)
	}
	eng, err = New(Deps{Pool: h.pool, Store: store, Ledger: ledger, Client: client, Clock: w.clock, Metrics: metrics.New(w.reg), Logger: log}, s)
	if err != nil {
		t.Fatal(err)
	}
	return eng, ledger
}

func (h *harness) run(req Request) *Result {
	h.t.Helper()
	return runEngine(context.Background(), h.t, h.eng, req)
}

// mustSucceed runs req and fails the test, naming the run as what, unless
// it succeeded.
func (h *harness) mustSucceed(req Request, what string) {
	h.t.Helper()
	if res := h.run(req); res.Status != StatusSucceeded {
		h.t.Fatalf("%s: %s %v", what, res.Status, res.Err)
	}
}

// advance moves the sandbox's clock forward by d.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	if _, err := h.sb.Advance(d); err != nil {
		h.t.Fatal(err)
	}
}

// serveAPI puts handler in front of the engine as the main interface (a
// test server until the test ends) and rebuilds the engine on it.
func (h *harness) serveAPI(handler http.Handler) {
	srv := httptest.NewServer(handler)
	h.t.Cleanup(srv.Close)
	h.apiURL = srv.URL
	h.eng = h.engine(nil)
}

// rewritingProxy is a reverse proxy to the address target that passes the
// body of each answer match selects through rewrite.
func rewritingProxy(t *testing.T, target string, match func(*http.Response) bool, rewrite func(body []byte) []byte) *httputil.ReverseProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !match(resp) {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		body = rewrite(body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	return proxy
}

// storeAndLedger opens the load store and the quota ledger on schema, the
// ledger counting quota days on now's clock.
func storeAndLedger(t *testing.T, pool *pgxpool.Pool, schema string, log *zap.Logger, now func() time.Time) (*load.Store, *load.Ledger) {
	t.Helper()
	store, err := load.New(pool, load.Config{Schema: schema, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := load.NewLedger(pool, schema, time.UTC, now)
	if err != nil {
		t.Fatal(err)
	}
	return store, ledger
}

// runEngine runs eng (a test trigger unless req names one) and fails the
// test when the run cannot start.
func runEngine(ctx context.Context, t *testing.T, eng *Engine, req Request) *Result {
	t.Helper()
	if req.Trigger == "" {
		req.Trigger = TriggerTest
	}
	res, err := eng.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status == StatusWarning {
		t.Logf("run %s ended warning: %s", res.RunID, res.WarningSummary())
		for _, w := range res.Warnings {
			t.Logf("  %s %s: %s", w.Stream, w.Kind, w.Message)
		}
		for _, n := range res.Notes {
			t.Logf("  note: %s", n)
		}
	}
	return res
}

// completedWith reports whether res succeeded, or ended warning only for
// notes that each contain one of notes (the sandbox's e-mails appended
// after now, for instance).
func completedWith(res *Result, notes ...string) bool {
	if res.Status == StatusSucceeded {
		return true
	}
	if res.Status != StatusWarning || len(res.Warnings) > 0 || res.OpenRejectsTotal() > 0 || len(res.Notes) == 0 {
		return false
	}
	for _, n := range res.Notes {
		if !slices.ContainsFunc(notes, func(s string) bool { return strings.Contains(n, s) }) {
			return false
		}
	}
	return true
}

func (h *harness) count(sql string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		h.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (h *harness) table(name string) string { return pgx.Identifier{h.schema, name}.Sanitize() }

// truth reads the sandbox's ground truth.
func (h *harness) truth() oracle.Truth {
	h.t.Helper()
	var buf bytes.Buffer
	if err := h.sb.Truth(&buf); err != nil {
		h.t.Fatal(err)
	}
	tr, err := oracle.Parse(buf.Bytes())
	if err != nil {
		h.t.Fatal(err)
	}
	return tr
}

// inventory counts the sandbox's ground truth as a first sync's work, for
// oracle.MinimumRequests.
func (h *harness) inventory() oracle.Inventory {
	h.t.Helper()
	return h.truth().FirstSync()
}

// nothingChanged is the work of a sync that finds nothing changed since the
// last one over inv: every list again, the four finance lists filtered by
// updated_since (so empty), no details, and one page of the communications
// increment. It keeps the rows of inv's lists per brand, which a test
// that makes brands due asks again.
func nothingChanged(inv oracle.Inventory) oracle.Inventory {
	return oracle.Inventory{Brands: inv.Brands, Projects: inv.Projects, ProfitabilityProject: inv.ProfitabilityProject,
		ProfitabilityBrand: inv.ProfitabilityBrand, Summary: inv.Summary, BrandLists: inv.BrandLists}
}

// expectedEmails decodes and transforms the truth's communications, as the
// warehouse should hold them.
func expectedEmails(t *testing.T, lines []oracle.Line) transform.Batch {
	t.Helper()
	var body bytes.Buffer
	body.WriteString(`{"data":{"rows":{`)
	n := 0
	for _, l := range lines {
		if l.Bad {
			continue
		}
		if n > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, "%q:%s", l.Key, l.Record)
		n++
	}
	fmt.Fprintf(&body, `},"total":%d,"per_page":%d,"current_page":1,"last_page":1}}`, n, max(n, 1))
	page, err := extract.SplitPage(body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rejects) > 0 {
		t.Fatalf("truth records that are not bad did not split: %v", page.Rejects[0].Err)
	}
	comms, _ := stream.Lookup("communications")
	return transform.Records(transform.Input{Stream: comms, Endpoint: stream.EndpointCommunications}, recordsOf(page.Records))
}

// assertListsEqualTruth compares the rows of every declared list and list
// asked per entity with the sandbox's ground truth of its records (by
// their inventory name); live: only the rows not soft-deleted, else all of
// them, and the truth must hold some.
func (h *harness) assertListsEqualTruth(tr oracle.Truth, live bool) {
	t := h.t
	t.Helper()
	where := ""
	if live {
		where = " WHERE _deleted_at IS NULL"
	}
	for _, s := range stream.All() {
		for _, ep := range append(s.EndpointsOf(stream.KindList), s.EndpointsOf(stream.KindChild)...) {
			table := s.RecordTable(ep.Name).Name
			want, _ := tr.Counts(ep.InventoryName())
			if got := h.count("SELECT count(*) FROM " + h.table(table) + where); got != want || want == 0 && !live {
				t.Errorf("%s: %d rows, truth has %d records of %s", table, got, want, ep.InventoryName())
			}
		}
	}
}

// assertEqualsTruth compares the warehouse with the sandbox's ground truth:
// row counts of every stream, and the e-mails' content.
func (h *harness) assertEqualsTruth() {
	t := h.t
	t.Helper()
	tr := h.truth()
	h.assertListsEqualTruth(tr, true)
	want, bad := tr.Counts("communications")
	if got := h.count("SELECT count(*) FROM " + h.table("emails")); got != want {
		t.Errorf("emails: %d rows, truth has %d", got, want)
	}
	if got := h.count("SELECT count(*) FROM " + h.table("rejected_records") + " WHERE stream = 'communications'"); got != bad {
		t.Errorf("rejected communications: %d, truth has %d bad", got, bad)
	}
	exp := expectedEmails(t, tr["communications"])
	type emailKey struct {
		id      int64
		subject string
		at      time.Time
	}
	var wantKeys []emailKey
	ids, subjects, ats := exp.Column("emails", "record_id"), exp.Column("emails", "subject"), exp.Column("emails", "email_at")
	for i := range ids {
		wantKeys = append(wantKeys, emailKey{ids[i].(int64), subjects[i].(string), ats[i].(time.Time).UTC()})
	}
	rows, err := h.pool.Query(context.Background(), "SELECT record_id, subject, email_at FROM "+h.table("emails")+" ORDER BY record_id")
	if err != nil {
		t.Fatal(err)
	}
	var gotKeys []emailKey
	for rows.Next() {
		var k emailKey
		if err := rows.Scan(&k.id, &k.subject, &k.at); err != nil {
			t.Fatal(err)
		}
		k.at = k.at.UTC()
		gotKeys = append(gotKeys, k)
	}
	slices.SortFunc(wantKeys, func(a, b emailKey) int { return int(a.id - b.id) })
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("e-mail content differs from the truth (%d stored, %d expected)", len(gotKeys), len(wantKeys))
	}
	if got, want := h.count("SELECT count(*) FROM "+h.table("email_recipients")), exp.Len("email_recipients"); got != want {
		t.Errorf("email_recipients: %d rows, truth implies %d", got, want)
	}
	if got, want := h.count("SELECT count(*) FROM "+h.table("users")), exp.Len("users"); got != want {
		t.Errorf("users: %d rows, truth implies %d", got, want)
	}
	// No duplicate keys anywhere: the primary keys guarantee it; check that
	// e-mails are exactly the truth's ids.
}

func TestFullSyncEqualsTruthThenNoOp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	res := h.run(Request{})
	if res.Status != StatusSucceeded {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	h.assertEqualsTruth()
	for _, s := range AllStreams {
		var m dto.Metric
		if err := h.eng.metrics.LastSuccess.WithLabelValues(s).Write(&m); err != nil || m.GetGauge().GetValue() < float64(time.Now().Add(-time.Minute).Unix()) {
			t.Errorf("last success metric of %s = %v (%v)", s, m.GetGauge().GetValue(), err)
		}
	}
	if res.RequestsUsed != int(h.sent.Load()) {
		t.Errorf("requests used %d, client sent %d", res.RequestsUsed, h.sent.Load())
	}
	// A minimal first run: every list paged once, every detail fetched once.
	inv := h.inventory()
	if want := oracle.MinimumRequests(inv); res.RequestsUsed != want.Total {
		t.Errorf("first run used %d requests (%v), minimum is %d (%v)", res.RequestsUsed, h.sb.Stats().ByEndpoint, want.Total, want.ByEndpoint)
	}
	var ledger int
	if err := h.pool.QueryRow(context.Background(), "SELECT requests FROM "+h.table("api_quota_usage")).Scan(&ledger); err != nil || ledger != res.RequestsUsed {
		t.Errorf("ledger %d (%v), want %d", ledger, err, res.RequestsUsed)
	}

	// Unchanged second run: only the lists and one increment page; nothing written.
	syncedAt := h.count("SELECT count(*) FROM " + h.table("emails") + " WHERE _synced_at < now() - interval '0'")
	res2 := h.run(Request{})
	if res2.Status != StatusSucceeded {
		t.Fatalf("second run %s: %v", res2.Status, res2.Err)
	}
	if w := res2.Counts.Written(); w != 0 {
		t.Errorf("unchanged re-run wrote %d rows: %v", w, res2.Counts.RowsByTable())
	}
	if want := oracle.MinimumRequests(nothingChanged(inv)).Total; res2.RequestsUsed != want {
		t.Errorf("unchanged re-run used %d requests, want %d", res2.RequestsUsed, want)
	}
	if again := h.count("SELECT count(*) FROM " + h.table("emails") + " WHERE _synced_at < now() - interval '0'"); again != syncedAt {
		t.Errorf("_synced_at moved on an unchanged re-run")
	}
	var runs int
	runs = h.count("SELECT count(*) FROM " + h.table("sync_runs") + " WHERE status = 'succeeded' AND requests_used > 0")
	if runs != 2 {
		t.Errorf("%d succeeded runs recorded, want 2", runs)
	}
}

func TestChangesAreReflected(t *testing.T) {
	t.Parallel()
	// A maximum age of a century: no day of the sandbox is a staggered
	// refresh day (TestDetailRefreshIsStaggered), so only changes fetch details.
	// Six brands: the one deleted is within the share a listing may
	// soft-delete at once (TestEmptyListingWaitsForConfirmation).
	o := smallSandbox()
	o.Brands = 6
	h := newHarness(t, o, func(s *Settings) { s.DetailMaxAge = 100 * 365 * 24 * time.Hour })
	h.mustSucceed(Request{}, "first run")
	// A day passes: new e-mails, a late edit inside the lookback, a brand's
	// new financial summary, a deleted brand, a changed project.
	h.advance(24 * time.Hour)
	if _, _, err := h.sb.AppendEmails(40); err != nil {
		t.Fatal(err)
	}
	tr := h.truth()
	comms := tr["communications"]
	last := comms[len(comms)-41] // an e-mail from before the new ones, inside the lookback
	lastID, _ := strconv.ParseInt(last.Key, 10, 64)
	subject := "Revizuit: ofertă actualizată"
	if err := h.sb.EditEmail(lastID, sandbox.EmailEdit{Subject: &subject}); err != nil {
		t.Fatal(err)
	}
	brandID, _ := strconv.ParseInt(tr["brands"][1].Key, 10, 64)
	goneID, _ := strconv.ParseInt(tr["brands"][2].Key, 10, 64)
	projectID, _ := strconv.ParseInt(tr["projects"][0].Key, 10, 64)
	status := "Inactiv"
	if err := h.sb.EditBrand(brandID, sandbox.BrandEdit{Status: &status, FinancialSummary: &sandbox.FinancialSummaryEdit{
		TotalBudget: ptrAmount(t, "123456.78")}}); err != nil {
		t.Fatal(err)
	}
	if err := h.sb.DeleteBrand(goneID); err != nil {
		t.Fatal(err)
	}
	projStatus := "finalizat"
	if err := h.sb.EditProject(projectID, sandbox.ProjectEdit{Status: &projStatus}); err != nil {
		t.Fatal(err)
	}
	res := h.run(Request{})
	if !completedWith(res, "dated after now") {
		t.Fatalf("second run %s: %v (%s)", res.Status, res.Err, res.WarningSummary())
	}
	h.assertEqualsTruth()
	var got string
	if err := h.pool.QueryRow(context.Background(), "SELECT subject FROM "+h.table("emails")+" WHERE record_id = $1", lastID).Scan(&got); err != nil || got != subject {
		t.Errorf("late edit not synced: %q (%v)", got, err)
	}
	if n := h.count("SELECT count(*) FROM "+h.table("brand_financial_snapshots")+" WHERE brand_id = $1", fmt.Sprint(brandID)); n != 2 {
		t.Errorf("brand %d has %d snapshots, want 2 (one per day)", brandID, n)
	}
	if n := h.count("SELECT count(*) FROM "+h.table("brands")+" WHERE brand_id = $1 AND _deleted_at IS NOT NULL", fmt.Sprint(goneID)); n != 1 {
		t.Errorf("deleted brand not soft-deleted")
	}
	if n := h.count("SELECT count(*) FROM "+h.table("projects")+" WHERE project_id = $1 AND status = 'finalizat'", fmt.Sprint(projectID)); n != 1 {
		t.Errorf("changed project detail not synced")
	}
	// Only the changed project's and brand's details were fetched, besides
	// the lists and the increment (the 40 new e-mails, the edited one and
	// the lookback's re-reads) — and, a day later, the daily verification,
	// whose requests the run reports itself, and the night's share of the
	// rolling re-read of the history (the days before the increment's).
	after := h.inventory()
	changed := nothingChanged(after)
	changed.BrandContacts = map[string]int{tr["brands"][1].Key: after.BrandContacts[tr["brands"][1].Key]}
	changed.ProjectDetails = 1
	changed.Emails = 41
	changed.Refresh = h.refreshShare(utcDate(h.sb.Now()).AddDate(0, 0, -1))
	if want := oracle.MinimumRequests(changed).Total + verifyRequests(res); res.RequestsUsed != want {
		t.Errorf("incremental run used %d requests, want %d", res.RequestsUsed, want)
	}
	// The brand returns: undeleted.
	if err := h.sb.RestoreBrand(goneID); err != nil {
		t.Fatal(err)
	}
	if res := h.run(Request{}); !completedWith(res, "dated after now") {
		t.Fatalf("third run %s: %v (%s)", res.Status, res.Err, res.WarningSummary())
	}
	if n := h.count("SELECT count(*) FROM "+h.table("brands")+" WHERE brand_id = $1 AND _deleted_at IS NULL", fmt.Sprint(goneID)); n != 1 {
		t.Errorf("restored brand still soft-deleted")
	}
	h.assertEqualsTruth()
}

func ptrAmount(t *testing.T, s string) *sandbox.Amount {
	t.Helper()
	var a sandbox.Amount
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

func TestBudgetExhaustionAndNextDayResume(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Emails = 9000
	h := newHarness(t, o, func(s *Settings) { s.DailyQuota = 30; s.QuotaReserve = 0 })
	first := h.run(Request{})
	if first.Status != StatusPartial || !errors.Is(first.Err, extract.ErrBudgetExhausted) {
		t.Fatalf("first run %s (%v), want partial on budget", first.Status, first.Err)
	}
	if first.RequestsUsed != 30 {
		t.Errorf("first run used %d requests, budget 30", first.RequestsUsed)
	}
	// Same day: nothing left, nothing sent.
	again := h.run(Request{})
	if again.Status != StatusPartial || again.RequestsUsed != 0 {
		t.Fatalf("same-day run %s used %d requests", again.Status, again.RequestsUsed)
	}
	if st := h.sb.Stats(); st.QuotaExceeded != 0 {
		t.Errorf("the service counted %d daily-quota refusals", st.QuotaExceeded)
	}
	// Next day: it completes where it stopped.
	var total int
	for day := 0; day < 5; day++ {
		h.advance(24 * time.Hour)
		res := h.run(Request{})
		total += res.RequestsUsed
		if res.Status == StatusSucceeded {
			h.assertEqualsTruth()
			return
		}
		if res.Status != StatusPartial {
			t.Fatalf("day %d: %s: %v", day, res.Status, res.Err)
		}
	}
	t.Fatalf("not complete after 5 more days (%d requests)", total)
}

// crashingStore fails the commit of one page, as if the worker died between
// fetching the page and committing it.
type crashingStore struct {
	warehouseStore
	stream string
	after  int // fail the commit after this many pages of the stream
	pages  atomic.Int64
}

var errCrash = errors.New("simulated crash before the commit")

func (c *crashingStore) Commit(ctx context.Context, runID string, p load.Commit) (load.Counts, error) {
	if p.StreamName() == c.stream && p.Rows().Len("emails") > 0 {
		if c.pages.Add(1) == int64(c.after+1) {
			return load.Counts{}, errCrash
		}
	}
	return c.warehouseStore.Commit(ctx, runID, p)
}

func TestCrashMidPageResumesWithoutRefetching(t *testing.T) {
	t.Parallel()
	for _, noPrefetch := range []bool{false, true} {
		for _, spool := range []bool{false, true} {
			t.Run(fmt.Sprintf("prefetch=%v/spool=%v", !noPrefetch, spool), func(t *testing.T) {
				t.Parallel()
				crashMidPage(t, noPrefetch, spool)
			})
		}
	}
}

func crashMidPage(t *testing.T, noPrefetch, spool bool) {
	o := smallSandbox()
	o.Emails = 6000
	dir := ""
	if spool {
		dir = filepath.Join(t.TempDir(), "spool")
	}
	h := newHarness(t, o, func(s *Settings) { s.NoPrefetch, s.SpoolDir = noPrefetch, dir })
	h.eng.store = &crashingStore{warehouseStore: h.eng.store, stream: "communications", after: 3}
	res := h.run(Request{Streams: []string{"communications"}})
	if res.Status != StatusFailed || !errors.Is(res.Err, errCrash) {
		t.Fatalf("crashing run %s: %v", res.Status, res.Err)
	}
	firstComms := h.sb.Stats().ByEndpoint["communications"]
	h.eng.store = h.eng.store.(*crashingStore).warehouseStore
	res = h.run(Request{Streams: []string{"communications"}})
	if res.Status != StatusSucceeded {
		t.Fatalf("resumed run %s: %v", res.Status, res.Err)
	}
	total := h.sb.Stats().ByEndpoint["communications"]
	// Without the spool the crashed page (and, with prefetch, at most the
	// one being prefetched) are fetched again; with it, the crashed page and
	// a prefetched page that had arrived come from the spool, and only a
	// prefetch still in flight is lost.
	minimum := oracle.MinimumRequests(h.inventory()).ByEndpoint["communications"]
	refetched := map[[2]bool]int{{false, false}: 2, {true, false}: 1, {false, true}: 1, {true, true}: 0}[[2]bool{noPrefetch, spool}]
	if total > int64(minimum+refetched) {
		t.Errorf("%d communications requests (first run %d); minimum %d, %d more allowed", total, firstComms, minimum, refetched)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("emails")); n != 6000-h.badCount() {
		t.Errorf("%d e-mails stored, want %d", n, 6000-h.badCount())
	}
	if spool {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			left, _ := os.ReadDir(dir)
			t.Errorf("spool after a complete run: %v, %v; want it removed, empty", left, err)
		}
	}
}

func (h *harness) badCount() int {
	_, bad := h.truth().Counts("communications")
	return bad
}

func TestGracefulShutdownCommitsThePageInHand(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Emails = 8000
	o.Latency = 30 * time.Millisecond
	h := newHarness(t, o, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	// Cancel as soon as the third communications page has been answered.
	inner := h.eng.store
	h.eng.store = &hookStore{warehouseStore: inner, before: func(p load.Commit) {
		if p.Rows().Len("emails") > 0 && stateOf(p) != nil && bytes.Contains(stateOf(p).Cursor, []byte(`"next_page":4`)) {
			once.Do(cancel)
		}
	}}
	res, err := h.eng.Run(ctx, Request{Trigger: TriggerTest, Streams: []string{"communications"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusPartial || !errors.Is(res.Err, ErrInterrupted) {
		t.Fatalf("interrupted run %s: %v", res.Status, res.Err)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("emails")); n < 3000-h.badCount() {
		t.Errorf("only %d e-mails committed; the page in hand was lost", n)
	}
	h.eng.store = inner
	h.mustSucceed(Request{Streams: []string{"communications"}}, "resumed run")
	if n := h.count("SELECT count(*) FROM " + h.table("emails")); n != 8000-h.badCount() {
		t.Errorf("%d e-mails after resume", n)
	}
	// At most the page in hand and one prefetched page are fetched again.
	minimum := oracle.MinimumRequests(h.inventory()).ByEndpoint["communications"]
	if total := h.sb.Stats().ByEndpoint["communications"]; total > int64(minimum+2) {
		t.Errorf("%d communications requests for %d pages", total, minimum)
	}
}

type hookStore struct {
	warehouseStore
	before func(load.Commit)
}

func (s *hookStore) Commit(ctx context.Context, runID string, p load.Commit) (load.Counts, error) {
	s.before(p)
	return s.warehouseStore.Commit(ctx, runID, p)
}

func TestDeadRunsAreClosed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	if _, err := h.pool.Exec(context.Background(), "INSERT INTO "+h.table("sync_runs")+" (run_id, trigger) VALUES (gen_random_uuid(), 'run')"); err != nil {
		t.Fatal(err)
	}
	h.mustSucceed(Request{Streams: []string{"brands"}}, "run")
	if n := h.count("SELECT count(*) FROM " + h.table("sync_runs") + " WHERE status = 'running'"); n != 0 {
		t.Fatalf("%d runs still recorded as running", n)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("sync_runs") + " WHERE status = 'failed' AND error LIKE '%without recording the end%'"); n != 1 {
		t.Fatalf("the dead run was not closed as failed")
	}
}

func TestOneSyncAtATime(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Latency = 20 * time.Millisecond
	h := newHarness(t, o, nil)
	second := h.engine(nil)
	var wg sync.WaitGroup
	results := make([]*Result, 2)
	for i, e := range []*Engine{h.eng, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Run(context.Background(), Request{Trigger: TriggerTest})
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	statuses := []Status{results[0].Status, results[1].Status}
	slices.Sort(statuses)
	if !slices.Equal(statuses, []Status{StatusSkipped, StatusSucceeded}) {
		t.Fatalf("statuses %v, want one succeeded and one skipped", statuses)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("sync_runs") + " WHERE status = 'skipped'"); n != 1 {
		t.Errorf("%d skipped runs recorded", n)
	}
}

func TestDailyQuota429StopsCleanly(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.NoLimits = false
	o.Rate = 1000
	o.DailyQuota = 20
	h := newHarness(t, o, nil)
	if err := h.sb.SpendQuota(5); err != nil { // spent elsewhere with the same key
		t.Fatal(err)
	}
	res := h.run(Request{})
	if res.Status != StatusPartial || !errors.Is(res.Err, extract.ErrDailyQuota) {
		t.Fatalf("run %s: %v, want partial on the daily quota", res.Status, res.Err)
	}
	h.advance(24 * time.Hour)
	for range 4 {
		res = h.run(Request{})
		if res.Status == StatusSucceeded {
			break
		}
		h.advance(24 * time.Hour)
	}
	if res.Status != StatusSucceeded {
		t.Fatalf("never completed: %s %v", res.Status, res.Err)
	}
	h.assertEqualsTruth()
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.APIKey, o.CommsKey = "valid-key", "valid-comms"
	revoked := o
	revoked.APIKey, revoked.CommsKey = o.RevokedKey, o.RevokedKey
	h := newHarness(t, o, nil)
	h.opts = revoked // the client sends the revoked key
	h.eng = h.engine(nil)
	res := h.run(Request{})
	if res.Status != StatusFailed || !errors.Is(res.Err, extract.ErrUnauthorized) {
		t.Fatalf("revoked key: %s %v", res.Status, res.Err)
	}
	if res.RequestsUsed != 2 {
		t.Errorf("revoked keys: %d requests, want 2 (one refused by each interface)", res.RequestsUsed)
	}
	foreign := o
	foreign.APIKey = o.ForeignKey
	h.opts = foreign
	h.eng = h.engine(nil)
	res = h.run(Request{Streams: []string{"brands", "projects"}})
	if res.Status != StatusFailed || !errors.Is(res.Err, extract.ErrForbidden) {
		t.Fatalf("foreign key: %s %v", res.Status, res.Err)
	}
	for _, task := range []Task{Task("brands"), Task("projects")} {
		if !errors.Is(res.StreamErrors[task], extract.ErrForbidden) {
			t.Errorf("%s: %v, want 403", task, res.StreamErrors[task])
		}
	}
}

func TestPlanSendsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	p, err := h.eng.Plan(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.sent.Load() != 0 {
		t.Fatalf("plan sent %d requests", h.sent.Load())
	}
	if p.Budget != 9500 || len(p.Items) != 8 {
		t.Fatalf("plan %+v", p)
	}
	h.run(Request{})
	p, err = h.eng.Plan(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := oracle.MinimumRequests(nothingChanged(h.inventory())).Total; p.Estimated() != want {
		t.Errorf("after a full sync the plan estimates %d requests, want %d (lists, finance, one increment page)", p.Estimated(), want)
		p.Print(testWriter{t})
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func TestFullRefreshAndManualBackfill(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	h.run(Request{})
	before := h.sent.Load()
	res := h.run(Request{FullRefresh: []string{"communications"}, Streams: []string{"communications"}})
	if res.Status != StatusSucceeded || res.Counts.Written() != 0 {
		t.Fatalf("full refresh %s wrote %d rows: %v", res.Status, res.Counts.Written(), res.Err)
	}
	if got, want := h.sent.Load()-before, oracle.MinimumRequests(h.inventory()).ByEndpoint["communications"]; got != int64(want) {
		t.Errorf("full refresh of %d e-mails sent %d requests, want %d", h.opts.Emails, got, want)
	}
	from := h.opts.Start.AddDate(0, 0, -10)
	res = h.run(Request{Trigger: TriggerBackfill, Mail: MailRequest{Backfill: &Range{From: from, To: h.opts.Start}}})
	if res.Status != StatusSucceeded {
		t.Fatalf("backfill %s: %v", res.Status, res.Err)
	}
	h.assertEqualsTruth()
}

func TestServerIgnoringUpdatedSinceIsNoticed(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Variants = []string{sandbox.VariantIgnoreUpdatedSince}
	h := newHarness(t, o, nil)
	for i := range 3 {
		if res := h.run(Request{Streams: []string{"finance"}}); res.Status != StatusSucceeded {
			t.Fatalf("run %d: %s %v", i, res.Status, res.Err)
		}
		if i == 0 {
			h.advance(48 * time.Hour)
		}
	}
	n := h.count("SELECT count(*) FROM " + h.table("sync_state") + " WHERE stream = 'finance' AND cursor->>'updated_since_ignored' = 'true'")
	if n != 4 {
		t.Errorf("%d finance lists flagged as ignoring updated_since, want the 4 incremental ones", n)
	}
	h.mustSucceed(Request{}, "full run")
	h.assertEqualsTruth()
}

func TestEveryVariantSyncsToTheTruth(t *testing.T) {
	t.Parallel()
	for _, v := range []string{sandbox.VariantBareArray, sandbox.VariantMetaPaging, sandbox.VariantNoPaging, sandbox.VariantRowsShape,
		sandbox.VariantUnwrapped, sandbox.VariantNumericIDs, sandbox.VariantRecipientsArray, sandbox.VariantFromObject,
		sandbox.VariantSmallPage, sandbox.VariantHasAttachments, sandbox.VariantStringMoney} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			o := smallSandbox()
			o.Emails = 1200
			o.Variants = []string{v}
			h := newHarness(t, o, nil)
			if res := h.run(Request{}); res.Status != StatusSucceeded {
				t.Fatalf("%s: %v", res.Status, res.Err)
			}
			h.assertEqualsTruth()
		})
	}
}

// TestUndecodableDetailIsRejected serves one project detail with an object
// where a date belongs: the record lands in rejected_records, under the
// details' reject stream, and the run completes with it open: warning.
func TestUndecodableDetailIsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	proxy := rewritingProxy(t, h.sb.APIURL(), func(resp *http.Response) bool {
		return resp.Request.URL.Path == "/v1/projects/2" && resp.StatusCode == 200
	}, func(body []byte) []byte {
		return regexp.MustCompile(`"start_date":"[^"]*"`).ReplaceAll(body, []byte(`"start_date":{"when":"soon"}`))
	})
	h.serveAPI(proxy)
	res := h.run(Request{Streams: []string{"projects"}})
	if res.Status != StatusWarning || res.OpenRejects["projects"] != 1 {
		t.Fatalf("run %s: %v, %v open rejects; want warning with 1", res.Status, res.Err, res.OpenRejects)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("rejected_records") + " WHERE stream = 'projects.details' AND record_key = '2'"); n != 1 {
		t.Fatalf("%d rejected records for project 2, want 1", n)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("project_team_members") + " WHERE project_id = '1'"); n == 0 {
		t.Error("the other projects' details were not loaded")
	}
}

// newRealClockHarness is a harness on the real clock, a small sandbox and a
// fresh schema: "today" is the quota day of the runs' rows, as the resume of
// an unfinished run needs.
func newRealClockHarness(t *testing.T) *harness {
	t.Helper()
	pool, schema := warehousetest.Schema(t)
	h := &harness{t: t, pool: pool, schema: schema, realClock: true}
	o := smallSandbox()
	sb := sandbox.StartT(t, o)
	h.sb, h.opts = sb, o
	h.eng = h.engine(nil)
	return h
}

// TestUnfinishedRunIsContinued: a run that dies during the backfill has
// listed brands, projects and finance; the next run the same day continues
// with the backfill instead of listing them again.
func TestUnfinishedRunIsContinued(t *testing.T) {
	t.Parallel()
	h := newRealClockHarness(t)
	sb := h.sb
	inner := h.eng.store
	h.eng.store = &crashingStore{warehouseStore: inner, stream: "communications", after: 1}
	if res := h.run(Request{}); res.Status != StatusFailed {
		t.Fatalf("crashing run %s: %v", res.Status, res.Err)
	}
	h.eng.store = inner
	before := sb.Stats().ByEndpoint
	plan, err := h.eng.Plan(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range plan.Items {
		if s, ok := stream.Lookup(string(it.Task)); ok && len(s.Lists) > 0 && it.Requests != 0 {
			t.Errorf("plan after the unfinished run still lists %s (%d requests)", it.Task, it.Requests)
		}
	}
	res := h.run(Request{})
	if res.Status != StatusSucceeded {
		t.Fatalf("continuing run %s: %v", res.Status, res.Err)
	}
	after := sb.Stats().ByEndpoint
	for _, ep := range []string{"brands", "projects", "budgets", "invoices", "summary", "brand_detail", "project_detail"} {
		if after[ep] != before[ep] {
			t.Errorf("%s requested again (%d → %d)", ep, before[ep], after[ep])
		}
	}
	if got := after["communications"] - before["communications"]; got < 1 || got > 2 {
		t.Errorf("%d communications pages fetched to finish 3, after 1 committed", got)
	}
	// The next run is a normal one again: it lists.
	res = h.run(Request{})
	if res.Status != StatusSucceeded || sb.Stats().ByEndpoint["brands"] != after["brands"]+1 {
		t.Errorf("a run after a finished one must list brands again")
	}
	h.assertEqualsTruth()
}

// failingPartitionStore fails the commit of one finance list's pages.
type failingPartitionStore struct {
	warehouseStore
	partition string
}

func (f *failingPartitionStore) Commit(ctx context.Context, runID string, p load.Commit) (load.Counts, error) {
	if stateOf(p) != nil && stateOf(p).Partition == f.partition {
		return load.Counts{}, errCrash
	}
	return f.warehouseStore.Commit(ctx, runID, p)
}

// TestFinanceListsCompletedTodayAreNotListedAgain: a run that stopped in the
// middle of the finance lists leaves the next run the lists it did not
// complete, not those it did.
func TestFinanceListsCompletedTodayAreNotListedAgain(t *testing.T) {
	t.Parallel()
	h := newRealClockHarness(t)
	inner := h.eng.store
	h.eng.store = &failingPartitionStore{warehouseStore: inner, partition: "collections"}
	res := h.run(Request{Streams: []string{"finance"}})
	if res.Status == StatusSucceeded {
		t.Fatalf("run with a failing list: %s", res.Status)
	}
	before := h.sb.Stats().ByEndpoint
	h.eng.store = inner
	res = h.run(Request{Streams: []string{"finance"}})
	if res.Status != StatusSucceeded {
		t.Fatalf("second run %s: %v", res.Status, res.Err)
	}
	after := h.sb.Stats().ByEndpoint
	for _, ep := range []string{"budgets", "invoices"} {
		if after[ep] != before[ep] {
			t.Errorf("%s listed again: %d requests, then %d", ep, before[ep], after[ep])
		}
	}
	if after["collections"] == before["collections"] {
		t.Errorf("collections, which failed, was not listed again")
	}
}

// verifyRequests is what a run's verification reports it spent (0 when it
// verified nothing).
// refreshShare is what the rolling re-read of the history reads (at the
// default SYNC_COMMS_REFRESH_AGE) on the night after a sync that read every
// day: oracle.RefreshShare of the truth's e-mails per UTC day, the days from
// readToday on (the increment's) being read today already.
func (h *harness) refreshShare(readToday time.Time) []int {
	h.t.Helper()
	per := map[string]int{}
	total := 0
	for _, l := range h.truth()["communications"] {
		total++
		var rec struct {
			Email struct {
				EmailAt string `json:"email_at"`
			} `json:"email"`
		}
		if json.Unmarshal(l.Record, &rec) != nil {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, rec.Email.EmailAt); err == nil {
			per[at.UTC().Format(time.DateOnly)]++
		}
	}
	var eligible []int
	for d := utcDate(h.eng.set.Mail.StartDate); d.Before(readToday); d = d.AddDate(0, 0, 1) {
		eligible = append(eligible, per[d.Format(time.DateOnly)])
	}
	return []int{oracle.RefreshShare(eligible, total, refreshDays(DefaultCommsRefreshAge))}
}

func verifyRequests(res *Result) int {
	if res.Verify == nil {
		return 0
	}
	return res.Verify.Requests
}

// stateOf is the checkpoint a commit carries (nil when none).
func stateOf(c load.Commit) *load.Checkpoint {
	switch p := c.(type) {
	case *load.ListPage:
		return p.State
	case *load.ListEnd:
		return p.State
	case *load.DetailPage:
		return p.State
	case *load.RangePage:
		return p.State
	}
	return nil
}
