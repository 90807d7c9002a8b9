package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agencysync/agencysync/internal/testkit/loopback"
	"github.com/agencysync/agencysync/stream"
)

func TestEveryEndpoint(t *testing.T) {
	brand := `{"id":"1","name":"Acme","status":"active","date_created":"2023-01-05","account_manager":"Ana","projects_count":2,"financial_summary":{"total_budget":"100.00","invoiced":"50","collected":"25","currency":"EUR"}}`
	bodies := map[string]string{
		"/v1/brands":                `{"data":[{"brand_info":` + brand + `}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
		"/v1/brands/1":              `{"brand_info":` + brand + `,"general_info":{"web":"https://acme.example"},"metadata":{"tier":"gold"}}`,
		"/v1/brands/1/contacts":     `{"data":[{"id":5,"first_name":"Ana","last_name":"Pop","full_name":"Ana Pop","email":"ana@acme.example","phone":"","position":"CMO","is_primary":true}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
		"/v1/projects":              `{"data":[{"project_info":{"id":7,"brand_id":"1","name":"Site","status":"open","budget":{"amount":"10.00","currency":"EUR"}}}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
		"/v1/projects/7":            `{"id":7,"brand_id":"1","name":"Site","team":[{"user_id":3,"full_name":"Dan","role":"pm"}]}`,
		"/v1/finance/budgets":       `{"data":[{"id":1,"project_id":7,"brand_id":1,"amount":"10.00","currency":"EUR"}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
		"/v1/finance/invoices":      `{"data":[{"id":2,"number":"F-1","amount":"5.00","currency":"EUR","status":"open"}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
		"/v1/finance/collections":   `{"data":[{"id":3,"invoice_id":2,"amount":"5.00","currency":"EUR"}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
		"/v1/finance/payments":      `{"data":[{"id":4,"payee":"Print SRL","amount":"1.00","currency":"EUR"}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
		"/v1/finance/profitability": `{"data":[{"entity_id":7,"period":"2024-01","revenue":"3","cost":"1","margin":"2","currency":"EUR"}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
		"/v1/finance/summary":       `{"data":[{"period":"2024-01","total_budget":"1","invoiced":"2","collected":"3","paid":"4","profit":"5","currency":"EUR"}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`,
	}
	main, mrec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			writeJSON(w, 404, errBody("Data not found", "The requested data does not exist."))
			return
		}
		writeJSON(w, 200, b)
	})
	comms, crec := serve(t, commsDataset(3, 0))
	c := newClient(t, fastOptions(main.URL, comms.URL)).WithExecutionID("run-42")
	ctx := context.Background()
	since := time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)

	one := func(name string, n int, err error) {
		t.Helper()
		if err != nil || n != 1 {
			t.Errorf("%s: %d records, err %v", name, n, err)
		}
	}
	brands, err := collect(t, c.List(ctx, stream.EndpointBrands, ListQuery{}))
	one("brands", len(brands[0].Records), err)
	if b := brands[0].Records[0]; string(b.Raw) != `{"brand_info":`+brand+`}` || b.Key != "" {
		t.Errorf("brand %s key %q", b.Raw, b.Key)
	}
	bd, err := c.Detail(ctx, stream.EndpointBrand, "1")
	if err != nil || bd.Key != "1" || string(bd.Raw) != bodies["/v1/brands/1"] {
		t.Errorf("brand detail %s %v", bd.Raw, err)
	}
	contacts, err := collect(t, c.List(ctx, stream.EndpointBrandContacts, ListQuery{ID: "1"}))
	one("contacts", len(contacts[0].Records), err)
	projects, err := collect(t, c.List(ctx, stream.EndpointProjects, ListQuery{Params: map[string]string{"brand_id": "1"}, UpdatedSince: since}))
	one("projects", len(projects[0].Records), err)
	if p := projects[0].Records[0]; !strings.Contains(bodies["/v1/projects"], string(p.Raw)) || gjson.GetBytes(p.Raw, "project_info.budget.amount").Str != "10.00" {
		t.Errorf("project %s", p.Raw)
	}
	pd, err := c.Detail(ctx, stream.EndpointProject, "7")
	if err != nil || pd.Key != "7" || string(pd.Raw) != bodies["/v1/projects/7"] {
		t.Errorf("project detail %s %v", pd.Raw, err)
	}
	fq := ListQuery{UpdatedSince: since}
	bu, err := collect(t, c.List(ctx, stream.EndpointBudgets, fq))
	one("budgets", len(bu[0].Records), err)
	in, err := collect(t, c.List(ctx, stream.EndpointInvoices, fq))
	one("invoices", len(in[0].Records), err)
	co, err := collect(t, c.List(ctx, stream.EndpointCollections, fq))
	one("collections", len(co[0].Records), err)
	pa, err := collect(t, c.List(ctx, stream.EndpointPayments, fq))
	one("payments", len(pa[0].Records), err)
	pr, err := collect(t, c.List(ctx, stream.EndpointProfitability, ListQuery{Params: map[string]string{"level": "project"}}))
	one("profitability", len(pr[0].Records), err)
	if r := pr[0].Records[0]; gjson.GetBytes(r.Raw, "level").Exists() || gjson.GetBytes(r.Raw, "entity_id").Int() != 7 {
		t.Errorf("profitability row not as received: %s", r.Raw)
	}
	su, err := collect(t, c.List(ctx, stream.EndpointAgencySummary, ListQuery{}))
	one("summary", len(su[0].Records), err)
	cm, err := collect(t, c.Communications(ctx, CommsQuery{DomainID: 9, UserIDs: []int64{1, 2}, BrandURL: "https://acme.example",
		DateStart: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), DateEnd: time.Date(2024, 3, 31, 0, 0, 0, 0, time.UTC)}))
	if err != nil || len(cm) != 1 || len(cm[0].Records) != 3 || cm[0].Records[2].Key != "3" {
		t.Errorf("communications: %v", err)
	}

	// What the main interface was sent.
	for _, r := range mrec.requests() {
		if r.Header.Get("Authorization") != testKey || r.Header.Get("Accept") != "application/json" || r.Header.Get("X-Workflow-Key") != "" {
			t.Errorf("%s: headers %v", r.Path, r.Header)
		}
		if r.Path == "/v1/brands/1" || r.Path == "/v1/projects/7" {
			if len(r.Query) != 0 {
				t.Errorf("%s: query %v", r.Path, r.Query)
			}
			continue
		}
		if r.Query["page"][0] != "1" || r.Query["per_page"][0] != "1000" {
			t.Errorf("%s: paging query %v", r.Path, r.Query)
		}
		switch r.Path {
		case "/v1/projects":
			if r.Query["brand_id"][0] != "1" || r.Query["updated_since"][0] != "2024-02-01" {
				t.Errorf("projects query %v", r.Query)
			}
		case "/v1/finance/budgets", "/v1/finance/invoices", "/v1/finance/collections", "/v1/finance/payments":
			if r.Query["updated_since"][0] != "2024-02-01" {
				t.Errorf("%s query %v", r.Path, r.Query)
			}
		case "/v1/finance/profitability":
			if r.Query["level"][0] != "project" {
				t.Errorf("profitability query %v", r.Query)
			}
		}
	}
	if n := mrec.count(); n != 11 {
		t.Errorf("main interface got %d requests, want 11", n)
	}
	// What the communications endpoint was sent.
	creqs := crec.requests()
	if len(creqs) != 1 {
		t.Fatalf("communications got %d requests", len(creqs))
	}
	r := creqs[0]
	if r.Method != http.MethodPost || r.Path != "/workflow/tools/communications-emails" ||
		r.Header.Get("X-Workflow-Key") != testCommsKey || r.Header.Get("X-Workflow-Id") != "agencysync" ||
		r.Header.Get("X-Workflow-Execution-Id") != "run-42" || r.Header.Get("Content-Type") != "application/json" ||
		r.Header.Get("Authorization") != "" {
		t.Errorf("communications request %s %s %v", r.Method, r.Path, r.Header)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"domain_id": 9.0, "user_id": []any{1.0, 2.0}, "-brand_url": "https://acme.example",
		"date_start": "2024-03-01", "date_end": "2024-03-31", "with_message": "0", "page": 1.0, "per_page": 1000.0}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("communications body %s, want %v", r.Body, want)
	}
}

func TestCustomPathsAndWorkflowHeader(t *testing.T) {
	main, mrec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/clients/a%2Fb/people" && r.URL.RawPath != "/api/v1/clients/a%2Fb/people" {
			writeJSON(w, 404, errBody("Data not found", r.URL.Path))
			return
		}
		writeJSON(w, 200, `[]`)
	})
	comms, crec := serve(t, commsDataset(0, 0))
	o := fastOptions(main.URL+"/api/", comms.URL)
	o.Paths = Paths{stream.EndpointBrandContacts: "/v1/clients/{id}/people", stream.EndpointCommunications: "/hooks/mail"}
	o.WorkflowID, o.WorkflowIDHeader, o.ExecutionID = "wf-7", "X-Tool-Workflow", "exec-1"
	c := newClient(t, o)
	if _, err := collect(t, c.List(context.Background(), stream.EndpointBrandContacts, ListQuery{ID: "a/b"})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommunicationsPage(context.Background(), CommsQuery{WithMessage: "1", PerPage: 50}, 3); err != nil {
		t.Fatal(err)
	}
	if mrec.count() != 1 {
		t.Errorf("main requests %d", mrec.count())
	}
	r := crec.requests()[0]
	var q commsReq
	json.Unmarshal(r.Body, &q)
	if r.Path != "/hooks/mail" || r.Header.Get("X-Tool-Workflow") != "wf-7" || r.Header.Get("X-Workflow-Execution-Id") != "exec-1" ||
		q.Page != 3 || q.PerPage != 50 || q.WithMessage != "1" || strings.Contains(string(r.Body), "domain_id") {
		t.Errorf("request %s %v %s", r.Path, r.Header, r.Body)
	}
}

func TestPagingFollowsServer(t *testing.T) {
	// brands lists the brands of a server answering h, and its requests.
	brands := func(t *testing.T, h http.HandlerFunc) ([]*Page, *recorder) {
		t.Helper()
		srv, rec := serve(t, h)
		pages, err := collect(t, newClient(t, fastOptions(srv.URL, "")).List(context.Background(), stream.EndpointBrands, ListQuery{}))
		if err != nil {
			t.Fatal(err)
		}
		return pages, rec
	}
	t.Run("canonical three pages, none past last_page", func(t *testing.T) {
		pages, rec := brands(t, listDataset(2500, 0))
		if len(pages) != 3 || rec.count() != 3 || len(pages[2].Records) != 500 || pages[2].LastPage != 3 {
			t.Fatalf("pages %d requests %d", len(pages), rec.count())
		}
	})
	t.Run("server caps per_page", func(t *testing.T) {
		pages, rec := brands(t, listDataset(250, 100))
		var ids []string
		for _, p := range pages {
			for _, r := range p.Records {
				ids = append(ids, gjson.GetBytes(r.Raw, "brand_info.id").Str)
			}
		}
		if len(ids) != 250 || len(slices.Compact(slices.Clone(ids))) != 250 || ids[100] != "101" {
			t.Fatalf("%d ids, first of page 2 %q", len(ids), ids[min(100, len(ids)-1)])
		}
		reqs := rec.requests()
		if len(reqs) != 3 || reqs[0].Query["per_page"][0] != "1000" || reqs[1].Query["per_page"][0] != "100" || reqs[2].Query["per_page"][0] != "100" {
			t.Fatalf("requests %d: %v", len(reqs), reqs)
		}
	})
	t.Run("communications capped per_page and resume", func(t *testing.T) {
		srv, rec := serve(t, commsDataset(45, 20))
		c := newClient(t, fastOptions("", srv.URL))
		seen := map[int64]int{}
		for p, err := range c.Communications(context.Background(), CommsQuery{StartPage: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Records {
				id, _ := strconv.ParseInt(r.Key, 10, 64)
				seen[id]++
			}
		}
		if len(seen) != 25 || seen[21] != 1 || seen[45] != 1 || seen[20] != 0 || rec.count() != 2 {
			t.Fatalf("seen %d records over %d requests", len(seen), rec.count())
		}
	})
	t.Run("unpaged short page is proven by one request past the end", func(t *testing.T) {
		srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("page") == "1" {
				writeJSON(w, 200, `[{"id":1},{"id":2}]`)
				return
			}
			writeJSON(w, 200, `[]`)
		})
		c := newClient(t, fastOptions(srv.URL, ""))
		pages, err := collect(t, c.List(context.Background(), stream.EndpointBudgets, ListQuery{}))
		if err != nil || len(pages) != 2 || rec.count() != 2 || pages[0].Paged {
			t.Fatalf("pages %d requests %d err %v", len(pages), rec.count(), err)
		}
		q := url.Values(rec.requests()[1].Query)
		if q.Get("page") != "2" || q.Get("per_page") != "2" {
			t.Errorf("the request past the end asked %v, want page 2 of the 2 rows answered", q)
		}
		if end := pages[1].End; end == nil || !end.Proven || end.Proof != ProofPastEnd || end.Rows != 2 {
			t.Errorf("verdict %+v", end)
		}
	})
	t.Run("unpaged full page asks for the next", func(t *testing.T) {
		srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Query().Get("page") {
			case "1":
				writeJSON(w, 200, `{"data":[{"id":1},{"id":2}]}`)
			case "2":
				writeJSON(w, 200, `{"data":[{"id":3},{"id":4}]}`)
			default:
				writeJSON(w, 200, `{"data":[]}`)
			}
		})
		o := fastOptions(srv.URL, "")
		o.PerPage = 2
		c := newClient(t, o)
		pages, err := collect(t, c.List(context.Background(), stream.EndpointPayments, ListQuery{}))
		if err != nil || len(pages) != 3 || rec.count() != 3 || string(pages[1].Records[1].Raw) != `{"id":4}` {
			t.Fatalf("pages %d requests %d err %v", len(pages), rec.count(), err)
		}
	})
	t.Run("server ignoring the page parameter is caught", func(t *testing.T) {
		srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `[{"id":1},{"id":2}]`) })
		o := fastOptions(srv.URL, "")
		o.PerPage = 2
		c := newClient(t, o)
		pages, err := collect(t, c.List(context.Background(), stream.EndpointInvoices, ListQuery{}))
		if err != nil || rec.count() != 2 || len(pages) != 2 || len(pages[1].Records) != 0 {
			t.Fatalf("err %v after %d requests, %d pages", err, rec.count(), len(pages))
		}
		end := pages[1].End
		if end == nil || end.Proven || !strings.Contains(end.Reason, "ignores the page parameter") || end.Suggest != "offset" || end.Rows != 2 {
			t.Fatalf("verdict %+v", end)
		}
	})
	t.Run("current_page mismatch", func(t *testing.T) {
		srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"data":[{"id":`+r.URL.Query().Get("page")+`}],"total":5,"per_page":1,"current_page":1,"last_page":5}`)
		})
		o := fastOptions(srv.URL, "")
		o.PerPage = 1
		c := newClient(t, o)
		pages, err := collect(t, c.List(context.Background(), stream.EndpointCollections, ListQuery{}))
		if err != nil || len(pages) != 2 {
			t.Fatalf("err %v, %d pages", err, len(pages))
		}
		end := pages[1].End
		if end == nil || end.Proven || !strings.Contains(end.Reason, "asked for page 2, the server answered current_page 1") ||
			end.Suggest != "offset:size=per_page" {
			t.Fatalf("verdict %+v", end)
		}
	})
	t.Run("breaking out stops requests", func(t *testing.T) {
		srv, rec := serve(t, listDataset(5000, 0))
		c := newClient(t, fastOptions(srv.URL, ""))
		for p, err := range c.List(context.Background(), stream.EndpointBrands, ListQuery{}) {
			if err != nil || len(p.Records) != 1000 {
				t.Fatal(err)
			}
			break
		}
		if rec.count() != 1 {
			t.Fatalf("requests %d", rec.count())
		}
	})
}

func TestTypedErrors(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		header   map[string]string
		kind     error
		attempts int
		text     string
	}{
		{"401", 401, errBody("Invalid authentication", "The API key provided is invalid"), nil, ErrUnauthorized, 1, `regenerate it there`},
		{"403", 403, errBody("Forbidden access", "Your API key does not have access to the requested data"), nil, ErrForbidden, 1, "Forbidden access"},
		{"404", 404, errBody("Data not found", "The requested data does not exist."), nil, ErrNotFound, 1, "Data not found"},
		{"400", 400, errBody("Missing parameter level", "level is required"), nil, ErrBadRequest, 1, `"Missing parameter level" (level is required)`},
		{"daily quota", 429, errBody("Daily quota exceeded", "You have exceeded the allowed daily requests"), map[string]string{"Retry-After": "3600"}, ErrDailyQuota, 1, "quota resets at"},
		{"rate limited", 429, errBody("Rate limit exceeded", "You have exceeded the allowed requests per second"), nil, ErrRateLimited, 3, "giving up after 3 attempts"},
		{"429 without JSON", 429, "<html>Too Many Requests</html>", nil, ErrRateLimited, 3, "HTTP 429"},
		{"500", 500, errBody("Internal server error", "The server encountered an error while processing your requests"), nil, ErrServer, 3, "Internal server error"},
		{"502 HTML", 502, "<html><body>Bad Gateway</body></html>", nil, ErrServer, 3, "HTTP 502"},
		{"405", 405, "", nil, ErrUnexpectedStatus, 1, "HTTP 405"},
		{"200 HTML", 200, "<!DOCTYPE html><html>maintenance</html>", nil, ErrMalformedResponse, 3, "HTML page where JSON was expected"},
		{"200 empty", 200, "", nil, ErrMalformedResponse, 3, "empty body"},
		{"200 garbage", 200, "OK", nil, ErrMalformedResponse, 3, "not JSON"},
		{"200 truncated JSON", 200, `{"data":[{"id":1},{"id":`, nil, ErrMalformedResponse, 3, "truncated JSON"},
		{"200 error object", 200, errBody("Something else", "x"), nil, ErrErrorResponse, 1, "Something else"},
		{"200 error object rate", 200, errBody("Rate limit exceeded", "x"), nil, ErrRateLimited, 3, "Rate limit exceeded"},
		{"200 rows wrong type", 200, `{"data":{"rows":42}}`, nil, ErrUnexpectedShape, 1, "rows: want an object or an array, got number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			})
			o := fastOptions(srv.URL, "")
			o.MaxAttempts = 3
			cl := newClient(t, o)
			_, err := collect(t, cl.List(context.Background(), stream.EndpointInvoices, ListQuery{}))
			if !errors.Is(err, c.kind) {
				t.Fatalf("err %v, want %v", err, c.kind)
			}
			if !strings.Contains(err.Error(), c.text) || !strings.HasPrefix(err.Error(), "fetch invoices page 1: ") {
				t.Errorf("err %q, want it to name the endpoint and page and contain %q", err, c.text)
			}
			if rec.count() != c.attempts {
				t.Errorf("%d attempts, want %d", rec.count(), c.attempts)
			}
			var ae *APIError
			if errors.As(err, &ae) && c.kind == ErrDailyQuota {
				if ae.ResetAt.IsZero() || time.Until(ae.ResetAt) < 59*time.Minute || ae.RetryAfter != time.Hour {
					t.Errorf("reset %v retry after %v", ae.ResetAt, ae.RetryAfter)
				}
			}
			if errors.As(err, &ae) && (ae.Endpoint != stream.EndpointInvoices || ae.Page != 1) {
				t.Errorf("api error names %q page %d", ae.Endpoint, ae.Page)
			}
		})
	}
}

func TestTruncatedBodyRetried(t *testing.T) {
	var n atomic.Int32
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Content-Length", "500") // promises more than it sends
			w.WriteHeader(200)
			w.Write([]byte(`{"data":[{"id":1}`))
			return
		}
		writeJSON(w, 200, `{"data":[{"id":1}],"total":1}`)
	})
	c := newClient(t, fastOptions(srv.URL, ""))
	pages, err := collect(t, c.List(context.Background(), stream.EndpointBudgets, ListQuery{}))
	if err != nil || len(pages) != 1 || rec.count() != 2 {
		t.Fatalf("err %v pages %d requests %d", err, len(pages), rec.count())
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	var n atomic.Int32
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, errBody("Rate limit exceeded", "You have exceeded the allowed requests per second"))
			return
		}
		writeJSON(w, 200, `[]`)
	})
	c := newClient(t, fastOptions(srv.URL, ""))
	if _, err := collect(t, c.List(context.Background(), stream.EndpointPayments, ListQuery{})); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if gap := reqs[1].At.Sub(reqs[0].At); gap < time.Second {
		t.Errorf("retried after %v, want at least the 1s of Retry-After", gap)
	}

	// A Retry-After longer than MaxRetryWait ends the retries at once.
	srv2, rec2 := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "600")
		writeJSON(w, 503, errBody("Service unavailable", "maintenance"))
	})
	o := fastOptions(srv2.URL, "")
	o.MaxRetryWait = time.Second
	c2 := newClient(t, o)
	start := time.Now()
	_, err := collect(t, c2.List(context.Background(), stream.EndpointPayments, ListQuery{}))
	var ae *APIError
	if !errors.Is(err, ErrServer) || !errors.As(err, &ae) || ae.RetryAfter != 10*time.Minute || rec2.count() != 1 || time.Since(start) > time.Second {
		t.Errorf("err %v after %d requests", err, rec2.count())
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"2":                             2 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"-1":                            0,
		"soon":                          0,
		"Fri, 01 Mar 2024 10:00:30 GMT": 30 * time.Second,
		"Fri, 01 Mar 2024 09:00:00 GMT": 0,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
	h := http.Header{}
	h.Set("X-RateLimit-Reset", "1709337600")
	if got := resetTime(h, 0, now); !got.Equal(time.Unix(1709337600, 0)) {
		t.Errorf("reset %v", got)
	}
}

// arrivalsWithinWindow returns the largest number of arrivals inside any
// window of length w.
func arrivalsWithinWindow(at []time.Time, w time.Duration) int {
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	best := 0
	j := 0
	for i := range at {
		for at[i].Sub(at[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

func TestPacingNeverExceedsRate(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 10s")
	}
	main, mrec := serve(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `[]`) })
	comms, crec := serve(t, commsDataset(0, 0))
	o := fastOptions(main.URL, comms.URL)
	o.RateLimit, o.SpacingMargin = 10, 0 // the defaults
	c := newClient(t, o)
	// 100 requests from 8 goroutines over both interfaces, which share the
	// limiter.
	var wg sync.WaitGroup
	var next atomic.Int32
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= 100; i = next.Add(1) {
				var err error
				if i%2 == 0 {
					_, err = c.CommunicationsPage(context.Background(), CommsQuery{}, 1)
				} else {
					_, err = collect(t, c.List(context.Background(), stream.EndpointAgencySummary, ListQuery{}))
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var at []time.Time
	for _, r := range append(mrec.requests(), crec.requests()...) {
		at = append(at, r.At)
	}
	if len(at) != 100 {
		t.Fatalf("%d requests", len(at))
	}
	if n := arrivalsWithinWindow(at, time.Second); n > 10 {
		t.Errorf("%d requests arrived within one second, limit 10", n)
	}
	if total := at[len(at)-1].Sub(at[0]); total < 9900*time.Millisecond || total > 12*time.Second {
		t.Errorf("100 requests took %v, want about 10.4s (evenly spaced)", total)
	}
}

func TestSeparateCommsLimiter(t *testing.T) {
	main, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `[]`) })
	comms, _ := serve(t, commsDataset(0, 0))
	timeBoth := func(commsRate float64) time.Duration {
		o := fastOptions(main.URL, comms.URL)
		o.RateLimit, o.CommsRateLimit = 1, commsRate
		c := newClient(t, o)
		start := time.Now()
		if _, err := collect(t, c.List(context.Background(), stream.EndpointAgencySummary, ListQuery{})); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CommunicationsPage(context.Background(), CommsQuery{}, 1); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	if d := timeBoth(0); d < 900*time.Millisecond {
		t.Errorf("shared limiter: two requests in %v, want about 1s apart", d)
	}
	if d := timeBoth(1); d > 500*time.Millisecond {
		t.Errorf("separate limiters: two requests took %v", d)
	}
}

// faultyServer serves a communications dataset with a fault on ~40% of the
// requests: 500, an HTML 502, 503 with Retry-After, a truncated body, a
// dropped connection, a spurious 429, a body slower than the timeout.
func faultyServer(t *testing.T, total int) (*httptest.Server, *recorder, *atomic.Int32) {
	ok := commsDataset(total, 0)
	var n, faults atomic.Int32
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		switch i % 10 {
		case 1:
			faults.Add(1)
			writeJSON(w, 500, errBody("Internal server error", "x"))
		case 3:
			faults.Add(1)
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			w.Write([]byte("<html><h1>502 Bad Gateway</h1></html>"))
		case 4:
			faults.Add(1)
			w.Header().Set("Retry-After", "0.01")
			writeJSON(w, 503, "")
		case 6:
			faults.Add(1)
			rw := httptest.NewRecorder()
			ok(rw, r)
			b := rw.Body.Bytes()
			w.Write(b[:len(b)/2]) // chunked, ends early: a truncated JSON document
		case 7:
			faults.Add(1)
			hj, _ := w.(http.Hijacker)
			conn, _, err := hj.Hijack()
			if err == nil {
				conn.Close()
			}
		case 8:
			faults.Add(1)
			writeJSON(w, 429, errBody("Rate limit exceeded", "You have exceeded the allowed requests per second"))
		case 9:
			if i%20 == 9 {
				faults.Add(1)
				time.Sleep(400 * time.Millisecond) // beyond the client's timeout
			}
			ok(w, r)
		default:
			ok(w, r)
		}
	})
	return srv, rec, &faults
}

func TestFaultHeavyServerDeliversEveryRecordOnce(t *testing.T) {
	const total = 1234
	srv, rec, faults := faultyServer(t, total)
	o := fastOptions("", srv.URL)
	o.MaxAttempts, o.Timeout = 10, 200*time.Millisecond
	var hookErrs atomic.Int32
	o.Hook = func(ri RequestInfo) {
		if ri.Err != nil {
			hookErrs.Add(1)
		}
	}
	c := newClient(t, o)
	seen := map[int64]int{}
	pages := 0
	for p, err := range c.Communications(context.Background(), CommsQuery{PerPage: 50}) {
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		if len(p.Rejects) != 0 {
			t.Fatalf("rejects %v", p.Rejects)
		}
		for _, r := range p.Records {
			id, _ := strconv.ParseInt(r.Key, 10, 64)
			seen[id]++
		}
	}
	if len(seen) != total || pages != 25 {
		t.Fatalf("%d distinct records over %d pages, want %d over 25", len(seen), pages, total)
	}
	for id, n := range seen {
		if n != 1 || id < 1 || id > total {
			t.Fatalf("record %d delivered %d times", id, n)
		}
	}
	if faults.Load() < 10 || int(hookErrs.Load()) < int(faults.Load())-1 || rec.count() != 25+int(hookErrs.Load()) {
		t.Errorf("faults %d, failed attempts seen by the hook %d, requests %d", faults.Load(), hookErrs.Load(), rec.count())
	}
}

func TestInsecureHTTPRefused(t *testing.T) {
	for _, u := range []string{"http://api.example.com", "http://10.0.0.5:8080", "http://127.example.com", "ftp://api.example.com", "api.example.com"} {
		_, err := New(Options{BaseURL: u, APIKey: testKey})
		if err == nil {
			t.Errorf("%s accepted", u)
		}
		if _, err := New(Options{CommsURL: u, CommsKey: testKey}); err == nil {
			t.Errorf("comms %s accepted", u)
		}
	}
	if _, err := New(Options{BaseURL: "http://api.example.com"}); !errors.Is(err, ErrInsecureURL) {
		t.Errorf("err %v", err)
	}
	for _, u := range []string{"https://api.example.com", "http://127.0.0.1:8080", "http://127.1.2.3", "http://localhost:9000/", "http://[::1]:80"} {
		if _, err := New(Options{BaseURL: u, APIKey: testKey}); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
	if _, err := New(Options{BaseURL: "http://api.example.com", AllowInsecureHTTP: true}); err != nil {
		t.Errorf("AllowInsecureHTTP: %v", err)
	}
	if _, err := New(Options{}); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("no URLs: %v", err)
	}
	c := newClient(t, Options{CommsURL: "https://comms.example.com"})
	if _, err := collect(t, c.List(context.Background(), stream.EndpointBrands, ListQuery{})); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("brands without BaseURL: %v", err)
	}
}

func TestRedirectToOtherHostRefused(t *testing.T) {
	var leaked atomic.Value
	other, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("X-Workflow-Key") + r.Header.Get("Authorization"))
		writeJSON(w, 200, `[]`)
	})
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	c := newClient(t, fastOptions(srv.URL, srv.URL))
	_, err := c.CommunicationsPage(context.Background(), CommsQuery{}, 1)
	if !errors.Is(err, ErrUnexpectedStatus) || !strings.Contains(err.Error(), "307") {
		t.Errorf("err %v", err)
	}
	if v, _ := leaked.Load().(string); v != "" {
		t.Errorf("key followed the redirect: %q", v)
	}
}

func TestKeysNeverInErrorsOrLogs(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(core)
	// A server that echoes the key it got, in error messages and bodies.
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Authorization") + r.Header.Get("X-Workflow-Key")
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/brands"):
			writeJSON(w, 401, errBody("Invalid authentication: key "+key, "The API key "+key+" is invalid"))
		case strings.HasPrefix(r.URL.Path, "/v1/projects"):
			writeJSON(w, 500, errBody("boom "+key, key))
		default:
			writeJSON(w, 200, "<html>"+key+"</html>")
		}
	})
	// A port nobody listens on: network errors.
	dead := "http://" + loopback.FreeAddr(t)
	var infos []RequestInfo
	var mu sync.Mutex
	mk := func(base string) *Client {
		o := fastOptions(base, base)
		o.Logger, o.MaxAttempts = logger, 2
		o.Hook = func(ri RequestInfo) { mu.Lock(); infos = append(infos, ri); mu.Unlock() }
		return newClient(t, o)
	}
	c, cd := mk(srv.URL), mk(dead)
	var errs []error
	_, err := collect(t, c.List(context.Background(), stream.EndpointBrands, ListQuery{}))
	errs = append(errs, err)
	_, err = c.Detail(context.Background(), stream.EndpointBrand, "1")
	errs = append(errs, err)
	_, err = c.Detail(context.Background(), stream.EndpointProject, "1")
	errs = append(errs, err)
	_, err = c.CommunicationsPage(context.Background(), CommsQuery{}, 1)
	errs = append(errs, err)
	_, err = collect(t, cd.List(context.Background(), stream.EndpointBrands, ListQuery{}))
	errs = append(errs, err)
	_, err = cd.CommunicationsPage(context.Background(), CommsQuery{}, 1)
	errs = append(errs, err)
	if !errors.Is(errs[0], ErrUnauthorized) || !errors.Is(errs[2], ErrServer) || !errors.Is(errs[3], ErrMalformedResponse) || !errors.Is(errs[4], ErrNetwork) {
		t.Fatalf("unexpected errors %v", errs)
	}
	check := func(where, s string) {
		if strings.Contains(s, testKey) || strings.Contains(s, testCommsKey) {
			t.Errorf("%s leaks a key: %s", where, s)
		}
	}
	for _, err := range errs {
		if err == nil {
			t.Fatal("expected an error")
		}
		check("error", err.Error())
		check("error %+v", fmt.Sprintf("%+v", err))
		for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
			check("wrapped error", e.Error())
		}
	}
	if !strings.Contains(errs[0].Error(), "[REDACTED]") {
		t.Errorf("redaction not visible: %v", errs[0])
	}
	if logs.Len() == 0 {
		t.Fatal("no logs captured")
	}
	for _, e := range logs.All() {
		b, _ := json.Marshal(e.ContextMap())
		check("log", e.Message+" "+string(b))
	}
	for _, ri := range infos {
		if ri.Err != nil {
			check("hook", ri.Err.Error())
		}
	}
}

func TestContextCancelStopsAtOnce(t *testing.T) {
	slow, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	failing, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 503, errBody("Service unavailable", "x"))
	})
	ok, rec := serve(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `[]`) })
	cases := []struct {
		name string
		opts func() Options
		warm bool // send one request first so that the limiter must wait
	}{
		{"during a slow request", func() Options { o := fastOptions(slow.URL, ""); o.Timeout = time.Minute; return o }, false},
		{"during backoff", func() Options { o := fastOptions(failing.URL, ""); o.MaxRetryWait = time.Hour; return o }, false},
		{"during the limiter wait", func() Options { o := fastOptions(ok.URL, ""); o.RateLimit = 0.05; return o }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := newClient(t, c.opts())
			if c.warm {
				if _, err := collect(t, cl.List(context.Background(), stream.EndpointAgencySummary, ListQuery{})); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(150*time.Millisecond, cancel)
			start := time.Now()
			_, err := collect(t, cl.List(ctx, stream.EndpointAgencySummary, ListQuery{}))
			if d := time.Since(start); d > 700*time.Millisecond {
				t.Errorf("returned %v after the call, want at once after the cancel at 150ms", d)
			}
			if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "fetch agency_summary page 1: ") {
				t.Errorf("err %v", err)
			}
		})
	}
	if rec.count() != 1 {
		t.Errorf("limiter case sent %d requests, want only the warm-up", rec.count())
	}
}

func TestTimeoutRetriedThenTyped(t *testing.T) {
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	})
	o := fastOptions(srv.URL, "")
	o.Timeout, o.MaxAttempts = 50*time.Millisecond, 3
	c := newClient(t, o)
	_, err := c.Detail(context.Background(), stream.EndpointProject, "1")
	var ne *NetworkError
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrNetwork) || errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(err.Error(), "fetch project 1: giving up after 3 attempts") || rec.count() != 3 {
		t.Errorf("err %q after %d requests", err, rec.count())
	}
}

func TestBudgetExhaustedBeforeSending(t *testing.T) {
	srv, rec := serve(t, listDataset(5000, 0))
	c := newClient(t, fastOptions(srv.URL, ""))
	b := NewBudget(2)
	cb := c.WithBudget(b)
	pages, err := collect(t, cb.List(context.Background(), stream.EndpointBrands, ListQuery{}))
	if !errors.Is(err, ErrBudgetExhausted) || len(pages) != 2 {
		t.Fatalf("err %v after %d pages", err, len(pages))
	}
	if rec.count() != 2 || b.Remaining() != 0 || b.Spent() != 2 {
		t.Errorf("requests %d remaining %d spent %d", rec.count(), b.Remaining(), b.Spent())
	}
	if !strings.Contains(err.Error(), "fetch brands page 3") {
		t.Errorf("err %v", err)
	}
	// The original client is not limited; a request not sent is refunded.
	if c.RequestBudget() != nil || cb.RequestBudget() != b {
		t.Error("WithBudget changed the original client")
	}
	b2 := NewBudget(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.WithBudget(b2).Detail(ctx, stream.EndpointProject, "1"); !errors.Is(err, context.Canceled) || b2.Remaining() != 1 {
		t.Errorf("err %v remaining %d", err, b2.Remaining())
	}
	var nilBudget *RequestBudget
	if nilBudget.Remaining() != -1 || nilBudget.Spent() != 0 {
		t.Error("nil budget")
	}
}

type countingLedger struct {
	n    atomic.Int32
	fail error
}

func (l *countingLedger) CountRequest(ctx context.Context) error {
	if l.fail != nil {
		return l.fail
	}
	l.n.Add(1)
	return nil
}

func TestCounterCountsRetriesAndHookSeesAttempts(t *testing.T) {
	var n atomic.Int32
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			writeJSON(w, 500, errBody("Internal server error", "x"))
			return
		}
		writeJSON(w, 200, `{"data":[{"id":1}],"total":1}`)
	})
	led := &countingLedger{}
	var infos []RequestInfo
	var mu sync.Mutex
	o := fastOptions(srv.URL, "")
	o.Counter = led
	o.Hook = func(ri RequestInfo) { mu.Lock(); infos = append(infos, ri); mu.Unlock() }
	c := newClient(t, o)
	b := NewBudget(10)
	if _, err := collect(t, c.WithBudget(b).List(context.Background(), stream.EndpointBudgets, ListQuery{})); err != nil {
		t.Fatal(err)
	}
	if led.n.Load() != 3 || rec.count() != 3 || b.Spent() != 3 {
		t.Errorf("counted %d, sent %d, budget spent %d; want 3", led.n.Load(), rec.count(), b.Spent())
	}
	if len(infos) != 3 {
		t.Fatalf("hook calls %d", len(infos))
	}
	for i, ri := range infos {
		if ri.Attempt != i+1 || ri.Endpoint != stream.EndpointBudgets || ri.Method != "GET" || ri.Page != 1 || ri.Duration <= 0 || ri.Bytes == 0 {
			t.Errorf("info %d: %+v", i, ri)
		}
		wantStatus, wantClass := 500, "server"
		if i == 2 {
			wantStatus, wantClass = 200, ""
		}
		if ri.Status != wantStatus || ri.ErrorClass != wantClass {
			t.Errorf("info %d: status %d class %q", i, ri.Status, ri.ErrorClass)
		}
	}
	// A counter that refuses stops the request unsent.
	refuse := &countingLedger{fail: errors.New("ledger: daily quota spent")}
	o.Counter = refuse
	before := rec.count()
	_, err := newClient(t, o).Detail(context.Background(), stream.EndpointProject, "1")
	if err == nil || !strings.Contains(err.Error(), "count request: ledger: daily quota spent") || rec.count() != before {
		t.Errorf("err %v, requests %d", err, rec.count()-before)
	}
}

// TestDetailErrors: a detail is delivered as received (its values are the
// transform's to judge), keyed by the id asked; an error object, an empty
// object and a missing id are typed errors.
func TestDetailErrors(t *testing.T) {
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/projects/1":
			writeJSON(w, 200, `{"id":"1","start_date":"not a date"}`)
		case "/v1/projects/2":
			writeJSON(w, 200, `{"data":{"name":"no id"}}`)
		case "/v1/projects/3":
			writeJSON(w, 200, `{"data":{}}`)
		case "/v1/projects/4":
			writeJSON(w, 200, errBody("Something odd", "x"))
		default:
			writeJSON(w, 404, errBody("Data not found", "The requested data does not exist."))
		}
	})
	c := newClient(t, fastOptions(srv.URL, ""))
	if p, err := c.Detail(context.Background(), stream.EndpointProject, "1"); err != nil || p.Key != "1" || string(p.Raw) != `{"id":"1","start_date":"not a date"}` {
		t.Errorf("project 1: %v %s", err, p.Raw)
	}
	if p, err := c.Detail(context.Background(), stream.EndpointProject, "2"); err != nil || p.Key != "2" || string(p.Raw) != `{"name":"no id"}` {
		t.Errorf("project 2: %v %s", err, p.Raw)
	}
	if _, err := c.Detail(context.Background(), stream.EndpointProject, "3"); !errors.Is(err, ErrUnexpectedShape) || !strings.Contains(err.Error(), "fetch project 3: ") {
		t.Errorf("project 3: %v", err)
	}
	if _, err := c.Detail(context.Background(), stream.EndpointProject, "4"); !errors.Is(err, ErrErrorResponse) {
		t.Errorf("project 4: %v", err)
	}
	if n := rec.count(); n != 4 {
		t.Errorf("%d requests, want 4 (none retried)", n)
	}
	if _, err := c.Detail(context.Background(), stream.EndpointBrand, "9"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "fetch brand 9: ") {
		t.Errorf("err %v", err)
	}
	if _, err := c.Detail(context.Background(), stream.EndpointBrand, ""); err == nil {
		t.Error("empty id accepted")
	}
}
