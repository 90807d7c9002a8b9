package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Record is one record of a list page, as received: the generic record the
// declared streams' transform derives its columns from.
type Record struct {
	// Key is the record's object key when the rows came as an object keyed
	// by id (`{"rows": {"101": {...}}}`), which is then the record's only
	// id; empty when the rows came as an array.
	Key string
	// Raw is the record's JSON exactly as received: valid JSON, an object,
	// nested at most maxDepth levels below its top. It is owned by the page
	// (it never aliases the caller's body).
	Raw json.RawMessage
}

// SplitPage splits one list response body, of either interface, into its
// records and paging fields. It recognises the canonical envelope and every
// tolerated variant of the API assumptions: a bare array; {"data": [...]}
// with the paging fields beside it (the PHP paginator's first_page_url,
// next_page_url, links, from and to ignored), missing, or under "meta" or
// "pagination"; {"data": {"rows": [...] | {"<id>": {...}}, paging...}};
// {"data": {"<id>": {...}}}; paging fields as numbers or numeric strings;
// null, false, [] or {} for an empty collection.
//
// A record that is not a JSON object, or is nested deeper than 9 000
// levels (ErrTooDeep), is returned in Rejects with its raw bytes; the rest of
// the page proceeds. The error is for the page as a whole: not JSON
// (ErrMalformedResponse), a shape the splitter does not know
// (ErrUnexpectedShape), or an error object (*APIError).
//
//	page, err := extract.SplitPage(body)
func SplitPage(body []byte) (*Page[Record], error) {
	return splitPage("", 1, body)
}

// splitPage is SplitPage for page `page` of endpoint.
func splitPage(endpoint string, page int, body []byte) (*Page[Record], error) {
	data, err := prepare(body)
	if err != nil {
		return nil, malformed(endpoint, page, err)
	}
	own := bytes.Clone(data) // the records alias this copy, never body
	depth, err := validJSON(own)
	if err != nil {
		return nil, &ResponseError{Endpoint: endpoint, Page: page, Reason: err.Error(), Kind: ErrMalformedResponse}
	}
	sp := splitter{own: own, deep: depth > maxDepth+1}
	// own is never written again: the string view shares its bytes.
	root := gjson.Parse(unsafe.String(unsafe.SliceData(own), len(own)))
	p := &Page[Record]{Number: page, Bytes: len(body)}
	if n := countHint(own); n > 0 {
		p.Records = make([]Record, 0, n)
	}
	sp.page = p
	switch root.Type {
	case gjson.JSON:
		if root.IsArray() {
			sp.rows(root, "response")
		} else {
			sp.envelope(root, 0)
		}
	default:
		sp.failf("response is a JSON %s, want an object or an array", kind(root))
	}
	if sp.err != nil {
		return nil, &ResponseError{Endpoint: endpoint, Page: page, Reason: sp.err.Error(), Kind: ErrUnexpectedShape}
	}
	if sp.errMsg != nil {
		return nil, errorBodyError(endpoint, page, 200, sp.errMsg)
	}
	for i := range p.Rejects {
		p.Rejects[i].Endpoint, p.Rejects[i].Page = endpoint, page
	}
	pg := &sp.pg
	if pg.hasCurrent && pg.current > 0 {
		p.Number = pg.current
	}
	if pg.hasPer && pg.perPage > 0 {
		p.PerPage = pg.perPage
	}
	if pg.hasTotal {
		p.Total = pg.total
	}
	p.Paged = pg.hasLast || pg.hasTotal
	switch {
	case pg.hasLast:
		p.LastPage = pg.last
	case pg.hasTotal && p.PerPage > 0:
		p.LastPage = (pg.total + p.PerPage - 1) / p.PerPage
	}
	return p, nil
}

// countHint guesses how many records a body holds (about 256 bytes or more
// each) to presize Records.
func countHint(body []byte) int { return min(len(body)/256+1, 1000) }

// splitter walks a validated document with gjson.
type splitter struct {
	own    []byte // the page's copy of the body; records are sub-slices
	deep   bool   // the document nests deeper than a record may: check each record
	page   *Page[Record]
	pg     paging
	errMsg *errorBody
	rowsAt bool // a rows collection was found
	err    error
}

func (sp *splitter) failf(format string, args ...any) {
	if sp.err == nil {
		sp.err = fmt.Errorf(format, args...)
	}
}

// raw is the page-owned bytes of a value gjson found in own.
func (sp *splitter) raw(v gjson.Result) []byte {
	return sp.own[v.Index : v.Index+len(v.Raw) : v.Index+len(v.Raw)]
}

// envelope reads an envelope object. level 0 is the document, 1 and 2
// nested "data" objects.
func (sp *splitter) envelope(obj gjson.Result, level int) {
	var other []string
	hadRows := sp.rowsAt
	obj.ForEach(func(k, v gjson.Result) bool {
		switch key := k.Str; key {
		case "data", "rows":
			switch {
			case v.IsObject() && key == "data" && level < 2 && !looksKeyed(v):
				sp.envelope(v, level+1)
			case v.IsObject() || v.IsArray() || v.Type == gjson.Null || v.Type == gjson.False:
				sp.rows(v, key)
			default:
				sp.failf("%s: want an object or an array, got %s", key, kind(v))
			}
		case "total", "per_page", "current_page", "last_page":
			sp.pagingField(key, v)
		case "meta", "pagination":
			sp.pagingObject(v, 0)
		case "error":
			sp.errorObject(v)
		default:
			if len(other) < 6 {
				other = append(other, strconv.Quote(key))
			}
		}
		return sp.err == nil
	})
	if sp.err != nil || sp.rowsAt != hadRows || sp.errMsg != nil {
		return
	}
	switch {
	case len(other) == 0:
		// {} where an array was expected, or only paging fields: an empty list.
		sp.rowsAt = true
	case level == 0:
		sp.failf("response has no data or rows (keys %s)", strings.Join(other, ", "))
	default:
		sp.failf("data object has no rows (keys %s)", strings.Join(other, ", "))
	}
}

// looksKeyed reports whether an object is itself a collection of records
// keyed by id (`"data": {"17": {...}, ...}`) rather than an envelope: its
// first key is an integer whose value is an object.
func looksKeyed(obj gjson.Result) bool {
	keyed := false
	obj.ForEach(func(k, v gjson.Result) bool {
		keyed = isInteger(k.Str) && v.IsObject()
		return false
	})
	return keyed
}

// isInteger reports whether s is an optionally signed run of decimal digits
// (of any length).
func isInteger(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// rows reads a rows collection: an array, an object keyed by id, or null,
// false (a PHP encoder's missing value) for none.
func (sp *splitter) rows(v gjson.Result, what string) {
	sp.rowsAt = true
	idx := 0
	switch {
	case v.IsArray():
		v.ForEach(func(_, r gjson.Result) bool {
			sp.record("", r, idx)
			idx++
			return true
		})
	case v.IsObject():
		v.ForEach(func(k, r gjson.Result) bool {
			sp.record(k.Str, r, idx)
			idx++
			return true
		})
	case v.Type == gjson.Null || v.Type == gjson.False:
	default:
		sp.failf("%s: want an object or an array, got %s", what, kind(v))
	}
}

// record keeps one row, or rejects it alone.
func (sp *splitter) record(key string, v gjson.Result, idx int) {
	raw := sp.raw(v)
	var cause error
	switch {
	case !v.IsObject():
		cause = shapef("record: want an object, got %s", kind(v))
	case sp.deep && maxNesting(raw) > maxDepth+1:
		cause = depthError()
	}
	if cause == nil {
		sp.page.Records = append(sp.page.Records, Record{Key: key, Raw: raw})
		return
	}
	id := key
	if id == "" && v.IsObject() {
		id = recordID(v)
	}
	if id == "" {
		id = "#" + strconv.Itoa(idx)
	}
	sp.page.Rejects = append(sp.page.Rejects, RecordError{Key: id, Raw: raw, Err: cause})
}

// recordID is a record's "id" (or its <thing>_info wrapper's) as text, for
// naming a rejected record; empty when it has none.
func recordID(obj gjson.Result) string {
	var id string
	n := 0
	var only gjson.Result
	var onlyKey string
	obj.ForEach(func(k, v gjson.Result) bool {
		n++
		if k.Str == "id" && (v.Type == gjson.String || v.Type == gjson.Number) {
			id = strings.TrimSpace(v.String())
			if v.Type == gjson.Number {
				id = v.Raw
			}
		}
		only, onlyKey = v, k.Str
		return true
	})
	if id == "" && n == 1 && strings.HasSuffix(onlyKey, "_info") && only.IsObject() {
		return recordID(only)
	}
	return id
}

// pagingField reads an integer paging field: a number or a numeric string;
// null, false and "" are absent.
func (sp *splitter) pagingField(key string, v gjson.Result) {
	var text string
	switch v.Type {
	case gjson.Null, gjson.False:
		return
	case gjson.Number:
		text = v.Raw
	case gjson.String:
		text = strings.TrimSpace(v.Str)
		if text == "" {
			return
		}
	default:
		sp.failf("%s: want an integer, got %s", key, kind(v))
		return
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(text, "+"), 10, 64)
	if err != nil {
		sp.failf("%s: want an integer, got %q", key, text)
		return
	}
	if n < 0 || n > 1<<31 {
		sp.failf("%s: %d out of range", key, n)
		return
	}
	pg := &sp.pg
	switch key {
	case "total":
		pg.total, pg.hasTotal = int(n), true
	case "per_page":
		pg.perPage, pg.hasPer = int(n), true
	case "current_page":
		pg.current, pg.hasCurrent = int(n), true
	case "last_page":
		pg.last, pg.hasLast = int(n), true
	}
}

// pagingObject reads a "meta" or "pagination" object (anything else carries
// no paging and is ignored); "pagination" or "page" inside it is read too.
func (sp *splitter) pagingObject(obj gjson.Result, level int) {
	if !obj.IsObject() {
		return
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		switch key := k.Str; key {
		case "total", "per_page", "current_page", "last_page":
			sp.pagingField(key, v)
		case "pagination", "page":
			if level < 2 {
				sp.pagingObject(v, level+1)
			}
		}
		return sp.err == nil
	})
}

// errorObject reads {"message": ..., "details": [...]} or a bare string;
// null, false, [] and the like are no error.
func (sp *splitter) errorObject(v gjson.Result) {
	if eb := errorOf(v); eb != nil {
		sp.errMsg = eb
	}
}

// errorOf is the error body of an "error" member, or nil.
func errorOf(v gjson.Result) *errorBody {
	switch {
	case v.Type == gjson.String:
		return &errorBody{Message: v.Str}
	case !v.IsObject():
		return nil
	}
	eb := &errorBody{}
	v.ForEach(func(k, m gjson.Result) bool {
		switch k.Str {
		case "message":
			if m.Type == gjson.String {
				eb.Message = m.Str
			}
		case "details":
			eb.Details = details(m)
		case "errors":
			eb.Fields = fieldErrors(m)
		}
		return true
	})
	return eb
}

// details reads an error's details: an array of strings (other values as
// their JSON text) or a single string.
func details(v gjson.Result) []string {
	switch {
	case v.Type == gjson.String:
		return []string{v.Str}
	case v.IsArray():
		var out []string
		v.ForEach(func(_, d gjson.Result) bool {
			if d.Type == gjson.String {
				out = append(out, d.Str)
			} else {
				out = append(out, d.Raw)
			}
			return true
		})
		return out
	}
	return nil
}

// fieldErrors reads a validation error's {"field": ["message", ...]} (a
// message may stand alone); anything else ([] included) names no field.
func fieldErrors(v gjson.Result) []FieldError {
	if !v.IsObject() {
		return nil
	}
	var out []FieldError
	v.ForEach(func(k, m gjson.Result) bool {
		out = append(out, FieldError{Field: k.Str, Messages: details(m)})
		return true
	})
	return out
}

// kind names a value's JSON type for error messages.
func kind(v gjson.Result) string {
	switch v.Type {
	case gjson.Null:
		return "null"
	case gjson.False, gjson.True:
		return "boolean"
	case gjson.Number:
		return "number"
	case gjson.String:
		return "string"
	}
	if v.IsArray() {
		return "array"
	}
	return "object"
}

// validNestingLimit: documents nested at most this deep are validated by
// gjson.Valid, whose recursion this bounds; deeper ones (valid JSON still:
// a deep member of the envelope is ignored, a deep record is rejected alone)
// by encoding/json's iterative tokenizer.
const validNestingLimit = 10000

// validJSON checks that b is one JSON value (surrounding whitespace aside)
// and returns its nesting depth. Its error says what is wrong and where.
func validJSON(b []byte) (int, error) {
	depth := maxNesting(b)
	if depth <= validNestingLimit {
		if gjson.ValidBytes(b) {
			return depth, nil
		}
		return depth, describeSyntax(b)
	}
	if err := validDeep(b); err != nil {
		return depth, err
	}
	return depth, nil
}

// maxNesting is the deepest nesting of objects and arrays in b (strings
// skipped). On bytes that are not JSON it is still an upper bound of any
// validator's nesting up to the first error.
func maxNesting(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			// Skip to the closing quote: one not preceded by an odd run of
			// backslashes.
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return deepest
				}
				i += j + 1
				bs := 0
				for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
					bs++
				}
				if bs%2 == 0 {
					break
				}
			}
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// describeSyntax describes why b is not JSON, in encoding/json's words.
func describeSyntax(b []byte) error {
	var v json.RawMessage
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		// gjson refused what encoding/json takes: trust the stricter.
		return errors.New("invalid JSON")
	case strings.Contains(err.Error(), "unexpected end of JSON input"):
		return fmt.Errorf("truncated JSON (%v)", err)
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// validDeep validates a document nested deeper than gjson's recursion
// should go, with encoding/json's tokenizer (iterative: any depth).
func validDeep(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth := 0
	for {
		t, err := dec.Token()
		if err == io.EOF {
			return errors.New("truncated JSON (unexpected end of JSON input)")
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("truncated JSON (%v)", err)
			}
			return fmt.Errorf("invalid JSON: %v", err)
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("invalid JSON: data after the top-level value at byte %d", len(b)-len(rest))
	}
	return nil
}

// SplitObject reads the body of a single-object endpoint (a brand's or a
// project's detail): the object itself, or the object wrapped in
// {"data": {...}}. It returns the object's bytes as received (a copy: it
// never aliases body). The object is not interpreted: a <thing>_info wrapper
// or the brand detail's brand_info/general_info/metadata stay as they came.
// An error object is an *APIError; an object nested deeper than 9 000
// levels is a *RecordError of ErrTooDeep; anything but a non-empty object is
// ErrUnexpectedShape.
func SplitObject(body []byte) (json.RawMessage, error) {
	return splitObject("", body)
}

func splitObject(endpoint string, body []byte) (json.RawMessage, error) {
	data, err := prepare(body)
	if err != nil {
		return nil, malformed(endpoint, 0, err)
	}
	own := bytes.Clone(data)
	if _, err := validJSON(own); err != nil {
		return nil, &ResponseError{Endpoint: endpoint, Reason: err.Error(), Kind: ErrMalformedResponse}
	}
	sp := splitter{own: own}
	root := gjson.Parse(unsafe.String(unsafe.SliceData(own), len(own)))
	if !root.IsObject() {
		return nil, &ResponseError{Endpoint: endpoint, Reason: fmt.Sprintf("response is a JSON %s, want an object", kind(root)), Kind: ErrUnexpectedShape}
	}
	obj := root
	var eb *errorBody
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "data":
			if v.IsObject() {
				obj = v
			}
		case "error":
			eb = errorOf(v)
		}
		return true
	})
	if eb != nil {
		return nil, errorBodyError(endpoint, 0, 200, eb)
	}
	empty := true
	obj.ForEach(func(_, _ gjson.Result) bool {
		empty = false
		return false
	})
	if empty {
		return nil, &ResponseError{Endpoint: endpoint, Reason: "empty object where a record was expected", Kind: ErrUnexpectedShape}
	}
	var raw []byte
	if obj.Index == root.Index && len(obj.Raw) == len(root.Raw) {
		raw = bytes.TrimRight(own[root.Index:], " \t\r\n")
	} else {
		raw = sp.raw(obj)
	}
	if maxNesting(raw) > maxDepth+1 {
		return nil, &RecordError{Endpoint: endpoint, Raw: raw, Err: depthError()}
	}
	return raw, nil
}
