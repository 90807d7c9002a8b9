package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/stream"
)

// Input says where a slice of records came from.
type Input struct {
	// Stream is the stream's declaration (stream.All, or stream.Apply's
	// copies under a field map).
	Stream *stream.Stream
	// Endpoint is the endpoint that returned the records (its declared name);
	// it selects the tables and columns they fill.
	Endpoint string
	// Params are the request's parameters that columns may take (a contact's
	// brand_id, a profitability row's level).
	Params map[string]string
	// Snapshot is the sync's day, for snapshot tables: its calendar day as
	// given (year, month and day in its own location).
	Snapshot time.Time
	// Read, when set, is called with each record's view, in order, rejected
	// records included: the view the transform reads the record's columns
	// through (wrappers unwrapped as the record's table says), so that a
	// caller that observes the records' fields (the run's field inventory)
	// does not parse them again. The views stay valid after Records returns.
	Read func(*stream.View)
}

// TableRows are the rows of one table in a batch.
type TableRows struct {
	// Table is the table's declaration.
	Table *stream.Table
	// Rows are the rows, values in the declared column order (nil is NULL).
	Rows [][]any
	// Parents lists, for a child table whose children are complete in their
	// parent's record (Table.Replace), the parent keys whose stored children
	// the batch replaces — parents without children included.
	Parents []any
}

// Coverage counts, per table, the rows a batch holds and, per mapped column
// ("table.column"), how many of them have it NULL: the basis of coverage
// warnings (a mapped column that stays empty). Duplicates counts, per
// table, the records dropped because a later record of the same call had
// the same key (the last one wins: an id present twice in one page).
type Coverage struct {
	Rows       map[string]int
	Nulls      map[string]int
	Duplicates map[string]int `json:",omitempty"`
}

func (c *Coverage) add(o Coverage) {
	for k, v := range o.Duplicates {
		if c.Duplicates == nil {
			c.Duplicates = map[string]int{}
		}
		c.Duplicates[k] += v
	}
	if len(o.Rows) == 0 {
		return
	}
	if c.Rows == nil {
		c.Rows, c.Nulls = map[string]int{}, map[string]int{}
	}
	for k, v := range o.Rows {
		c.Rows[k] += v
	}
	for k, v := range o.Nulls {
		c.Nulls[k] += v
	}
}

// Batch holds the rows of one page for any tables, plus the page's
// rejected records. Package load writes a Batch in one transaction.
type Batch struct {
	// Tables holds the rows by table name.
	Tables map[string]*TableRows
	// Rejects are the records that could not be loaded.
	Rejects []Reject
	// Coverage counts the rows and the NULLs of mapped columns.
	Coverage Coverage
}

// Rows returns the rows of the table named name (nil when none).
func (b *Batch) Rows(name string) *TableRows {
	if b == nil || b.Tables == nil {
		return nil
	}
	return b.Tables[name]
}

// Len returns the number of rows of the table named name.
func (b *Batch) Len(name string) int {
	if r := b.Rows(name); r != nil {
		return len(r.Rows)
	}
	return 0
}

// Column returns the values of column col of table in row order.
func (b *Batch) Column(table, col string) []any {
	r := b.Rows(table)
	if r == nil {
		return nil
	}
	i := columnIndex(r.Table, col)
	if i < 0 {
		return nil
	}
	out := make([]any, len(r.Rows))
	for j, row := range r.Rows {
		out[j] = row[i]
	}
	return out
}

// Append adds the rows, parents, rejects and coverage of o to b.
func (b *Batch) Append(o Batch) {
	for _, r := range o.Tables {
		t := b.table(r.Table)
		t.Rows = append(t.Rows, r.Rows...)
		t.Parents = append(t.Parents, r.Parents...)
	}
	b.Rejects = append(b.Rejects, o.Rejects...)
	b.Coverage.add(o.Coverage)
}

func (b *Batch) table(t *stream.Table) *TableRows {
	if b.Tables == nil {
		b.Tables = make(map[string]*TableRows)
	}
	r := b.Tables[t.Name]
	if r == nil {
		r = &TableRows{Table: t}
		b.Tables[t.Name] = r
	}
	return r
}

func columnIndex(t *stream.Table, name string) int {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return i
		}
	}
	return -1
}

// Records turns records of one endpoint of a stream into rows of every table
// they fill: the record's table (one row per record), its child tables (one
// row per element of the declared array, or per element the table's hook
// lists) and the tables the stream's hooks fill from it (users). Each value
// is read from the raw JSON at the column's path and coerced to its type
// (see stream.Column.Coerce).
//
// A record that violates the model — a missing key or required value, a
// value of the wrong type, a child without its key, a hook's objection —
// becomes a Reject carrying the record as received and the reason; the other
// records proceed. Records with the same key collapse (the last one wins,
// with its children; Coverage.Duplicates counts the others); rows of a Merge
// table fold across the batch.
func Records(in Input, recs []stream.Record) Batch {
	p := newPlan(in)
	var out Batch
	if p.root == nil {
		for i := range recs {
			if in.Read != nil {
				in.Read(stream.NewView(recs[i].Raw, nil))
			}
		}
		return out
	}
	bundles := make([]*bundle, 0, len(recs))
	p.slab = make([]bundle, len(recs)) // one allocation for the page's bundles
	index := make(map[any]int, len(recs))
	nkey := len(p.root.Key())
	dups := 0
	for i := range recs {
		bd, err := p.record(&recs[i])
		if err != nil {
			out.Rejects = append(out.Rejects, NewReject(p.reject, p.rejectKey(&recs[i], bd), recs[i].Raw, err))
			continue
		}
		k := keyOf(bd.root[:nkey])
		if j, ok := index[k]; ok {
			bundles[j] = bd
			dups++
			continue
		}
		index[k] = len(bundles)
		bundles = append(bundles, bd)
	}
	p.flatten(&out, bundles)
	if dups > 0 {
		out.Coverage.Duplicates = map[string]int{p.root.Name: dups}
	}
	return out
}

// plan is the tables records of one endpoint fill, resolved once per call.
type plan struct {
	scratch  stream.Scratch    // the hooks' memory for the batch
	rows     map[sameRow][]any // rows of hooked tables by element identity
	in       Input
	root     *stream.Table
	reject   string // the Reject.Stream of the root's records from this endpoint
	rootKey  int    // index of the root's single key column, or -1
	children []*stream.Table
	hooked   []*stream.Table // tables without parent filled by Elements
	fills    []tableFills    // per table: which columns the endpoint fills

	vals []any // row values not yet handed out (see newRow)

	// Reused from record to record (nothing keeps them past it).
	elemBuf []stream.Element // elements listed by the hooks
	slab    []bundle         // bundles not yet used
	yield   func(stream.Element)
	check   row
	parent  parentRow
}

func newPlan(in Input) *plan {
	p := &plan{in: in, rootKey: -1}
	for _, t := range in.Stream.Tables() {
		if !t.FillsFrom(in.Endpoint) {
			continue
		}
		switch {
		case t.Parent == "" && t.Elements == nil && p.root == nil:
			p.root = t
		case t.Parent == "" && t.Elements != nil:
			p.hooked = append(p.hooked, t)
		case p.root != nil && t.Parent == p.root.Name:
			p.children = append(p.children, t)
		}
		f := tableFills{t: t, cols: make([]bool, len(t.Columns)), seqCol: -1}
		for i := range t.Columns {
			f.cols[i] = t.Columns[i].FillsFrom(in.Endpoint)
			if t.Columns[i].Derived == stream.DerivedSequence {
				f.seqCol = i
			}
		}
		p.fills = append(p.fills, f)
	}
	if p.root != nil && len(p.root.Key()) == 1 {
		p.rootKey = 0
	}
	if p.root != nil {
		p.reject = p.root.Reject
		if ep, ok := in.Stream.Endpoint(in.Endpoint); ok && ep.Paging == stream.PagingDetail && p.root.DetailReject != "" {
			p.reject = p.root.DetailReject
		}
	}
	p.yield = func(e stream.Element) { p.elemBuf = append(p.elemBuf, e) }
	return p
}

// tableFills says which columns of t the plan's endpoint fills.
type tableFills struct {
	t      *stream.Table
	cols   []bool
	seqCol int // the DerivedSequence column, or -1
}

// fillsOf returns which columns of t the endpoint fills (none for a table
// the plan does not fill).
func (p *plan) fillsOf(t *stream.Table) []bool {
	for i := range p.fills {
		if p.fills[i].t == t {
			return p.fills[i].cols
		}
	}
	return make([]bool, len(t.Columns))
}

// seqColOf returns the index of t's DerivedSequence column, -1 if none.
func (p *plan) seqColOf(t *stream.Table) int {
	for i := range p.fills {
		if p.fills[i].t == t {
			return p.fills[i].seqCol
		}
	}
	for i := range t.Columns {
		if t.Columns[i].Derived == stream.DerivedSequence {
			return i
		}
	}
	return -1
}

// bundle is one valid record's rows: its own and those of its children and
// hooked tables.
type bundle struct {
	root   []any
	tables []bundleRows // in the order first added
	view   *stream.View
	elems  []elementList // elements listed by the record's hooks (valid while the record is read)
	buf    [3]bundleRows // tables' first storage
	ebuf   [1]elementList
}

type bundleRows struct {
	t    *stream.Table
	rows [][]any
}

// rowsOf returns the bundle's rows of t, added empty when missing.
func (b *bundle) rowsOf(t *stream.Table) *bundleRows {
	for i := range b.tables {
		if b.tables[i].t == t {
			return &b.tables[i]
		}
	}
	b.tables = append(b.tables, bundleRows{t: t})
	return &b.tables[len(b.tables)-1]
}

func (b *bundle) add(t *stream.Table, row []any) {
	r := b.rowsOf(t)
	r.rows = append(r.rows, row)
}

// row is a row under construction; it implements stream.Row.
type row struct {
	t    *stream.Table
	vals []any
}

func (r *row) Get(name string) any {
	if i := columnIndex(r.t, name); i >= 0 {
		return r.vals[i]
	}
	return nil
}

func (r *row) Set(name string, v any) {
	if i := columnIndex(r.t, name); i >= 0 {
		r.vals[i] = v
	}
}

// missingError is the reason of a record without a key or required value.
type missingError struct {
	noun, field string
}

func (e *missingError) Error() string { return e.noun + " without " + e.field }

func errMissing(t *stream.Table, c *stream.Column) error {
	return &missingError{t.Noun, fieldName(c)}
}

func fieldName(c *stream.Column) string {
	if c.Field != "" {
		return c.Field
	}
	if c.Param != "" {
		return strings.ReplaceAll(c.Param, "_", " ")
	}
	return c.Name
}

// record reads one record into its bundle.
func (p *plan) record(rec *stream.Record) (*bundle, error) {
	v := stream.NewView(rec.Raw, p.root)
	if p.in.Read != nil {
		p.in.Read(v)
	}
	var bd *bundle
	if len(p.slab) > 0 {
		bd, p.slab = &p.slab[0], p.slab[1:]
	} else {
		bd = new(bundle)
	}
	bd.view = v
	bd.tables, bd.elems = bd.buf[:0], bd.ebuf[:0]
	p.elemBuf = p.elemBuf[:0]
	// The record's own row reads a field the record leaves out in its
	// Base, the entity's list record (an entity detail's); its children,
	// its hooks' tables and the observers read the record alone.
	rv := v
	if len(rec.Base) > 0 {
		rv = v.WithBase(stream.NewView(rec.Base, p.root))
	}
	vals, err := p.columns(p.root, rv, rec, "", nil, nil)
	bd.root = vals
	if err != nil {
		return bd, err
	}
	if p.root.Check != nil {
		p.check = row{p.root, vals}
		err := p.root.Check(rv, &p.check)
		p.check = row{}
		if err != nil {
			return bd, err
		}
	}
	for _, t := range p.children {
		if err := p.child(bd, t, v, rec); err != nil {
			return bd, err
		}
	}
	for _, t := range p.hooked {
		elems, err := p.elements(bd, t, v)
		if err != nil {
			return bd, err
		}
		if len(elems) > 0 {
			if br := bd.rowsOf(t); br.rows == nil {
				br.rows = make([][]any, 0, len(elems))
			}
		}
		for _, e := range elems {
			vals, err := p.elementRow(t, e)
			if err != nil {
				return bd, err
			}
			bd.add(t, vals)
		}
	}
	return bd, nil
}

// elements lists the elements of t's ElementsFunc in the record of view v,
// once per record for all the tables that share the function.
func (p *plan) elements(bd *bundle, t *stream.Table, v *stream.View) ([]stream.Element, error) {
	fn := reflect.ValueOf(t.Elements).Pointer()
	for _, l := range bd.elems {
		if l.fn == fn {
			return l.elems, nil
		}
	}
	start := len(p.elemBuf)
	err := t.Elements(p.in.Stream, v, &p.scratch, p.yield)
	if err != nil {
		return nil, err
	}
	out := p.elemBuf[start:len(p.elemBuf):len(p.elemBuf)]
	bd.elems = append(bd.elems, elementList{fn, out})
	return out, nil
}

// elementRow reads the row of a hooked table without parent (users) from
// an element. An element the hook marked Same as one met before in the
// batch gives the same row (shared: flatten copies a row before merging
// into it).
func (p *plan) elementRow(t *stream.Table, e stream.Element) ([]any, error) {
	memo := sameRow{t, e.Same}
	if e.Same != nil {
		if r, ok := p.rows[memo]; ok {
			return r, nil
		}
	}
	vals, err := p.columns(t, e.View, nil, e.Key, e.Set, nil)
	if err == nil && t.Check != nil {
		err = t.Check(e.View, &row{t, vals})
	}
	if err != nil {
		return nil, err
	}
	if e.Same != nil {
		if p.rows == nil {
			p.rows = make(map[sameRow][]any)
		}
		p.rows[memo] = vals
	}
	return vals, nil
}

// sameRow identifies the row of a table read from an element the hook
// marked Same.
type sameRow struct {
	t    *stream.Table
	same any
}

type elementList struct {
	fn    uintptr
	elems []stream.Element
}

// newRow returns n values for a row, carved out of a chunk shared with
// the batch's other rows: one allocation for many rows (a 1000-e-mail page
// has some 5000), which the batch keeps together anyway. A row's capacity
// is its length, so an append to it cannot reach the next row.
func (p *plan) newRow(n int) []any {
	if len(p.vals) < n {
		p.vals = make([]any, max(n, 1024))
	}
	r := p.vals[:n:n]
	p.vals = p.vals[n:]
	return r
}

// columns reads the values of t's columns from view v. rec is the record
// (nil for an element), elemKey an element's key in a keyed collection, set
// a hook's values, parent the parent's row (child tables).
func (p *plan) columns(t *stream.Table, v *stream.View, rec *stream.Record, elemKey string, set map[string]any, parent *parentRow) ([]any, error) {
	vals := p.newRow(len(t.Columns))
	fills := p.fillsOf(t)
	for i := range t.Columns {
		c := &t.Columns[i]
		if !fills[i] {
			continue
		}
		if x, ok := set[c.Name]; ok {
			vals[i] = x
			continue
		}
		var err error
		switch c.Derived {
		case "":
			vals[i], err = p.field(t, c, v, rec, elemKey, i)
		case stream.DerivedRecord:
			if rec != nil {
				vals[i] = recordJSON(rec.Raw)
			}
		case stream.DerivedParam:
			vals[i], err = c.Coerce(textValue(p.in.Params[c.Param]), c.Param)
		case stream.DerivedSnapshotDay:
			y, m, d := p.in.Snapshot.Date()
			vals[i] = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		case stream.DerivedParent:
			if parent != nil {
				vals[i] = parent.key
			}
		case stream.DerivedRow:
			if parent != nil {
				if j := columnIndex(parent.t, c.Name); j >= 0 {
					vals[i] = parent.vals[j]
				}
			}
		case stream.DerivedSequence, stream.DerivedHook:
			// set by the caller or the table's hooks
		default:
			return nil, fmt.Errorf("column %s.%s: unknown derivation %q", t.Name, c.Name, c.Derived)
		}
		if err != nil {
			return nil, err
		}
		if vals[i] == nil && (c.Key && c.Derived != stream.DerivedSequence && c.Derived != stream.DerivedHook || c.Required) {
			return nil, errMissing(t, c)
		}
	}
	return vals, nil
}

// field reads a column with a source field. A jsonb value is made storable
// as the record's raw is (recordJSON: invalid UTF-8 and NULs as U+FFFD);
// text is, by stream.CleanText.
func (p *plan) field(t *stream.Table, c *stream.Column, v *stream.View, rec *stream.Record, elemKey string, i int) (any, error) {
	val, err := p.fieldValue(t, c, v, rec, elemKey, i)
	if raw, ok := val.(json.RawMessage); ok && err == nil && len(raw) > 0 {
		val = recordJSON(raw)
	}
	return val, err
}

// fieldValue is field's value as the column reads it.
func (p *plan) fieldValue(t *stream.Table, c *stream.Column, v *stream.View, rec *stream.Record, elemKey string, i int) (any, error) {
	listed := ""
	if rec != nil && i == p.rootKey {
		listed = rec.Key
	}
	if listed != "" && t.ListedKeyWins {
		return c.Coerce(keyValue(c, listed), c.Field)
	}
	val, err := c.Read(v)
	if err != nil || val != nil {
		return val, err
	}
	switch {
	case listed != "":
		return c.Coerce(keyValue(c, listed), c.Field)
	case c.ElementKey && elemKey != "":
		return c.Coerce(keyValue(c, elemKey), c.Field)
	case c.Param != "" && p.in.Params[c.Param] != "":
		return c.Coerce(textValue(p.in.Params[c.Param]), c.Param)
	}
	return nil, nil
}

// textValue is s as a JSON string value.
func textValue(s string) gjson.Result {
	return gjson.Result{Type: gjson.String, Str: s, Raw: strconv.Quote(s)}
}

// keyValue is textValue for column c, without the quoted text (Raw) only a
// jsonb column reads.
func keyValue(c *stream.Column, s string) gjson.Result {
	if c.Type == stream.JSONB {
		return textValue(s)
	}
	return gjson.Result{Type: gjson.String, Str: s}
}

type parentRow struct {
	t    *stream.Table
	vals []any
	key  any
}

// child reads the rows of child table t from the record in view v. A
// replaced table (Table.Replace) names the record's key among the parents
// whose stored children the batch replaces — also when it has none, an
// empty or null array — unless the record does not hold the table's array
// at all (a detail that leaves its team out says nothing of it): then the
// stored children stay as they are.
func (p *plan) child(bd *bundle, t *stream.Table, v *stream.View, rec *stream.Record) error {
	if t.Replace && t.Array != "" && !v.Has(t.Array) {
		return nil
	}
	p.parent = parentRow{t: p.root, vals: bd.root, key: bd.root[0]}
	var rows [][]any
	var err error
	switch {
	case t.Elements != nil:
		rows, err = p.listedChildren(bd, t, v)
	case t.Array == "":
		if w, ok := v.Get(t.When); t.When == "" || ok && w.IsObject() {
			c := p.newChildRows(t)
			err = c.add(v, "", 0)
			rows = c.rows
		}
	default:
		c := p.newChildRows(t)
		err = eachElement(v, t.Array, c.add)
		rows = c.rows
	}
	if err != nil {
		return err
	}
	if len(rows) > 0 || t.Replace { // a replaced parent counts without children
		br := bd.rowsOf(t)
		if br.rows == nil {
			br.rows = rows
		} else {
			br.rows = append(br.rows, rows...)
		}
	}
	return nil
}

// listedChildren reads the rows of child table t that its Elements function
// lists from the record in view v, each distinct row once.
func (p *plan) listedChildren(bd *bundle, t *stream.Table, v *stream.View) ([][]any, error) {
	elems, err := p.elements(bd, t, v)
	if err != nil {
		return nil, err
	}
	rows := make([][]any, 0, len(elems))
	for _, e := range elems {
		vals, err := p.columns(t, e.View, nil, e.Key, e.Set, &p.parent)
		if err != nil {
			return rows, err
		}
		if !slices.ContainsFunc(rows, func(r []any) bool { return sameValues(r, vals) }) {
			rows = append(rows, vals)
		}
	}
	return rows, nil
}

// childRows gathers the rows of a child table read from the elements of a
// record's array, or from the record itself: numbered where the table has a
// sequence column, checked by the table's Check, and, where neither a
// sequence nor a hook tells rows apart, the last row of a key kept.
type childRows struct {
	p      *plan
	t      *stream.Table
	seqCol int              // the sequence column, or -1
	seq    map[string]int32 // with a sequence column: the last number per key before it
	dedup  map[string]int   // without: the row of each key
	rows   [][]any
}

// newChildRows starts the rows of child table t of the current record.
func (p *plan) newChildRows(t *stream.Table) *childRows {
	c := &childRows{p: p, t: t, seqCol: p.seqColOf(t)}
	if c.seqCol >= 0 {
		c.seq = map[string]int32{}
	} else if t.Elements == nil {
		c.dedup = map[string]int{}
	}
	return c
}

// add reads the row of element n (key: its key in an object keyed by id)
// in view ev.
func (c *childRows) add(ev *stream.View, key string, n int) error {
	t := c.t
	vals, err := c.p.columns(t, ev, nil, key, nil, &c.p.parent)
	if err != nil {
		var miss *missingError
		switch {
		case t.Array == "":
			return err
		case errors.As(err, &miss):
			return fmt.Errorf("%s %d without %s", t.Noun, n, miss.field)
		}
		return fmt.Errorf("%s %d: %w", t.Noun, n, err)
	}
	if c.seqCol >= 0 {
		k := keyString(vals[:c.seqCol])
		c.seq[k]++
		vals[c.seqCol] = c.seq[k]
	}
	if t.Check != nil {
		if err := t.Check(ev, &row{t, vals}); err != nil {
			return fmt.Errorf("%s %d: %w", t.Noun, n, err)
		}
	}
	if c.dedup != nil {
		k := keyString(vals[:len(t.Key())])
		if j, ok := c.dedup[k]; ok {
			c.rows[j] = vals
			return nil
		}
		c.dedup[k] = len(c.rows)
	}
	c.rows = append(c.rows, vals)
	return nil
}

// eachElement calls fn for each element of the collection at path: an array
// (null elements skipped) or an object keyed by the elements' ids; null,
// false, [] and {} are empty.
func eachElement(v *stream.View, path string, fn func(ev *stream.View, key string, n int) error) error {
	c, ok := v.Get(path)
	if !ok || stream.Absent(c) {
		return nil
	}
	if !c.IsArray() && !c.IsObject() {
		return fmt.Errorf("%s: want an array or an object, got %s", path, c.Type)
	}
	var err error
	n := 0
	c.ForEach(func(k, e gjson.Result) bool {
		if e.Type == gjson.Null {
			return true
		}
		if !e.IsObject() {
			if stream.Absent(e) {
				return true
			}
			err = fmt.Errorf("%s element %d is not an object", path, n)
			return false
		}
		key := ""
		if c.IsObject() {
			key = k.Str
		}
		err = fn(stream.NewView([]byte(e.Raw), nil), key, n)
		n++
		return err == nil
	})
	return err
}

// sameValues reports whether two rows hold equal values.
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case json.RawMessage:
			y, ok := b[i].(json.RawMessage)
			if !ok || string(x) != string(y) {
				return false
			}
		case time.Time:
			y, ok := b[i].(time.Time)
			if !ok || !x.Equal(y) {
				return false
			}
		default:
			if a[i] != b[i] {
				return false
			}
		}
	}
	return true
}

// keyOf is the map key of key values: a single text or bigint value itself
// (a column's values are all of one type), else keyString's text.
func keyOf(vals []any) any {
	if len(vals) == 1 {
		switch vals[0].(type) {
		case string, int64:
			return vals[0]
		}
	}
	return keyString(vals)
}

// keyString renders key values as a map key: values separated by NUL,
// which cleaned text cannot hold.
func keyString(vals []any) string {
	if len(vals) == 1 {
		if s, ok := vals[0].(string); ok {
			return s
		}
	}
	b := make([]byte, 0, 64)
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			b = append(b, x...)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case int32:
			b = strconv.AppendInt(b, int64(x), 10)
		case time.Time:
			b = x.UTC().AppendFormat(b, time.RFC3339Nano)
		case nil:
			b = append(b, 1)
		default:
			b = fmt.Append(b, x)
		}
		b = append(b, 0)
	}
	return string(b)
}

// rejectKey is the Reject.Key of a rejected record: its key values joined by
// "/" (months as YYYY-MM), each as read or, when it could not be read, as the
// raw text of its field; "" (a hash of the payload) when one is missing.
func (p *plan) rejectKey(rec *stream.Record, bd *bundle) string {
	key := p.root.Key()
	parts := make([]string, 0, len(key))
	for i := range key {
		c := &key[i]
		var s string
		if bd != nil && bd.root != nil && bd.root[i] != nil {
			s = keyText(c, bd.root[i])
		} else {
			switch {
			case c.Derived == stream.DerivedParam:
				s = strings.TrimSpace(p.in.Params[c.Param])
			case c.Field != "" && bd != nil && bd.view != nil:
				r := bd.view.Value(c)
				if r.Type == gjson.String {
					s = strings.TrimSpace(r.Str)
				} else if r.Type == gjson.Number {
					s = r.Raw
				}
				if s == "" && i == p.rootKey {
					s = rec.Key
				}
				if s == "" && c.Param != "" {
					s = p.in.Params[c.Param]
				}
			}
		}
		if s == "" {
			return ""
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "/")
}

// keyText renders a key value as Reject.Key holds it.
func keyText(c *stream.Column, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case time.Time:
		if c.Type == stream.Month {
			return x.Format("2006-01")
		}
		if c.Type == stream.Date {
			return x.Format("2006-01-02")
		}
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// flatten writes the bundles' rows into out in record order, folding Merge
// tables, and counts coverage.
func (p *plan) flatten(out *Batch, bundles []*bundle) {
	if len(bundles) == 0 {
		return
	}
	root := out.table(p.root)
	root.Rows = make([][]any, 0, len(bundles))
	// Room for every row up front (a Merge table's count is an upper bound).
	sizes := make(map[*stream.Table]int, len(p.fills))
	for _, bd := range bundles {
		for _, br := range bd.tables {
			sizes[br.t] += len(br.rows)
		}
	}
	for t, n := range sizes {
		if tr := out.table(t); tr.Rows == nil && n > 0 {
			tr.Rows = make([][]any, 0, n)
		}
	}
	merged := map[*stream.Table]map[string]int{}
	for _, bd := range bundles {
		root.Rows = append(root.Rows, bd.root)
		for _, br := range bd.tables {
			t := br.t
			tr := out.table(t)
			if t.Replace {
				tr.Parents = append(tr.Parents, bd.root[0])
			}
			for _, r := range br.rows {
				if !t.Merge {
					tr.Rows = append(tr.Rows, r)
					continue
				}
				idx := merged[t]
				if idx == nil {
					idx = make(map[string]int, sizes[t]/2)
					merged[t] = idx
				}
				k := keyString(r[:len(t.Key())])
				if j, ok := idx[k]; ok {
					mergeKnown(tr.Rows[j], r)
					continue
				}
				idx[k] = len(tr.Rows)
				tr.Rows = append(tr.Rows, slices.Clone(r)) // merged into: not shared

			}
		}
	}
	out.Coverage.add(p.coverage(out))
}

// mergeKnown folds a later row into an earlier one: its known values win, its
// unknown ones keep the earlier.
func mergeKnown(dst, later []any) {
	for i, v := range later {
		if v != nil {
			dst[i] = v
		}
	}
}

// coverage counts the rows of each table of b and the NULLs of each mapped
// column.
func (p *plan) coverage(b *Batch) Coverage {
	c := Coverage{Rows: map[string]int{}, Nulls: map[string]int{}}
	for name, tr := range b.Tables {
		c.Rows[name] += len(tr.Rows)
		for i := range tr.Table.Columns {
			col := &tr.Table.Columns[i]
			if !col.Mapped() || col.Type == stream.Boolean || !p.fillsOf(tr.Table)[i] {
				continue
			}
			n := 0
			for _, r := range tr.Rows {
				if r[i] == nil {
					n++
				}
			}
			c.Nulls[name+"."+col.Name] += n
		}
	}
	return c
}

// With returns a copy of b whose table name holds rows instead (b is not
// modified; the other tables' rows are shared).
func (b Batch) With(name string, rows [][]any) Batch {
	tr := b.Rows(name)
	if tr == nil {
		return b
	}
	out := b
	out.Tables = make(map[string]*TableRows, len(b.Tables))
	for k, v := range b.Tables {
		out.Tables[k] = v
	}
	c := *tr
	c.Rows = rows
	out.Tables[name] = &c
	return out
}

// Records is the number of service records b carries: the rows of tables
// of whole records (listed or detailed entities, contacts, e-mails), not
// their children nor the people they mention, plus the rejected records.
func (b *Batch) Records() int {
	n := len(b.Rejects)
	for _, tr := range b.Tables {
		if tr.Table.Parent == "" && tr.Table.Elements == nil {
			n += len(tr.Rows)
		}
	}
	return n
}
