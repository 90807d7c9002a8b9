package stream

import (
	"slices"
)

// Stream is one unit of a sync: the endpoints it reads, the listings its
// list task runs, and the warehouse tables its records fill. Everything the
// engine does with a stream follows from its declaration: a stream without
// Hooks is run by the engine's generic runner (its Lists completely, the
// details and child lists of its entities when due); a stream whose
// behaviour a declaration cannot say names the hooks that run it.
type Stream struct {
	// Name is the stream's name in sync_state, sync selections and logs, and
	// its list task's name; its tables' reject streams are Name or start
	// with Name + ".".
	Name string
	// Endpoints are the requests the stream sends.
	Endpoints []Endpoint
	// Lists are the complete listings the stream's list task runs, in
	// order, each checkpointed in its own sync_state partition.
	Lists []List
	// Main is the table `agencysync status` counts the stream's rows in (a
	// table of the stream with soft deletes).
	Main string
	// Hooks names the engine's hooks that run the stream ("" for the
	// generic runner); the engine refuses to start with a name it does not
	// know.
	Hooks string
	// tables are the tables the stream fills, parents before their children.
	tables []*Table
}

// Tables returns the tables the stream fills, parents before their children
// (the slice is the caller's; the tables are shared declarations).
func (s *Stream) Tables() []*Table { return slices.Clone(s.tables) }

// List is one complete listing of a stream's list task: a list endpoint
// asked with its parameters, checkpointed in its own partition.
type List struct {
	// Partition is the listing's sync_state partition, unique in the stream.
	Partition string
	// Endpoint is the list endpoint asked (KindList).
	Endpoint string
	// Params are the request's parameters; those a column of the list's
	// table takes (Column.Param) also scope its soft deletes to the rows
	// holding that value (profitability's level).
	Params map[string]string
	// Incremental: between complete listings (at least every
	// SYNC_FINANCE_FULL_EVERY) the list is asked with updated_since, the day
	// before its watermark (the greatest updated_at seen). It needs an
	// Incremental endpoint and an updated_at column in the list's table.
	Incremental bool
}

// Paging is how an endpoint returns its records.
type Paging string

// Paging kinds.
const (
	// PagingList is a list paged by page and per_page (GET).
	PagingList Paging = "list"
	// PagingDetail is one record per request, addressed by its id (GET).
	PagingDetail Paging = "detail"
	// PagingWindow is the communications endpoint: a POST whose body names a
	// date window, paged by page and per_page.
	PagingWindow Paging = "window"
)

// Kind is what an endpoint is to the engine.
type Kind string

// Endpoint kinds.
const (
	// KindList is a list the stream's list task pages whole (Stream.Lists).
	KindList Kind = "list"
	// KindDetail is one entity of the stream's entity list, asked by its id
	// when it is due (its list entry changed, or its staggered refresh).
	KindDetail Kind = "detail"
	// KindChild is a list asked per entity of a parent list ("{id}" in its
	// path is the entity's), with the entity's detail when it is due, and
	// listed whole each time.
	KindChild Kind = "child"
	// KindWindow is a list asked by date window, on the communications
	// interface, that the stream's hooks page.
	KindWindow Kind = "window"
)

// Endpoint is one request kind of a stream.
type Endpoint struct {
	// Name is the endpoint's name: AGENCY_PATHS, AGENCY_PAGING, errors and
	// the request log use it.
	Name string
	// Path is the canonical path ("{id}" stands for the escaped identifier);
	// AGENCY_PATHS overrides it.
	Path string
	// Paging is how the endpoint returns its records.
	Paging Paging
	// Pagination is how a list (PagingList, PagingWindow) pages: its
	// style, parameter names and largest page size; zero for a detail.
	Pagination Pagination
	// Incremental: the endpoint takes updated_since.
	Incremental bool
	// Parent, for a list asked per entity (KindChild), names the stream's
	// list endpoint whose entities it is asked for.
	Parent string
	// Inventory names the endpoint's records in the field inventory
	// (source_fields.stream, coverage warnings); "" is Name.
	Inventory string
}

// Kind returns what the endpoint is to the engine.
func (e Endpoint) Kind() Kind {
	switch {
	case e.Paging == PagingDetail:
		return KindDetail
	case e.Paging == PagingWindow:
		return KindWindow
	case e.Parent != "":
		return KindChild
	}
	return KindList
}

// InventoryName is the name of the endpoint's records in the field
// inventory: Inventory, else Name.
func (e Endpoint) InventoryName() string {
	if e.Inventory != "" {
		return e.Inventory
	}
	return e.Name
}

// Table is a warehouse table filled from a stream's records.
type Table struct {
	// Name is the table's name in the warehouse.
	Name string
	// Noun names one record of the table in reject reasons ("brand").
	Noun string
	// Endpoints lists the endpoints whose records fill the table; empty
	// means all of the stream's endpoints that carry its records.
	Endpoints []string
	// Wrapper is the name of the object the service may wrap a record in
	// (besides any "<thing>_info" object that comes first): its members are
	// read as the record's own.
	Wrapper string
	// Columns are the table's columns in write order: key columns first.
	Columns []Column
	// Reject is the Reject.Stream of the table's records; "" for tables whose
	// records are rejected with their parent's.
	Reject string
	// DetailReject, for a table a detail endpoint fills too, is the
	// Reject.Stream of its details: a detail rejected is not the list entry
	// rejected, and a list entry that lands does not resolve it.
	DetailReject string
	// SoftDelete: the table has _deleted_at, set when a complete listing no
	// longer holds a row.
	SoftDelete bool
	// Recurring: the table's rows usually exist already (a dimension seen on
	// page after page), so load skips its probe for new rows.
	Recurring bool
	// DetailFields, for the table of a list whose entities have a detail or
	// child lists, are the columns of a list entry whose change makes them
	// due: their values, with Noun and the key, are hashed into detail_state
	// (transform.ListHashes). Aggregates the service recomputes elsewhere
	// are left out: they would make every detail due at every change.
	DetailFields []string

	// Parent names the table whose records hold this child table's elements;
	// "" for a table of whole records.
	Parent string
	// Array is the path, in the parent record, of the child elements: an
	// array, or an object keyed by the elements' ids.
	Array string
	// Replace: a parent's children are complete in its record, so stored
	// children of a parent in the batch that the batch lacks are deleted.
	// A child table without Replace is a log: entries are only added.
	Replace bool
	// When is a path of the record that must hold an object for the table
	// to get a row (brand_financial_snapshots: "financial_summary").
	When string
	// Merge: rows of one batch with the same key fold into one, a later known
	// value replacing an earlier one and an unknown one keeping it (users).
	Merge bool
	// Elements, when set, lists the table's rows of a record instead of one
	// row per record or per element of Array: what a declaration cannot say.
	Elements ElementsFunc
	// Check, when set, validates a record's row after its columns are read.
	Check CheckFunc
	// ListedKeyWins: the key the service listed the record under
	// (Record.Key) wins over the record's own key field; otherwise it only
	// fills an empty one.
	ListedKeyWins bool
	// Sources, for a table whose rows its Elements function lists, are the
	// paths of the record where it finds them (arrays or objects keyed by
	// id): the field inventory maps their members' fields to the table's
	// columns (users.from[].email → users.email).
	Sources []string
}

// Key returns the table's key columns.
func (t *Table) Key() []Column {
	n := 0
	for n < len(t.Columns) && t.Columns[n].Key {
		n++
	}
	return t.Columns[:n]
}

// Column returns the column named name.
func (t *Table) Column(name string) (*Column, bool) {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i], true
		}
	}
	return nil, false
}

// ColumnNames returns the names of the table's columns in write order.
func (t *Table) ColumnNames() []string {
	out := make([]string, len(t.Columns))
	for i := range t.Columns {
		out[i] = t.Columns[i].Name
	}
	return out
}

// FillsFrom reports whether records of endpoint fill the table.
func (t *Table) FillsFrom(endpoint string) bool {
	return len(t.Endpoints) == 0 || slices.Contains(t.Endpoints, endpoint)
}

// ParentKey is the column of a child table that holds the parent's key (the
// child's first key column); "" for a table of whole records.
func (t *Table) ParentKey() string {
	if t.Parent == "" || len(t.Columns) == 0 {
		return ""
	}
	return t.Columns[0].Name
}

// Column is one column of a warehouse table and where its value comes from.
type Column struct {
	// Name is the column's name in the warehouse.
	Name string
	// Field is the source field's path, dotted ("financial_summary.invoiced"),
	// relative to the record (or, for a child table, to the element). Empty
	// for a column whose value is Derived.
	Field string
	// Alternates are other paths of the same field, tried in order when Field
	// holds no value ("brand_id" for a brand's "id"). A FieldMap override
	// drops them.
	Alternates []string
	// Type is how the value is read and stored.
	Type Type
	// Key: the column is part of the table's key (key columns come first).
	Key bool
	// Required: a record without a value is rejected ("amount is missing").
	Required bool
	// Trim: surrounding white space is removed from text (an all-space value
	// is NULL).
	Trim bool
	// KeepEmpty: an empty text is stored as "", not NULL.
	KeepEmpty bool
	// AnyJSON: a Text column takes any JSON value, objects, arrays and
	// booleans as their compact JSON text.
	AnyJSON bool
	// Object: a JSONB column holds a JSON object, so an empty array (a PHP
	// encoder's empty object) is stored as {}, as the canonical {} is.
	Object bool
	// NonNegative: a negative number rejects the record.
	NonNegative bool
	// OneOf lists the values a Text column may take; anything else rejects
	// the record.
	OneOf []string
	// Indexed: the value lands in an index, so an over-long one rejects the
	// record (key and Id columns always are).
	Indexed bool
	// Param names a request parameter whose value fills the column when the
	// record has none (profitability's level).
	Param string
	// ElementKey: in a child collection keyed by id, the element's key fills
	// the column when the element has no value.
	ElementKey bool
	// Derived says where a column that has no source field gets its value
	// (the Derived* constants); a FieldMap cannot override it.
	Derived string
	// Endpoints limits the column to records of these endpoints; for the
	// others it is NULL (and, Sticky, keeps the stored value).
	Endpoints []string

	// Sticky: a NULL in a batch keeps the stored value instead of erasing it.
	Sticky bool
	// Fallback names a column of the same row whose value fills this one when
	// the batch has NULL and nothing is stored.
	Fallback string

	// Sparse: the column is NULL for most records by nature (closed_at of
	// open projects, delivered_at, an e-mail's message when bodies are not
	// asked for): a coverage warning needs its field absent from every
	// record, which is a renamed field, not sparse data.
	Sparse bool
}

// The three column forms most declarations repeat, said once.

// field is a column read from the source field of its own name, with no
// other rule.
func field(name string, t Type) Column {
	return Column{Name: name, Field: name, Type: t}
}

// recordID is the key column name of a list's records: the record's id,
// or the field of that name ("brand_id") when id holds no value.
func recordID(name string) Column {
	return Column{Name: name, Field: "id", Alternates: []string{name}, Type: ID, Key: true}
}

// rawColumn is raw, the record as received.
func rawColumn() Column {
	return Column{Name: "raw", Derived: DerivedRecord, Type: JSONB}
}

// FillsFrom reports whether records of endpoint fill the column.
func (c *Column) FillsFrom(endpoint string) bool {
	return len(c.Endpoints) == 0 || slices.Contains(c.Endpoints, endpoint)
}

// Mapped reports whether the column's value comes from a source field (and
// so can be remapped by a FieldMap).
func (c *Column) Mapped() bool { return c.Derived == "" && c.Field != "" }

// Where a Derived column's value comes from.
const (
	// DerivedRecord is the record as received (JSON).
	DerivedRecord = "record"
	// DerivedParent is the parent record's key (a child table's first column).
	DerivedParent = "parent"
	// DerivedSnapshotDay is the calendar day of the sync, passed by the caller.
	DerivedSnapshotDay = "snapshot_day"
	// DerivedSequence numbers the elements of one parent that share the other
	// key values: 1, 2, … in the order received.
	DerivedSequence = "sequence"
	// DerivedRow is copied from the column of the same name of the parent
	// row (a snapshot repeats its brand's values).
	DerivedRow = "row"
	// DerivedHook is set by the table's Elements or Check function.
	DerivedHook = "hook"
	// DerivedParam is the request parameter named by the column's Param
	// (a contact's brand id, from the brand whose contacts were asked for).
	DerivedParam = "param"
)

// Type is how a column's value is read from JSON and stored.
type Type string

// Column types. Row values are Go values of one kind per type: string (Text,
// ID, Numeric as exact decimal text), int64 (BigInt), int32 (Integer),
// time.Time (Date, Month: UTC midnight; Timestamptz: UTC, microseconds),
// bool (Boolean) and json.RawMessage (JSONB); nil is NULL.
const (
	// Text is a string; a number is taken as its literal text.
	Text Type = "text"
	// ID is an identifier: a string (trimmed) or an integer, stored as text,
	// so "42" and 42 are the same id.
	ID Type = "id"
	// BigInt is an integer given as a number or a numeric string.
	BigInt Type = "bigint"
	// Integer is a 32-bit integer.
	Integer Type = "integer"
	// Numeric is an exact decimal, from a number or a numeric string, never
	// through float64.
	Numeric Type = "numeric"
	// Date is a calendar date YYYY-MM-DD ("0000-00-00" is absent), or a
	// timestamp at exactly midnight UTC (RFC 3339 or "YYYY-MM-DD HH:MM:SS",
	// time 00:00:00 with any zeros fraction, zone Z, a zero offset such as
	// +00:00, or none: a date cast serialised as a timestamp), which is its
	// date; any other time of day is refused, its date depending on the zone.
	Date Type = "date"
	// Month is a month YYYY-MM, stored as its first day.
	Month Type = "month"
	// Timestamptz is an instant (RFC 3339 and its common relatives).
	Timestamptz Type = "timestamptz"
	// Boolean is true/false, 1/0, their strings, or null (false).
	Boolean Type = "boolean"
	// JSONB is any JSON value, stored as received ([] as {} in a column
	// that holds an object: Column.Object).
	JSONB Type = "jsonb"
)

// SQL returns the warehouse (PostgreSQL) type of t.
func (t Type) SQL() string {
	switch t {
	case ID:
		return "text"
	case Month:
		return "date"
	}
	return string(t)
}

// All returns every stream in its default sync order. The declarations are
// shared: callers must not modify them (Apply returns modified copies).
func All() []*Stream { return slices.Clone(all) }

var all = []*Stream{brands, projects, finance, communications}

// Lookup returns the stream named name.
func Lookup(name string) (*Stream, bool) {
	for _, s := range all {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Names returns the streams' names in their default order.
func Names() []string {
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Name
	}
	return out
}

// Table returns the table named name.
func (s *Stream) Table(name string) (*Table, bool) {
	for _, t := range s.tables {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Endpoint returns the endpoint named name.
func (s *Stream) Endpoint(name string) (Endpoint, bool) {
	for _, e := range s.Endpoints {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

// LookupTable returns the table named name and the stream that fills it.
func LookupTable(name string) (*Table, *Stream, bool) {
	for _, s := range all {
		if t, ok := s.Table(name); ok {
			return t, s, true
		}
	}
	return nil, nil, false
}

// LookupColumn returns column of table.
func LookupColumn(table, column string) (*Column, bool) {
	t, _, ok := LookupTable(table)
	if !ok {
		return nil, false
	}
	return t.Column(column)
}

// Tables returns every table of every stream, parents before children, in
// the order load writes them.
func Tables() []*Table {
	var out []*Table
	for _, s := range all {
		out = append(out, s.tables...)
	}
	return out
}

// Element is one row source listed by a table's Elements function.
type Element struct {
	// View holds the element's fields: the table's column Fields are
	// relative to it.
	View *View
	// Key is the element's key in a collection keyed by id; "" in an array.
	Key string
	// Same, when not nil, is a comparable identity the function gives to
	// elements that yield equal rows in the tables without parent it fills
	// (the same person met again on another e-mail of the batch): such a
	// row is read once per batch.
	Same any
	// Set holds values the function decided itself, by column name; they
	// replace what the column's Field gives (DerivedHook columns need one).
	// Readers must not modify it: the function may share it between
	// elements.
	Set map[string]any
}

// ElementsFunc lists the rows of a table in one record (rec) of stream s:
// for each, yield is called with its element; an error rejects the record.
// Tables that share an ElementsFunc get the same elements, listed once per
// record. scratch lives as long as one batch: the function may keep there
// what it worked out for an element, to skip the work when it meets the
// same element again.
type ElementsFunc func(s *Stream, rec *View, scratch *Scratch, yield func(Element)) error

// Scratch is memory an ElementsFunc keeps for one batch.
type Scratch struct {
	m map[string]any
}

// Get returns what was kept under key.
func (sc *Scratch) Get(key string) (any, bool) {
	v, ok := sc.m[key]
	return v, ok
}

// Put keeps v under key.
func (sc *Scratch) Put(key string, v any) {
	if sc.m == nil {
		sc.m = make(map[string]any)
	}
	sc.m[key] = v
}

// Row is the row of a table being built from one record or element.
type Row interface {
	// Get returns the value of the column named name (nil for NULL).
	Get(name string) any
	// Set replaces the value of the column named name.
	Set(name string, v any)
}

// CheckFunc validates and completes the row read from rec (the record, or
// for a child table the element); an error rejects the record.
type CheckFunc func(rec *View, row Row) error
