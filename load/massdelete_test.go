package load

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/internal/testkit/recordjson"
)

// TestMassDeleteWaitsForTheNextListing: a complete listing that would
// soft-delete more than the share of a table's live rows marks nothing,
// records the rows as candidates and says so; the next listing that agrees
// marks them. Within the share, rows are marked at once; rows that come
// back stop being candidates; a listing that agrees in part marks the rows
// both left out and holds the new ones.
func TestMassDeleteWaitsForTheNextListing(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ids := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("b%02d", i))
		}
		return out
	}
	list := func(seen []string) Counts {
		t.Helper()
		l, err := s.NewListing("budgets", nil)
		if err != nil {
			t.Fatal(err)
		}
		var bs []fixture.Budget
		for _, id := range seen {
			bs = append(bs, budget(id))
		}
		return commit(t, s, page{stream: "finance", runID: "run-x", batch: recordjson.Budgets(bs), ends: []*Listing{l}})
	}
	deleted := func() []string {
		s := queryText(t, pool, "SELECT coalesce(string_agg(budget_id, ',' ORDER BY budget_id), '') FROM "+qualified(schema, "budgets")+" WHERE _deleted_at IS NOT NULL")
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	candidates := func() int64 {
		return queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "delete_candidates")+" WHERE table_name = 'budgets' AND scope = '' AND first_run = 'run-x'")
	}
	list(ids(1, 10))

	// Two of ten (20 %): within the share, marked at once.
	if c := list(ids(1, 8)); len(c.HeldDeletions) != 0 || c.Tables["budgets"].Deleted != 2 || !slices.Equal(deleted(), ids(9, 10)) {
		t.Fatalf("2 of 10 gone: held %v, deleted %v", c.HeldDeletions, deleted())
	}
	// An empty listing of the 8 live: nothing marked, all 8 held.
	c := list(nil)
	if len(c.HeldDeletions) != 1 || len(deleted()) != 2 || candidates() != 8 {
		t.Fatalf("empty listing: held %+v, deleted %v, %d candidates", c.HeldDeletions, deleted(), candidates())
	}
	if h := c.HeldDeletions[0]; h.Listing != "budgets" || h.Held != 8 || h.Live != 8 || h.Confirmed != 0 || h.Share != DefaultMassDeleteShare {
		t.Errorf("held %+v", h)
	}
	// They come back: nothing marked, no candidate left.
	if c := list(ids(1, 8)); len(c.HeldDeletions) != 0 || len(deleted()) != 2 || candidates() != 0 {
		t.Fatalf("rows back: held %v, deleted %v, %d candidates", c.HeldDeletions, deleted(), candidates())
	}
	// Three of eight gone: held; the next listing leaves out b01..b03 and
	// b08: b01..b03 agree, and b08 alone is within the share: all marked.
	list(ids(4, 8))
	if len(deleted()) != 2 || candidates() != 3 {
		t.Fatalf("3 of 8 gone: deleted %v, %d candidates", deleted(), candidates())
	}
	c = list(ids(4, 7))
	if want := append(ids(1, 3), ids(8, 10)...); !slices.Equal(deleted(), want) || len(c.HeldDeletions) != 0 || candidates() != 0 {
		t.Fatalf("agreeing listing: deleted %v (want %v), held %v, %d candidates", deleted(), want, c.HeldDeletions, candidates())
	}
}

// TestMassDeleteShareIsOfTheTable: a scoped listing (one brand's
// contacts) is measured against the table's live rows, not its scope's.
func TestMassDeleteShareIsOfTheTable(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	share := 0.5
	s.massShare = share
	full := fullBatch()
	commit(t, s, page{stream: "brands", batch: full})
	// Contacts of another brand, so that brand 42's are a share of the table.
	contacts := full.Rows("brand_contacts")
	cols := contacts.Table.ColumnNames()
	var others [][]any
	for i := range 6 {
		row := slices.Clone(contacts.Rows[0])
		row[slices.Index(cols, "brand_id")] = "43"
		row[slices.Index(cols, "contact_id")] = fmt.Sprintf("c43-%d", i)
		others = append(others, row)
	}
	commit(t, s, page{stream: "brands", batch: rowsBatch(t, "brand_contacts", others...)})
	live := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "brand_contacts")+" WHERE _deleted_at IS NULL")
	brand := queryText(t, pool, "SELECT brand_id FROM "+qualified(schema, "brand_contacts")+" GROUP BY brand_id ORDER BY count(*) LIMIT 1")
	mine := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "brand_contacts")+" WHERE brand_id = $1", brand)
	if float64(mine) > share*float64(live) {
		t.Fatalf("fixture changed: brand %s holds %d of %d contacts", brand, mine, live)
	}
	l, err := s.NewListing("brand_contacts", map[string]any{"brand_id": brand})
	if err != nil {
		t.Fatal(err)
	}
	c := commit(t, s, page{stream: "brands", ends: []*Listing{l}})
	if len(c.HeldDeletions) != 0 || c.Tables["brand_contacts"].Deleted != mine {
		t.Fatalf("an empty contact list of brand %s (%d of %d contacts): held %v, counts %v", brand, mine, live, c.HeldDeletions, c.Tables)
	}
}
