package inventory

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// MaxDepth is the largest number of names in a path (see Path syntax).
const MaxDepth = 3

// JSON types of a field, as stored in source_fields.json_types.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeNull    = "null"
	TypeObject  = "object"
	TypeArray   = "array"
)

// typeSet is a set of JSON types, one bit each, in the order of typeNames.
type typeSet uint8

const (
	tString typeSet = 1 << iota
	tNumber
	tBoolean
	tNull
	tObject
	tArray
)

// typeNames lists the JSON types in their sorted order (alphabetical).
var typeNames = []struct {
	bit  typeSet
	name string
}{
	{tArray, TypeArray}, {tBoolean, TypeBoolean}, {tNull, TypeNull},
	{tNumber, TypeNumber}, {tObject, TypeObject}, {tString, TypeString},
}

func (s typeSet) names() []string {
	out := make([]string, 0, 2)
	for _, t := range typeNames {
		if s&t.bit != 0 {
			out = append(out, t.name)
		}
	}
	return out
}

func typeSetOf(names []string) typeSet {
	var s typeSet
	for _, n := range names {
		for _, t := range typeNames {
			if t.name == n {
				s |= t.bit
			}
		}
	}
	return s
}

// stat is what an Observer knows of one path.
type stat struct {
	types  typeSet
	count  int64 // records that carried the path
	filled int64 // records where it held a value other than null and false
	stamp  int64 // the record that last counted it (count)
	fstamp int64 // the record that last counted it (filled)
}

// Sampling: an Observer reads the first SampleFirst records it is offered
// and then one in SampleEvery, at a random phase (so that successive runs
// over the same records sample different ones). Walking a record costs about
// as much as decoding it again; the sample keeps the inventory under 3 % of
// the time to decode and transform a page (TestObserveCost), and the shapes
// of one stream's records repeat. Counts are counts of observed records.
const (
	SampleFirst = 8
	SampleEvery = 128
)

// Observer collects the field inventory of one stream's records. It is not
// safe for concurrent use: give each goroutine its own and Merge them.
type Observer struct {
	stream       string
	offered      int64
	records      int64
	first, every int64
	phase        int64
	stats        map[string]*stat
	buf          []byte
}

// NewObserver returns an empty Observer for stream that samples as
// SampleFirst and SampleEvery say.
func NewObserver(stream string) *Observer {
	return &Observer{stream: stream, first: SampleFirst, every: SampleEvery, phase: rand.Int64N(SampleEvery),
		stats: make(map[string]*stat, 64), buf: make([]byte, 0, 128)}
}

// SetSampling makes the Observer read the first `first` records offered and
// then every `every`-th (the every-th, the 2·every-th, …); every ≤ 1 reads
// them all.
func (o *Observer) SetSampling(first, every int) {
	o.first, o.every, o.phase = int64(first), int64(max(every, 1)), 0
}

// Stream is the stream the Observer watches.
func (o *Observer) Stream() string { return o.stream }

// Records is the number of records observed (the sample).
func (o *Observer) Records() int64 { return o.records }

// Offered is the number of records offered to Observe, sampled or not.
func (o *Observer) Offered() int64 { return o.offered }

// Observe notes the fields of one record, the raw JSON object the service
// sent (unwrapped from its <thing>_info), when the sample takes it. A record
// that is not a JSON object counts as a record without fields. Observe does
// not validate the JSON: a record that reached it was decoded already.
func (o *Observer) Observe(raw []byte) {
	if !o.sample() {
		return
	}
	r := gjson.ParseBytes(raw)
	if !r.IsObject() {
		return
	}
	o.buf = o.buf[:0]
	o.walk(r, 1)
}

// Members lists the members of one record: it calls yield for each, in
// order, until yield returns false (stream.View.Members has this shape).
type Members func(yield func(key string, v gjson.Result) bool)

// ObserveMembers notes the fields of one record given as its members, when
// the sample takes it (members is called only then): for a record whose
// wrapper objects (brand_info, …) are read as the record's own, as
// stream.View lists them, so that paths are those of stream.Column.Field.
func (o *Observer) ObserveMembers(members Members) {
	if !o.sample() {
		return
	}
	o.buf = o.buf[:0]
	members(func(k string, v gjson.Result) bool {
		o.member(k, v, 0, 1)
		return true
	})
	o.buf = o.buf[:0]
}

// sample counts a record offered and reports whether the sample takes it
// (and counts it as observed then).
func (o *Observer) sample() bool {
	o.offered++
	if o.offered > o.first && o.offered%o.every != o.phase {
		return false
	}
	o.records++
	return true
}

// isCollectionKey reports whether an object key is an identifier (digits) or
// an e-mail address rather than a field name.
func isCollectionKey(k string) bool {
	if k == "" {
		return false
	}
	if strings.IndexByte(k, '@') >= 0 {
		return true
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return false
		}
	}
	return true
}

// walk notes the members of object r, whose path is o.buf, at depth names.
func (o *Observer) walk(r gjson.Result, depth int) {
	base := len(o.buf)
	r.ForEach(func(k, v gjson.Result) bool {
		o.member(k.Str, v, base, depth)
		return true
	})
	o.buf = o.buf[:base]
}

// member notes member k (value v) of the object whose path is o.buf[:base],
// at depth names.
func (o *Observer) member(k string, v gjson.Result, base, depth int) {
	o.buf = o.buf[:base]
	collection := isCollectionKey(k)
	switch {
	case collection:
		o.buf = append(o.buf, "[]"...)
	case base > 0:
		o.buf = append(o.buf, '.')
		o.buf = append(o.buf, k...)
	default:
		o.buf = append(o.buf, k...)
	}
	d := depth
	if collection {
		d-- // the collection step does not name a field
	}
	o.value(v, d)
}

// value notes v at path o.buf (depth names) and enters it when it may.
func (o *Observer) value(v gjson.Result, depth int) {
	var t typeSet
	switch v.Type {
	case gjson.String:
		t = tString
	case gjson.Number:
		t = tNumber
	case gjson.True, gjson.False:
		t = tBoolean
	case gjson.Null:
		t = tNull
	case gjson.JSON:
		if len(v.Raw) > 0 && v.Raw[0] == '[' {
			t = tArray
		} else {
			t = tObject
		}
	}
	o.note(t, v.Type != gjson.Null && v.Type != gjson.False)
	if depth >= MaxDepth {
		return
	}
	switch t {
	case tObject:
		o.walk(v, depth+1)
	case tArray:
		base := len(o.buf)
		o.buf = append(o.buf, "[]"...)
		v.ForEach(func(_, e gjson.Result) bool {
			o.buf = o.buf[:base+2]
			o.value(e, depth)
			return true
		})
		o.buf = o.buf[:base]
	}
}

// note counts type t at path o.buf for the current record.
func (o *Observer) note(t typeSet, filled bool) {
	st := o.stats[string(o.buf)] // no allocation for the lookup
	if st == nil {
		st = &stat{}
		o.stats[string(o.buf)] = st
	}
	st.types |= t
	if st.stamp != o.records {
		st.stamp = o.records
		st.count++
	}
	if filled && st.fstamp != o.records {
		st.fstamp = o.records
		st.filled++
	}
}

// Merge adds other's records and fields to o (other must watch the same
// stream; it is left unchanged).
func (o *Observer) Merge(other *Observer) {
	o.records += other.records
	o.offered += other.offered
	for p, s := range other.stats {
		st := o.stats[p]
		if st == nil {
			st = &stat{}
			o.stats[p] = st
		}
		st.types |= s.types
		st.count += s.count
		st.filled += s.filled
	}
}

// Seen is the number of records that carried path (in any type, null included).
func (o *Observer) Seen(path string) int64 {
	if st := o.stats[path]; st != nil {
		return st.count
	}
	return 0
}

// Filled is the number of records in which path held a value other than null
// or false.
func (o *Observer) Filled(path string) int64 {
	if st := o.stats[path]; st != nil {
		return st.filled
	}
	return 0
}

// Fields returns the observed fields sorted by path. mapped gives the
// warehouse column ("table.column") each path fills; nil or a missing path
// means unmapped. FirstSeen and LastSeen are left zero: the caller (load)
// stamps them.
func (o *Observer) Fields(mapped map[string]string) []Field {
	out := make([]Field, 0, len(o.stats))
	for p, s := range o.stats {
		out = append(out, Field{Stream: o.stream, Path: p, Types: s.types.names(), Count: s.count, MappedColumn: mapped[p]})
	}
	slices.SortFunc(out, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	return out
}
