package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// oracleRecord is one row found by oracleSplit.
type oracleRecord struct {
	key, raw string
	object   bool // a JSON object (else SplitPage rejects it)
	deep     bool // nested deeper than maxDepth below its top
}

// oracleSplit finds the rows of a body by the envelope rules of the API
// assumptions with nothing but encoding/json: the oracle of FuzzSplitPage.
// ok is false when the page as a whole must fail (not JSON, an unknown
// shape, an error object).
func oracleSplit(body []byte) (recs []oracleRecord, ok bool) {
	body = bytes.TrimPrefix(body, utf8BOM)
	if !json.Valid(body) {
		return nil, false
	}
	o := &oracle{}
	switch t := bytes.TrimLeft(body, " \t\r\n"); t[0] {
	case '[':
		o.rows(t)
	case '{':
		o.envelope(t, 0)
	default:
		return nil, false
	}
	return o.recs, o.ok()
}

type oracle struct {
	recs    []oracleRecord
	found   bool // a rows collection was found
	failed  bool
	errored bool
}

func (o *oracle) ok() bool { return !o.failed && !o.errored }

// members lists an object's members in order, duplicates included.
func members(obj []byte) (keys []string, vals []json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		var v json.RawMessage
		dec.Decode(&v)
		keys, vals = append(keys, k.(string)), append(vals, v)
	}
	return keys, vals
}

func elements(arr []byte) (vals []json.RawMessage) {
	json.Unmarshal(arr, &vals)
	return vals
}

func (o *oracle) rows(v []byte) {
	o.found = true
	add := func(key string, raw json.RawMessage) {
		o.recs = append(o.recs, oracleRecord{key: key, raw: string(raw), object: raw[0] == '{', deep: nesting(raw) > maxDepth+1})
	}
	switch v[0] {
	case '[':
		for _, e := range elements(v) {
			add("", e)
		}
	case '{':
		keys, vals := members(v)
		for i := range keys {
			add(keys[i], vals[i])
		}
	case 'n', 'f':
	default:
		o.failed = true
	}
}

// nesting is a valid value's depth, by encoding/json's tokenizer.
func nesting(v []byte) int {
	dec := json.NewDecoder(bytes.NewReader(v))
	d, deepest := 0, 0
	for {
		t, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			d++
			deepest = max(deepest, d)
		case json.Delim('}'), json.Delim(']'):
			d--
		}
	}
}

func (o *oracle) envelope(obj []byte, level int) {
	keys, vals := members(obj)
	hadRows, other := o.found, 0
	for i, k := range keys {
		v := vals[i]
		switch k {
		case "data", "rows":
			if v[0] == '{' && k == "data" && level < 2 && !oracleKeyed(v) {
				o.envelope(v, level+1)
			} else {
				o.rows(v)
			}
		case "total", "per_page", "current_page", "last_page":
			o.paging(v)
		case "meta", "pagination":
			o.pagingObject(v, 0)
		case "error":
			if v[0] == '"' || v[0] == '{' {
				o.errored = true
			}
		default:
			other++
		}
	}
	if o.found == hadRows && !o.errored && other > 0 {
		o.failed = true
	}
}

// oracleKeyed: the object's first key is an integer and its value an object.
func oracleKeyed(obj []byte) bool {
	keys, vals := members(obj)
	return len(keys) > 0 && integerKey.MatchString(keys[0]) && vals[0][0] == '{'
}

var integerKey = regexp.MustCompile(`^[-+]?[0-9]+$`)

func (o *oracle) paging(v []byte) {
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	dec.Decode(&x)
	var text string
	switch x := x.(type) {
	case nil, bool:
		if x == true {
			o.failed = true
		}
		return
	case json.Number:
		text = string(x)
	case string:
		if text = strings.TrimSpace(x); text == "" {
			return
		}
	default:
		o.failed = true
		return
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(text, "+"), 10, 64)
	if err != nil || n < 0 || n > 1<<31 {
		o.failed = true
	}
}

func (o *oracle) pagingObject(v []byte, level int) {
	if v[0] != '{' {
		return
	}
	keys, vals := members(v)
	for i, k := range keys {
		switch k {
		case "total", "per_page", "current_page", "last_page":
			o.paging(vals[i])
		case "pagination", "page":
			if level < 2 {
				o.pagingObject(vals[i], level+1)
			}
		}
	}
}

// FuzzSplitPage: SplitPage never panics; every record it keeps is a valid
// JSON object, owned by the page; every error is typed; on valid JSON the
// records, their keys, bytes and the rejects are exactly those an
// encoding/json oracle of the same envelope rules finds.
func FuzzSplitPage(f *testing.F) {
	for _, s := range oddShapes {
		f.Add([]byte(s))
	}
	f.Add([]byte(commsCanonical))
	f.Add(genCommsPage(3, 1, 1, 3, 3))
	f.Add(genProjectsPage(3))
	f.Add([]byte(`{"current_page":"2","data":[{"id":1}],"first_page_url":"u","from":1,"last_page":"3","links":[{"url":null}],"next_page_url":null,"per_page":1,"to":1,"total":3}`))
	f.Add([]byte(`{"data":[{"id":1},null,7,{"x":[]}],"meta":{"current_page":1,"links":[],"total":"2"},"links":{"next":null}}`))
	f.Add([]byte(`{"data":{"rows":{"1":{"a":1},"1":{"a":2}},"total":false}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := SplitPage(body)
		if err != nil {
			var ae *APIError
			if !errors.Is(err, ErrMalformedResponse) && !errors.Is(err, ErrUnexpectedShape) && !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
			if p != nil {
				t.Fatal("a page with an error")
			}
		} else {
			for _, r := range p.Records {
				if !json.Valid(r.Raw) || r.Raw[0] != '{' {
					t.Fatalf("record raw is not a JSON object: %q", r.Raw)
				}
			}
			for _, r := range p.Rejects {
				if !json.Valid(r.Raw) || r.Err == nil || !errors.Is(&r, ErrInvalidRecord) || r.Key == "" {
					t.Fatalf("reject %+v", r)
				}
			}
		}
		if nesting := maxNesting(body); nesting > 9000 || !json.Valid(bytes.TrimPrefix(body, utf8BOM)) {
			if err == nil && !json.Valid(bytes.TrimPrefix(body, utf8BOM)) && nesting <= 9000 {
				t.Fatalf("accepted invalid JSON %q", body)
			}
			return
		}
		want, ok := oracleSplit(body)
		if ok != (err == nil) {
			t.Fatalf("oracle ok %v, SplitPage error %v", ok, err)
		}
		if !ok {
			return
		}
		var gotRecs, gotRej []oracleRecord
		for _, w := range want {
			if w.object && !w.deep {
				gotRecs = append(gotRecs, w)
			} else {
				gotRej = append(gotRej, w)
			}
		}
		if len(p.Records) != len(gotRecs) || len(p.Rejects) != len(gotRej) {
			t.Fatalf("%d records and %d rejects, oracle %d and %d", len(p.Records), len(p.Rejects), len(gotRecs), len(gotRej))
		}
		for i, r := range p.Records {
			w := gotRecs[i]
			if string(r.Raw) != w.raw || (sameKey(w.key) && r.Key != w.key) {
				t.Fatalf("record %d: key %q raw %s, oracle key %q raw %s", i, r.Key, r.Raw, w.key, w.raw)
			}
		}
		for i, r := range p.Rejects {
			if string(r.Raw) != gotRej[i].raw {
				t.Fatalf("reject %d: raw %s, oracle %s", i, r.Raw, gotRej[i].raw)
			}
		}
		// The records are the page's own.
		for i := range body {
			body[i] = ' '
		}
		for _, r := range p.Records {
			if !json.Valid(r.Raw) {
				t.Fatal("records alias the body")
			}
		}
	})
}

// sameKey: encoding/json and gjson read a key alike unless it holds bytes
// that are not UTF-8 or a lone surrogate, which encoding/json replaces.
func sameKey(k string) bool { return utf8.ValidString(k) && !strings.ContainsRune(k, utf8.RuneError) }

// FuzzSplitObject: SplitObject never panics; what it returns is a valid,
// non-empty JSON object, a sub-slice of the body's bytes; errors are typed.
func FuzzSplitObject(f *testing.F) {
	for _, s := range oddShapes {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"brand_info":{"id":"3"},"general_info":{},"metadata":[]}`))
	f.Add([]byte(`{"data":{"project_info":{"id":1}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		raw, err := SplitObject(body)
		if err != nil {
			var ae *APIError
			if !errors.Is(err, ErrMalformedResponse) && !errors.Is(err, ErrUnexpectedShape) && !errors.Is(err, ErrTooDeep) && !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !json.Valid(raw) || raw[0] != '{' || !bytes.Contains(body, raw) {
			t.Fatalf("raw %q of %q", raw, body)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
			t.Fatalf("raw %q is not a non-empty object", raw)
		}
	})
}
