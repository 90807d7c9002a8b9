package transform

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// jsonbRiskyOracle is the straightforward reading of jsonbRisky: invalid
// UTF-8 or any of the three escapes anywhere.
func jsonbRiskyOracle(raw []byte) bool {
	return !utf8.Valid(raw) || bytes.Contains(raw, []byte(`\u0000`)) ||
		bytes.Contains(raw, []byte(`\ud`)) || bytes.Contains(raw, []byte(`\uD`))
}

func TestJSONBRiskyMatchesOracle(t *testing.T) {
	cases := []string{
		`{"a":"b"}`, `{"a":"\u0000"}`, `{"a":"\\u0000"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\uD800"}`,
		`{"a":"\u00e9"}`, `{"a":"é"}`, "{\"a\":\"\xff\"}", `\`, `\u`, `\u000`, `\ud`, `x\u0000`, `é\u0000`, ``,
	}
	for _, c := range cases {
		if got, want := jsonbRisky([]byte(c)), jsonbRiskyOracle([]byte(c)); got != want {
			t.Errorf("jsonbRisky(%q) = %v, want %v", c, got, want)
		}
	}
	r := rand.New(rand.NewPCG(14, 5))
	parts := []string{`\`, `u`, `0`, `d`, `D`, `"`, `a`, `é`, "\xff", "\xc3", `\u0000`, `\ud8`}
	for range 20000 {
		var b []byte
		for range r.IntN(12) {
			b = append(b, parts[r.IntN(len(parts))]...)
		}
		if got, want := jsonbRisky(b), jsonbRiskyOracle(b); got != want {
			t.Fatalf("jsonbRisky(%q) = %v, want %v", b, got, want)
		}
	}
}
