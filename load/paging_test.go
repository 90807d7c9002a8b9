package load

import (
	"context"
	"maps"
	"testing"
)

func TestPagingFactsRoundTrip(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	ctx := context.Background()
	got, err := s.PagingFacts(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("a fresh warehouse knows %v (%v)", got, err)
	}
	want := map[string]PagingFact{"brands page page/per_page//": {Honoured: 1000}, "brands cursor /per_page//cursor": {NamesNext: true}}
	if err := s.SavePagingFacts(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePagingFacts(ctx, map[string]PagingFact{"brands page page/per_page//": {Honoured: 100}}); err != nil {
		t.Fatal(err)
	}
	want["brands page page/per_page//"] = PagingFact{Honoured: 100}
	if got, err = s.PagingFacts(ctx); err != nil || !maps.Equal(got, want) {
		t.Fatalf("read back %v (%v), want %v", got, err, want)
	}
}
