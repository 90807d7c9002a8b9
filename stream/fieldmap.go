package stream

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ErrUnknownColumn is wrapped by errors of Validate and Apply that name
// a table or column no stream declares.
var ErrUnknownColumn = errors.New("unknown table or column")

// ErrDerivedColumn is wrapped by errors of Validate and Apply that name
// a column whose value does not come from a source field (a key taken from
// the parent, the record as received, …): it cannot be remapped.
var ErrDerivedColumn = errors.New("column has no source field to remap")

// ErrFieldMapSyntax is wrapped by errors of Validate and Apply for a path
// that is not a dotted field path.
var ErrFieldMapSyntax = errors.New("field map syntax")

// FieldMap remaps warehouse columns to source field paths: key
// "table.column", value a dotted path relative to the record (or, for a
// child table, to its element), e.g. "projects.name" → "title".
type FieldMap map[string]string

// Validate checks that every key names a declared, mapped column and every
// path is a dotted path without empty segments.
func (m FieldMap) Validate() error {
	for _, key := range m.keys() {
		if _, err := resolve(all, key); err != nil {
			return err
		}
		if !validPath(m[key]) {
			return fmt.Errorf("%s: path %q is not a dotted field path: %w", key, m[key], ErrFieldMapSyntax)
		}
	}
	return nil
}

// String renders m as AGENCY_FIELD_MAP writes it, keys sorted.
func (m FieldMap) String() string {
	parts := make([]string, 0, len(m))
	for _, k := range m.keys() {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func (m FieldMap) keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func validPath(p string) bool {
	if p == "" {
		return false
	}
	for seg := range strings.SplitSeq(p, ".") {
		if seg == "" || strings.ContainsAny(seg, " \t\r\n") {
			return false
		}
	}
	return true
}

// resolve finds the column "table.column" in streams.
func resolve(streams []*Stream, key string) (*Column, error) {
	table, column, ok := strings.Cut(key, ".")
	if !ok {
		return nil, fmt.Errorf("%q is not table.column: %w", key, ErrUnknownColumn)
	}
	for _, s := range streams {
		t, ok := s.Table(table)
		if !ok {
			continue
		}
		c, ok := t.Column(column)
		if !ok {
			return nil, fmt.Errorf("table %s has no column %s (columns: %s): %w",
				table, column, strings.Join(mappedNames(t), ", "), ErrUnknownColumn)
		}
		if !c.Mapped() {
			return nil, fmt.Errorf("%s: %w", key, ErrDerivedColumn)
		}
		return c, nil
	}
	return nil, fmt.Errorf("no table %s: %w", table, ErrUnknownColumn)
}

func mappedNames(t *Table) []string {
	var out []string
	for i := range t.Columns {
		if t.Columns[i].Mapped() {
			out = append(out, t.Columns[i].Name)
		}
	}
	return out
}

// Apply returns copies of every stream (All's order) whose columns named in m
// read their overridden paths; the alternates of an overridden column are
// dropped. The declarations themselves are not changed.
func Apply(m FieldMap) ([]*Stream, error) {
	out := make([]*Stream, len(all))
	for i, s := range all {
		out[i] = s.clone()
	}
	for _, key := range m.keys() {
		c, err := resolve(out, key)
		if err != nil {
			return nil, fmt.Errorf("apply field map: %w", err)
		}
		if !validPath(m[key]) {
			return nil, fmt.Errorf("apply field map: %s: path %q is not a dotted field path: %w", key, m[key], ErrFieldMapSyntax)
		}
		c.Field, c.Alternates = m[key], nil
	}
	return out, nil
}

// clone copies s deeply enough that changing a column of the copy leaves s
// alone.
func (s *Stream) clone() *Stream {
	c := *s
	c.Endpoints = slices.Clone(s.Endpoints)
	c.tables = make([]*Table, len(s.tables))
	for i, t := range s.tables {
		tc := *t
		tc.Columns = slices.Clone(t.Columns)
		c.tables[i] = &tc
	}
	return &c
}
