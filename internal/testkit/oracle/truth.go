// Package oracle turns the sandbox's ground truth (GET /_sandbox/truth, see
// sandbox.Server.Truth) into what a correct sync must produce: the rows every
// warehouse table should hold, and the fewest requests a first sync can
// cost.
//
// It is the reliability suite's and the benchmarks' independent standard, so
// it shares no code with the worker: it imports neither package extract nor
// package transform (nor load or engine), and reads the truth's canonical
// records with encoding/json, as plainly as the warehouse contract describes
// the rows. A bug in the worker's decoders or transforms therefore cannot
// appear on both sides of a comparison.
//
// Where the contract leaves a choice open, the oracle states the worker's
// documented behaviour once, in its own words: text is kept as given except
// the person-like fields (account_manager, contact names and details, payee,
// team members' names and roles, participants' attributes), which are
// trimmed, with an empty result stored as NULL; identifiers and most text
// store "" as NULL, while subject, message, type_name and history values
// keep "".
package oracle

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Line is one line of the ground truth: one record of one stream.
type Line struct {
	// Stream is the truth's stream name: brands, brand_details, contacts,
	// projects, budgets, invoices, collections, payments, profitability,
	// summary or communications, or the inventory name of a list per brand
	// the sandbox serves from its declaration.
	Stream string `json:"stream"`
	// Key is the record's key: its id (profitability: level:entity:period,
	// summary: the period).
	Key string `json:"key"`
	// BrandID is the brand of a contact, or of a record of another list
	// asked per brand (one the sandbox serves from its declaration, whose
	// Stream is the list's inventory name).
	BrandID string `json:"brand_id"`
	// Bad marks a record the sandbox made malformed: the worker must reject it.
	Bad bool `json:"bad"`
	// Record is the record as the API serves it in canonical shape.
	Record json.RawMessage `json:"record"`
}

// Truth is the sandbox's dataset at one moment: its lines by stream, in the
// truth's order.
type Truth map[string][]Line

// ErrMalformedTruth is returned when the truth, or a record it does not
// mark bad, cannot be read.
var ErrMalformedTruth = errors.New("malformed ground truth")

// Parse splits a whole truth answer into lines. Each line's record is its
// last field, so only the small head of a line is decoded as JSON; the
// records stay sub-slices of body.
func Parse(body []byte) (Truth, error) {
	out := Truth{}
	marker := []byte(`,"record":`)
	for line := range bytes.Lines(body) {
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		i := bytes.Index(line, marker)
		if i < 0 || !bytes.HasSuffix(line, []byte("}")) {
			return nil, fmt.Errorf("parse truth line %.200q: no record: %w", line, ErrMalformedTruth)
		}
		var l Line
		if err := json.Unmarshal(append(bytes.Clone(line[:i]), '}'), &l); err != nil {
			return nil, fmt.Errorf("parse truth line %.200q: %v: %w", line, err, ErrMalformedTruth)
		}
		l.Record = json.RawMessage(line[i+len(marker) : len(line)-1])
		if !json.Valid(l.Record) {
			return nil, fmt.Errorf("parse truth line %.200q: the record is not JSON: %w", line, ErrMalformedTruth)
		}
		out[l.Stream] = append(out[l.Stream], l)
	}
	return out, nil
}

// Read is Parse of everything r yields.
func Read(r io.Reader) (Truth, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read truth: %w", err)
	}
	return Parse(body)
}

// Counts returns the good and the bad records of a stream.
func (t Truth) Counts(stream string) (good, bad int) {
	for _, l := range t[stream] {
		if l.Bad {
			bad++
		} else {
			good++
		}
	}
	return good, bad
}

// Bad counts the malformed records of every stream.
func (t Truth) Bad() int {
	n := 0
	for s := range t {
		_, b := t.Counts(s)
		n += b
	}
	return n
}

// EmailIDs returns the record ids of the communications, ascending, with
// whether each is malformed.
func (t Truth) EmailIDs() (ids []int64, bad []bool, err error) {
	type e struct {
		id  int64
		bad bool
	}
	es := make([]e, 0, len(t["communications"]))
	for _, l := range t["communications"] {
		id, err := strconv.ParseInt(l.Key, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("read communication key %q: %w", l.Key, ErrMalformedTruth)
		}
		es = append(es, e{id, l.Bad})
	}
	slices.SortFunc(es, func(a, b e) int { return cmp.Compare(a.id, b.id) })
	for _, x := range es {
		ids = append(ids, x.id)
		bad = append(bad, x.bad)
	}
	return ids, bad, nil
}
