package engine

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestShortListingSoftDeletesNothing: a list that answers last_page 1 and
// total 3 with only 2 rows must not soft-delete the third row; the run says
// so (a warning, a run note) and ends partial naming the listing. Later
// honest listings of 2 rows delete it, once two agree (a third of the table
// is more than the mass-delete share). The lists: the brands, and a brand's
// contacts.
func TestShortListingSoftDeletesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		table string
		// serve answers the main interface, its list as writeListing's mode.
		serve func(w http.ResponseWriter, r *http.Request, mode int32)
		noted func(notes []string) bool // the run notes tell of the short listing
	}{
		{"brands", "brands", serveBrandListing, func(notes []string) bool {
			return slices.ContainsFunc(notes, func(n string) bool {
				return strings.Contains(n, "brands") && strings.Contains(n, "not proven complete (the service announced 3 rows and listed 2)")
			})
		}},
		{"contacts", "brand_contacts", serveContactListing, func(notes []string) bool {
			return strings.Contains(strings.Join(notes, ";"), "contacts of brand 1")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, smallSandbox(), nil)
			var mode atomic.Int32
			h.serveAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				c.serve(w, r, mode.Load())
			}))
			// Modes 2 and 3 answer the same two rows honestly: one of the
			// table's three is a third of it, more than the mass-delete
			// share, so the first honest listing holds it and the second,
			// agreeing, deletes it.
			for m, want := range []int{3, 3, 3, 2} {
				mode.Store(int32(m))
				res := h.run(Request{Streams: []string{"brands"}})
				n := h.count("SELECT count(*) FROM " + h.table(c.table) + " WHERE _deleted_at IS NULL")
				if m == 2 {
					if n != want || res.Status != StatusPartial || !strings.Contains(fmt.Sprint(res.Err), "SYNC_MASS_DELETE_SHARE") {
						t.Fatalf("the first honest listing of 2 of 3 rows: run %s (%v), %d live rows of %s; want partial, 3", res.Status, res.Err, n, c.table)
					}
					continue
				}
				if m == 1 {
					if n != want {
						t.Fatalf("a listing of 2 rows that announced 3 soft-deleted %d of %s (run %s, %v)", want-n, c.table, res.Status, res.Err)
					}
					if !c.noted(res.Notes) {
						t.Fatalf("run notes %q do not tell of the short listing of %s", res.Notes, c.table)
					}
					if res.Status != StatusPartial || res.Err == nil || !c.noted([]string{res.Err.Error()}) {
						t.Fatalf("a run with a listing not proven complete ended %s (%v), want partial naming it", res.Status, res.Err)
					}
					continue
				}
				if res.Err != nil || n != want {
					t.Fatalf("listing mode %d: run %s (%v), %d live rows of %s, want %d", m, res.Status, res.Err, n, c.table, want)
				}
			}
		})
	}
}

// serveBrandListing answers the brand list as writeListing's mode (its later
// pages not found), each brand's detail, and no contacts (nor any other
// list asked per brand).
func serveBrandListing(w http.ResponseWriter, r *http.Request, mode int32) {
	brand := func(id int) string {
		return fmt.Sprintf(`{"brand_info":{"id":"%d","name":"Brand %d","status":"active"}}`, id, id)
	}
	switch p := r.URL.Path; {
	case p == "/v1/brands":
		if r.URL.Query().Get("page") != "1" {
			http.Error(w, `{"error":{"message":"Data not found"}}`, http.StatusNotFound)
			return
		}
		writeListing(w, mode, brand(1), brand(2), brand(3))
	case strings.HasPrefix(p, "/v1/brands/") && strings.Count(p, "/") == 4: // every list asked per brand
		fmt.Fprint(w, `{"data":[],"total":0,"per_page":1000,"current_page":1,"last_page":1}`)
	case strings.HasPrefix(p, "/v1/brands/"):
		id := strings.TrimPrefix(p, "/v1/brands/")
		fmt.Fprintf(w, `{"brand_info":{"id":"%s","name":"Brand %s","status":"active"},"general_info":{},"metadata":{}}`, id, id)
	default:
		http.Error(w, `{"error":{"message":"Data not found"}}`, http.StatusNotFound)
	}
}

// serveContactListing answers brand 1 and its contact list as writeListing's
// mode. Each mode changes the brand's status, so its detail (and contacts)
// is due again.
func serveContactListing(w http.ResponseWriter, r *http.Request, mode int32) {
	contact := func(id int) string {
		return fmt.Sprintf(`{"id":"%d","full_name":"Person %d","email":"p%d@example.com"}`, id, id, id)
	}
	status := fmt.Sprintf("s%d", mode)
	switch p := r.URL.Path; {
	case p == "/v1/brands":
		fmt.Fprintf(w, `{"data":[{"brand_info":{"id":"1","name":"Brand 1","status":%q}}],"total":1,"per_page":1000,"current_page":1,"last_page":1}`, status)
	case p == "/v1/brands/1/contacts":
		writeListing(w, mode, contact(1), contact(2), contact(3))
	case p == "/v1/brands/1":
		fmt.Fprintf(w, `{"brand_info":{"id":"1","name":"Brand 1","status":%q},"general_info":{},"metadata":{}}`, status)
	case strings.HasPrefix(p, "/v1/brands/1/"): // any other list asked per brand
		fmt.Fprint(w, `{"data":[],"total":0,"per_page":1000,"current_page":1,"last_page":1}`)
	default:
		http.Error(w, `{"error":{"message":"Data not found"}}`, http.StatusNotFound)
	}
}

// writeListing answers a one-page list of three rows as mode says: 0 all
// three; 1 the first two under a total of three (a listing that lies about
// its paging); 2 and more the first two, honestly.
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
