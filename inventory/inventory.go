package inventory

import (
	"slices"
	"strings"
	"time"
)

// Field is one row of the field inventory: a source field path of a stream.
type Field struct {
	// Stream is the stream whose records carried the field.
	Stream string `json:"stream"`
	// Path is the field's path (see Path syntax).
	Path string `json:"path"`
	// Types are the JSON types seen, sorted (TypeArray … TypeString).
	Types []string `json:"json_types"`
	// Count is the number of records that carried the field.
	Count int64 `json:"seen_count"`
	// FirstSeen and LastSeen are when the field was first and last seen;
	// zero in a run's own inventory (load stamps them).
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// MappedColumn is the warehouse column the field fills, "table.column";
	// "" when unmapped.
	MappedColumn string `json:"mapped_column,omitempty"`
}

// Mapping gives, per stream, the warehouse column ("table.column") each
// source field path fills.
type Mapping map[string]map[string]string

// Inventory is the field inventory of a run: one Observer per stream. It is
// not safe for concurrent use; merge per-goroutine inventories with Merge.
type Inventory struct {
	obs          map[string]*Observer
	first, every int
	fixed        bool // SetSampling was called: observers sample at phase 0
}

// New returns an empty Inventory whose observers sample as SampleFirst and
// SampleEvery say.
func New() *Inventory {
	return &Inventory{obs: map[string]*Observer{}, first: SampleFirst, every: SampleEvery}
}

// SetSampling sets the sampling of the observers created from now on (see
// Observer.SetSampling).
func (inv *Inventory) SetSampling(first, every int) {
	inv.first, inv.every, inv.fixed = first, every, true
}

// Observer returns the Observer of stream, creating it on first use.
func (inv *Inventory) Observer(stream string) *Observer {
	o := inv.obs[stream]
	if o == nil {
		o = NewObserver(stream)
		if inv.fixed {
			o.SetSampling(inv.first, inv.every)
		}
		inv.obs[stream] = o
	}
	return o
}

// Observe notes the fields of one raw record of stream.
func (inv *Inventory) Observe(stream string, raw []byte) { inv.Observer(stream).Observe(raw) }

// ObserveMembers notes the fields of one record of stream given as its
// members (see Observer.ObserveMembers).
func (inv *Inventory) ObserveMembers(stream string, members Members) {
	inv.Observer(stream).ObserveMembers(members)
}

// Merge adds other's observations to inv.
func (inv *Inventory) Merge(other *Inventory) {
	for s, o := range other.obs {
		inv.Observer(s).Merge(o)
	}
}

// Streams returns the streams observed, sorted.
func (inv *Inventory) Streams() []string {
	out := make([]string, 0, len(inv.obs))
	for s := range inv.obs {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Records is the number of records of stream observed (the sample).
func (inv *Inventory) Records(stream string) int64 {
	if o := inv.obs[stream]; o != nil {
		return o.records
	}
	return 0
}

// Fields returns every observed field, sorted by stream and path, with the
// columns of m.
func (inv *Inventory) Fields(m Mapping) []Field {
	var out []Field
	for _, s := range inv.Streams() {
		out = append(out, inv.obs[s].Fields(m[s])...)
	}
	return out
}

// Known is the set of field paths per stream known before a run (read from
// source_fields).
type Known map[string]map[string]bool

// KnownOf builds the Known set of fields.
func KnownOf(fields []Field) Known {
	k := Known{}
	for _, f := range fields {
		if k[f.Stream] == nil {
			k[f.Stream] = map[string]bool{}
		}
		k[f.Stream][f.Path] = true
	}
	return k
}

// parentPath returns the path of the object or collection that holds path
// ("" for a top-level field).
func parentPath(path string) string {
	if strings.HasSuffix(path, "[]") {
		return path[:len(path)-2]
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}
