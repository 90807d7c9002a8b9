package inventory

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Kind is the kind of a coverage warning.
type Kind string

// Kinds of coverage warnings (sync_runs.warnings[].kind, the metric's label).
const (
	// KindNullColumn: a mapped column was NULL in at least NullShare of the
	// records the run received.
	KindNullColumn Kind = "null_column"
	// KindRejectedStream: at least RejectedShare of a stream's records were
	// rejected.
	KindRejectedStream Kind = "rejected_stream"
	// KindNewField: a field never seen before in the stream.
	KindNewField Kind = "new_field"
)

// Thresholds of the coverage warnings.
const (
	NullShare     = 0.95
	RejectedShare = 0.50
)

// Warning is one coverage warning. Its JSON form is stable (the keys of
// sync_runs.warnings): kind, stream, column, field, records, count, share,
// reason, candidates, message; empty optional members are left out.
type Warning struct {
	Kind   Kind   `json:"kind"`
	Stream string `json:"stream"`
	// Column is the warehouse column, "table.column" (null_column).
	Column string `json:"column,omitempty"`
	// Field is the source field path: the mapped field (null_column) or the
	// new one (new_field).
	Field string `json:"field,omitempty"`
	// Records is the number of records of the stream the run received.
	Records int64 `json:"records"`
	// Count is the number of records concerned: NULL in the column, rejected,
	// or carrying the new field.
	Count int64 `json:"count"`
	// Share is Count/Records, rounded to three decimals.
	Share float64 `json:"share"`
	// Reason is the most common reject reason (rejected_stream).
	Reason string `json:"reason,omitempty"`
	// Candidates are unmapped fields of the stream that look like the
	// column's replacement (similar name, compatible JSON type), best first.
	Candidates []string `json:"candidates,omitempty"`
	// Message says it in one sentence for the log and status.
	Message string `json:"message"`
}

// Column is a mapped warehouse column of a stream and how the run filled it.
type Column struct {
	// Column is "table.column".
	Column string
	// Field is the source field path the column reads (Path syntax).
	Field string
	// Types are the JSON types a value of the column may come in (see
	// TypesFor); empty means any.
	Types []string
	// Null is the number of the run's records whose value was NULL or absent
	// (of its Rows, when set).
	Null int64
	// Rows is the number of rows the column was read for, when they are not
	// the stream's records: the elements of a child table (team members),
	// the people of the e-mails. 0 means StreamRun.Records.
	Rows int64
	// Sparse marks a column that is NULL for most records by nature
	// (closed_at, delivered_at, message): it warns only when its field was
	// absent from every record, which is a renamed field, not sparse data.
	Sparse bool
}

// StreamRun is what a run received of one stream.
type StreamRun struct {
	Stream string
	// Records is the number of records received (loaded and rejected).
	Records int64
	// Observed is the number of records the inventory observed (its sample,
	// Inventory.Records); 0 means Records.
	Observed int64
	// Columns are the stream's mapped columns.
	Columns []Column
	// Rejects counts rejected records by reason.
	Rejects map[string]int64
}

// Input is everything Coverage needs: plain values, no I/O.
type Input struct {
	Streams []StreamRun
	// Seen is the run's inventory (Inventory.Fields with the run's mapping):
	// counts of this run only.
	Seen []Field
	// Known are the fields in source_fields before the run. A stream with no
	// known field is seen for the first time: its fields are the baseline,
	// not new.
	Known Known
}

// Coverage returns the run's warnings, sorted by stream, kind and
// column or field.
func Coverage(in Input) []Warning {
	seen := map[string][]Field{}
	for _, f := range in.Seen {
		seen[f.Stream] = append(seen[f.Stream], f)
	}
	var out []Warning
	for _, sr := range in.Streams {
		if sr.Records <= 0 {
			continue
		}
		fields := seen[sr.Stream]
		for _, c := range sr.Columns {
			if w, ok := nullColumn(sr, c, fields); ok {
				out = append(out, w)
			}
		}
		if w, ok := rejectedStream(sr); ok {
			out = append(out, w)
		}
	}
	out = append(out, newFields(in.Seen, in.Known)...)
	slices.SortStableFunc(out, func(a, b Warning) int {
		return cmp.Or(strings.Compare(a.Stream, b.Stream), strings.Compare(string(a.Kind), string(b.Kind)),
			strings.Compare(a.Column, b.Column), strings.Compare(a.Field, b.Field))
	})
	return out
}

func share(n, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*1000) / 1000
}

func nullColumn(sr StreamRun, c Column, fields []Field) (Warning, bool) {
	var present int64
	for _, f := range fields {
		if f.Path == c.Field {
			present = f.Count
		}
	}
	if c.Sparse && present > 0 {
		return Warning{}, false
	}
	of, what := sr.Records, sr.Stream+" records"
	if c.Rows > 0 {
		of, what = c.Rows, "rows (from "+strconv.FormatInt(sr.Records, 10)+" "+sr.Stream+" records)"
	}
	if c.Null <= 0 || float64(c.Null) < NullShare*float64(of) {
		return Warning{}, false
	}
	observed := sr.Observed
	if observed <= 0 {
		observed = sr.Records
	}
	w := Warning{Kind: KindNullColumn, Stream: sr.Stream, Column: c.Column, Field: c.Field,
		Records: sr.Records, Count: c.Null, Share: share(c.Null, of), Candidates: Candidates(c, fields, observed)}
	msg := fmt.Sprintf("%s is empty (NULL) in %d of %d %s; its field %s was present in %d of the %d records observed",
		c.Column, c.Null, of, what, c.Field, present, observed)
	if len(w.Candidates) > 0 {
		msg += "; unmapped fields that look like it: " + strings.Join(w.Candidates, ", ") +
			" (map one with AGENCY_FIELD_MAP=" + c.Column + "=" + w.Candidates[0] + ")"
	} else {
		msg += "; no unmapped field looks like it"
	}
	w.Message = msg
	return w, true
}

func rejectedStream(sr StreamRun) (Warning, bool) {
	var n int64
	reason, most := "", int64(0)
	for r, k := range sr.Rejects {
		n += k
		if k > most || k == most && r < reason {
			reason, most = r, k
		}
	}
	if n == 0 || float64(n) < RejectedShare*float64(sr.Records) {
		return Warning{}, false
	}
	return Warning{Kind: KindRejectedStream, Stream: sr.Stream, Records: sr.Records, Count: n,
		Share: share(n, sr.Records), Reason: reason,
		Message: fmt.Sprintf("%d of %d %s records were rejected, most (%d) because: %s — the service's shapes "+
			"probably differ from the mapping (run agencysync check)", n, sr.Records, sr.Stream, most, reason)}, true
}

// newFields announces the fields absent from Known that the mapping does
// not read, once: a field whose parent object is announced too is covered
// by its parent's warning, and a stream that Known does not hold at all is
// a first inventory, not news.
func newFields(seen []Field, known Known) []Warning {
	isNew := map[string]bool{}
	mapped := map[string]bool{} // a field a column reads, and the objects that hold one
	for _, f := range seen {
		if k := known[f.Stream]; len(k) > 0 && !k[f.Path] {
			isNew[f.Stream+"\x00"+f.Path] = true
		}
		if f.MappedColumn != "" {
			for p := f.Path; p != ""; p = parentPath(p) {
				mapped[f.Stream+"\x00"+p] = true
			}
		}
	}
	var out []Warning
	for _, f := range seen {
		// A field the mapping reads (or whose members it reads: the bcc
		// recipients of the first e-mail that has any) is no news: its
		// values land in their columns.
		if !isNew[f.Stream+"\x00"+f.Path] || mapped[f.Stream+"\x00"+f.Path] {
			continue
		}
		covered := false
		for p := parentPath(f.Path); p != ""; p = parentPath(p) {
			if isNew[f.Stream+"\x00"+p] && !mapped[f.Stream+"\x00"+p] {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		out = append(out, Warning{Kind: KindNewField, Stream: f.Stream, Field: f.Path, Count: f.Count,
			Message: fmt.Sprintf("new field %s (%s) in %s records, seen in %d; it is kept in raw",
				f.Path, strings.Join(f.Types, "|"), f.Stream, f.Count)})
	}
	return out
}

// TypesFor returns the JSON types that can fill a column of a warehouse
// type: "text", "id", "date", "timestamptz", "numeric", "bigint",
// "integer", "boolean" or "jsonb" (case-insensitive; nil means any).
// Strings fill every scalar column (a PHP encoder writes "42"), and a flag
// may be 1 or "1".
func TypesFor(columnType string) []string {
	switch strings.ToLower(columnType) {
	case "text", "id":
		return []string{TypeNumber, TypeString}
	case "date", "timestamptz", "timestamp":
		return []string{TypeString}
	case "numeric", "bigint", "integer", "int", "money":
		return []string{TypeNumber, TypeString}
	case "boolean", "bool":
		return []string{TypeBoolean, TypeNumber, TypeString}
	}
	return nil
}

// minCandidateShare is the share of the run's records that must carry a
// field for it to be a candidate replacement.
const minCandidateShare = 0.5

// minSimilarity is the least name similarity (0..1) of a candidate.
const minSimilarity = 0.4

// Candidates returns the unmapped fields of fields that look like the
// replacement of column c: carried by at least half of the records observed
// (records: the sample the counts of fields are counts of), of a
// compatible JSON type (null and false, a PHP encoder's missing value, are
// compatible with everything) and of a similar name; best first, at most
// three.
func Candidates(c Column, fields []Field, records int64) []string {
	want := typeSetOf(c.Types)
	type scored struct {
		path  string
		score float64
	}
	var got []scored
	for _, f := range fields {
		if f.MappedColumn != "" || f.Path == c.Field || float64(f.Count) < minCandidateShare*float64(records) {
			continue
		}
		ts := typeSetOf(f.Types) &^ (tNull | tBoolean)
		if typeSetOf(f.Types)&tBoolean != 0 && want&tBoolean != 0 {
			ts |= tBoolean
		}
		if ts == 0 || want != 0 && ts&want == 0 {
			continue
		}
		if s := Similarity(c.Field, f.Path); s >= minSimilarity {
			got = append(got, scored{f.Path, s})
		}
	}
	slices.SortFunc(got, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(a.path, b.path))
	})
	out := make([]string, 0, min(3, len(got)))
	for _, g := range got[:min(3, len(got))] {
		out = append(out, g.path)
	}
	return out
}

// FieldPath returns the inventory path of a column's source field: field
// itself for a table of whole records, array + "[]." + field for a child
// table whose elements sit at array in the record (stream.Table.Array).
func FieldPath(array, field string) string {
	if array == "" {
		return field
	}
	return array + "[]." + field
}

// EstimateNull estimates, from the Observer's sample, how many of received
// records left path without a value (absent, null or false): for callers
// that do not count the NULLs of a column while transforming. With nothing
// observed it is received.
func (o *Observer) EstimateNull(path string, received int64) int64 {
	if o.records == 0 {
		return received
	}
	missing := o.records - o.Filled(path)
	return int64(math.Round(float64(received) * float64(missing) / float64(o.records)))
}

// quoted and digits find what ReasonClass leaves out of a reject reason.
var (
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	digits = regexp.MustCompile(`[0-9]+`)
)

// ReasonClass returns the class of a reject reason (rejected_records.error)
// that rejected_stream warnings count by: quoted values become "…" and
// numbers (ids, pages, positions) N, so that "budget 1042: amount
// \"1.250,50 RON\" is not a decimal number" and the same defect of another
// record fall in one class, and no value of a record reaches a warning.
func ReasonClass(reason string) string {
	return digits.ReplaceAllString(quoted.ReplaceAllString(reason, `"…"`), "N")
}
