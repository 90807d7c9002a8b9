package extract

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testKey      = "main-secret-key-0123456789"
	testCommsKey = "comms-secret-key-9876543210"
)

// fastOptions are options for tests: fast retries, a pace that does not slow
// tests down.
func fastOptions(base, comms string) Options {
	return Options{
		BaseURL: base, APIKey: testKey, CommsURL: comms, CommsKey: testCommsKey,
		RateLimit: 2000, SpacingMargin: -1,
		RetryInitialInterval: time.Millisecond, RetryMaxInterval: 5 * time.Millisecond,
		Timeout: 5 * time.Second,
	}
}

func newClient(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

// recorded is one request a test server saw.
type recorded struct {
	At     time.Time
	Method string
	Path   string
	Query  map[string][]string
	Header http.Header
	Body   []byte
}

// recorder records requests and serves them with a handler.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
	h    http.HandlerFunc
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, recorded{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
	rc.mu.Unlock()
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	rc.h(w, r)
}

func (rc *recorder) requests() []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]recorded(nil), rc.reqs...)
}

func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.reqs)
}

func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, *recorder) {
	t.Helper()
	rc := &recorder{h: h}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return srv, rc
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch b := v.(type) {
	case string:
		io.WriteString(w, b)
	default:
		json.NewEncoder(w).Encode(v)
	}
}

func errBody(msg, detail string) string {
	return fmt.Sprintf(`{"error":{"message":%q,"details":[%q]}}`, msg, detail)
}

// commsReq is the decoded body of a communications request.
type commsReq struct {
	DomainID    int64   `json:"domain_id"`
	UserID      []int64 `json:"user_id"`
	BrandURL    string  `json:"-brand_url"`
	DateStart   string  `json:"date_start"`
	DateEnd     string  `json:"date_end"`
	WithMessage string  `json:"with_message"`
	Page        int     `json:"page"`
	PerPage     int     `json:"per_page"`
}

// commsDataset serves total records (ids 1..total) in the canonical shape,
// capping per_page at maxPer when maxPer > 0.
func commsDataset(total, maxPer int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var q commsReq
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			writeJSON(w, 400, errBody("Bad request", err.Error()))
			return
		}
		per := q.PerPage
		if maxPer > 0 && per > maxPer {
			per = maxPer
		}
		first := (q.Page-1)*per + 1
		n := max(0, min(per, total-first+1))
		w.Header().Set("Content-Type", "text/plain")
		w.Write(genCommsPage(n, first, q.Page, per, total))
	}
}

// listDataset serves n brands (ids 1..n) on GET lists in the canonical shape,
// capping per_page at maxPer when maxPer > 0.
func listDataset(n, maxPer int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if maxPer > 0 && per > maxPer {
			per = maxPer
		}
		first := (page-1)*per + 1
		var rows []string
		for id := first; id <= n && id < first+per; id++ {
			rows = append(rows, fmt.Sprintf(`{"brand_info":{"id":"%d","name":"Brand %d","status":"active"}}`, id, id))
		}
		last := (n + per - 1) / per
		writeJSON(w, 200, fmt.Sprintf(`{"data":[%s],"total":%d,"per_page":%d,"current_page":%d,"last_page":%d}`, strings.Join(rows, ","), n, per, page, last))
	}
}

// collect drains an iterator.
func collect(t *testing.T, seq func(func(*Page, error) bool)) ([]*Page, error) {
	t.Helper()
	var pages []*Page
	for p, err := range seq {
		if err != nil {
			return pages, err
		}
		pages = append(pages, p)
	}
	return pages, nil
}
