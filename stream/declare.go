package stream

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrDeclaration is wrapped by the errors of Check and New: a declaration
// that lacks what the engine needs to run it.
var ErrDeclaration = errors.New("stream declaration")

// New returns the declaration s filling tables (parents before children),
// checked as the streams of All are at start-up: a declaration made outside
// this package, such as a test's own stream. Check it with the others it
// runs beside (Check) too: names must be unique across streams.
func New(s Stream, tables ...*Table) (*Stream, error) {
	out := s
	out.Endpoints = slices.Clone(s.Endpoints)
	out.Lists = slices.Clone(s.Lists)
	out.tables = slices.Clone(tables)
	if err := Check([]*Stream{&out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Check checks that streams can run together: each declaration complete
// (every endpoint run by a listing, a detail, a child list or the stream's
// hooks; each listing's table with soft deletes; the main table; the reject
// streams named after the stream; tables whose keys come first and whose
// parents come before them), and stream, endpoint, table and inventory
// names unique. A declaration that fails it would not run, or not run
// whole: the engine refuses it at start-up.
func Check(streams []*Stream) error {
	names := map[string]map[string]bool{"stream": {}, "endpoint": {}, "table": {}, "inventory": {}}
	unique := func(kind, name string) error {
		if names[kind][name] {
			return fmt.Errorf("%s %s declared twice: %w", kind, name, ErrDeclaration)
		}
		names[kind][name] = true
		return nil
	}
	for _, s := range streams {
		err := unique("stream", s.Name)
		for _, ep := range s.Endpoints {
			err = errors.Join(err, unique("endpoint", ep.Name), unique("inventory", ep.InventoryName()))
		}
		for _, t := range s.tables {
			err = errors.Join(err, unique("table", t.Name))
		}
		if err == nil {
			err = s.check()
		}
		if err != nil {
			return fmt.Errorf("stream %s: %w", s.Name, err)
		}
	}
	return nil
}

// check checks one declaration.
func (s *Stream) check() error {
	if s.Name == "" || strings.ContainsAny(s.Name, "./, ") {
		return fmt.Errorf("name %q: want a plain word: %w", s.Name, ErrDeclaration)
	}
	for _, ep := range s.Endpoints {
		if err := s.checkEndpoint(ep); err != nil {
			return fmt.Errorf("endpoint %s: %w", ep.Name, err)
		}
	}
	if err := s.checkTables(); err != nil {
		return err
	}
	for _, l := range s.Lists {
		if err := s.checkList(l); err != nil {
			return fmt.Errorf("list %s: %w", l.Partition, err)
		}
	}
	if t, ok := s.Table(s.Main); !ok || !t.SoftDelete {
		return fmt.Errorf("main table %q: want a table of the stream with soft deletes: %w", s.Main, ErrDeclaration)
	}
	return nil
}

// checkEndpoint checks that ep pages as declared and that something runs
// it: a listing of the stream, its entities' details and child lists, or
// the stream's hooks.
func (s *Stream) checkEndpoint(ep Endpoint) error {
	pg := ep.Pagination
	if ep.Path == "" {
		return fmt.Errorf("no path: %w", ErrDeclaration)
	}
	if ep.Paging != PagingDetail && (!slices.Contains(Styles(), pg.Style) || pg.Max < 1 || pg.Max > MaxPageSize) {
		return fmt.Errorf("no paging style or page size declared: %w", ErrDeclaration)
	}
	if s.Hooks != "" {
		return nil
	}
	switch ep.Kind() {
	case KindWindow:
		return fmt.Errorf("a date-windowed list needs the stream's hooks: %w", ErrDeclaration)
	case KindList:
		if !slices.ContainsFunc(s.Lists, func(l List) bool { return l.Endpoint == ep.Name }) {
			return fmt.Errorf("a list no listing of the stream asks (Stream.Lists): it would never run: %w", ErrDeclaration)
		}
	case KindDetail:
		if _, t, ok := s.Entities(); !ok || !t.FillsFrom(ep.Name) {
			return fmt.Errorf("a detail needs the stream's entity list (a list table with DetailFields) filled by it too: %w", ErrDeclaration)
		}
	case KindChild:
		return s.checkChild(ep)
	}
	return nil
}

// checkChild checks a list asked per entity: its parent is the stream's
// entity list, and its table takes the entity's id from the request.
func (s *Stream) checkChild(ep Endpoint) error {
	l, _, ok := s.Entities()
	if !ok || l.Endpoint != ep.Parent {
		return fmt.Errorf("parent %q is not the stream's entity list (a list table with DetailFields): %w", ep.Parent, ErrDeclaration)
	}
	t := s.recordTable(ep.Name)
	if t == nil || !t.SoftDelete {
		return fmt.Errorf("no table with soft deletes filled by it: %w", ErrDeclaration)
	}
	if c := t.ParamColumn(); c == nil || !strings.Contains(ep.Path, "{id}") {
		return fmt.Errorf("want {id} in the path and a column of %s taking the parent's id (Derived: DerivedParam): %w", t.Name, ErrDeclaration)
	}
	return nil
}

// checkList checks a listing: a list endpoint of the stream, a table with
// soft deletes, and what updated_since needs when it is incremental.
func (s *Stream) checkList(l List) error {
	ep, ok := s.Endpoint(l.Endpoint)
	switch {
	case l.Partition == "" || l.Partition == PartitionDetails:
		return fmt.Errorf("partition %q is reserved or empty: %w", l.Partition, ErrDeclaration)
	case !ok || ep.Kind() != KindList:
		return fmt.Errorf("%q is not a list endpoint of the stream: %w", l.Endpoint, ErrDeclaration)
	case s.Hooks != "":
		return fmt.Errorf("a stream run by hooks has no lists: %w", ErrDeclaration)
	}
	n := 0
	for _, o := range s.Lists {
		if o.Partition == l.Partition {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("partition declared twice: %w", ErrDeclaration)
	}
	t := s.ListTable(l)
	if t == nil || !t.SoftDelete {
		return fmt.Errorf("no table with soft deletes filled by %s: %w", l.Endpoint, ErrDeclaration)
	}
	if l.Incremental {
		if c, ok := t.Column("updated_at"); !ok || c.Type != Timestamptz || !ep.Incremental {
			return fmt.Errorf("incremental: want an endpoint that takes updated_since and %s.updated_at: %w", t.Name, ErrDeclaration)
		}
	}
	return nil
}

// checkTables checks the tables: keys first, parents before children,
// columns once each with one source, reject streams named after the stream,
// detail fields that are columns.
func (s *Stream) checkTables() error {
	for i, t := range s.tables {
		if t.Parent != "" && !slices.ContainsFunc(s.tables[:i], func(p *Table) bool { return p.Name == t.Parent }) {
			return fmt.Errorf("table %s: parent %s not declared before it: %w", t.Name, t.Parent, ErrDeclaration)
		}
		for _, rs := range []string{t.Reject, t.DetailReject} {
			if rs != "" && rs != s.Name && !strings.HasPrefix(rs, s.Name+".") {
				return fmt.Errorf("table %s: reject stream %q is not %s or %s.<name>: %w", t.Name, rs, s.Name, s.Name, ErrDeclaration)
			}
		}
		for _, f := range t.DetailFields {
			if _, ok := t.Column(f); !ok {
				return fmt.Errorf("table %s: detail field %s is no column: %w", t.Name, f, ErrDeclaration)
			}
		}
		if err := t.checkColumns(); err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
	}
	return nil
}

// checkColumns checks t's columns: a key first, each column once, with
// exactly one of Field and Derived and a type, Object only on jsonb.
func (t *Table) checkColumns() error {
	if len(t.Key()) == 0 {
		return fmt.Errorf("no key column first: %w", ErrDeclaration)
	}
	names := map[string]bool{}
	for i, c := range t.Columns {
		switch {
		case names[c.Name]:
			return fmt.Errorf("column %s declared twice: %w", c.Name, ErrDeclaration)
		case c.Key && i >= len(t.Key()):
			return fmt.Errorf("key column %s after data columns: %w", c.Name, ErrDeclaration)
		case (c.Field == "") == (c.Derived == ""):
			return fmt.Errorf("column %s: want exactly one of Field and Derived: %w", c.Name, ErrDeclaration)
		case c.Type.SQL() == "":
			return fmt.Errorf("column %s: no type: %w", c.Name, ErrDeclaration)
		case c.Object && c.Type != JSONB:
			return fmt.Errorf("column %s: Object on a %s column, want jsonb: %w", c.Name, c.Type, ErrDeclaration)
		}
		names[c.Name] = true
	}
	return nil
}

func init() {
	if err := Check(all); err != nil {
		panic("stream declarations: " + err.Error())
	}
}

// PartitionDetails is the sync_state partition of a stream's details and
// child lists.
const PartitionDetails = "details"

// recordTable is the table of whole records the records of endpoint fill
// (nil when none): the one whose wrapper and key are the records'.
func (s *Stream) recordTable(endpoint string) *Table {
	for _, t := range s.tables {
		if t.Parent == "" && t.Elements == nil && t.FillsFrom(endpoint) {
			return t
		}
	}
	return nil
}

// RecordTable returns the table of whole records that the records of
// endpoint fill (nil when none).
func (s *Stream) RecordTable(endpoint string) *Table { return s.recordTable(endpoint) }

// ListTable returns the table a listing fills and soft-deletes in.
func (s *Stream) ListTable(l List) *Table { return s.recordTable(l.Endpoint) }

// ListScope returns the rows of its table a listing covers: the values of
// its parameters that a column takes (nil for the whole table).
func (s *Stream) ListScope(l List) map[string]any {
	t := s.ListTable(l)
	if t == nil {
		return nil
	}
	var scope map[string]any
	for _, c := range t.Columns {
		if v, ok := l.Params[c.Param]; ok && c.Param != "" {
			if scope == nil {
				scope = map[string]any{}
			}
			scope[c.Name] = v
		}
	}
	return scope
}

// Entities returns the stream's entity list: the listing whose table
// declares DetailFields, whose entities have details or child lists.
func (s *Stream) Entities() (List, *Table, bool) {
	for _, l := range s.Lists {
		if t := s.ListTable(l); t != nil && len(t.DetailFields) > 0 {
			return l, t, true
		}
	}
	return List{}, nil, false
}

// EndpointsOf returns the stream's endpoints of kind k, in declaration order.
func (s *Stream) EndpointsOf(k Kind) []Endpoint {
	var out []Endpoint
	for _, ep := range s.Endpoints {
		if ep.Kind() == k {
			out = append(out, ep)
		}
	}
	return out
}

// Rejects returns the reject stream of the records of endpoint: its
// table's DetailReject for a detail that has one, else the table's Reject
// ("" when no table of whole records is filled by it).
func (s *Stream) Rejects(endpoint string) string {
	t := s.recordTable(endpoint)
	if t == nil {
		return ""
	}
	if ep, ok := s.Endpoint(endpoint); ok && ep.Kind() == KindDetail && t.DetailReject != "" {
		return t.DetailReject
	}
	return t.Reject
}

// ParamColumn returns the column that takes the id of the entity a child
// list was asked for (Derived: DerivedParam), or nil.
func (t *Table) ParamColumn() *Column {
	for i := range t.Columns {
		if c := &t.Columns[i]; c.Derived == DerivedParam && c.Param != "" {
			return c
		}
	}
	return nil
}
