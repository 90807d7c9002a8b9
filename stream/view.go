package stream

import (
	"encoding/json"
	"strings"
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
}

// View reads the fields of one JSON object by path. Members of a wrapper
// object — the table's Wrapper anywhere, or a "<thing>_info" object that
// comes first and is not itself a declared field — are read as the object's
// own; among members of the same name, the last one wins.
type View struct {
	members []member
	sub     []subView // objects already split, by path prefix
}

// member is one member of an object: its key and its value's JSON text
// (parsed again on access, which is cheap and keeps views small).
type member struct {
	key string
	raw string
}

type subView struct {
	path string
	view *View
}

// maxWrapDepth bounds nested wrappers.
const maxWrapDepth = 4

// NewView splits the object raw into its members for t (nil: no wrappers
// unwrapped). A value that is not an object gives an empty view.
func NewView(raw []byte, t *Table) *View {
	v := &View{members: make([]member, 0, 16)}
	// No copy: a record's bytes are not modified once received (rows keep
	// them as its raw column too).
	v.add(gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw))), t, 0)
	return v
}

func viewOf(r gjson.Result) *View {
	v := &View{members: make([]member, 0, 12)}
	v.add(r, nil, 0)
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
		v.members = append(v.members, member{key, val.Raw})
		return true
	})
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

// member returns the last member named key.
func (v *View) member(key string) (gjson.Result, bool) {
	for i := len(v.members) - 1; i >= 0; i-- {
		if v.members[i].key == key {
			return gjson.Parse(v.members[i].raw), true
		}
	}
	return gjson.Result{}, false
}

// Get returns the value at the dotted path; ok is false when a segment is
// missing or not an object.
func (v *View) Get(path string) (gjson.Result, bool) {
	head, rest, nested := strings.Cut(path, ".")
	if !nested {
		return v.member(path)
	}
	sv := v.subAt(head)
	if sv == nil {
		return gjson.Result{}, false
	}
	return sv.Get(rest)
}

// Object returns the view of the object at key (a direct member), nil when
// it is not an object.
func (v *View) Object(key string) *View {
	return v.subAt(key)
}

func (v *View) subAt(key string) *View {
	for _, s := range v.sub {
		if s.path == key {
			return s.view
		}
	}
	val, ok := v.member(key)
	if !ok || !val.IsObject() {
		return nil
	}
	sv := viewOf(val)
	v.sub = append(v.sub, subView{key, sv})
	return sv
}

// Members calls fn for each member in order (wrappers already unwrapped).
func (v *View) Members(fn func(key string, val gjson.Result) bool) {
	for _, m := range v.members {
		if !fn(m.key, gjson.Parse(m.raw)) {
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
// result does not Exist when none is there.
func (v *View) Value(c *Column) gjson.Result {
	r, ok := v.Get(c.Field)
	if ok && !Absent(r) {
		return r
	}
	for _, a := range c.Alternates {
		if ar, ok := v.Get(a); ok && !Absent(ar) && !ar.IsObject() && !ar.IsArray() {
			return ar
		}
	}
	return r
}
