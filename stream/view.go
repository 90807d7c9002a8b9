package stream

import (
	"encoding/json"
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
}

// View reads the fields of one JSON object by path. Members of a wrapper
// object — the table's Wrapper anywhere, or a "<thing>_info" object that
// comes first and is not itself a declared field — are read as the object's
// own; among members of the same name, the last one wins.
type View struct {
	members []member
}

// member is one member of an object: its key and its value's JSON text
// (parsed again on access, which is cheap and keeps views small), and the
// value's own view once split (objects only).
type member struct {
	key  string
	raw  string
	view *View
}

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
	sp := splitters.Get().(*splitter)
	v, ok := sp.view(s, t, nested)
	sp.reset()
	splitters.Put(sp)
	if ok {
		return v
	}
	v = &View{}
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
		v.members = append(v.members, member{key: key, raw: val.Raw})
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
func (v *View) member(key string) *member {
	for i := len(v.members) - 1; i >= 0; i-- {
		if v.members[i].key == key {
			return &v.members[i]
		}
	}
	return nil
}

// Get returns the value at the dotted path; ok is false when a segment is
// missing or not an object.
func (v *View) Get(path string) (gjson.Result, bool) {
	for {
		dot := strings.IndexByte(path, '.')
		if dot < 0 {
			break
		}
		if v = v.subAt(path[:dot]); v == nil {
			return gjson.Result{}, false
		}
		path = path[dot+1:]
	}
	m := v.member(path)
	if m == nil {
		return gjson.Result{}, false
	}
	return parseValue(m.raw), true
}

// Object returns the view of the object at key (a direct member), nil when
// it is not an object.
func (v *View) Object(key string) *View {
	return v.subAt(key)
}

func (v *View) subAt(key string) *View {
	m := v.member(key)
	if m == nil || !isObjectText(m.raw) {
		return nil
	}
	if m.view == nil {
		m.view = newView(m.raw, nil, false)
	}
	return m.view
}

// Members calls fn for each member in order (wrappers already unwrapped).
func (v *View) Members(fn func(key string, val gjson.Result) bool) {
	for _, m := range v.members {
		if !fn(m.key, parseValue(m.raw)) {
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

// isObjectText reports whether a member's value text is an object.
func isObjectText(raw string) bool { return len(raw) > 0 && raw[0] == '{' }

// parseValue is gjson.Parse(raw) for a member's value text, quicker for
// objects, arrays and strings without escapes.
func parseValue(raw string) gjson.Result {
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
type splitter struct {
	stack []member
	high  int // the stack's longest length, cleared on reset
}

var splitters = sync.Pool{New: func() any { return &splitter{stack: make([]member, 0, 64)} }}

func (sp *splitter) reset() {
	clear(sp.stack[:max(sp.high, len(sp.stack))]) // keep no text alive from the pool
	sp.stack, sp.high = sp.stack[:0], 0
}

// view splits the object s for t. It reports false when s is not one
// well-formed object (surrounding white space aside); for such text gjson's
// lenient reading decides.
func (sp *splitter) view(s string, t *Table, nested bool) (*View, bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return nil, false
	}
	end, ok := sp.object(s, i, t, 0, 0, nested)
	if !ok || skipSpace(s, end) != len(s) {
		return nil, false
	}
	return &View{members: sp.take(0)}, true
}

// take moves the members from base up off the stack into a slice of
// their own.
func (sp *splitter) take(base int) []member {
	sp.high = max(sp.high, len(sp.stack))
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
// gets its own view.
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
		if !ok {
			return 0, false
		}
		key := s[i+1 : ke-1]
		if esc {
			key = gjson.Parse(s[i:ke]).Str
		}
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
				sp.stack = append(sp.stack, member{key, s[i:ve], &View{members: sp.take(base)}})
			}
		default:
			if ve, ok = skipValue(s, i, depth+1); ok {
				sp.stack = append(sp.stack, member{key: key, raw: s[i:ve]})
			}
		}
		if !ok {
			return 0, false
		}
		i = skipSpace(s, ve)
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
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
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return 0, false, false
		}
		b := strings.IndexByte(s[i:i+q], '\\')
		if b < 0 {
			return i + q + 1, esc, true
		}
		esc = true
		i += b + 1
		if i >= len(s) {
			return 0, false, false
		}
		switch s[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+4 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
				return 0, false, false
			}
			i += 5
		default:
			return 0, false, false
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
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
		return skipNumber(s, i)
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
			start := i + 1
			for i = start; ; i++ {
				q := strings.IndexByte(s[i:], '"')
				if q < 0 {
					return 0, false
				}
				i += q
				n := 0
				for j := i - 1; j >= start && s[j] == '\\'; j-- {
					n++
				}
				if n%2 == 0 {
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

// skipNumber returns the index after the number starting at s[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(s string, i int) (int, bool) {
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == d {
			return 0, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == d {
			return 0, false
		}
	}
	return i, true
}
