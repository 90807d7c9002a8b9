package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/agencysync/agencysync/stream"
)

// ListHash is one entity of a list page whose entities have details or
// child lists: its id and the hash of the list fields its detail owns,
// which decides whether the detail is due.
type ListHash struct {
	ID   string
	Hash string
}

// ListHashes returns the id and list hash of each row of table in b, in row
// order; nil for a table that declares no DetailFields. The hash covers the
// table's Noun, the entity's key and its DetailFields' values
// (length-prefixed), so stored hashes stay valid as long as those do.
func ListHashes(b *Batch, table string) []ListHash {
	rows := b.Rows(table)
	if rows == nil || len(rows.Table.DetailFields) == 0 {
		return nil
	}
	t := rows.Table
	key := columnIndex(t, t.Key()[0].Name)
	idx := make([]int, len(t.DetailFields))
	nullable := make([]bool, len(t.DetailFields))
	for i, f := range t.DetailFields {
		idx[i] = columnIndex(t, f)
		if c, ok := t.Column(f); ok {
			nullable[i] = c.Type == stream.Date || c.Type == stream.Timestamptz
		}
	}
	kind := t.Noun
	out := make([]ListHash, 0, len(rows.Rows))
	for _, row := range rows.Rows {
		id, _ := value(row, key).(string)
		if id == "" {
			continue
		}
		vals := []*string{&kind, &id}
		for i := range idx {
			vals = append(vals, hashValue(value(row, idx[i]), nullable[i]))
		}
		out = append(out, ListHash{ID: id, Hash: listHash(vals...)})
	}
	return out
}

// value is row[i], or nil for a column the table does not have.
func value(row []any, i int) any {
	if i < 0 || i >= len(row) {
		return nil
	}
	return row[i]
}

// hashValue renders a column's value as the hash has always taken it: text
// as itself ("" when NULL), an instant or date as RFC 3339 in UTC (nil when
// NULL: nullable).
func hashValue(v any, nullable bool) *string {
	switch x := v.(type) {
	case string:
		return &x
	case time.Time:
		s := x.UTC().Format(time.RFC3339Nano)
		return &s
	case nil:
		if nullable {
			return nil
		}
		s := ""
		return &s
	default:
		s := fmt.Sprint(x)
		return &s
	}
}

// listHash hashes the values of a list entry unambiguously: each value is
// length-prefixed, an absent one (nil) marked apart from an empty one.
func listHash(values ...*string) string {
	h := sha256.New()
	for _, v := range values {
		if v == nil {
			h.Write([]byte("n"))
			continue
		}
		fmt.Fprintf(h, "s%d:%s", len(*v), *v)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
