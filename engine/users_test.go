package engine

import (
	"strconv"
	"testing"

	"github.com/agencysync/agencysync/transform"
)

func TestKnownUsers(t *testing.T) {
	str := func(s string) *string { return &s }
	id := func(n int64) *int64 { return &n }
	ana := transform.User{UserKey: "id:7", PlatformUserID: id(7), FullName: str("Ana Pop"), Email: str("ana@agency.test")}
	anaRenamed := ana
	anaRenamed.FullName = str("Ana Popescu")
	anaNoPhone, anaEmptyPhone := ana, ana
	anaEmptyPhone.Phone = str("")
	ext := transform.User{UserKey: "client@brand.test", Email: str("client@brand.test")}

	k := newKnownUsers()
	if got := k.filter([]transform.User{ana, ext}); len(got) != 2 {
		t.Fatalf("nothing committed yet: %d of 2 rows kept", len(got))
	}
	k.committed([]transform.User{ana})
	for _, c := range []struct {
		name string
		in   transform.User
		keep bool
	}{
		{"the same row again", ana, false},
		{"the same key, another name", anaRenamed, true},
		{"no phone vs an empty phone", anaEmptyPhone, true},
		{"identical copy", anaNoPhone, false},
		{"never committed", ext, true},
	} {
		if got := k.filter([]transform.User{c.in}); (len(got) == 1) != c.keep {
			t.Errorf("%s: kept %d rows, want kept=%v", c.name, len(got), c.keep)
		}
	}
	// A changed row, once committed, is the one remembered.
	k.committed([]transform.User{anaRenamed})
	if len(k.filter([]transform.User{anaRenamed})) != 0 || len(k.filter([]transform.User{ana})) != 1 {
		t.Error("the renamed row did not replace the remembered one")
	}
	// The bound: past it, new keys are not remembered, known ones still update.
	k = newKnownUsers()
	for i := range maxKnownUsers + 10 {
		k.committed([]transform.User{{UserKey: "u" + strconv.Itoa(i)}})
	}
	if len(k.known) != maxKnownUsers {
		t.Errorf("%d users remembered, bound %d", len(k.known), maxKnownUsers)
	}
}
