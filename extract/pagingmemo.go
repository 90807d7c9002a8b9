package extract

import (
	"maps"
	"strings"
	"sync"

	"github.com/agencysync/agencysync/stream"
)

// PagingFacts is what a client learned of how one list endpoint answers
// under one pagination (style and parameter names): the evidence a later
// listing's proof of completeness may rest on.
type PagingFacts struct {
	// Honoured is the largest page size the server was seen to answer in
	// full as asked (a page of exactly that many rows): a shorter page
	// asked with at most that size is the last.
	Honoured int `json:"honoured,omitempty"`
	// Cap is a page size the server answers at most while asked more and
	// not saying so (a silent cap); 0 when none was seen.
	Cap int `json:"cap,omitempty"`
	// Cursor: the server was seen naming a next page (cursor style), so an
	// answer that names none is the last.
	Cursor bool `json:"cursor,omitempty"`
}

// merge returns f with what o adds: the larger honoured size, a cap seen
// (dropped once a larger page size is honoured), the cursor seen.
func (f PagingFacts) merge(o PagingFacts) PagingFacts {
	f.Honoured = max(f.Honoured, o.Honoured)
	if o.Cap > 0 {
		f.Cap = o.Cap
	}
	if f.Cap > 0 && f.Honoured > f.Cap {
		f.Cap = 0
	}
	f.Cursor = f.Cursor || o.Cursor
	return f
}

// PagingKey is the PagingMemo key of endpoint under p: its name, style and
// parameter names ("brands offset offset/limit"); the largest page size is
// left out (facts hold for any).
func PagingKey(endpoint string, p stream.Pagination) string {
	return strings.Join([]string{endpoint, string(p.Style), p.Page + "/" + p.Size + "/" + p.Offset + "/" + p.Cursor}, " ")
}

// PagingMemo holds PagingFacts by PagingKey. A client and its copies share
// one (a new client starts an empty one); the engine seeds it from the
// warehouse at the start of a run (WithPagingMemo) and stores what Changed
// returns. Safe for concurrent use.
type PagingMemo struct {
	mu      sync.Mutex
	facts   map[string]PagingFacts
	changed map[string]bool
}

// NewPagingMemo returns a memo holding known (copied).
func NewPagingMemo(known map[string]PagingFacts) *PagingMemo {
	m := &PagingMemo{facts: maps.Clone(known), changed: map[string]bool{}}
	if m.facts == nil {
		m.facts = map[string]PagingFacts{}
	}
	return m
}

// Facts returns what is known under key.
func (m *PagingMemo) Facts(key string) PagingFacts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.facts[key]
}

// Learn merges f into the facts under key.
func (m *PagingMemo) Learn(key string, f PagingFacts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.facts[key]
	if n := old.merge(f); n != old {
		m.facts[key] = n
		m.changed[key] = true
	}
}

// Changed returns the facts learned since the last call (by key) and
// forgets that they changed.
func (m *PagingMemo) Changed() map[string]PagingFacts {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]PagingFacts, len(m.changed))
	for k := range m.changed {
		out[k] = m.facts[k]
	}
	clear(m.changed)
	return out
}
