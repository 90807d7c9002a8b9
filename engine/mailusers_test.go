package engine

import (
	"strconv"
	"testing"

	"github.com/agencysync/agencysync/transform"
)

// usersBatch is a batch of users rows: user_key, platform_user_id,
// first_name, last_name, full_name, email, phone, avatar_url, status.
func usersBatch(rows ...[]any) transform.Batch { return tableBatch("users", rows...) }

func TestKnownUsers(t *testing.T) {
	ana := []any{"id:7", int64(7), nil, nil, "Ana Pop", "ana@agency.test", nil, nil, nil}
	anaRenamed := []any{"id:7", int64(7), nil, nil, "Ana Popescu", "ana@agency.test", nil, nil, nil}
	anaEmptyPhone := []any{"id:7", int64(7), nil, nil, "Ana Pop", "ana@agency.test", "", nil, nil}
	anaNoPhone := append([]any(nil), ana...)
	ext := []any{"client@brand.test", nil, nil, nil, nil, "client@brand.test", nil, nil, nil}

	k := newKnownUsers()
	kept := func(rows ...[]any) int {
		b := k.filter(usersBatch(rows...))
		return b.Len("users")
	}
	if got := kept(ana, ext); got != 2 {
		t.Fatalf("nothing committed yet: %d of 2 rows kept", got)
	}
	committed := usersBatch(ana)
	k.committed(&committed)
	for _, c := range []struct {
		name string
		in   []any
		keep bool
	}{
		{"the same row again", ana, false},
		{"the same key, another name", anaRenamed, true},
		{"no phone vs an empty phone", anaEmptyPhone, true},
		{"identical copy", anaNoPhone, false},
		{"never committed", ext, true},
	} {
		if got := kept(c.in); (got == 1) != c.keep {
			t.Errorf("%s: kept %d rows, want kept=%v", c.name, got, c.keep)
		}
	}
	// Filtering leaves the page's own batch alone (a spooled page is reused).
	page := usersBatch(ana, ext)
	_ = k.filter(page)
	if page.Len("users") != 2 {
		t.Errorf("filter changed the page's batch: %d users left", page.Len("users"))
	}
	// A changed row, once committed, is the one remembered.
	renamed := usersBatch(anaRenamed)
	k.committed(&renamed)
	if kept(anaRenamed) != 0 || kept(ana) != 1 {
		t.Error("the renamed row did not replace the remembered one")
	}
	// The bound: past it, new keys are not remembered, known ones still update.
	k = newKnownUsers()
	for i := range maxKnownUsers + 10 {
		b := usersBatch([]any{"u" + strconv.Itoa(i), nil, nil, nil, nil, nil, nil, nil, nil})
		k.committed(&b)
	}
	if len(k.known) != maxKnownUsers {
		t.Errorf("%d users remembered, bound %d", len(k.known), maxKnownUsers)
	}
}
