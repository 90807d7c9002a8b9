package check

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// financeServer answers the finance lists as a service whose shapes stray
// from the declarations in the ways check must tell apart, paging each
// list honestly by page and per_page; it counts the requests per path.
func financeServer(t *testing.T) (*httptest.Server, func(string) int) {
	t.Helper()
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		q := r.URL.Query()
		per, _ := strconv.Atoi(q.Get("per_page"))
		page, _ := strconv.Atoi(q.Get("page"))
		if per < 1 || page < 1 {
			t.Errorf("%s: want page and per_page", r.URL)
		}
		// list answers rows of a list of n, each written by row(i), with
		// all paging fields or (total) only total.
		list := func(n int, all bool, row func(i int) string) string {
			var rows []string
			for i := (page - 1) * per; i < min(page*per, n); i++ {
				rows = append(rows, row(i))
			}
			if !all {
				return fmt.Sprintf(`{"data":[%s],"total":"%d"}`, strings.Join(rows, ","), n)
			}
			return fmt.Sprintf(`{"data":[%s],"total":%d,"per_page":%d,"current_page":%d,"last_page":%d}`,
				strings.Join(rows, ","), n, per, page, (n+per-1)/per)
		}
		var body string
		switch r.URL.Path {
		case "/v1/finance/budgets":
			// An amount a person typed (not a number), a nullable date as null.
			body = list(40, true, func(i int) string {
				return fmt.Sprintf(`{"id":"%d","project_id":"7","brand_id":"2","amount":"12.345,50 EUR SECRETVALUE","currency":"EUR",`+
					`"period_start":"2026-01-01","period_end":null,"updated_at":"2026-01-02T08:00:00Z"}`, 1001+i)
			})
		case "/v1/finance/invoices":
			w.WriteHeader(http.StatusServiceUnavailable)
			body = `{"error":{"message":"Service unavailable"}}`
		case "/v1/finance/collections":
			// collected_on renamed collection_date.
			body = list(40, true, func(i int) string {
				return fmt.Sprintf(`{"id":"%d","invoice_id":"20001","collection_date":"2026-02-03","amount":150.00,"currency":"RON",`+
					`"updated_at":"2026-02-03T10:00:00Z"}`, 40001+i)
			})
		case "/v1/finance/payments":
			body = list(12, false, func(i int) string {
				return fmt.Sprintf(`{"id":"%d","project_id":"7","brand_id":"2","payee":"Tipografia SRL","paid_on":"2026-03-01","amount":"99.90",`+
					`"currency":"RON","status":"efectuată","updated_at":"2026-03-01T09:00:00Z"}`, 60001+i)
			})
		case "/v1/finance/profitability":
			lvl := q.Get("level")
			body = list(40, true, func(i int) string {
				return fmt.Sprintf(`{"entity_id":"%d","period":"2026-03","revenue":10,"cost":4,"margin":6,"currency":"RON"}`, 7+i)
			})
			if lvl != "project" && lvl != "brand" {
				t.Errorf("profitability level %q", lvl)
			}
		case "/v1/finance/summary":
			body = list(0, true, nil)
		default:
			w.WriteHeader(http.StatusNotFound)
			body = `{"error":{"message":"Not found"}}`
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, func(p string) int { mu.Lock(); defer mu.Unlock(); return hits[p] }
}

func financeCheck(t *testing.T, srv *httptest.Server, budget int, finance ...*stream.Stream) *Report {
	t.Helper()
	tally := NewTally()
	c, err := extract.New(extract.Options{BaseURL: srv.URL, APIKey: "test-key-123456", RateLimit: 1000, SpacingMargin: -1,
		MaxAttempts: PerEndpoint, RetryInitialInterval: time.Millisecond, RetryMaxInterval: time.Millisecond, Hook: tally.Observe})
	if err != nil {
		t.Fatal(err)
	}
	if len(finance) == 0 {
		s, _ := stream.Lookup("finance")
		finance = []*stream.Stream{s}
	}
	rep, err := Run(context.Background(), Options{Client: c, Tally: tally, Streams: finance, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func endpointOf(t *testing.T, rep *Report, name, request string) Endpoint {
	t.Helper()
	for _, e := range rep.Endpoints {
		if e.Endpoint == name && strings.HasPrefix(e.Request, request) {
			return e
		}
	}
	t.Fatalf("no endpoint %s (%s) in %+v", name, request, rep.Endpoints)
	return Endpoint{}
}

func columnOf(t *testing.T, e Endpoint, column string) ColumnCheck {
	t.Helper()
	for _, c := range e.Columns {
		if c.Column == column {
			return c
		}
	}
	t.Fatalf("%s: no column %s in %+v", e.Endpoint, column, e.Columns)
	return ColumnCheck{}
}

// TestCheckTellsFieldStatesApart: null is present, absent is missing (with
// its look-alike named), a value of the wrong kind is unparsed; a failing
// endpoint gets its 2 requests and no more; a parameter fills an absent
// field; paging fields are named as answered, and a list that pages as
// configured is found so; no value is ever reported.
func TestCheckTellsFieldStatesApart(t *testing.T) {
	srv, hits := financeServer(t)
	rep := financeCheck(t, srv, -1)

	if rep.Outcome != OutcomeFailed {
		t.Errorf("outcome %s, want failed (invoices answer 503)", rep.Outcome)
	}
	budgets := endpointOf(t, rep, "budgets", "page")
	for col, want := range map[string]string{"budgets.amount": StateUnparsed, "budgets.period_end": StateNull,
		"budgets.period_start": StatePresent, "budgets.budget_id": StatePresent} {
		if c := columnOf(t, budgets, col); c.State != want {
			t.Errorf("%s: %s, want %s", col, c.State, want)
		}
	}
	if c := columnOf(t, budgets, "budgets.amount"); c.JSONType != "string" || !strings.Contains(c.Problem, "numeric") {
		t.Errorf("budgets.amount: %+v, want a string that does not read as numeric", c)
	}
	if budgets.Outcome != OutcomeMismatch {
		t.Errorf("budgets: %s, want mismatch", budgets.Outcome)
	}

	inv := endpointOf(t, rep, "invoices", "page")
	if inv.Outcome != OutcomeFailed || inv.Status != 503 || inv.Requests != 2 || hits("/v1/finance/invoices") != 2 {
		t.Errorf("invoices: %s, status %d, %d requests (server saw %d); want failed, 503, 2", inv.Outcome, inv.Status, inv.Requests, hits("/v1/finance/invoices"))
	}

	coll := endpointOf(t, rep, "collections", "page")
	if c := columnOf(t, coll, "collections.collected_on"); c.State != StateMissing || !slices.Equal(c.Candidates, []string{"collection_date"}) {
		t.Errorf("collections.collected_on: %+v, want missing with candidate collection_date", c)
	}
	if !slices.ContainsFunc(coll.Unmapped, func(f Field) bool { return f.Path == "collection_date" && slices.Equal(f.Types, []string{"string"}) }) {
		t.Errorf("collections unmapped %v, want collection_date (string)", coll.Unmapped)
	}

	pay := endpointOf(t, rep, "payments", "page")
	if pay.Outcome != OutcomeOK || !slices.Equal(pay.PagingFields, []string{"total"}) || pay.Envelope != extract.EnvelopeCanonical {
		t.Errorf("payments: %s, paging %v, envelope %s", pay.Outcome, pay.PagingFields, pay.Envelope)
	}

	for _, lvl := range []string{"level=project", "level=brand"} {
		p := endpointOf(t, rep, "profitability", lvl)
		if c := columnOf(t, p, "profitability.level"); p.Outcome != OutcomeOK || c.State != StateFromParam {
			t.Errorf("profitability %s: %s, level %s; want ok, from_param", lvl, p.Outcome, c.State)
		}
	}
	if hits("/v1/finance/profitability") != 4 {
		t.Errorf("profitability asked %d times, want 4 (one per level, and the paging test of the first)", hits("/v1/finance/profitability"))
	}
	for _, name := range []string{"budgets", "collections", "payments", "profitability"} {
		if pg := endpointOf(t, rep, name, "").Paging; pg == nil || !pg.Honoured || pg.Configured != "page" || pg.Requests != 2 {
			t.Errorf("%s paging %+v, want page honoured after 2 more requests (the second page of one row, a page of 1000)", name, pg)
		}
	}
	sum := endpointOf(t, rep, "agency_summary", "page")
	if sum.Outcome != OutcomeOK || sum.Records != 0 || len(sum.Problems) != 0 || sum.Note == "" {
		t.Errorf("empty summary: %+v", sum)
	}
	if rep.Requests != 3+2+3+3+3+1+1 {
		t.Errorf("%d requests, want 16", rep.Requests)
	}

	var text bytes.Buffer
	if err := WriteTable(&text, rep); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(rep)
	for _, out := range []string{text.String(), string(js)} {
		if strings.Contains(out, "SECRETVALUE") || strings.Contains(out, "Tipografia") || strings.Contains(out, "test-key") {
			t.Fatalf("the report prints a value:\n%s", out)
		}
	}
	for _, want := range []string{"collections.collected_on: field collected_on is missing; it looks like collection_date",
		"AGENCY_FIELD_MAP=collections.collected_on=collection_date", "HTTP 503", "budgets.amount"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, text.String())
		}
	}
}

// TestCheckStopsAtTheBudget: the day's budget bounds the requests; the
// endpoints past it are skipped, named, and the outcome says budget.
func TestCheckStopsAtTheBudget(t *testing.T) {
	srv, hits := financeServer(t)
	rep := financeCheck(t, srv, 1)
	if rep.Requests != 1 || hits("/v1/finance/budgets") != 1 || hits("/v1/finance/collections") != 0 {
		t.Fatalf("budget 1: %d requests", rep.Requests)
	}
	for _, e := range rep.Endpoints[1:] {
		if e.Outcome != OutcomeSkipped || !strings.Contains(e.Error, "budget") {
			t.Errorf("%s past the budget: %s %q", e.Endpoint, e.Outcome, e.Error)
		}
	}
	// budgets itself mismatches: that outranks the budget.
	if rep.Outcome != OutcomeMismatch {
		t.Errorf("outcome %s, want mismatch", rep.Outcome)
	}
}

// TestCheckSparseColumnMayBeAbsent: a column the declarations mark Sparse
// (NULL by nature in most records) does not fail when its field is absent
// from the one record asked for; its look-alikes are still named.
func TestCheckSparseColumnMayBeAbsent(t *testing.T) {
	srv, _ := financeServer(t)
	streams, err := stream.Apply(nil) // copies: marking one leaves the declarations alone
	if err != nil {
		t.Fatal(err)
	}
	var finance *stream.Stream
	for _, s := range streams {
		if s.Name == "finance" {
			finance = s
		}
	}
	tab, _ := finance.Table("collections")
	col, _ := tab.Column("collected_on")
	col.Sparse = true
	rep := financeCheck(t, srv, -1, finance)
	coll := endpointOf(t, rep, "collections", "page")
	c := columnOf(t, coll, "collections.collected_on")
	if coll.Outcome != OutcomeOK || c.State != StateNotSeen || !slices.Equal(c.Candidates, []string{"collection_date"}) {
		t.Fatalf("sparse collected_on absent: endpoint %s, column %+v; want ok, not_seen with candidate collection_date", coll.Outcome, c)
	}
	if orig, _ := stream.LookupColumn("collections", "collected_on"); orig.Sparse {
		t.Fatal("the shared declaration was changed")
	}
}

// TestCheckFindsPageWithAnotherSizeParameter: a service that pages by page
// and limit (per_page ignored: 20 rows a page) is found so, with the
// setting that names the size parameter.
func TestCheckFindsPageWithAnotherSizeParameter(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		size, page := 20, 1
		if v, err := strconv.Atoi(q.Get("limit")); err == nil {
			size = v
		}
		if v, err := strconv.Atoi(q.Get("page")); err == nil {
			page = v
		}
		var rows []string
		for i := (page - 1) * size; i < min(page*size, 45); i++ {
			rows = append(rows, fmt.Sprintf(`{"id":"%d","amount":"1.00","currency":"RON","project_id":"1","period_start":"2026-01-01"}`, 1001+i))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "[%s]", strings.Join(rows, ","))
	}))
	t.Cleanup(srv.Close)
	s, _ := stream.Lookup("finance")
	budgets := *s
	budgets.Endpoints = []stream.Endpoint{s.Endpoints[0]}
	rep := financeCheck(t, srv, -1, &budgets)
	pg := endpointOf(t, rep, "budgets", "").Paging
	if pg == nil || pg.Honoured || pg.Found != "page:size=limit" || pg.Setting != "AGENCY_PAGING=budgets=page:size=limit" {
		t.Fatalf("outcome %s, paging %+v", rep.Outcome, pg)
	}
	if rep.PagingSetting != "*=page:size=limit" {
		t.Errorf("paging setting %q", rep.PagingSetting)
	}
}
