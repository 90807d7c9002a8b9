package engine

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestListingThatLiesAboutPagingSoftDeletesNothing: a brand list that
// answers last_page 1 and total 3 with only 2 rows must not soft-delete the
// third brand; the run says so (a warning and a run note). A later honest
// listing of 2 brands does delete it.
func TestListingThatLiesAboutPagingSoftDeletesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	var mode atomic.Int32 // 0: 3 brands, 1: 2 rows of a claimed 3, 2: 2 brands
	h.serveAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		brand := func(id int) string {
			return fmt.Sprintf(`{"brand_info":{"id":"%d","name":"Brand %d","status":"active"}}`, id, id)
		}
		switch p := r.URL.Path; {
		case p == "/v1/brands":
			if r.URL.Query().Get("page") != "1" {
				http.Error(w, `{"error":{"message":"Data not found"}}`, http.StatusNotFound)
				return
			}
			writeListing(w, mode.Load(), brand(1), brand(2), brand(3))
		case strings.HasSuffix(p, "/contacts"):
			fmt.Fprint(w, `{"data":[],"total":0,"per_page":1000,"current_page":1,"last_page":1}`)
		case strings.HasPrefix(p, "/v1/brands/"):
			id := strings.TrimPrefix(p, "/v1/brands/")
			fmt.Fprintf(w, `{"brand_info":{"id":"%s","name":"Brand %s","status":"active"},"general_info":{},"metadata":{}}`, id, id)
		default:
			http.Error(w, `{"error":{"message":"Data not found"}}`, http.StatusNotFound)
		}
	}))
	live := func() int {
		return h.count("SELECT count(*) FROM " + h.table("brands") + " WHERE _deleted_at IS NULL")
	}

	if res := h.run(Request{Streams: []string{StreamBrands}}); res.Err != nil || live() != 3 {
		t.Fatalf("first run %s (%v): %d live brands, want 3", res.Status, res.Err, live())
	}
	mode.Store(1)
	res := h.run(Request{Streams: []string{StreamBrands}})
	if n := live(); n != 3 {
		t.Fatalf("a listing of 2 rows that announced 3 soft-deleted %d brand(s)", 3-n)
	}
	noted := false
	for _, n := range res.Notes {
		noted = noted || strings.Contains(n, "brands") && strings.Contains(n, "listed 2 distinct rows of the 3")
	}
	if !noted {
		t.Fatalf("run notes %q do not tell of the short listing", res.Notes)
	}
	if res.Status == StatusSucceeded && len(res.Notes) == 0 {
		t.Fatal("a short listing ended succeeded without a note")
	}
	mode.Store(2)
	if res := h.run(Request{Streams: []string{StreamBrands}}); res.Err != nil || live() != 2 {
		t.Fatalf("honest listing of 2: run %s (%v), %d live brands, want 2", res.Status, res.Err, live())
	}
}

// TestShortContactListSoftDeletesNothing: a brand's contact list that
// announces 3 contacts but delivers 2 must not soft-delete the third; an
// honest list of 2 does.
func TestShortContactListSoftDeletesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	var mode atomic.Int32 // 0: 3 contacts, 1: 2 rows of a claimed 3, 2: 2 contacts
	var brandStatus atomic.Int32
	h.serveAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		contact := func(id int) string {
			return fmt.Sprintf(`{"id":"%d","full_name":"Person %d","email":"p%d@example.com"}`, id, id, id)
		}
		// Each mode changes the brand's status, so its detail (and contacts) is due again.
		status := fmt.Sprintf("s%d", brandStatus.Load())
		switch p := r.URL.Path; {
		case p == "/v1/brands":
			fmt.Fprintf(w, `{"data":[{"brand_info":{"id":"1","name":"Brand 1","status":%q}}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`, status)
		case p == "/v1/brands/1/contacts":
			writeListing(w, mode.Load(), contact(1), contact(2), contact(3))
		case p == "/v1/brands/1":
			fmt.Fprintf(w, `{"brand_info":{"id":"1","name":"Brand 1","status":%q},"general_info":{},"metadata":{}}`, status)
		default:
			http.Error(w, `{"error":{"message":"Data not found"}}`, http.StatusNotFound)
		}
	}))
	live := func() int {
		return h.count("SELECT count(*) FROM " + h.table("brand_contacts") + " WHERE _deleted_at IS NULL")
	}
	if res := h.run(Request{Streams: []string{StreamBrands}}); res.Err != nil || live() != 3 {
		t.Fatalf("first run %s (%v): %d live contacts, want 3", res.Status, res.Err, live())
	}
	mode.Store(1)
	brandStatus.Store(1)
	res := h.run(Request{Streams: []string{StreamBrands}})
	if n := live(); n != 3 {
		t.Fatalf("a contact list of 2 rows that announced 3 soft-deleted %d contact(s) (run %s, %v)", 3-n, res.Status, res.Err)
	}
	if len(res.Notes) == 0 || !strings.Contains(strings.Join(res.Notes, ";"), "contacts of brand 1") {
		t.Fatalf("run notes %q do not tell of the short contact list", res.Notes)
	}
	mode.Store(2)
	brandStatus.Store(2)
	if res := h.run(Request{Streams: []string{StreamBrands}}); res.Err != nil || live() != 2 {
		t.Fatalf("honest list of 2: run %s (%v), %d live contacts, want 2", res.Status, res.Err, live())
	}
}

// writeListing answers a one-page list of three rows as mode says: 0 all
// three; 1 the first two under a total of three (a listing that lies about
// its paging); 2 the first two, honestly.
func writeListing(w io.Writer, mode int32, a, b, c string) {
	rows, total := []string{a, b, c}, 3
	switch mode {
	case 0:
	case 1:
		rows = rows[:2]
	default:
		rows, total = rows[:2], 2
	}
	fmt.Fprintf(w, `{"data":[%s],"total":%d,"per_page":1000,"current_page":1,"last_page":1}`, strings.Join(rows, ","), total)
}
