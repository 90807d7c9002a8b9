package engine

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/transform"
)

// tableInventory is the inventory name of the records whose table is
// name: the first endpoint of its stream that fills it (a list before its
// detail); the table's name when no stream declares it.
func (e *Engine) tableInventory(name string) string {
	t, s, ok := e.tableOf(name)
	if !ok {
		return name
	}
	for _, ep := range s.Endpoints {
		if t.FillsFrom(ep.Name) {
			return ep.InventoryName()
		}
	}
	return name
}

// bodyWatch is what the client's hook tells of the bodies of the run in
// progress, per inventory name (the records of one endpoint): successful responses, those decoded from a declared
// charset, those that declared none (or one no registry knows) and were not
// valid UTF-8, with the charsets that would decode them cleanly. It is fed
// by Engine.ObserveRequest and reset at each run's start (one run at a
// time: the sync lock).
type bodyWatch struct {
	mu      sync.Mutex
	streams map[string]*bodyStats
}

type bodyStats struct {
	text      bool // the endpoint answers text/plain (a date-windowed list)
	responses int64
	decoded   map[string]int64 // by charset
	invalid   int64
	hints     map[string]int64 // CharsetHint of the invalid ones
	unknown   map[string]int64 // charset labels no registry knows
}

func (w *bodyWatch) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.streams = nil
}

// observe books one request's body, its records named name in the
// inventory (text: its endpoint answers text/plain).
func (w *bodyWatch) observe(info extract.RequestInfo, name string, text bool) {
	if info.Status < 200 || info.Status >= 300 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.streams == nil {
		w.streams = map[string]*bodyStats{}
	}
	s := w.streams[name]
	if s == nil {
		s = &bodyStats{text: text, decoded: map[string]int64{}, hints: map[string]int64{}, unknown: map[string]int64{}}
		w.streams[name] = s
	}
	s.responses++
	if info.Charset != "" {
		s.decoded[info.Charset]++
	}
	if info.UnknownCharset != "" {
		s.unknown[info.UnknownCharset]++
	}
	if info.InvalidUTF8 {
		s.invalid++
		s.hints[info.CharsetHint]++
	}
}

// report logs the charsets bodies were decoded from and returns the
// invalid_utf8 warnings, one per stream that had such bodies.
func (w *bodyWatch) report(log *zap.Logger) []inventory.Warning {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ws []inventory.Warning
	for _, name := range slices.Sorted(maps.Keys(w.streams)) {
		s := w.streams[name]
		for cs, n := range s.decoded {
			log.Info("response bodies decoded from the charset they declared", zap.String("stream", name),
				zap.String("charset", cs), zap.Int64("responses", n), zap.Int64("of", s.responses))
		}
		if s.invalid == 0 {
			continue
		}
		ws = append(ws, invalidUTF8Warning(name, s))
	}
	return ws
}

// invalidUTF8Warning is the warning of stream name's bodies that were not
// valid UTF-8, naming the charsets most of them decode cleanly in.
func invalidUTF8Warning(name string, s *bodyStats) inventory.Warning {
	hint := ""
	for h, n := range s.hints {
		if h != "" && (hint == "" || n > s.hints[hint] || n == s.hints[hint] && h < hint) {
			hint = h
		}
	}
	var candidates []string
	if hint != "" {
		candidates = strings.Split(hint, ", ")
	}
	msg := fmt.Sprintf("%s: %d of %d responses were not valid UTF-8 and did not declare their charset; their invalid bytes were stored as U+FFFD", name, s.invalid, s.responses)
	if len(s.unknown) > 0 {
		msg += fmt.Sprintf(" (the charset some declared is unknown: %s)", strings.Join(slices.Sorted(maps.Keys(s.unknown)), ", "))
	}
	reason := "none of ISO-8859-1, windows-1252, ISO-8859-2 or windows-1250 decodes them cleanly"
	if len(candidates) > 0 {
		reason = "they decode cleanly as " + candidates[0]
		if len(candidates) > 1 {
			reason += " (also " + strings.Join(candidates[1:], ", ") + ")"
		}
		mediaType := "application/json"
		if s.text {
			mediaType = "text/plain"
		}
		reason += "; the service should declare it, e.g. Content-Type: " + mediaType + "; charset=" + candidates[0]
	}
	return inventory.Warning{Kind: inventory.KindInvalidUTF8, Stream: name, Records: s.responses, Count: s.invalid,
		Share: share(s.invalid, s.responses), Reason: reason, Candidates: candidates, Message: msg + "; " + reason}
}

// dupWatch counts, per table, the records of the run dropped because a
// later record of the same page had the same id (the last one wins), and
// the records of those tables received; its warnings name the table's
// records in the inventory (Engine.tableInventory).
type dupWatch struct {
	mu      sync.Mutex
	records map[string]int64 // by table
	dups    map[string]int64
}

// count books a committed page's batch.
func (w *dupWatch) count(b *transform.Batch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.records == nil {
		w.records, w.dups = map[string]int64{}, map[string]int64{}
	}
	for table, n := range b.Coverage.Duplicates {
		w.dups[table] += int64(n)
	}
	for table, n := range b.Coverage.Rows {
		w.records[table] += int64(n)
	}
}

// warnings are the duplicate_id warnings, one per stream and table;
// nameOf names a table's records in the inventory.
func (w *dupWatch) warnings(nameOf func(table string) string) []inventory.Warning {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ws []inventory.Warning
	for _, table := range slices.Sorted(maps.Keys(w.dups)) {
		n, recs := w.dups[table], w.records[table]+w.dups[table] // the rows stored and the records dropped
		name := nameOf(table)
		ws = append(ws, inventory.Warning{Kind: inventory.KindDuplicateID, Stream: name, Column: table, Records: recs, Count: n,
			Share: share(n, recs),
			Message: fmt.Sprintf("%s: %d of %d records had the id of a later record of the same page; of each id the last one was stored in %s (last wins)",
				name, n, recs, table)})
	}
	return ws
}

// share is n/of rounded to three decimals (0 when of is 0).
func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*1000) / 1000
}
