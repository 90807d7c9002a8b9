package engine

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/agencysync/agencysync/transform"
)

// maxKnownUsers bounds the users a page loop remembers (about 40 bytes
// each): an agency's own users recur on every page, while external
// addresses may be countless; past the bound new ones are not remembered.
const maxKnownUsers = 100_000

// usersTable is the table knownUsers filters.
const usersTable = "users"

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

// filter returns b without the users rows already committed unchanged (b
// itself is not modified).
func (k *knownUsers) filter(b transform.Batch) transform.Batch {
	tr := b.Rows(usersTable)
	if tr == nil {
		return b
	}
	out := make([][]any, 0, len(tr.Rows))
	for _, u := range tr.Rows {
		key, row := k.hash(u)
		if h, ok := k.known[key]; ok && h == row {
			continue
		}
		out = append(out, u)
	}
	return b.With(usersTable, out)
}

// committed records the users rows of a committed page.
func (k *knownUsers) committed(b *transform.Batch) {
	tr := b.Rows(usersTable)
	if tr == nil {
		return
	}
	for _, u := range tr.Rows {
		key, row := k.hash(u)
		if _, ok := k.known[key]; ok || len(k.known) < maxKnownUsers {
			k.known[key] = row
		}
	}
}

// hash hashes a users row: its key (the first value) and all its values.
func (k *knownUsers) hash(u []any) (key, row uint64) {
	var h maphash.Hash
	h.SetSeed(k.seed)
	s, _ := u[0].(string)
	h.WriteString(s)
	key = h.Sum64()
	h.WriteByte(0)
	for _, v := range u[1:] {
		switch x := v.(type) {
		case nil:
			h.WriteByte(0)
		case string:
			h.WriteByte(1)
			h.WriteString(x)
			h.WriteByte(0)
		case int64:
			h.WriteByte(2)
			maphash.WriteComparable(&h, x)
		case time.Time:
			h.WriteByte(3)
			h.WriteString(x.UTC().Format(time.RFC3339Nano))
		case json.RawMessage:
			h.WriteByte(4)
			h.Write(x)
		default:
			h.WriteByte(5)
			fmt.Fprint(&h, v)
		}
	}
	return key, h.Sum64()
}
