package extract

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// stringEndPlain is stringEnd read forwards, the way the grammar reads a
// string: from i+1, a backslash escapes the byte after it, and the first
// quote not escaped ends the string (len(b) if none). stringEnd counts the
// backslashes before each quote instead.
func stringEndPlain(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(b)
}

// sameScan compares the one-pass scan with what it stands for: gjson.Valid
// and maxNesting, and stringEnd with stringEndPlain at every quote.
func sameScan(b []byte) error {
	var spans []span
	depth, ok := scanJSON(b, &spans)
	if d2, ok2 := scanJSON(b, nil); d2 != depth || ok2 != ok {
		return fmt.Errorf("scanJSON without spans: %d %v, with: %d %v", d2, ok2, depth, ok)
	}
	if want := gjson.ValidBytes(b); ok != want {
		return fmt.Errorf("scanJSON ok %v, gjson.Valid %v", ok, want)
	}
	if want := maxNesting(b); ok && depth != want {
		return fmt.Errorf("scanJSON depth %d, maxNesting %d", depth, want)
	}
	if ok {
		n := 0
		for i := 0; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEndPlain(b, i)
			case '{', '[':
				if n >= len(spans) || spans[n].open != i {
					if d := nestingAt(b, i); d <= spanDepth {
						return fmt.Errorf("no span for the container at %d (depth %d)", i, d)
					}
					continue
				}
				if want := matchBracket(b, i); spans[n].end != want {
					return fmt.Errorf("span at %d ends at %d, want %d", i, spans[n].end, want)
				}
				n++
			}
		}
		if n != len(spans) {
			return fmt.Errorf("%d spans, %d found", len(spans), n)
		}
	}
	for i := range b {
		if b[i] == '"' {
			if got, want := stringEnd(b, i), stringEndPlain(b, i); got != want {
				return fmt.Errorf("stringEnd(%d) = %d, want %d", i, got, want)
			}
		}
	}
	return nil
}

func TestScanJSONMatchesGJSON(t *testing.T) {
	cases := []string{
		`{"data":{"rows":{"17":{"email":{"subject":"Fișiere pe \\\\server\\proiecte \u00e9 \"q\"","size":-1.5e+3}}},"total":1}}`,
		`[{"id":1},{"id":"2","name":"Proiect lung de tot, cu multe cuvinte"}]`,
		" \t\r\n{ \"a\" : [ 1 , 2.5 , -0 , 1e9 , true , false , null , \"\" , { } , [ ] ] } \n",
		`"s"`, `0`, `-0.5E-3`, `true`, `null`, `[]`, `{}`, `"\/\b\f\n\r\t\u00Af"`,
		``, ` `, `{`, `[`, `}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":01}`, `[-]`, `[1.]`, `[1e]`, `[1e+]`,
		`[.5]`, `[+1]`, `[tru]`, `[nul]`, `[fals]`, `[truex]`, `{"a":1}}`, `{"a":1} x`, `[1 2]`, `{1:2}`,
		`{'a':1}`, `["a\qb"]`, `["\u12"]`, `["\u12g4"]`, "[\"a\x01b\"]", "[\"tab\there\"]", `["abc\`,
		`["abcdefghijklmnop\"qrstuvwxyz\\"]`, `["\\\\\\\\\\\\\\\""]`, `[1,,2]`, `[,1]`, `{,"a":1}`,
		`{"a":1 "b":2}`, `{"a":[1}`, `[{"a":1]}`, `{"a":{"b":{"c":[[[]]]}}}`, "[\"é ș 😀 \xff\"]",
	}
	for _, c := range cases {
		if err := sameScan([]byte(c)); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
}

var scanPieces = []string{`{`, `}`, `[`, `]`, `,`, `:`, `"`, `\`, `"id"`, `"a\"b"`, `"\\"`, `"\u00e9"`,
	`"long string past eight bytes"`, `0`, `-1`, `12.50`, `1e9`, `-0.5E-3`, `true`, `false`, `null`,
	` `, "\n", "\t", "\x01", `x`, `01`, `.`, `e`, `-`}

// TestScanJSONProperty compares the scan with gjson.Valid and maxNesting on
// random well-formed documents, damaged now and then, and on random strings
// of JSON's pieces.
func TestScanJSONProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2028))
	for i := range 20000 {
		var b strings.Builder
		if i%2 == 0 {
			genJSON(r, &b, 0)
		} else {
			for range r.IntN(24) {
				b.WriteString(scanPieces[r.IntN(len(scanPieces))])
			}
		}
		s := b.String()
		if i%5 == 0 && len(s) > 2 {
			j := r.IntN(len(s))
			const junk = "{}[],:\"\\ 0e-.\x00a"
			s = s[:j] + string(junk[r.IntN(len(junk))]) + s[j+1:]
		}
		if err := sameScan([]byte(s)); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	}
}

func genJSON(r *rand.Rand, b *strings.Builder, depth int) {
	k := r.IntN(10)
	if depth > 5 && k < 4 {
		k += 4
	}
	sp := func() string { return []string{"", "", " ", "\n\t"}[r.IntN(4)] }
	switch k {
	case 0, 1:
		b.WriteString("{" + sp())
		for j := range r.IntN(5) {
			if j > 0 {
				b.WriteString(sp() + "," + sp())
			}
			fmt.Fprintf(b, `"%s"%s:%s`, []string{"id", "email", "a\\\"b", "\\u0069d", "rows", "data"}[r.IntN(6)], sp(), sp())
			genJSON(r, b, depth+1)
		}
		b.WriteString(sp() + "}")
	case 2, 3:
		b.WriteString("[" + sp())
		for j := range r.IntN(5) {
			if j > 0 {
				b.WriteString(sp() + "," + sp())
			}
			genJSON(r, b, depth+1)
		}
		b.WriteString(sp() + "]")
	case 4, 5:
		b.WriteString([]string{`"plain"`, `"é ș \u00e9 long enough to take the wide path"`, `"q\"uote\\"`, `""`,
			`"\/\b\f\n\r\t"`, `"\ud83d\ude00"`, `"\\\\\\"`}[r.IntN(7)])
	case 6, 7:
		b.WriteString([]string{"0", "-1", "12.50", "1e9", "-0.5E-3", "1250.50", "9007199254740993"}[r.IntN(7)])
	default:
		b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
	}
}

// FuzzScanJSON checks the scan against gjson.Valid and maxNesting on any
// bytes.
func FuzzScanJSON(f *testing.F) {
	f.Add([]byte(`{"data":{"rows":[{"id":1,"s":"a\"b\\"}]}}`))
	f.Add([]byte(`[1,-0.5e+3,true,null,"\u00e9"]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := sameScan(b); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
	})
}

// nestingAt is the depth of the container opening at i (1: the document).
func nestingAt(b []byte, i int) int {
	return openAt(b, i) + 1
}

// openAt counts the containers open before i (strings skipped).
func openAt(b []byte, i int) int {
	d := 0
	for j := 0; j < i; j++ {
		switch b[j] {
		case '"':
			j = stringEndPlain(b, j)
		case '{', '[':
			d++
		case '}', ']':
			d--
		}
	}
	return d
}
