package stream

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// gjsonView is the straightforward view: the object's members as gjson's
// ForEach reads them, nothing split ahead.
func gjsonView(s string, t *Table) *View {
	v := &View{src: s}
	v.add(gjson.Parse(s), t, 0)
	return v
}

// sameView compares two views member by member, then the views of their
// object members (split along or on demand), and what Get and Members give.
func sameView(a, b *View, depth int) error {
	if len(a.members) != len(b.members) {
		return fmt.Errorf("%d members, want %d (%q vs %q)", len(a.members), len(b.members), keysOf(a), keysOf(b))
	}
	for i := range a.members {
		ka, kb := a.key(&a.members[i]), b.key(&b.members[i])
		va, vb := a.raw(&a.members[i]), b.raw(&b.members[i])
		if ka != kb || va != vb {
			return fmt.Errorf("member %d: %q=%s, want %q=%s", i, ka, va, kb, vb)
		}
		ra, oka := a.Get(ka)
		rb, okb := b.Get(kb)
		if oka != okb || ra.Type != rb.Type || ra.Raw != rb.Raw || ra.Str != rb.Str || ra.Num != rb.Num {
			return fmt.Errorf("Get(%q): %#v, want %#v", ka, ra, rb)
		}
		sa, sb := a.Object(ka), b.Object(kb)
		if (sa == nil) != (sb == nil) {
			return fmt.Errorf("Object(%q): %v, want %v", ka, sa != nil, sb != nil)
		}
		if sa != nil && depth < 8 {
			if err := sameView(sa, sb, depth+1); err != nil {
				return fmt.Errorf("%s: %w", ka, err)
			}
		}
	}
	var ka, kb []string
	a.Members(func(k string, v gjson.Result) bool { ka = append(ka, k+"="+v.Str+v.Type.String()); return true })
	b.Members(func(k string, v gjson.Result) bool { kb = append(kb, k+"="+v.Str+v.Type.String()); return true })
	if strings.Join(ka, "\x00") != strings.Join(kb, "\x00") {
		return fmt.Errorf("Members: %q, want %q", ka, kb)
	}
	return nil
}

func keysOf(v *View) []string {
	var k []string
	for i := range v.members {
		k = append(k, v.key(&v.members[i]))
	}
	return k
}

// wrapped is a table whose records may come wrapped (as projects).
var wrapped = &Table{Name: "things", Wrapper: "thing", Columns: []Column{
	{Name: "id", Field: "id", Type: ID, Key: true},
	{Name: "budget", Field: "budget.amount", Type: Numeric},
	{Name: "team", Field: "team_info.lead", Type: Text},
}}

func TestViewSplitMatchesGJSON(t *testing.T) {
	cases := []string{
		`{"email":{"type_id":2,"type_name":"Trimis","brand_id":"16","project_id":"446","subject":"Contract semnat Textila Mureș","message":null,"has_attachments":null,"size":5679,"mailbox_id":"729a082ac63bfcc6","mailbox_thread":"729a082ac63bfcc6","email_at":"2026-10-02T06:25:31.345565Z"},"users":{"from":[{"first_name":"Silviu","email":"silviu.georgescu@agentia-creativa.ro","phone":"+40 777 519 606"}],"to":{"84":{"first_name":"Nicoleta","phone":null}},"cc":[],"bcc":[]}}`,
		`{"email":{"subject":"Fișiere pe \\\\server\\proiecte\\Ceramica de Horezu \u00e9 \"q\"","size":-1.5e+3}}`,
		`{"project_info":{"id":"7","name":"P","budget":{"amount":1250.50,"currency":"RON"}},"team":[{"user_id":3}]}`,
		`{"thing":{"id":"1","thing":{"id":"2"}},"id":"3","team_info":{"lead":"x"}}`,
		`{"a\u0062c":1,"a\nb":{"x\"y":[1,{"z":null}]},"abc":2}`,
		"  {\n\t\"a\" : [ ] , \"b\" : { } , \"c\" : true , \"d\" : false }\r\n",
		`{}`, `[]`, `"s"`, `1`, ``, `null`,
		// not well-formed: the lenient gjson path decides
		`{"a":1,}`, `{"a":01}`, `{"a":1 "b":2}`, `{"a":"x\q"}`, `{"a":[1,2}`, `{"a":1}x`, `{"a":tru}`,
		`{"a":{"b":1}`, `{"a":"\u12"}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{'a':1}`, `{"a":1}}`,
	}
	for _, c := range cases {
		for _, tab := range []*Table{nil, wrapped} {
			if err := sameView(newView(c, tab, true), gjsonView(c, tab), 0); err != nil {
				t.Errorf("%s (table %v): %v", c, tab != nil, err)
			}
			if err := sameView(newView(c, tab, false), gjsonView(c, tab), 0); err != nil {
				t.Errorf("%s (table %v, not nested): %v", c, tab != nil, err)
			}
		}
	}
}

// TestViewSplitProperty compares the split views with gjson's reading on
// random objects: nested objects and arrays, escapes in keys and strings,
// numbers of every form, wrappers, duplicate keys and white space.
func TestViewSplitProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2026))
	for i := range 5000 {
		var b strings.Builder
		genObject(r, &b, 0)
		s := b.String()
		if i%7 == 0 && len(s) > 2 { // a damaged copy now and then
			j := r.IntN(len(s))
			const junk = "{}[],:\"\\ 0e-."
			s = s[:j] + string(junk[r.IntN(len(junk))]) + s[j+1:]
		}
		for _, tab := range []*Table{nil, wrapped} {
			v := NewView([]byte(s), tab)
			if err := sameView(v, gjsonView(s, tab), 0); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			if err := sameRead(v); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
}

// sameRead compares Column.Read with Coerce of Value, the straightforward
// reading, for columns of every type at the generated keys, and parseValue
// with gjson.Parse on the literals among v's members.
func sameRead(v *View) error {
	for _, typ := range []Type{Text, ID, BigInt, Integer, Numeric, Date, Month, Timestamptz, JSONB, Boolean} {
		for _, f := range []string{"id", "email", "amount", "users.id", "thing.amount", "email.users.name", "missing"} {
			for _, c := range []Column{
				{Name: "c", Field: f, Type: typ},
				{Name: "c", Field: f, Type: typ, Trim: true, KeepEmpty: true, AnyJSON: true, NonNegative: true},
				{Name: "c", Field: f, Type: typ, Alternates: []string{"name", "thing.id"}},
			} {
				got, gerr := c.Read(v)
				want, werr := c.Coerce(v.Value(&c), c.Field)
				if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
					return fmt.Errorf("%s at %s: Read = %#v, %v; want %#v, %v", typ, f, got, gerr, want, werr)
				}
			}
		}
	}
	for i := range v.members {
		raw := v.raw(&v.members[i])
		if raw == "" || !strings.ContainsRune("tfn", rune(raw[0])) {
			continue
		}
		if got, want := parseValue(raw), gjson.Parse(raw); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("parseValue(%q) = %#v, want %#v", raw, got, want)
		}
	}
	return nil
}

// FuzzViewSplit checks the split views against gjson's reading on any text.
func FuzzViewSplit(f *testing.F) {
	f.Add(`{"email":{"subject":"a\"b","size":12},"users":{"to":{"84":{"email":"x@y"}}}}`)
	f.Add(`{"project_info":{"id":"1"},"thing":{"id":2}}`)
	f.Add(`{"a":[1,{"b":[]}],"a":-0.5E+2}`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, tab := range []*Table{nil, wrapped} {
			v := NewView([]byte(s), tab)
			if err := sameView(v, gjsonView(s, tab), 0); err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			if err := sameRead(v); err != nil {
				t.Fatalf("%q: %v", s, err)
			}
		}
	})
}

var genKeys = []string{"id", "email", "users", "thing", "project_info", "team_info", "budget", "amount", `a\"b`, `\u0069d`, "x_info", "name"}

func genObject(r *rand.Rand, b *strings.Builder, depth int) {
	b.WriteString(genSpace(r) + "{")
	n := r.IntN(6)
	for i := range n {
		if i > 0 {
			b.WriteString(genSpace(r) + ",")
		}
		fmt.Fprintf(b, `%s"%s"%s:%s`, genSpace(r), genKeys[r.IntN(len(genKeys))], genSpace(r), genSpace(r))
		genValue(r, b, depth+1)
	}
	b.WriteString(genSpace(r) + "}")
}

func genValue(r *rand.Rand, b *strings.Builder, depth int) {
	k := r.IntN(10)
	if depth > 4 && k < 3 {
		k += 3
	}
	switch k {
	case 0, 1:
		genObject(r, b, depth)
	case 2:
		b.WriteByte('[')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			genValue(r, b, depth+1)
		}
		b.WriteByte(']')
	case 3, 4:
		b.WriteString([]string{`"plain"`, `"é ș \u00e9"`, `"q\"uote\\"`, `""`, `"\/\b\f\n\r\t"`, `"\ud83d\ude00"`}[r.IntN(6)])
	case 5, 6:
		b.WriteString([]string{"0", "-1", "12.50", "1e9", "-0.5E-3", "1250.50", "9007199254740993"}[r.IntN(7)])
	default:
		b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
	}
}

func genSpace(r *rand.Rand) string {
	return []string{"", "", "", " ", "\n\t"}[r.IntN(5)]
}

// BenchmarkNewView splits a communication record as the sandbox renders it
// and reads its e-mail's fields and its users' roles.
func BenchmarkNewView(b *testing.B) {
	rec := []byte(`{"email":{"type_id":1,"type_name":"Primit","brand_id":"32","project_id":null,"subject":"Fișiere pe \\\\server\\proiecte\\Ceramica de Horezu","message":null,"has_attachments":null,"size":2754,"mailbox_id":"7549065c909c28b4","mailbox_thread":"7549065c909c28b4","email_at":"2026-10-02T09:11:58.244237Z"},"users":{"from":[{"first_name":"Radu","last_name":null,"full_name":"Radu ","email":"Radu.paun@Yahoo.ro","phone":null,"avatar":"https://app.agency.example/assets/img/avatar-blank.png","status":"Activ"}],"to":{"136":{"first_name":"Silviu","last_name":"Matei","full_name":"Silviu Matei","email":"silviu.matei@agentia-creativa.ro","phone":"+40 750 717 410","avatar":"https://app.agency.example/assets/img/avatar-blank.png","status":"Activ"}},"cc":[],"bcc":[]}}`)
	paths := []string{"email.type_id", "email.type_name", "email.brand_id", "email.project_id", "email.subject",
		"email.message", "email.has_attachments", "email.size", "email.mailbox_id", "email.mailbox_thread",
		"email.email_at", "users.from", "users.to", "users.cc", "users.bcc"}
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		v := NewView(rec, nil)
		for _, p := range paths {
			if _, ok := v.Get(p); !ok {
				b.Fatal(p)
			}
		}
	}
}

// TestKindNamesJSONTypes: Coerce's errors name a value's type with its
// article, extract's without (JSONType).
func TestKindNamesJSONTypes(t *testing.T) {
	for raw, want := range map[string]string{
		`null`: "null", `false`: "a boolean", `-1.5`: "a number", `"x"`: "a string", `[1]`: "an array", `{"a":1}`: "an object",
	} {
		r := gjson.Parse(raw)
		if got := kind(r); got != want {
			t.Errorf("kind(%s) = %q, want %q", raw, got, want)
		}
		if got := JSONType(r); !strings.HasSuffix(want, got) || got == "" {
			t.Errorf("JSONType(%s) = %q, want the type of %q", raw, got, want)
		}
	}
}

// A view with a base reads a field it does not hold at all in the base —
// for a column with Alternates, only when it holds none of them — and
// keeps what it holds, null and false included; a path whose prefix is not
// an object is held (the record says there is nothing below). Members,
// Object and Has see the view's own members.
func TestViewWithBase(t *testing.T) {
	tab := &Table{Wrapper: "brand_info"}
	base := NewView([]byte(`{"brand_info":{"id":"42","name":"Listat","manager":"Ana","fs":{"a":"1","b":"2"},"budget":{"amount":"5"},"alt":"b"}}`), tab)
	v := NewView([]byte(`{"brand_info":{"id":"42","manager":null,"fs":{"a":"9"},"budget":7,"other":"d"}}`), tab).WithBase(base)
	for _, tc := range []struct {
		col  Column
		want any
	}{
		{Column{Field: "name", Type: Text}, "Listat"},                              // absent: the base's
		{Column{Field: "manager", Type: Text}, nil},                                // explicit null: the view's
		{Column{Field: "fs.a", Type: Text}, "9"},                                   // held
		{Column{Field: "fs.b", Type: Text}, "2"},                                   // absent from a held object: the base's
		{Column{Field: "budget.amount", Type: Text}, nil},                          // budget is not an object: held
		{Column{Field: "missing", Alternates: []string{"other"}, Type: Text}, "d"}, // an Alternate is held
		{Column{Field: "missing", Alternates: []string{"alt"}, Type: Text}, "b"},   // none held: the base's
	} {
		got, err := tc.col.Read(v)
		if err != nil || got != tc.want {
			t.Errorf("Read(%s %v) = %v, %v; want %v", tc.col.Field, tc.col.Alternates, got, err, tc.want)
		}
		if r := v.Value(&tc.col); tc.want != nil && r.String() != tc.want || tc.want == nil && !Absent(r) {
			t.Errorf("Value(%s %v) = %s; want %v", tc.col.Field, tc.col.Alternates, r.Raw, tc.want)
		}
	}
	if r, ok := v.Get("name"); !ok || r.Str != "Listat" {
		t.Errorf("Get(name) = %v, %v", r, ok)
	}
	if v.Has("name") || !v.Has("manager") || !v.Has("budget.amount") || v.Has("fs.b") || v.Object("fs").Has("b") {
		t.Error("Has sees the base")
	}
	n := 0
	v.Members(func(string, gjson.Result) bool { n++; return true })
	if n != 5 {
		t.Errorf("Members saw %d members, want the view's own 5", n)
	}
	if NewView([]byte(`{}`), nil).WithBase(nil).base != nil {
		t.Error("a nil base")
	}
}
