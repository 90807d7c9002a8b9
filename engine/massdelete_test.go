package engine

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestEmptyListingWaitsForConfirmation: a brands list that answers 0 rows
// where 200 were live soft-deletes nothing in that run, which warns and
// ends partial; the next run's agreeing empty listing deletes them.
func TestEmptyListingWaitsForConfirmation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	var empty atomic.Bool
	h.serveAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch p := r.URL.Path; {
		case p == "/v1/brands":
			n := 200
			if empty.Load() {
				n = 0
			}
			var rows []string
			for id := 1; id <= n; id++ {
				rows = append(rows, fmt.Sprintf(`{"brand_info":%s}`, brandInfo(strconv.Itoa(id))))
			}
			fmt.Fprintf(w, `{"data":[%s],"total":%d,"per_page":1000,"current_page":1,"last_page":%d}`, strings.Join(rows, ","), n, min(n, 1))
		case strings.HasPrefix(p, "/v1/brands/") && strings.Count(p, "/") == 4: // every list asked per brand
			fmt.Fprint(w, `{"data":[],"total":0,"per_page":1000,"current_page":1,"last_page":0}`)
		case strings.HasPrefix(p, "/v1/brands/"):
			id := strings.TrimPrefix(p, "/v1/brands/")
			fmt.Fprintf(w, `{"brand_info":%s,"general_info":{},"metadata":{}}`, brandInfo(id))
		default:
			http.Error(w, `{"error":{"message":"Data not found"}}`, http.StatusNotFound)
		}
	}))
	live := func() int { return h.count("SELECT count(*) FROM " + h.table("brands") + " WHERE _deleted_at IS NULL") }
	if res := h.run(Request{Streams: []string{"brands"}}); res.Status != StatusSucceeded || live() != 200 {
		t.Fatalf("first run %s (%v), %d live brands", res.Status, res.Err, live())
	}
	empty.Store(true)
	res := h.run(Request{Streams: []string{"brands"}})
	if res.Status != StatusPartial || res.Err == nil || !strings.Contains(res.Err.Error(), "SYNC_MASS_DELETE_SHARE") || live() != 200 {
		t.Fatalf("an empty listing of 200 brands: run %s (%v), %d live; want partial naming SYNC_MASS_DELETE_SHARE, 200 live", res.Status, res.Err, live())
	}
	if n := h.count("SELECT count(*) FROM " + h.table("delete_candidates") + " WHERE table_name = 'brands'"); n != 200 {
		t.Fatalf("%d delete candidates recorded, want 200", n)
	}
	res = h.run(Request{Streams: []string{"brands"}})
	if res.Status != StatusSucceeded || live() != 0 {
		t.Fatalf("the agreeing empty listing: run %s (%v), %d live; want succeeded, 0 live", res.Status, res.Err, live())
	}
	if n := h.count("SELECT count(*) FROM " + h.table("delete_candidates")); n != 0 {
		t.Errorf("%d delete candidates left", n)
	}
}

// brandInfo is a whole brand record (every field the warehouse maps), so a
// run of such brands raises no coverage warning.
func brandInfo(id string) string {
	return fmt.Sprintf(`{"id":"%s","name":"Brand %s","status":"active","date_created":"2024-01-15","account_manager":"Ana Pop",`+
		`"projects_count":2,"financial_summary":{"total_budget":1000,"invoiced":500,"collected":250,"currency":"EUR"}}`, id, id)
}
