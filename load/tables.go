package load

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// column is one column of a warehouse table as the write path sees it.
type column struct {
	name string
	typ  string // SQL type, for staging tables, casts and key arrays
	// sticky: a NULL in the batch keeps the stored value instead of erasing it.
	sticky bool
	// fallback names a column of the same row whose value fills this one when
	// the batch has NULL and nothing is stored (a sticky NOT NULL column).
	fallback string
}

// spec describes one warehouse table to the generic write path.
type spec struct {
	name string
	key  []column
	cols []column // data columns, after the key in every encoded row
	// softDelete: the table has _deleted_at, set by MarkDeleted and cleared
	// when a row comes back.
	softDelete bool
	// parent names the leading key column of a child table whose rows a batch
	// replaces per parent: stored children of the batch's parents that the
	// batch does not hold are deleted. Empty for other tables.
	parent string
	// recurring: the table's rows usually exist already (a dimension seen on
	// page after page), so the fast-path probe is skipped and rows always
	// go through the merge.
	recurring bool
	// stream is the Reject.Stream of the table's records (soft-delete tables).
	stream string
	// detailStream is the Reject.Stream of the table's details ("" for a
	// table no detail fills).
	detailStream string
	// types are the declared types of the columns, key columns first.
	types []stream.Type
	// paramKey, for the table of a list asked per entity, is the column
	// that takes the entity's id (stream.Table.ParamColumn).
	paramKey string
	// raws are the columns that hold the record as received
	// (stream.DerivedRecord), which a rebuild reads.
	raws []string
}

func (s *spec) columns() []column {
	out := make([]column, 0, len(s.key)+len(s.cols))
	return append(append(out, s.key...), s.cols...)
}

func (s *spec) columnNames() []string {
	cols := s.columns()
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

// specsOf derives load's view of the tables of streams, in write order
// (the streams' order, parents before children).
func specsOf(streams []*stream.Stream) []*spec {
	var out []*spec
	for _, s := range streams {
		for _, t := range s.Tables() {
			out = append(out, specOf(t))
		}
	}
	return out
}

func specOf(t *stream.Table) *spec {
	s := &spec{
		name:         t.Name,
		softDelete:   t.SoftDelete,
		recurring:    t.Recurring,
		stream:       t.Reject,
		detailStream: t.DetailReject,
		types:        make([]stream.Type, len(t.Columns)),
	}
	for i, c := range t.Columns {
		lc := column{name: c.Name, typ: c.Type.SQL(), sticky: c.Sticky, fallback: c.Fallback}
		if c.Derived == stream.DerivedRecord {
			s.raws = append(s.raws, c.Name)
		}
		if c.Key {
			s.key = append(s.key, lc)
		} else {
			s.cols = append(s.cols, lc)
		}
		s.types[i] = c.Type
	}
	if t.Replace {
		s.parent = t.ParentKey()
	}
	if c := t.ParamColumn(); c != nil {
		s.paramKey = c.Name
	}
	return s
}

// rows encodes the table's rows of a batch for pgx: key values, then data
// values, exact decimal text as pgtype.Numeric; nil stands for NULL. The
// batch's rows are not modified.
func (s *spec) rows(b *transform.Batch) ([][]any, error) {
	tr := b.Rows(s.name)
	if tr == nil || len(tr.Rows) == 0 {
		return nil, nil
	}
	out := make([][]any, len(tr.Rows))
	for i, r := range tr.Rows {
		if len(r) != len(s.types) {
			return nil, fmt.Errorf("row of %d values, want %d", len(r), len(s.types))
		}
		row := make([]any, len(r))
		for j, v := range r {
			switch x := v.(type) {
			case nil:
			case string:
				if s.types[j] == stream.Numeric {
					var n pgtype.Numeric
					if err := n.ScanScientific(x); err != nil {
						return nil, fmt.Errorf("decimal %q: %w", x, err)
					}
					row[j] = n
					continue
				}
				row[j] = x
			case json.RawMessage:
				if x != nil {
					row[j] = x
				}
			default:
				row[j] = v
			}
		}
		out[i] = row
	}
	return out, nil
}

// parents returns the parent keys whose children b replaces (child tables).
func (s *spec) parents(b *transform.Batch) []any {
	if tr := b.Rows(s.name); tr != nil {
		return tr.Parents
	}
	return nil
}

// rejectKey parses a Reject.Key of the table's stream into key values (soft
// delete tables), so that a rejected record is not taken for a deleted one.
// The key's values are joined by "/": the first ends at the first "/", the
// last starts after the last "/", and a middle one (profitability's entity)
// holds what is between. Months are YYYY-MM. A key that is empty, a payload
// hash, or does not parse as the key's types gives false.
func (s *spec) rejectKey(key string) ([]any, bool) {
	if key == "" || isHashKey(key) {
		return nil, false
	}
	n := len(s.key)
	parts := make([]string, n)
	rest := key
	for i := 0; i < n; i++ {
		switch {
		case i == n-1:
			parts[i] = rest
		case i == n-2:
			j := strings.LastIndexByte(rest, '/')
			if j < 0 {
				return nil, false
			}
			if i == 0 && n == 2 {
				j = strings.IndexByte(rest, '/')
			}
			parts[i], rest = rest[:j], rest[j+1:]
		default:
			var ok bool
			parts[i], rest, ok = strings.Cut(rest, "/")
			if !ok {
				return nil, false
			}
		}
	}
	out := make([]any, n)
	for i, p := range parts {
		if p == "" {
			return nil, false
		}
		switch s.types[i] {
		case stream.Text, stream.ID:
			out[i] = p
		case stream.Month:
			t, err := time.Parse("2006-01", p)
			if err != nil {
				return nil, false
			}
			out[i] = t
		case stream.Date:
			t, err := time.Parse("2006-01-02", p)
			if err != nil {
				return nil, false
			}
			out[i] = t
		case stream.BigInt:
			v, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				return nil, false
			}
			out[i] = v
		default:
			return nil, false
		}
	}
	return out, true
}

func isHashKey(key string) bool { return strings.HasPrefix(key, transform.HashKeyPrefix) }

// typedArray turns values of one column (none NULL) into a slice pgx encodes
// as an array of typ.
func typedArray(typ string, vals []any) (any, error) {
	switch typ {
	case "text":
		return convertAll[string](vals)
	case "bigint":
		return convertAll[int64](vals)
	case "integer":
		return convertAll[int32](vals)
	case "date", "timestamptz":
		return convertAll[time.Time](vals)
	default:
		return nil, fmt.Errorf("no key arrays of type %s", typ)
	}
}

func convertAll[T any](vals []any) ([]T, error) {
	out := make([]T, len(vals))
	for i, v := range vals {
		t, ok := v.(T)
		if !ok {
			return nil, fmt.Errorf("key value %v is a %T, not a %T", v, v, t)
		}
		out[i] = t
	}
	return out, nil
}
