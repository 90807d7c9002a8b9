package transform

import (
	"encoding/json"
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
