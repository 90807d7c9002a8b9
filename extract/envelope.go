package extract

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/stream"
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
func SplitPage(body []byte) (*Page, error) {
	return splitPage("", 1, body)
}

// splitPage is SplitPage for page `page` of endpoint.
func splitPage(endpoint string, page int, body []byte) (*Page, error) {
	data, err := prepare(body)
	if err != nil {
		return nil, malformed(endpoint, page, err)
	}
	own := bytes.Clone(data) // the records alias this copy, never body
	depth, spans, err := validJSONSpans(own, true)
	if err != nil {
		return nil, &ResponseError{Endpoint: endpoint, Page: page, Reason: err.Error(), Kind: ErrMalformedResponse}
	}
	// own is never written again: the string view shares its bytes.
	sp := splitter{own: own, str: unsafe.String(unsafe.SliceData(own), len(own)), deep: depth > maxDepth+1, spans: spans}
	p := &Page{Number: page, Bytes: len(body)}
	if n := countHint(own); n > 0 {
		p.Records = make([]Record, 0, n)
	}
	sp.page = p
	switch start := sp.ws(0); own[start] {
	case '[':
		sp.bare = true
		sp.rows(start, "response")
	case '{':
		sp.envelope(start, 0)
	default:
		v, _ := sp.value(start)
		sp.failf("response is a JSON %s, want an object or an array", stream.JSONType(v))
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
	p.Envelope, p.PagingFields, p.Next = sp.envelopeName(), pg.fields(), sp.next
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

// splitter walks a validated document. gjson reads its keys, scalars and
// the small objects of the envelope (meta, pagination, error); the walk
// itself goes by offsets, so that descending into "data" and "rows" does not
// first cost a pass over them to find their end (which gjson's ForEach
// does: three passes over a communications page instead of one). Splitting
// a 1000-row communications page (SplitPage: the copy, scanJSON, the walk)
// takes 1.15-1.3 ms of CPU; the same walk after gjson.Valid, finding each
// record's end by matchBracket, 2.6-2.8 ms (x2.1-2.3), and gjson.Valid with
// gjson's ForEach over the rows 3.1-4.3 ms (x2.5-3.4; BenchmarkPageScanner,
// on one machine in one run).
type splitter struct {
	own    []byte // the page's copy of the body; records are sub-slices
	str    string // own, as a string for gjson (the same bytes)
	deep   bool   // the document nests deeper than a record may: check each record
	spans  []span // where the outer objects and arrays end, by opening offset (nil: matchBracket)
	page   *Page
	pg     paging
	errMsg *errorBody
	rowsAt bool // a rows collection was found
	err    error

	// What the envelope looked like (Page.Envelope): the key that held the
	// rows ("" for a bare array), the rows' first byte, where the paging
	// fields were, and whether a PHP paginator's URLs were beside them.
	rowsKey   string
	rowsOpen  byte
	bare      bool
	pagingAt  string // "", "beside", "meta" or "pagination"
	links     bool   // a "links" member
	pageLinks bool   // first_page_url, next_page_url, path, from, to, ...
	next      string // the next page the answer names (Page.Next)
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

// ws skips whitespace from i.
func (sp *splitter) ws(i int) int {
	for i < len(sp.own) && (sp.own[i] == ' ' || sp.own[i] == '\t' || sp.own[i] == '\n' || sp.own[i] == '\r') {
		i++
	}
	return i
}

// value is the value starting at i (validated JSON) and the offset after
// it. A container is matched bracket by bracket (strings skipped); a scalar
// is read by gjson.
func (sp *splitter) value(i int) (gjson.Result, int) {
	switch sp.own[i] {
	case '{', '[':
		end := sp.closing(i)
		return gjson.Result{Type: gjson.JSON, Raw: sp.str[i:end], Index: i}, end
	}
	v := gjson.Parse(sp.str[i:])
	v.Index = i
	return v, i + len(v.Raw)
}

// closing is the offset after the object or array that starts at i: from
// the spans the validation listed, else by matchBracket.
func (sp *splitter) closing(i int) int {
	if k, ok := slices.BinarySearchFunc(sp.spans, i, func(s span, i int) int { return cmp.Compare(s.open, i) }); ok {
		return sp.spans[k].end
	}
	return matchBracket(sp.own, i)
}

// matchBracket is the offset after the object or array that starts at i
// (validated JSON).
func matchBracket(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(b)
}

// stringEnd is the offset of the quote closing the string that opens at i
// (len(b) if none): the first quote not preceded by an odd run of
// backslashes.
func stringEnd(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 {
			return len(b)
		}
		i += j + 1
		bs := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return i
		}
	}
}

// members calls fn for each member of the object starting at i, with the
// member's key and the offset of its value; fn returns the offset after
// the value. members returns the offset after the object.
func (sp *splitter) members(i int, fn func(key string, at int) int) int {
	i = sp.ws(i + 1)
	if sp.own[i] == '}' {
		return i + 1
	}
	for {
		k := gjson.Parse(sp.str[i:]) // the key: a string
		i = sp.ws(i + len(k.Raw))
		i = sp.ws(i + 1) // ':'
		i = sp.ws(fn(k.Str, i))
		if sp.own[i] == '}' {
			return i + 1
		}
		i = sp.ws(i + 1) // ','
	}
}

// elements is members for an array: fn gets each element's offset.
func (sp *splitter) elements(i int, fn func(at int) int) int {
	i = sp.ws(i + 1)
	if sp.own[i] == ']' {
		return i + 1
	}
	for {
		i = sp.ws(fn(i))
		if sp.own[i] == ']' {
			return i + 1
		}
		i = sp.ws(i + 1) // ','
	}
}

// envelope reads the envelope object at i and returns the offset after it.
// level 0 is the document, 1 and 2 nested "data" objects.
func (sp *splitter) envelope(i, level int) int {
	var other []string
	hadRows := sp.rowsAt
	end := sp.members(i, func(key string, at int) int {
		if sp.err != nil {
			_, end := sp.value(at)
			return end
		}
		switch key {
		case "data", "rows":
			c := sp.own[at]
			switch {
			case c == '{' && key == "data" && level < 2 && !sp.looksKeyed(at):
				return sp.envelope(at, level+1)
			case c == '{' || c == '[' || c == 'n' || c == 'f':
				sp.rowsKey, sp.rowsOpen = key, c
				return sp.rows(at, key)
			}
			v, end := sp.value(at)
			sp.failf("%s: want an object or an array, got %s", key, stream.JSONType(v))
			return end
		}
		v, end := sp.value(at)
		switch key {
		case "total", "per_page", "current_page", "last_page":
			sp.pagingField(key, v)
			sp.pagedAt("beside")
		case "meta", "pagination":
			sp.pagingObject(v, 0, key)
		case "error":
			sp.errorObject(v)
		case "links":
			sp.links = true
			sp.nextIn(v, "next")
		case "first_page_url", "last_page_url", "next_page_url", "prev_page_url", "path", "from", "to":
			sp.pageLinks = true
			if key == "next_page_url" {
				sp.nextFrom(v)
			}
		case "next", "next_cursor", "next_page_token", "nextPageToken", "next_url":
			sp.nextFrom(v)
		default:
			if len(other) < 6 {
				other = append(other, strconv.Quote(key))
			}
		}
		return end
	})
	if sp.err != nil || sp.rowsAt != hadRows || sp.errMsg != nil {
		return end
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
	return end
}

// looksKeyed reports whether the object at i is itself a collection of
// records keyed by id (`"data": {"17": {...}, ...}`) rather than an
// envelope: its first key is an integer whose value is an object.
func (sp *splitter) looksKeyed(i int) bool {
	i = sp.ws(i + 1)
	if sp.own[i] != '"' {
		return false
	}
	k := gjson.Parse(sp.str[i:])
	i = sp.ws(i + len(k.Raw))
	i = sp.ws(i + 1) // ':'
	return stream.IsInteger(k.Str) && sp.own[i] == '{'
}

// rows reads the rows collection at i: an array, an object keyed by id, or
// null or false (a PHP encoder's missing value) for none. It returns the
// offset after it.
func (sp *splitter) rows(i int, what string) int {
	sp.rowsAt = true
	idx := 0
	switch sp.own[i] {
	case '[':
		return sp.elements(i, func(at int) int {
			end := sp.record("", at)
			idx++
			return end
		})
	case '{':
		return sp.members(i, func(key string, at int) int {
			end := sp.record(key, at)
			idx++
			return end
		})
	}
	v, end := sp.value(i)
	if v.Type != gjson.Null && v.Type != gjson.False {
		sp.failf("%s: want an object or an array, got %s", what, stream.JSONType(v))
	}
	return end
}

// record keeps the row at i, or rejects it alone, and returns the offset
// after it.
func (sp *splitter) record(key string, i int) int {
	v, end := sp.value(i)
	idx := len(sp.page.Records) + len(sp.page.Rejects)
	raw := sp.own[i:end:end]
	var cause error
	switch {
	case !v.IsObject():
		cause = shapef("record: want an object, got %s", stream.JSONType(v))
	case sp.deep && maxNesting(raw) > maxDepth+1:
		cause = depthError()
	}
	if cause == nil {
		sp.page.Records = append(sp.page.Records, Record{Key: key, Raw: raw})
		return end
	}
	id := key
	if id == "" && v.IsObject() {
		id = recordID(v)
	}
	if id == "" {
		id = "#" + strconv.Itoa(idx)
	}
	sp.page.Rejects = append(sp.page.Rejects, RecordError{Key: id, Raw: raw, Err: cause})
	return end
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
		sp.failf("%s: want an integer, got %s", key, stream.JSONType(v))
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
// at names the envelope member that holds it ("meta" or "pagination").
func (sp *splitter) pagingObject(obj gjson.Result, level int, at string) {
	if !obj.IsObject() {
		return
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		switch key := k.Str; key {
		case "total", "per_page", "current_page", "last_page":
			sp.pagingField(key, v)
			sp.pagedAt(at)
		case "next", "next_cursor", "next_page_token", "next_page_url", "next_url":
			sp.nextFrom(v)
		case "cursor", "links":
			sp.nextIn(v, "next")
		case "pagination", "page":
			if level < 2 {
				sp.pagingObject(v, level+1, at)
			}
		}
		return sp.err == nil
	})
}

// nextFrom notes v as the next page the answer names: a non-empty string
// (a token or a URL) or a number (a token); null, false, "" name none. The
// first one found wins.
func (sp *splitter) nextFrom(v gjson.Result) {
	if sp.next != "" {
		return
	}
	switch v.Type {
	case gjson.String:
		sp.next = strings.TrimSpace(v.Str)
	case gjson.Number:
		sp.next = v.Raw
	}
}

// nextIn reads member key of the object v (a "links" or "cursor" object)
// as the next page.
func (sp *splitter) nextIn(v gjson.Result, key string) {
	if v.IsObject() {
		sp.nextFrom(v.Get(key))
	}
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

// validNestingLimit: documents nested at most this deep are validated by
// gjson.Valid, whose recursion this bounds; deeper ones (valid JSON still:
// a deep member of the envelope is ignored, a deep record is rejected alone)
// by encoding/json's iterative tokenizer.
const validNestingLimit = 10000

// validJSON checks that b is one JSON value (surrounding whitespace aside)
// and returns its nesting depth. Its error says what is wrong and where.
// A document scan finds valid and not too deep in one pass reads as
// gjson.Valid would; anything else takes the checks below it.
func validJSON(b []byte) (int, error) {
	depth, _, err := validJSONSpans(b, false)
	return depth, err
}

// validJSONSpans is validJSON that, with spans, also lists where the
// objects and arrays nested at most spanDepth deep end (nil when the scan
// did not decide).
func validJSONSpans(b []byte, spans bool) (int, []span, error) {
	var list *[]span
	var sps []span
	if spans {
		sps = make([]span, 0, 4*countHint(b)) // a record and its objects
		list = &sps
	}
	if depth, ok := scanJSON(b, list); ok && depth <= validNestingLimit {
		return depth, sps, nil
	}
	depth, err := validJSONSlow(b)
	return depth, nil, err
}

// span is where an object or an array opens and the offset after it.
type span struct{ open, end int }

// spanDepth is how deep scanJSON lists spans: records are at most at depth
// 5 of a page ({"data":{"data":{"rows":{"17":{...}}}}}).
const spanDepth = 5

// validJSONSlow is validJSON by maxNesting, then gjson.Valid or (deeper
// documents) validDeep.
func validJSONSlow(b []byte) (int, error) {
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

// scanJSON reports whether b is one JSON value (surrounding whitespace
// aside) by gjson.Valid's grammar, in one pass without recursion, and the
// nesting depth of its objects and arrays (meaningful when ok). With spans,
// it appends the spans of the objects and arrays at most spanDepth deep, in
// the order they open.
//
// Validating alone it costs what gjson.Valid costs (0.85-0.93 against
// 0.87-0.95 ms of CPU a 1000-row communications page, BenchmarkPageScanner);
// it is kept for what gjson.Valid does not give in the same pass: the depth
// (a hostile document nested past maxDepth is found without recursing into
// it, and gjson's recursion is bounded by validNestingLimit) and the spans
// that spare the walk a pass over each record.
func scanJSON(b []byte, spans *[]span) (depth int, ok bool) {
	var buf [64]byte
	stack := buf[:0]        // the open containers' brackets
	var open [spanDepth]int // their spans' indexes, the first spanDepth
	i := wsAt(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return depth, false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			stack = append(stack, c)
			depth = max(depth, len(stack))
			if spans != nil && len(stack) <= spanDepth {
				open[len(stack)-1] = len(*spans)
				*spans = append(*spans, span{open: i})
			}
			i = wsAt(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']': empty
				if spans != nil && len(stack) <= spanDepth {
					(*spans)[open[len(stack)-1]].end = i + 1
				}
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, ok = scanKey(b, i); !ok {
					return depth, false
				}
			}
			continue
		case c == '"':
			if i, ok = scanString(b, i+1); !ok {
				return depth, false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, ok = stream.SkipNumber(b, i); !ok {
				return depth, false
			}
		case c == 't' && bytes.HasPrefix(b[i:], []byte("true")), c == 'n' && bytes.HasPrefix(b[i:], []byte("null")):
			i += 4
		case c == 'f' && bytes.HasPrefix(b[i:], []byte("false")):
			i += 5
		default:
			return depth, false
		}
		// After a value: close containers, then a comma or the end.
		for {
			i = wsAt(b, i)
			if len(stack) == 0 {
				return depth, i == len(b)
			}
			if i >= len(b) {
				return depth, false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				if spans != nil && len(stack) <= spanDepth {
					(*spans)[open[len(stack)-1]].end = i + 1
				}
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return depth, false
			}
			i = wsAt(b, i+1)
			if top == '{' {
				if i, ok = scanKey(b, i); !ok {
					return depth, false
				}
			}
			break
		}
	}
}

// wsAt skips whitespace from i.
func wsAt(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanKey checks the key and colon of a member starting at b[i] and
// returns where its value starts (whitespace skipped).
func scanKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := scanString(b, i+1)
	if !ok {
		return i, false
	}
	if i = wsAt(b, i); i >= len(b) || b[i] != ':' {
		return i, false
	}
	return wsAt(b, i+1), true
}

const (
	ones   = 0x0101010101010101
	highs  = 0x8080808080808080
	quotes = '"' * ones
	slashs = '\\' * ones
	spaces = ' ' * ones
)

// scanString checks the rest of a string from b[i] (after its opening
// quote) and returns the offset after its closing quote: no control
// characters, only JSON's escapes. It reads eight bytes at a time.
func scanString(b []byte, i int) (int, bool) {
	for {
		for ; i+8 <= len(b); i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			q, s := x^quotes, x^slashs
			// Flags '"', '\\' and bytes below ' '; the lowest flag is exact.
			if t := ((q-ones)&^q | (s-ones)&^s | (x-spaces)&^x) & highs; t != 0 {
				i += bits.TrailingZeros64(t) / 8
				break
			}
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < ' ':
			return i, false
		case c == '\\':
			var ok bool
			if i, ok = stream.SkipEscape(b, i+1); !ok {
				return i, false
			}
		default:
			i++
		}
	}
}

// maxNesting is the deepest nesting of objects and arrays in b (strings
// skipped). On bytes that are not JSON it is still an upper bound of any
// validator's nesting up to the first error.
func maxNesting(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
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
		return nil, &ResponseError{Endpoint: endpoint, Reason: fmt.Sprintf("response is a JSON %s, want an object", stream.JSONType(root)), Kind: ErrUnexpectedShape}
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

// Envelopes SplitPage recognises (Page.Envelope), named as the sandbox's
// variants that serve them.
const (
	// EnvelopeCanonical is the main interface's canonical list:
	// {"data": [...], "total", "per_page", "current_page", "last_page"}.
	EnvelopeCanonical = "canonical"
	// EnvelopeBareArray is a bare top-level array, without paging fields.
	EnvelopeBareArray = "bare-array"
	// EnvelopeNoPaging is {"data": [...]} without paging fields.
	EnvelopeNoPaging = "no-paging"
	// EnvelopeMetaPaging is {"data": [...]} with the paging fields under "meta".
	EnvelopeMetaPaging = "meta-paging"
	// EnvelopePaginationPaging is {"data": [...]} with the paging fields
	// under "pagination".
	EnvelopePaginationPaging = "pagination-paging"
	// EnvelopePHPPaginator is the Laravel paginator: the paging fields beside
	// "data" with first_page_url, next_page_url, links, from, to, ...
	EnvelopePHPPaginator = "php-paginator"
	// EnvelopePHPResource is the Laravel resource: the paging fields under
	// "meta", the page URLs under "links".
	EnvelopePHPResource = "php-resource"
	// EnvelopeRowsKeyed is {"data": {"rows": {"<id>": {...}}, "total", ...}},
	// the communications endpoint's canonical shape.
	EnvelopeRowsKeyed = "rows-keyed"
	// EnvelopeRowsArray is {"data": {"rows": [...], "total", ...}}.
	EnvelopeRowsArray = "rows-array"
	// EnvelopeDataKeyed is {"data": {"<id>": {...}}}: records keyed by id
	// directly under "data".
	EnvelopeDataKeyed = "data-keyed"
	// EnvelopeEmpty is an envelope without a rows collection ({}, or only
	// paging fields): an empty list.
	EnvelopeEmpty = "empty"
)

// pagedAt notes where a paging field was found (the first place wins).
func (sp *splitter) pagedAt(where string) {
	if sp.pagingAt == "" {
		sp.pagingAt = where
	}
}

// envelopeName names the envelope walked (an Envelope* constant).
func (sp *splitter) envelopeName() string {
	switch {
	case sp.bare:
		return EnvelopeBareArray
	case sp.rowsKey == "":
		return EnvelopeEmpty
	case sp.rowsKey == "rows" && sp.rowsOpen == '[':
		return EnvelopeRowsArray
	case sp.rowsKey == "rows":
		return EnvelopeRowsKeyed
	case sp.rowsOpen == '{':
		return EnvelopeDataKeyed
	}
	switch sp.pagingAt {
	case "meta":
		if sp.links {
			return EnvelopePHPResource
		}
		return EnvelopeMetaPaging
	case "pagination":
		return EnvelopePaginationPaging
	case "beside":
		if sp.pageLinks || sp.links {
			return EnvelopePHPPaginator
		}
		return EnvelopeCanonical
	}
	return EnvelopeNoPaging
}

// fields lists the paging fields an answer carried, in a fixed order.
func (pg *paging) fields() []string {
	var out []string
	for _, f := range []struct {
		has  bool
		name string
	}{{pg.hasTotal, "total"}, {pg.hasPer, "per_page"}, {pg.hasCurrent, "current_page"}, {pg.hasLast, "last_page"}} {
		if f.has {
			out = append(out, f.name)
		}
	}
	return out
}
