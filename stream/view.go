package stream

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Record is one record as received, the input of the generic transform.
type Record struct {
	// Key is the record's key as the service listed it (the key of a row in
	// an object keyed by id) or as stored (a rebuild); "" when none. A record
	// whose own key field is empty takes it.
	Key string
	// Raw is the record's JSON as received.
	Raw json.RawMessage
	// Base is, for an entity's detail, the entity's list record as the
	// warehouse stored it (the entity table's raw column: what
	// load.DetailState.Due returns with a due entity, or what a rebuild
	// reads beside detail_raw); nil for any other record, and for an entity
	// not stored yet. The detail's record holds the list's fields, but a
	// service's detail may leave some of them out: a field the detail does
	// not carry at all is read from Base for the columns of the entity's
	// own table (see View.WithBase), so that its row does not write NULL
	// over the value the list stored. A field the detail carries — null or
	// false included — is the detail's; the child tables built from the
	// detail and the columns of the record as received (raw, detail_raw)
	// never read Base.
	Base json.RawMessage
}

// View reads the fields of one JSON object by path. Members of a wrapper
// object — the table's Wrapper anywhere, or a "<thing>_info" object that
// comes first and is not itself a declared field — are read as the object's
// own; among members of the same name, the last one wins.
//
// A view may have a base (WithBase: an entity detail's view over the
// entity's list record), read for a field the view does not hold at all.
type View struct {
	src     string    // the text the members are found in
	members []member  // pointer-free: cheap to allocate, nothing for the collector to scan
	keys    []string  // keys that are not text of src (unescaped)
	subs    []subView // views of object members split so far
	base    *View     // read for a field v does not hold (WithBase); nil: none
}

// member is one member of an object: its key, src[k0:k1] (keys[k1] when k0
// is escapedKey), and its value's JSON text src[v0:v1], parsed again on
// access (which is cheap and keeps views small).
type member struct {
	k0, k1, v0, v1 uint32
}

const escapedKey = ^uint32(0)

// subView is the view of the object member members[i].
type subView struct {
	i    int
	view *View
}

func (v *View) key(m *member) string {
	if m.k0 == escapedKey {
		return v.keys[m.k1]
	}
	return v.src[m.k0:m.k1]
}

func (v *View) raw(m *member) string { return v.src[m.v0:m.v1] }

// maxWrapDepth bounds nested wrappers.
const maxWrapDepth = 4

// NewView splits the object raw into its members for t (nil: no wrappers
// unwrapped). A value that is not an object gives an empty view. The
// objects among its members are split in the same pass: a record's fields
// are read through them.
func NewView(raw []byte, t *Table) *View {
	// No copy: a record's bytes are not modified once received (rows keep
	// them as its raw column too).
	return newView(unsafe.String(unsafe.SliceData(raw), len(raw)), t, true)
}

func viewOf(r gjson.Result) *View {
	return newView(r.Raw, nil, false)
}

// newView splits the object text s: in one strict pass over it (see
// splitter) when it is well-formed JSON, else member by member as gjson
// reads it. The two give the same members for well-formed text; the strict
// pass skips values without decoding them and, with nested, splits the
// objects among the members along.
func newView(s string, t *Table, nested bool) *View {
	if len(s) >= math.MaxUint32 { // beyond offsets (extract bounds a body to 256 MiB by default)
		return &View{}
	}
	sp := splitters.Get().(*splitter)
	v, ok := sp.view(s, t, nested)
	sp.reset()
	splitters.Put(sp)
	if ok {
		return v
	}
	v = &View{src: s}
	v.add(gjson.Parse(s), t, 0)
	return v
}

func (v *View) add(obj gjson.Result, t *Table, depth int) {
	if !obj.IsObject() {
		return
	}
	n := 0
	obj.ForEach(func(k, val gjson.Result) bool {
		n++
		key := k.Str
		if t != nil && depth < maxWrapDepth && val.IsObject() && t.wraps(key, n == 1) {
			v.add(val, t, depth+1)
			return true
		}
		v0, ok := offset(v.src, val.Raw)
		if !ok { // not expected: gjson's values are text of what it reads
			v.src += val.Raw
			v0 = uint32(len(v.src) - len(val.Raw))
		}
		m := member{v0: v0, v1: v0 + uint32(len(val.Raw))}
		if k0, ok := offset(v.src, key); ok {
			m.k0, m.k1 = k0, k0+uint32(len(key))
		} else {
			m.k0, m.k1 = escapedKey, uint32(len(v.keys))
			v.keys = append(v.keys, key)
		}
		v.members = append(v.members, m)
		return true
	})
}

// offset returns where sub, a string sharing src's memory, starts in src.
func offset(src, sub string) (uint32, bool) {
	if len(sub) == 0 {
		return 0, true
	}
	base := uintptr(unsafe.Pointer(unsafe.StringData(src)))
	p := uintptr(unsafe.Pointer(unsafe.StringData(sub)))
	if p < base || p+uintptr(len(sub)) > base+uintptr(len(src)) {
		return 0, false
	}
	return uint32(p - base), true
}

// wraps reports whether key (first: the object's first member) names a
// wrapper of t's records.
func (t *Table) wraps(key string, first bool) bool {
	if key == t.Wrapper {
		return true
	}
	if !first || !strings.HasSuffix(key, "_info") {
		return false
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if firstSegment(c.Field) == key {
			return false
		}
		for _, a := range c.Alternates {
			if firstSegment(a) == key {
				return false
			}
		}
	}
	return true
}

func firstSegment(path string) string {
	s, _, _ := strings.Cut(path, ".")
	return s
}

// member returns the index of the last member named key, -1 if none.
func (v *View) member(key string) int {
	for i := len(v.members) - 1; i >= 0; i-- {
		m := &v.members[i]
		if m.k0 != escapedKey && int(m.k1-m.k0) == len(key) && v.src[m.k0:m.k1] == key ||
			m.k0 == escapedKey && v.keys[m.k1] == key {
			return i
		}
	}
	return -1
}

// WithBase returns a view of v's members that reads a field v does not
// hold at all in base instead: the view an entity detail's own columns are
// read through, base being the view of the entity's list record
// (Record.Base), so that a detail which leaves out a field the list serves
// does not empty the field. Get, Value and Column.Read fall back to base
// for a path v does not have (see Has) — for a column with Alternates,
// only when v has none of its paths: a detail that writes the field under
// another of its names has its own value. What v holds is v's, null, false and []
// included. Members, Object and Has see v's own members only, so the
// field inventory, the child tables and the hooks that walk the record see
// the detail as received. v is not modified (the two share its members);
// with a nil base, WithBase returns v.
func (v *View) WithBase(base *View) *View {
	if base == nil {
		return v
	}
	return &View{src: v.src, members: v.members, keys: v.keys, subs: slices.Clone(v.subs), base: base}
}

// Has reports whether the record holds the dotted path at all: each
// segment is a member of the object the path has reached, or the path
// reaches a value that is not an object before its end (a null, a number:
// the record's own word that there is nothing below it). A path the record
// does not have is absent, which a base (WithBase) fills; an explicit null
// is not.
func (v *View) Has(path string) bool {
	for {
		dot := strings.IndexByte(path, '.')
		if dot < 0 {
			return v.member(path) >= 0
		}
		i := v.member(path[:dot])
		if i < 0 {
			return false
		}
		if !isObjectText(v.raw(&v.members[i])) {
			return true
		}
		v = v.subAt(path[:dot])
		path = path[dot+1:]
	}
}

// holds reports whether v holds any of column c's paths (see Has).
func (v *View) holds(c *Column) bool {
	if v.Has(c.Field) {
		return true
	}
	for _, a := range c.Alternates {
		if v.Has(a) {
			return true
		}
	}
	return false
}

// reading returns the view column c is read from: v, or its base when v
// holds none of c's paths (see WithBase).
func (v *View) reading(c *Column) *View {
	for v.base != nil && !v.holds(c) {
		v = v.base
	}
	return v
}

// Get returns the value at the dotted path; ok is false when a segment is
// missing or not an object. A path v does not hold is read in its base
// (WithBase), if any.
func (v *View) Get(path string) (gjson.Result, bool) {
	for v.base != nil && !v.Has(path) {
		v = v.base
	}
	return v.get(path)
}

// get is Get in v's own members.
func (v *View) get(path string) (gjson.Result, bool) {
	raw, ok := v.lookup(path)
	if !ok {
		return gjson.Result{}, false
	}
	return parseValue(raw), true
}

// lookup returns the text of the value at the dotted path in v's own
// members (see Get).
func (v *View) lookup(path string) (string, bool) {
	for {
		dot := strings.IndexByte(path, '.')
		if dot < 0 {
			break
		}
		if v = v.subAt(path[:dot]); v == nil {
			return "", false
		}
		path = path[dot+1:]
	}
	i := v.member(path)
	if i < 0 {
		return "", false
	}
	return v.raw(&v.members[i]), true
}

// Object returns the view of the object at key (a direct member), nil when
// it is not an object.
func (v *View) Object(key string) *View {
	return v.subAt(key)
}

func (v *View) subAt(key string) *View {
	i := v.member(key)
	if i < 0 {
		return nil
	}
	raw := v.raw(&v.members[i])
	if !isObjectText(raw) {
		return nil
	}
	for _, s := range v.subs {
		if s.i == i {
			return s.view
		}
	}
	sv := newView(raw, nil, false)
	v.subs = append(v.subs, subView{i, sv})
	return sv
}

// Members calls fn for each member in order (wrappers already unwrapped).
func (v *View) Members(fn func(key string, val gjson.Result) bool) {
	for i := range v.members {
		m := &v.members[i]
		if !fn(v.key(m), parseValue(v.raw(m))) {
			return
		}
	}
}

// Absent reports whether a JSON value stands for "no value": missing, null,
// false (a PHP encoder's habit) or an empty array written where something
// else was expected.
func Absent(r gjson.Result) bool {
	switch r.Type {
	case gjson.Null, gjson.False:
		return true
	case gjson.JSON:
		return r.IsArray() && isEmptyArray(r.Raw)
	}
	return !r.Exists()
}

func isEmptyArray(raw string) bool {
	raw = strings.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return false
	}
	return strings.TrimSpace(raw[1:len(raw)-1]) == ""
}

// Value returns the value of column c: its Field, else the first of its
// Alternates that holds a value other than an object or an array. The
// result does not Exist when none is there. A view with a base reads c in
// the base when it holds none of c's paths (see WithBase).
func (v *View) Value(c *Column) gjson.Result {
	if v.base != nil {
		v = v.reading(c)
	}
	r, ok := v.get(c.Field)
	if len(c.Alternates) == 0 {
		return r
	}
	if ok && !Absent(r) {
		return r
	}
	for _, a := range c.Alternates {
		if ar, ok := v.get(a); ok && !Absent(ar) && !ar.IsObject() && !ar.IsArray() {
			return ar
		}
	}
	return r
}

// isObjectText reports whether a member's value text is an object.
func isObjectText(raw string) bool { return len(raw) > 0 && raw[0] == '{' }

// parseValue is gjson.Parse(raw) for a member's value text, quicker for
// objects, arrays, strings without escapes and the literals.
func parseValue(raw string) gjson.Result {
	switch raw {
	case "null":
		return gjson.Result{Type: gjson.Null, Raw: raw}
	case "true":
		return gjson.Result{Type: gjson.True, Raw: raw}
	case "false":
		return gjson.Result{Type: gjson.False, Raw: raw}
	}
	if len(raw) >= 2 {
		switch raw[0] {
		case '{', '[':
			return gjson.Result{Type: gjson.JSON, Raw: raw}
		case '"':
			if raw[len(raw)-1] == '"' && strings.IndexByte(raw, '\\') < 0 {
				return gjson.Result{Type: gjson.String, Raw: raw, Str: raw[1 : len(raw)-1]}
			}
		}
	}
	return gjson.Parse(raw)
}

// maxSplitDepth bounds the nesting splitter follows; deeper text takes the
// gjson path (which needs no stack).
const maxSplitDepth = 64

// splitter splits well-formed objects into views. Members are gathered on
// its stack and each view gets a slice of exactly its own.
//
// It does what gjson's ForEach does for View.add, and is kept beside it
// because it is cheaper: the views of the 1000 records of a communications
// page, with their email and users objects, take 1.2-1.3 ms of CPU here
// against 2.8-4.5 ms by gjson (x2.2-3.6, five times the allocations;
// BenchmarkViewReaders, on one machine in one run). Text it refuses (not
// well-formed, escaped keys, deeper than maxSplitDepth) is read by gjson.
type splitter struct {
	stack []member
	subs  []subView // the split view's object members (views made at the end)
	flat  []member  // their members, one after the other
	spans []int     // where each one's members start in flat
}

var splitters = sync.Pool{New: func() any { return &splitter{stack: make([]member, 0, 64)} }}

func (sp *splitter) reset() {
	clear(sp.subs) // keep no view alive from the pool
	sp.stack, sp.subs, sp.flat, sp.spans = sp.stack[:0], sp.subs[:0], sp.flat[:0], sp.spans[:0]
}

// view splits the object s for t. It reports false when s is not one
// well-formed object (surrounding white space aside) or has an escaped key;
// for such text gjson's reading decides.
func (sp *splitter) view(s string, t *Table, nested bool) (*View, bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return nil, false
	}
	end, ok := sp.object(s, i, t, 0, 0, nested)
	if !ok || skipSpace(s, end) != len(s) {
		return nil, false
	}
	if len(sp.subs) == 0 {
		return &View{src: s, members: sp.take(0)}, true
	}
	// The view, its object members' views and all their members in two
	// allocations.
	n := len(sp.stack)
	all := make([]member, n+len(sp.flat))
	copy(all, sp.stack)
	copy(all[n:], sp.flat)
	views := make([]View, 1+len(sp.subs))
	views[0] = View{src: s, members: all[:n:n]}
	sp.spans = append(sp.spans, len(sp.flat))
	for j := range sp.subs {
		a, b := n+sp.spans[j], n+sp.spans[j+1]
		views[1+j] = View{src: s, members: all[a:b:b]}
		sp.subs[j].view = &views[1+j]
	}
	views[0].subs = append([]subView(nil), sp.subs...)
	return &views[0], true
}

// take moves the members from base up off the stack into a slice of
// their own.
func (sp *splitter) take(base int) []member {
	n := len(sp.stack) - base
	if n == 0 {
		return nil
	}
	m := make([]member, n)
	copy(m, sp.stack[base:])
	sp.stack = sp.stack[:base]
	return m
}

// object pushes the members of the object starting at s[i] ('{'), unwrapping
// t's wrappers as add does (wrap: the wrappers around it), and returns the
// index after its closing brace. With nested, a member that is an object
// gets its own view (listed in subs).
func (sp *splitter) object(s string, i int, t *Table, wrap, depth int, nested bool) (int, bool) {
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for n := 1; ; n++ {
		if i >= len(s) || s[i] != '"' {
			return 0, false
		}
		ke, esc, ok := skipString(s, i)
		if !ok || esc {
			return 0, false
		}
		k0, k1 := i+1, ke-1
		key := s[k0:k1]
		i = skipSpace(s, ke)
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i = skipSpace(s, i+1)
		var ve int
		switch {
		case i >= len(s) || depth >= maxSplitDepth:
			return 0, false
		case s[i] == '{' && t != nil && wrap < maxWrapDepth && t.wraps(key, n == 1):
			ve, ok = sp.object(s, i, t, wrap+1, depth+1, nested)
		case s[i] == '{' && nested:
			base := len(sp.stack)
			if ve, ok = sp.object(s, i, nil, 0, depth+1, false); ok {
				sp.spans = append(sp.spans, len(sp.flat))
				sp.flat = append(sp.flat, sp.stack[base:]...)
				sp.stack = sp.stack[:base]
				sp.subs = append(sp.subs, subView{i: len(sp.stack)})
				sp.stack = append(sp.stack, member{uint32(k0), uint32(k1), uint32(i), uint32(ve)})
			}
		default:
			if ve, ok = skipValue(s, i, depth+1); ok {
				sp.stack = append(sp.stack, member{uint32(k0), uint32(k1), uint32(i), uint32(ve)})
			}
		}
		if !ok {
			return 0, false
		}
		var done bool
		if i, done, ok = afterValue(s, ve, '}'); !ok || done {
			return i, ok
		}
	}
}

// afterValue reads what follows a member or element that ends at s[ve] in
// a container closed by close: a comma (i: the start of the next one) or
// close (done; i: the index after it). ok is false for anything else.
func afterValue(s string, ve int, close byte) (i int, done, ok bool) {
	i = skipSpace(s, ve)
	switch {
	case i >= len(s):
		return 0, false, false
	case s[i] == ',':
		return skipSpace(s, i+1), false, true
	case s[i] == close:
		return i + 1, true, true
	}
	return 0, false, false
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at s[i] ('"') and
// whether it holds escapes. Like gjson, it does not look at the characters
// between the quotes but for escapes.
func skipString(s string, i int) (end int, esc, ok bool) {
	i++
	for {
		i = quoteOrBackslash(s, i)
		if i >= len(s) {
			return 0, false, false
		}
		if s[i] == '"' {
			return i + 1, esc, true
		}
		esc = true
		var ok bool
		if i, ok = SkipEscape(s, i+1); !ok {
			return 0, false, false
		}
	}
}

const (
	ones   = 0x0101010101010101
	highs  = 0x8080808080808080
	quotes = '"' * ones
	slashs = '\\' * ones
)

// quoteOrBackslash returns the index of the first '"' or '\\' in s from i
// on, len(s) when there is none. It reads eight bytes at a time: the
// strings of a record are mostly short, too short for IndexByte's set-up to
// pay, and it looks for both bytes in one pass.
func quoteOrBackslash(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
		q, b := x^quotes, x^slashs
		// A zero byte of q or b is a match; the lowest flagged byte is exact.
		if t := ((q-ones)&^q | (b-ones)&^b) & highs; t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
	}
	for ; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			return i
		}
	}
	return len(s)
}

// skipValue returns the index after the JSON value starting at s[i]: a
// string, number or literal checked as JSON has it; an object or an array
// found as gjson finds it (see squash), its contents not checked.
func skipValue(s string, i, depth int) (int, bool) {
	if i >= len(s) || depth > maxSplitDepth {
		return 0, false
	}
	switch c := s[i]; {
	case c == '"':
		end, _, ok := skipString(s, i)
		return end, ok
	case c == '{' || c == '[':
		return squash(s, i)
	case c == 't':
		return skipWord(s, i, "true")
	case c == 'f':
		return skipWord(s, i, "false")
	case c == 'n':
		return skipWord(s, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return SkipNumber(s, i)
	}
	return 0, false
}

// squash returns the index after the object or array starting at s[i] the
// way gjson's ForEach finds a value's end: brackets ({[( and )]}) counted
// outside strings, a string ending at the first quote not escaped by an odd
// number of backslashes. So a member's text is what gjson would give even
// when the value is not well-formed; false when it does not end.
func squash(s string, i int) (int, bool) {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			// The closing quote is the first one not escaped by an odd run
			// of backslashes: each backslash escapes the byte after it.
			for i++; ; i += 2 {
				if i = quoteOrBackslash(s, i); i >= len(s) {
					return 0, false
				}
				if s[i] == '"' {
					break
				}
			}
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

func skipWord(s string, i int, w string) (int, bool) {
	if !strings.HasPrefix(s[i:], w) {
		return 0, false
	}
	return i + len(w), true
}
