package engine

import (
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
)

// TestPagingProofsAreKeptBetweenRuns: against a server that pages by
// cursor, the first run proves each single-page listing with one request
// (the page asked again one row short names a next page) and keeps what it
// learned (paging_state); the next run, by a new engine, proves them for
// free: every list costs its pages and nothing more. Both land the truth.
func TestPagingProofsAreKeptBetweenRuns(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Variants = []string{sandbox.VariantCursorPaging}
	h := newHarness(t, o, nil)
	streams, err := stream.ApplyPaging(stream.All(), stream.PagingOverrides{stream.AllLists: {Style: stream.StyleCursor, Max: 100}})
	if err != nil {
		t.Fatal(err)
	}
	h.eng, _ = h.wire(wiring{streams: streams})
	before := h.sb.Stats().ByEndpoint
	h.mustSucceed(Request{}, "first run")
	h.assertEqualsTruth()
	first := h.sb.Stats().ByEndpoint
	if first["brands"]-before["brands"] != 2 {
		t.Errorf("first run listed %d brands in %d requests, want 2 (the page, and its proof)", h.opts.Brands, first["brands"]-before["brands"])
	}
	if n := h.count("SELECT count(*) FROM " + h.table("paging_state") + " WHERE names_next"); n == 0 {
		t.Fatal("no paging fact kept")
	}
	h.eng, _ = h.wire(wiring{streams: streams})
	h.mustSucceed(Request{}, "second run")
	second := h.sb.Stats().ByEndpoint
	inv := h.inventory()
	for ep, want := range map[string]int{
		"brands": oracle.Pages(inv.Brands, 100), "projects": oracle.Pages(inv.Projects, 100),
		"profitability": oracle.Pages(inv.ProfitabilityProject, 100) + oracle.Pages(inv.ProfitabilityBrand, 100),
		"summary":       oracle.Pages(inv.Summary, 100),
	} {
		if got := second[ep] - first[ep]; got != int64(want) {
			t.Errorf("second run: %s in %d requests, want %d (its pages, no proof)", ep, got, want)
		}
	}
	h.assertEqualsTruth()
}
