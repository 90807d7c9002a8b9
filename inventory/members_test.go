package inventory

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// membersOf lists the members of raw, reading the members of the objects
// named in wrappers as the record's own (as stream.View does for brand_info).
func membersOf(raw string, wrappers ...string) Members {
	return func(yield func(string, gjson.Result) bool) {
		gjson.Parse(raw).ForEach(func(k, v gjson.Result) bool {
			if slices.Contains(wrappers, k.Str) && v.IsObject() {
				cont := true
				v.ForEach(func(ik, iv gjson.Result) bool {
					cont = yield(ik.Str, iv)
					return cont
				})
				return cont
			}
			return yield(k.Str, v)
		})
	}
}

// TestObserveMembers: a brand detail as the service sends it (brand_info,
// general_info, metadata) observed through its members has the paths of
// the columns' fields (name, financial_summary.invoiced), not brand_info.*;
// and the sample is the same as Observe's: the first records, then one in
// every, members listed only for the records sampled.
func TestObserveMembers(t *testing.T) {
	detail := `{"brand_info":{"id":"7","name":"Carpați Foods","financial_summary":{"invoiced":1250.50,"currency":"RON"}},` +
		`"general_info":{"city":"Cluj-Napoca","address":null},"metadata":{"tags":["retail"],"created_by":12}}`
	o := NewObserver("brand_details")
	o.SetSampling(0, 1)
	o.ObserveMembers(membersOf(detail, "brand_info"))
	var paths []string
	for _, f := range o.Fields(nil) {
		paths = append(paths, f.Path+":"+strings.Join(f.Types, "|"))
	}
	want := []string{"financial_summary:object", "financial_summary.currency:string", "financial_summary.invoiced:number",
		"general_info:object", "general_info.address:null", "general_info.city:string", "id:string",
		"metadata:object", "metadata.created_by:number", "metadata.tags:array", "metadata.tags[]:string", "name:string"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths\n got %v\nwant %v", paths, want)
	}

	listed := 0
	s := NewObserver("brands")
	s.SetSampling(2, 5)
	for range 12 {
		s.ObserveMembers(func(yield func(string, gjson.Result) bool) {
			listed++
			yield("name", gjson.Parse(`"x"`))
		})
	}
	// offered 1, 2 (first two), then 5 and 10.
	if listed != 4 || s.Records() != 4 || s.Offered() != 12 || s.Seen("name") != 4 {
		t.Errorf("members listed %d times, records %d, offered %d, name seen %d; want 4, 4, 12, 4",
			listed, s.Records(), s.Offered(), s.Seen("name"))
	}
}

// TestCoverageChildRows: a child table's column (team members' role) is
// NULL-counted against its rows, not the stream's records.
func TestCoverageChildRows(t *testing.T) {
	seen := []Field{
		{Stream: "project_details", Path: "team[].title", Types: []string{TypeString}, Count: 12},
		{Stream: "project_details", Path: "team[].role", Types: []string{TypeNull}, Count: 1, MappedColumn: "project_team_members.role"},
	}
	for _, c := range []struct {
		name      string
		null, of  int64
		wantShare float64
		warn      bool
	}{
		{"every member without a role", 40, 40, 1, true},
		{"a few without", 3, 40, 0, false},
		{"no rows", 0, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := Coverage(Input{Streams: []StreamRun{{Stream: "project_details", Records: 12, Columns: []Column{
				{Column: "project_team_members.role", Field: "team[].role", Types: TypesFor("text"), Null: c.null, Rows: c.of},
			}}}, Seen: seen, Known: KnownOf(seen)})
			if (len(ws) == 1) != c.warn {
				t.Fatalf("warnings %+v, want warned=%v", ws, c.warn)
			}
			if !c.warn {
				return
			}
			w := ws[0]
			if w.Share != c.wantShare || w.Count != c.null || w.Records != 12 ||
				!slices.Equal(w.Candidates, []string{"team[].title"}) ||
				!strings.Contains(w.Message, "empty (NULL) in 40 of 40 rows (from 12 project_details records)") {
				t.Errorf("warning %+v", w)
			}
		})
	}
}

func TestReasonClass(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`decode invoices page 3: amount: invalid decimal "1.250,50 RON"`, `decode invoices page N: amount: invalid decimal "…"`},
		{`value does not fit its column: size_bytes: want an integer, got "12kb"`, `value does not fit its column: size_bytes: want an integer, got "…"`},
		{`participant 2: user id "a\"b" is not a number`, `participant N: user id "…" is not a number`},
		{"invoice without amount", "invoice without amount"},
	} {
		if got := ReasonClass(c.in); got != c.want {
			t.Errorf("ReasonClass(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
