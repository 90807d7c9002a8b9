package load

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/internal/testkit/recordjson"
)

// TestShortListingDeletesNothing: a listing that saw fewer distinct rows
// than the service announced (Expect) soft-deletes nothing, even when asked
// to end; MarkDeleted refuses with ErrShortListing.
func TestShortListingDeletesNothing(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	budget := func(id string) fixture.Budget {
		return fixture.Budget{ID: extract.ID(id), Amount: "1", Currency: "RON", Raw: json.RawMessage(`{"id":"` + id + `"}`)}
	}
	l, _ := s.NewListing("budgets", nil)
	commit(t, s, Page{Stream: "finance", Batch: recordjson.Budgets([]fixture.Budget{budget("b1"), budget("b2"), budget("b3")}), Listing: l, EndsListing: true})

	l, _ = s.NewListing("budgets", nil)
	l.Expect(3)
	l.Expect(2) // the largest total counts
	c := commit(t, s, Page{Stream: "finance", Batch: recordjson.Budgets([]fixture.Budget{budget("b1"), budget("b2"), budget("b1")}), Listing: l, EndsListing: true})
	if n := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "budgets")+" WHERE _deleted_at IS NOT NULL"); n != 0 || len(c.SkippedDeletions) != 1 {
		t.Fatalf("short listing: %d deleted, skipped %v", n, c.SkippedDeletions)
	}
	if !l.Short() || l.Seen() != 2 || l.Expected() != 3 {
		t.Fatalf("Short %v Seen %d Expected %d", l.Short(), l.Seen(), l.Expected())
	}
	if _, err := s.MarkDeleted(context.Background(), nil, l); !errors.Is(err, ErrShortListing) || !errors.Is(err, ErrIncompleteListing) {
		t.Fatalf("MarkDeleted = %v, want ErrShortListing", err)
	}
}
