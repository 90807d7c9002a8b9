package transform

import (
	"encoding/json"
	"strings"
	"testing"
)

// recordJSONCases are valid JSON values, as extract's decoder delivers a
// record's Raw, plain and odd.
var recordJSONCases = []string{
	`{"b":1, "a":"Ș"}`,
	`{"a":"x\u0000y"}`,
	`["\ud800"]`,
	`["\uD83D\uDE00"]`,
	`{"n":12345678901234567890.123456789,"z":"\u0000"}`,
	`{"to":[],"cc":{"12":{"email":"a@b.c"}},"has_attachments":null}`,
	"\"a\xffb\"",
	`"é \u00e9 \" \\ \/"`,
	``,
}

// TestRecordJSON: for a valid JSON value, recordJSON (which trusts the
// decoder for the syntax) gives exactly what CleanJSON gives.
func TestRecordJSON(t *testing.T) {
	for _, in := range recordJSONCases {
		if got, want := string(recordJSON(json.RawMessage(in))), string(CleanJSON(json.RawMessage(in))); got != want {
			t.Errorf("recordJSON(%q) = %s, CleanJSON gives %s", in, got, want)
		}
	}
}

func FuzzRecordJSON(f *testing.F) {
	for _, in := range recordJSONCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 0 && !json.Valid(in) {
			return // not what the decoder delivers
		}
		got, want := recordJSON(in), CleanJSON(in)
		if string(got) != string(want) {
			t.Fatalf("recordJSON(%q) = %s, CleanJSON gives %s", in, got, want)
		}
		if !json.Valid(got) {
			t.Fatalf("recordJSON(%q) = %s: not JSON", in, got)
		}
	})
}

// TestCleanJSONDeepNesting: JSON nested as deep as extract keeps (9 000
// levels) is stored as it is; deeper than encoding/json takes, it is stored
// as a JSON string of its bytes (still a valid jsonb value) — never lost.
func TestCleanJSONDeepNesting(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + `"\u0000"` + strings.Repeat(`}`, n) }
	plain := strings.Repeat(`[`, 9000) + strings.Repeat(`]`, 9000)
	if got := string(CleanJSON(json.RawMessage(plain))); got != plain {
		t.Fatalf("9000 levels changed")
	}
	if got := CleanJSON(json.RawMessage(deep(9000))); !json.Valid(got) || !strings.HasPrefix(string(got), `{"a":{"a":`) {
		t.Fatalf("9000 levels with a NUL: %.40s", got)
	}
	got := CleanJSON(json.RawMessage(deep(12000)))
	var s string
	if err := json.Unmarshal(got, &s); err != nil || !strings.HasPrefix(s, `{"a":{"a":`) {
		t.Fatalf("12000 levels: %.40s (%v)", got, err)
	}
}
