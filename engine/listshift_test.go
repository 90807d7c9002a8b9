package engine

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// TestListChangedWhilePagedDeletesNoLiveRow: a brand list served five a
// page changes between its first and second page — a brand is deleted and
// another added, so the total stays the same and every page looks whole —
// and the deletion shifts a live brand from the second page onto the first,
// already read. The listing saw as many distinct brands as the total, yet
// missed a live one: it must not soft-delete it. The next run, over the
// settled list, soft-deletes the brand deleted meanwhile.
func TestListChangedWhilePagedDeletesNoLiveRow(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Brands, o.ProjectsPerBrand, o.Emails = 11, 1, 50
	h := newHarness(t, o, nil)
	five := 5
	if err := h.sb.SetTwists(sandbox.Twists{MaxPerPage: &five}); err != nil {
		t.Fatal(err)
	}
	brands := h.truth()["brands"]
	id := func(i int) int64 { n, _ := strconv.ParseInt(brands[i].Key, 10, 64); return n }
	deleted, shifted, added := id(1), id(5), id(len(brands)-1)
	if err := h.sb.DeleteBrand(added); err != nil { // not there yet: added during the listing below
		t.Fatal(err)
	}
	h.mustSucceed(Request{}, "first run")

	var changed atomic.Bool
	h.interceptAPI(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/v1/brands" && r.URL.Query().Get("page") == "2" && changed.CompareAndSwap(false, true) {
			if err := h.sb.DeleteBrand(deleted); err != nil {
				t.Error(err)
			}
			if err := h.sb.RestoreBrand(added); err != nil {
				t.Error(err)
			}
		}
		return false
	})
	h.run(Request{})
	if !changed.Load() {
		t.Fatal("the brand list was never asked for its second page")
	}
	live := func(brand int64) bool {
		return h.count("SELECT count(*) FROM "+h.table("brands")+" WHERE brand_id = $1 AND _deleted_at IS NULL", strconv.FormatInt(brand, 10)) == 1
	}
	if !live(shifted) {
		t.Errorf("brand %d, live all along but shifted onto a page already read, was soft-deleted", shifted)
	}
	if !live(added) {
		t.Errorf("brand %d, added during the listing, is not live", added)
	}
	h.run(Request{})
	if live(deleted) || !live(shifted) || !live(added) {
		t.Errorf("after a run over the settled list: deleted brand live %v, shifted live %v, added live %v; want false, true, true",
			live(deleted), live(shifted), live(added))
	}
}

// TestListShrunkWhilePagedSaysSo: a brand deleted between the list's first
// and second page shifts a live brand onto the page already read; the
// listing sees fewer distinct brands than its first page announced, so it
// soft-deletes nothing, ends partial, and says that rows may have moved —
// not only that the paging may be wrong.
func TestListShrunkWhilePagedSaysSo(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Brands, o.ProjectsPerBrand, o.Emails = 11, 1, 50
	h := newHarness(t, o, nil)
	five := 5
	if err := h.sb.SetTwists(sandbox.Twists{MaxPerPage: &five}); err != nil {
		t.Fatal(err)
	}
	h.run(Request{})
	deleted, _ := strconv.ParseInt(h.truth()["brands"][1].Key, 10, 64)
	var changed atomic.Bool
	h.interceptAPI(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/v1/brands" && r.URL.Query().Get("page") == "2" && changed.CompareAndSwap(false, true) {
			if err := h.sb.DeleteBrand(deleted); err != nil {
				t.Error(err)
			}
		}
		return false
	})
	res := h.run(Request{})
	if res.Status != StatusPartial || res.Err == nil || !strings.Contains(res.Err.Error(), "rows may have moved between its pages") {
		t.Fatalf("run %s (%v); want partial, saying rows may have moved", res.Status, res.Err)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("brands") + " WHERE _deleted_at IS NOT NULL"); n != 0 {
		t.Errorf("%d brands soft-deleted by a listing that saw fewer rows than announced", n)
	}
}
