package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/stream"
)

// inspection is what one record of an endpoint showed.
type inspection struct {
	columns  []ColumnCheck
	unmapped []Field
	problems []string
	id       string // the record's key, for the endpoints that take an id
}

// tablesOf returns the tables records of endpoint fill, as the transform
// resolves them: the record's own table (root), its child tables, and the
// tables without parent a hook fills from the record (hooked).
func tablesOf(s *stream.Stream, endpoint string) (root *stream.Table, children, hooked []*stream.Table) {
	for _, t := range s.Tables() {
		if !t.FillsFrom(endpoint) {
			continue
		}
		switch {
		case t.Parent == "" && t.Elements == nil && root == nil:
			root = t
		case t.Parent == "" && t.Elements != nil:
			hooked = append(hooked, t)
		case root != nil && t.Parent == root.Name:
			children = append(children, t)
		}
	}
	return root, children, hooked
}

// inspect checks one record of endpoint against the declarations of s.
// params are the request's parameters that columns may take.
func inspect(s *stream.Stream, endpoint string, rec extract.Record, params map[string]string) inspection {
	var in inspection
	root, children, hooked := tablesOf(s, endpoint)
	if root == nil {
		return in
	}
	view := stream.NewView(rec.Raw, root)
	fields := observe(s.Name, view)
	m := newMapping(root, children, hooked, endpoint)
	sparse := sparseColumns(append(append([]*stream.Table{root}, children...), hooked...))

	in.checkRoot(root, view, endpoint, rec.Key, params)
	for _, t := range children {
		if t.Array != "" {
			in.checkChild(t, view, endpoint)
		}
	}
	for _, t := range hooked {
		in.checkHooked(s, t, view, endpoint)
	}
	in.findUnmapped(fields, m, sparse)
	return in
}

// sparseColumns returns the "table.column" names of the tables' sparse
// columns: for them, absent is not missing.
func sparseColumns(tables []*stream.Table) map[string]bool {
	sparse := map[string]bool{}
	for _, t := range tables {
		for _, c := range t.Columns {
			if c.Sparse {
				sparse[t.Name+"."+c.Name] = true
			}
		}
	}
	return sparse
}

// checkRoot checks the columns of the record's own table, runs the table's
// Check hook on the values found, and takes the record's id. key is the key
// the record was listed under.
func (in *inspection) checkRoot(root *stream.Table, view *stream.View, endpoint, key string, params map[string]string) {
	vals := map[string]any{}
	for i := range root.Columns {
		c := &root.Columns[i]
		if !c.Mapped() || !c.FillsFrom(endpoint) {
			continue
		}
		cc, v := column(root.Name, c, c.Field, []*stream.View{view})
		vals[c.Name] = v
		if cc.State == StateMissing {
			switch {
			case i == 0 && len(root.Key()) == 1 && key != "":
				cc.State = StateFromKey
				vals[c.Name], _ = c.Coerce(gjson.Result{Type: gjson.String, Str: key, Raw: strconv.Quote(key)}, c.Field)
			case c.Param != "" && params[c.Param] != "":
				cc.State = StateFromParam
			case c.Sparse:
				cc.State = StateNotSeen
			}
		}
		in.columns = append(in.columns, cc)
	}
	if root.Check != nil {
		in.runCheckHook(root, view, &row{vals: vals})
	}
	if k := root.Key(); len(k) == 1 {
		if v, err := k[0].Coerce(view.Value(&k[0]), k[0].Field); err == nil && v != nil {
			in.id = fmt.Sprint(v)
		} else if key != "" {
			in.id = key
		}
	}
}

// runCheckHook runs root's Check hook on the record's values: a refusal is a
// problem, and a missing column the hook sets is filled from the hook.
func (in *inspection) runCheckHook(root *stream.Table, view *stream.View, r *row) {
	if err := root.Check(view, r); err != nil {
		in.problems = append(in.problems, "the "+root.Noun+" check of the declaration refuses the record")
	}
	for i := range in.columns {
		cc := &in.columns[i]
		if cc.State == StateMissing && r.Get(strings.TrimPrefix(cc.Column, root.Name+".")) != nil {
			cc.State = StateFromHook
		}
	}
}

// checkChild checks the columns of a child table filled from an array (or
// an object keyed by id) of the record.
func (in *inspection) checkChild(t *stream.Table, view *stream.View, endpoint string) {
	elems, keyed := elementsAt(view, t.Array)
	for i := range t.Columns {
		c := &t.Columns[i]
		if !c.Mapped() || !c.FillsFrom(endpoint) {
			continue
		}
		path := inventory.FieldPath(t.Array, c.Field)
		cc := ColumnCheck{Column: t.Name + "." + c.Name, Field: path, Type: string(c.Type), State: StateNotSeen}
		if len(elems) > 0 {
			cc, _ = column(t.Name, c, path, elems)
			switch {
			case cc.State == StateMissing && c.ElementKey && keyed:
				cc.State = StateFromKey
			case cc.State == StateMissing && c.Sparse:
				cc.State = StateNotSeen
			}
		}
		in.columns = append(in.columns, cc)
	}
}

// checkHooked checks the columns of a table a hook fills from the record
// (the people of an e-mail).
func (in *inspection) checkHooked(s *stream.Stream, t *stream.Table, view *stream.View, endpoint string) {
	var views []*stream.View
	var sets []map[string]any
	err := t.Elements(s, view, &stream.Scratch{}, func(e stream.Element) {
		views, sets = append(views, e.View), append(sets, e.Set)
	})
	if err != nil {
		in.problems = append(in.problems, "the "+t.Name+" of the record cannot be read as the declaration expects")
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if !c.Mapped() || !c.FillsFrom(endpoint) {
			continue
		}
		cc := ColumnCheck{Column: t.Name + "." + c.Name, Field: c.Field, Type: string(c.Type), State: StateNotSeen}
		if len(views) > 0 {
			cc, _ = column(t.Name, c, c.Field, views)
			switch {
			case cc.State == StateMissing && slices.ContainsFunc(sets, func(set map[string]any) bool { return set[c.Name] != nil }):
				cc.State = StateFromHook
			case cc.State == StateMissing && c.Sparse:
				cc.State = StateNotSeen
			}
		}
		in.columns = append(in.columns, cc)
	}
}

// findUnmapped lists the record's fields no column maps (and no mapped field
// covers), and gives each missing column — and each sparse column not seen —
// its candidates among them.
func (in *inspection) findUnmapped(fields []inventory.Field, m *mapping, sparse map[string]bool) {
	for i := range fields {
		fields[i].MappedColumn = m.columnOf(fields[i].Path)
	}
	var mapped []string
	for _, f := range fields {
		if f.MappedColumn != "" {
			mapped = append(mapped, f.Path)
		}
	}
	var loose []inventory.Field
	for _, f := range fields {
		if f.MappedColumn == "" && !m.covered(f.Path, mapped) && !emptyBeside(f, fields, m, mapped) {
			loose = append(loose, f)
			in.unmapped = append(in.unmapped, Field{Path: f.Path, Types: f.Types})
		}
	}
	for i := range in.columns {
		cc := &in.columns[i]
		if cc.State != StateMissing && (cc.State != StateNotSeen || !sparse[cc.Column]) {
			continue
		}
		ic := inventory.Column{Column: cc.Column, Field: cc.Field, Types: inventory.TypesFor(cc.Type)}
		cc.Candidates = inventory.Candidates(ic, loose, 1)
	}
	if in.unmapped == nil {
		in.unmapped = []Field{}
	}
}

// column checks column c of table (its source field at path, for display)
// in the views of the record or of its elements: present when any view
// holds its field (null included), parsed when every value read coerces.
// It returns the check and the first value read.
func column(table string, c *stream.Column, path string, views []*stream.View) (ColumnCheck, any) {
	cc := ColumnCheck{Column: table + "." + c.Name, Field: path, Type: string(c.Type), State: StateMissing}
	var first any
	for _, v := range views {
		if !has(v, c) {
			continue
		}
		r := v.Value(c)
		if cc.JSONType == "" || cc.State == StateNull {
			cc.JSONType = jsonType(r)
		}
		val, err := c.Coerce(r, c.Field)
		switch {
		case err != nil:
			cc.State = StateUnparsed
			cc.JSONType = jsonType(r)
			cc.Problem = fmt.Sprintf("a JSON %s that does not read as %s", jsonType(r), c.Type)
			return cc, nil
		case val == nil && cc.State == StateMissing:
			cc.State = StateNull
		case val != nil:
			cc.State = StatePresent
			if first == nil {
				first = val
			}
		}
	}
	return cc, first
}

// has reports whether the view holds c's field or one of its alternates,
// whatever its value (null and false included).
func has(v *stream.View, c *stream.Column) bool {
	if _, ok := v.Get(c.Field); ok {
		return true
	}
	for _, a := range c.Alternates {
		if _, ok := v.Get(a); ok {
			return true
		}
	}
	return false
}

// elementsAt returns the views of the objects of the collection at path (an
// array, or an object keyed by id: keyed).
func elementsAt(v *stream.View, path string) (views []*stream.View, keyed bool) {
	r, ok := v.Get(path)
	if !ok || stream.Absent(r) || !(r.IsArray() || r.IsObject()) {
		return nil, false
	}
	r.ForEach(func(_, e gjson.Result) bool {
		if e.IsObject() {
			views = append(views, stream.NewView([]byte(e.Raw), nil))
		}
		return true
	})
	return views, r.IsObject()
}

// observe returns the field inventory of the record in view (its wrapper
// removed).
func observe(streamName string, view *stream.View) []inventory.Field {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	view.Members(func(k string, val gjson.Result) bool {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(strconv.Quote(k))
		b.WriteByte(':')
		b.WriteString(val.Raw)
		return true
	})
	b.WriteByte('}')
	o := inventory.NewObserver(streamName)
	o.SetSampling(1, 1)
	o.Observe([]byte(b.String()))
	return o.Fields(nil)
}

// jsonType names a value's JSON type as the inventory does.
func jsonType(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return inventory.TypeString
	case gjson.Number:
		return inventory.TypeNumber
	case gjson.True, gjson.False:
		return inventory.TypeBoolean
	case gjson.Null:
		return inventory.TypeNull
	}
	if r.IsArray() {
		return inventory.TypeArray
	}
	if r.IsObject() {
		return inventory.TypeObject
	}
	return ""
}

// row is a table's row for a declaration's Check hook.
type row struct{ vals map[string]any }

func (r *row) Get(name string) any    { return r.vals[name] }
func (r *row) Set(name string, v any) { r.vals[name] = v }

// mapping says which inventory paths the declarations read.
type mapping struct {
	paths  map[string]string // path → "table.column" (fields and alternates)
	jsonb  []string          // paths of JSON columns: what is under them is kept whole
	hooked map[string]string // field name of a hooked table's column → "table.column" (a hooked table without Sources)
}

func newMapping(root *stream.Table, children, hooked []*stream.Table, endpoint string) *mapping {
	m := &mapping{paths: map[string]string{}, hooked: map[string]string{}}
	add := func(t *stream.Table, array string) {
		for i := range t.Columns {
			c := &t.Columns[i]
			if !c.Mapped() || !c.FillsFrom(endpoint) {
				continue
			}
			for _, p := range append([]string{c.Field}, c.Alternates...) {
				path := inventory.FieldPath(array, p)
				m.paths[path] = t.Name + "." + c.Name
				if c.Type == stream.JSONB || c.AnyJSON {
					m.jsonb = append(m.jsonb, path)
				}
			}
		}
	}
	add(root, "")
	for _, t := range children {
		if t.Array != "" {
			add(t, t.Array)
		}
	}
	for _, t := range hooked {
		if len(t.Sources) > 0 { // where the hook finds its elements
			for _, src := range t.Sources {
				add(t, src)
			}
			continue
		}
		for i := range t.Columns {
			if c := &t.Columns[i]; c.Mapped() && c.FillsFrom(endpoint) {
				m.hooked[c.Field] = t.Name + "." + c.Name
			}
		}
	}
	return m
}

// columnOf returns the column a path fills ("" when none). A field of the
// objects of a collection ("users.to[].email") fills the column of a hooked
// table that reads that field name: the hook lists those objects.
func (m *mapping) columnOf(path string) string {
	if c, ok := m.paths[path]; ok {
		return c
	}
	if i := strings.LastIndex(path, "[]."); i >= 0 {
		return m.hooked[path[i+3:]]
	}
	return ""
}

// emptyBeside reports whether f is an empty collection ([] or {}, null)
// beside mapped fields (users.cc beside users.from): it holds nothing to
// map.
func emptyBeside(f inventory.Field, fields []inventory.Field, m *mapping, mapped []string) bool {
	for _, t := range f.Types {
		if t != inventory.TypeArray && t != inventory.TypeObject && t != inventory.TypeNull {
			return false
		}
	}
	for _, g := range fields {
		if strings.HasPrefix(g.Path, f.Path+".") || strings.HasPrefix(g.Path, f.Path+"[]") {
			return false
		}
	}
	i := strings.LastIndexAny(f.Path, ".]")
	return i > 0 && m.covered(strings.TrimSuffix(f.Path[:i+1], "."), mapped)
}

// covered reports whether an unmapped path is accounted for all the same:
// a part of a value a JSON column keeps whole, or an object or collection
// holding mapped fields (declared, or seen: mapped lists the paths of the
// record that fill a column).
func (m *mapping) covered(path string, mapped []string) bool {
	for _, j := range m.jsonb {
		if strings.HasPrefix(path, j+".") || strings.HasPrefix(path, j+"[]") {
			return true
		}
	}
	under := func(p string) bool { return strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[]") }
	for p := range m.paths {
		if under(p) {
			return true
		}
	}
	return slices.ContainsFunc(mapped, under)
}
