package stream

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// elementsOf lists what each calls back with, stopping after stop elements
// (-1: never).
func elementsOf(each func(fn func(key string, val gjson.Result) bool), stop int) []string {
	var out []string
	each(func(k string, v gjson.Result) bool {
		out = append(out, fmt.Sprintf("%q %v %q %q %v", k, v.Type, v.Raw, v.Str, v.Num))
		return len(out) != stop
	})
	return out
}

// sameForEach compares forEach with gjson's ForEach, the straightforward
// reading, on the value text s: all elements, and stopping after the first.
func sameForEach(s string) error {
	r := gjson.Parse(s)
	if len(s) > 0 && (s[0] == '[' || s[0] == '{') { // as View.Get gives a member's value
		r = parseValue(s)
	}
	for _, stop := range []int{-1, 1} {
		got := elementsOf(func(fn func(string, gjson.Result) bool) { forEach(r, fn) }, stop)
		want := elementsOf(func(fn func(string, gjson.Result) bool) {
			r.ForEach(func(k, v gjson.Result) bool { return fn(k.Str, v) })
		}, stop)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			return fmt.Errorf("stop %d:\n got %q\nwant %q", stop, got, want)
		}
	}
	return nil
}

func TestForEachMatchesGJSON(t *testing.T) {
	cases := []string{
		`[{"first_name":"Silviu","email":"silviu.georgescu@agentia-creativa.ro","phone":"+40 777 519 606"}]`,
		`{"84":{"first_name":"Nicoleta","phone":null},"85":null,"86":false,"87":[]}`,
		`{"first_name":"Ana","email":"ana@x.ro","user_id":12}`,
		`[null, false, [], [ ], "x", 1, -2.5e3, true, {"a":[1,{"b":"\"}"}]}]`,
		" [ \n{ } ,\t{\"a\" : 1 } ] ", `[]`, `{}`, `[ ]`, `{ }`,
		`{"a\u0062":{"x":1}}`, `{"a\"b":{}}`, `["\u00e9 \"q\"", "\ud83d\ude00"]`,
		// not well-formed: gjson's reading decides
		`[1,]`, `[1 2]`, `[01]`, `{"a":1,}`, `{"a" 1}`, `[{"a":1}`, `[1]]`, `[tru]`, `{"a":-}`, `[1.]`,
		`["\q"]`, `{'a':1}`, `[{"a":1,}]`, `[}`, `{]`,
	}
	for _, c := range cases {
		if err := sameForEach(c); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
}

// TestForEachProperty compares forEach with gjson's ForEach on random
// arrays and objects (keyed users lists among them), damaged now and then.
func TestForEachProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2027))
	for i := range 5000 {
		var b strings.Builder
		if i%2 == 0 {
			genObject(r, &b, 0)
		} else {
			b.WriteByte('[')
			for j := range r.IntN(5) {
				if j > 0 {
					b.WriteString(genSpace(r) + ",")
				}
				b.WriteString(genSpace(r))
				genValue(r, &b, 1)
			}
			b.WriteString(genSpace(r) + "]")
		}
		s := strings.TrimSpace(b.String())
		if i%7 == 0 && len(s) > 2 {
			j := r.IntN(len(s))
			const junk = "{}[],:\"\\ 0e-."
			s = s[:j] + string(junk[r.IntN(len(junk))]) + s[j+1:]
		}
		if err := sameForEach(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// FuzzForEach checks forEach against gjson's ForEach on any text.
func FuzzForEach(f *testing.F) {
	f.Add(`[{"email":"a@b"},null,[]]`)
	f.Add(`{"84":{"email":"x@y"},"85":{"first_name":"Ana"}}`)
	f.Add(`{"email":"x@y","user_id":3}`)
	f.Fuzz(func(t *testing.T, s string) {
		if err := sameForEach(s); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	})
}
