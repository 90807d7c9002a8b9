package engine

import (
	"hash/maphash"

	"github.com/agencysync/agencysync/transform"
)

// maxKnownUsers bounds the users a page loop remembers (about 40 bytes
// each): an agency's own users recur on every page, while external
// addresses may be countless; past the bound new ones are not remembered.
const maxKnownUsers = 100_000

// knownUsers remembers the users rows that earlier pages of one page loop
// committed, so that a later page does not write an identical row again:
// an agency's users recur on nearly every page of e-mails, and merging them
// is a staging COPY and an upsert per page for no change. Rows are kept as
// hashes (key → row); a row that differs in any field is written. Only
// rows the loop itself committed are remembered, and nothing else writes
// users while it runs (a run's tasks are sequential under the sync lock),
// so a skipped row is one the warehouse already holds. Merging a row
// again would change nothing: its sticky columns keep their values.
type knownUsers struct {
	seed  maphash.Seed
	known map[uint64]uint64
}

func newKnownUsers() *knownUsers {
	return &knownUsers{seed: maphash.MakeSeed(), known: make(map[uint64]uint64)}
}

// filter returns users without the rows already committed unchanged.
func (k *knownUsers) filter(users []transform.User) []transform.User {
	out := users[:0:0]
	for _, u := range users {
		key, row := k.hash(u)
		if h, ok := k.known[key]; ok && h == row {
			continue
		}
		out = append(out, u)
	}
	return out
}

// committed records the rows of a committed page.
func (k *knownUsers) committed(users []transform.User) {
	for _, u := range users {
		key, row := k.hash(u)
		if _, ok := k.known[key]; ok || len(k.known) < maxKnownUsers {
			k.known[key] = row
		}
	}
}

func (k *knownUsers) hash(u transform.User) (key, row uint64) {
	var h maphash.Hash
	h.SetSeed(k.seed)
	h.WriteString(u.UserKey)
	key = h.Sum64()
	h.WriteByte(0)
	if u.PlatformUserID != nil {
		h.WriteByte(1)
		maphash.WriteComparable(&h, *u.PlatformUserID)
	} else {
		h.WriteByte(0)
	}
	for _, p := range []*string{u.FirstName, u.LastName, u.FullName, u.Email, u.Phone, u.AvatarURL, u.Status} {
		if p == nil {
			h.WriteByte(0)
			continue
		}
		h.WriteByte(1)
		h.WriteString(*p)
		h.WriteByte(0)
	}
	return key, h.Sum64()
}
