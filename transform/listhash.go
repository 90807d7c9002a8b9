package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// ListHash is one entity of a brands or projects list page: its id and the
// hash of the list fields its detail owns, which decides whether the detail
// is due.
type ListHash struct {
	ID   string
	Hash string
}

// listHashFields are, per list table, its key column and the columns whose
// change makes the detail due. For brands: name, status, date_created and
// account_manager; the aggregates the service recomputes from finance —
// projects_count and financial_summary — are stored from the list entry and
// do not count: they change with every finance edit and the detail adds
// nothing to them. For projects: brand_id, name, status, start_date,
// deadline, closed_at and updated_at; budget (the sum of the project's
// budgets, recomputed by finance) does not count.
var listHashFields = map[string]struct {
	kind, key string
	fields    []string
}{
	"brands":   {"brand", "brand_id", []string{"name", "status", "date_created", "account_manager"}},
	"projects": {"project", "project_id", []string{"brand_id", "name", "status", "start_date", "deadline", "closed_at", "updated_at"}},
}

// ListHashes returns the id and list hash of each row of table ("brands" or
// "projects") in b, in row order; nil for another table. The hash is the one
// the typed records gave (the same values, length-prefixed), so stored
// hashes stay valid.
func ListHashes(b *Batch, table string) []ListHash {
	spec, ok := listHashFields[table]
	rows := b.Rows(table)
	if !ok || rows == nil {
		return nil
	}
	key := columnIndex(rows.Table, spec.key)
	idx := make([]int, len(spec.fields))
	for i, f := range spec.fields {
		idx[i] = columnIndex(rows.Table, f)
	}
	out := make([]ListHash, 0, len(rows.Rows))
	for _, row := range rows.Rows {
		id, _ := value(row, key).(string)
		if id == "" {
			continue
		}
		vals := []*string{&spec.kind, &id}
		for i, f := range spec.fields {
			vals = append(vals, hashValue(value(row, idx[i]), f))
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

// hashValue renders a column's value as the typed records did: text as
// itself ("" when NULL: the typed string fields had no NULL), an instant or
// date as RFC 3339 in UTC (nil when NULL).
func hashValue(v any, field string) *string {
	switch x := v.(type) {
	case string:
		return &x
	case time.Time:
		s := x.UTC().Format(time.RFC3339Nano)
		return &s
	case nil:
		switch field {
		case "date_created", "start_date", "deadline", "closed_at", "updated_at":
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
