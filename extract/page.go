package extract

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Page is one page of a list: the records that decoded, the records that did
// not (Rejects, each with its raw bytes), and the paging fields the server
// answered. An iterator holds one page at a time.
type Page[T any] struct {
	Number   int           // page number (1-based): current_page when answered, else the page asked for
	PerPage  int           // per_page answered by the server, else the one asked for
	Total    int           // total matching records, when answered
	LastPage int           // last_page, when answered (or derived from total and per_page)
	Paged    bool          // the response carried paging fields (total or last_page)
	Records  []T           // decoded records, in the order received
	Rejects  []RecordError // records that could not be decoded; the rest of the page proceeds
	Bytes    int           // size of the response body
	// Envelope names the list envelope the answer came in (an Envelope*
	// constant; set by SplitPage and the generic fetches, "" from the
	// typed decoders).
	Envelope string
	// PagingFields lists the paging fields the answer carried (total,
	// per_page, current_page, last_page), wherever they sat; set with
	// Envelope.
	PagingFields []string
}

// Rows is the number of rows on the page, decoded or rejected.
func (p *Page[T]) Rows() int { return len(p.Records) + len(p.Rejects) }

// decodable is the set of list record types the typed decoder knows.
type decodable[T any] interface {
	*T
	decode(d *decoder) bool
	setRaw(raw []byte)
	recordKey() string
	finish(key string, keyed bool, d *decoder) error
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// paging is what the envelope said about paging.
type paging struct {
	total, perPage, current, last         int
	hasTotal, hasPer, hasCurrent, hasLast bool
	rows                                  bool // a rows collection was found
	errMsg                                *errorBody
}

// errorBody is the service's {"error": {"message", "details"}}.
type errorBody struct {
	Message string
	Details []string
	Fields  []FieldError // a validation error's fields
}

// utf8BOM is skipped at the start of a body.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// prepare strips a UTF-8 byte order mark and classifies bodies that are not
// JSON at all (a *notJSONError). It does not copy: decoders copy what
// records keep.
func prepare(body []byte) ([]byte, error) {
	b := bytes.TrimPrefix(body, utf8BOM)
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 {
		return nil, errors.New("empty body")
	}
	switch c := t[0]; {
	case c == '<':
		return nil, &notJSONError{what: "HTML page where JSON was expected", head: head(t)}
	case c == '{' || c == '[' || c == '"' || c == 'n' || c == 't' || c == 'f' || c == '-' || isDigit(c):
	default:
		return nil, &notJSONError{what: "not JSON", head: head(t)}
	}
	return b, nil
}

// snippetLen is how much of a body that is not JSON an error quotes.
const snippetLen = 40

// notJSONError is a body that is not JSON. It keeps the body's first bytes
// uncut (well past snippetLen) so that the client can redact them before
// cutting the snippet: a key cut in two by the snippet would otherwise leak
// its first part.
type notJSONError struct {
	what string
	head string
}

func (e *notJSONError) Error() string { return e.reason(snippet) }

// reason names the problem and quotes the body's start as cut by clip.
func (e *notJSONError) reason(clip func(string) string) string {
	return fmt.Sprintf("%s (starts with %q)", e.what, clip(e.head))
}

// head is the start of a body, copied, long enough to redact a key that
// reaches into the snippet.
func head(b []byte) string {
	if len(b) > snippetLen+headMargin {
		b = b[:snippetLen+headMargin]
	}
	return string(b)
}

// headMargin: bytes kept beyond the snippet (see logging.ClipMargin).
const headMargin = 1024

func snippet(s string) string {
	if len(s) > snippetLen {
		s = s[:snippetLen]
	}
	return strings.ToValidUTF8(s, "?")
}

// malformed is the *ResponseError of a body prepare refused.
func malformed(endpoint string, page int, err error) *ResponseError {
	re := &ResponseError{Endpoint: endpoint, Page: page, Reason: err.Error(), Kind: ErrMalformedResponse}
	if nj, ok := err.(*notJSONError); ok {
		re.notJSON = nj
	}
	return re
}

// pageError turns a scanner error at the envelope level into a page error.
func pageError(s *scanner) error {
	if s.syntax {
		var se *syntaxError
		if errors.As(s.err, &se) && se.Offset >= len(s.data) {
			return &ResponseError{Reason: fmt.Sprintf("truncated JSON (%s)", se.Error()), Kind: ErrMalformedResponse}
		}
		return &ResponseError{Reason: s.err.Error(), Kind: ErrMalformedResponse}
	}
	return &ResponseError{Reason: s.err.Error(), Kind: ErrUnexpectedShape}
}

// rowFunc decodes the row at the scanner's position; key is the row's object
// key (nil when rows is an array), idx its 0-based index.
type rowFunc func(key []byte, idx int)

// envelope reads a list response in any tolerated shape and calls onRow for
// each row.
func (d *decoder) envelope(onRow rowFunc) (paging, error) {
	s := &d.env
	var pg paging
	switch c := s.peek(); c {
	case '[':
		d.rows(&pg, onRow)
	case '{':
		d.envObject(&pg, onRow, 0)
	default:
		s.failShape(shapef("response is a JSON %s, want an object or an array", kindName(c)))
	}
	s.end()
	if s.err != nil {
		return pg, pageError(s)
	}
	return pg, nil
}

// rows reads the rows collection at s.pos: an array, an object keyed by id, or
// null.
func (d *decoder) rows(pg *paging, onRow rowFunc) {
	s := &d.env
	pg.rows = true
	switch c := s.peek(); c {
	case '[':
		s.pos++
		for n := 0; s.arrayNext(&n); {
			onRow(nil, n-1)
		}
	case '{':
		s.pos++
		for n := 0; s.objectNext(&n); {
			onRow(s.key, n-1)
		}
	case 'n':
		s.literal("null")
	default:
		s.failShape(shapef("rows: want an object or an array, got %s", kindName(c)))
	}
}

// envObject reads an envelope object at s.pos. level 0 is the document, 1 and
// 2 nested "data" objects.
func (d *decoder) envObject(pg *paging, onRow rowFunc, level int) {
	s := &d.env
	s.pos++ // '{'
	var other []string
	hadRows := pg.rows
	for n := 0; s.objectNext(&n); {
		switch k := string(s.key); k {
		case "data", "rows":
			switch c := s.peek(); c {
			case '{':
				if k == "data" && level < 2 && !d.looksKeyed() {
					d.envObject(pg, onRow, level+1)
				} else {
					d.rows(pg, onRow)
				}
			case '[', 'n':
				d.rows(pg, onRow)
			default:
				s.failShape(shapef("%s: want an object or an array, got %s", k, kindName(c)))
			}
		case "total", "per_page", "current_page", "last_page":
			d.pagingField(pg, k)
		case "meta", "pagination":
			d.pagingObject(pg, 0)
		case "error":
			d.errorObject(pg)
		default:
			if len(other) < 6 {
				other = append(other, strconv.Quote(k))
			}
			s.skipAll()
		}
	}
	if s.err != nil || pg.rows != hadRows {
		return
	}
	// No rows in this object.
	switch {
	case pg.errMsg != nil:
	case len(other) == 0:
		// {} where an array was expected, or only paging fields: an empty list.
		pg.rows = true
	case level == 0:
		s.failShape(shapef("response has no data or rows (keys %s)", strings.Join(other, ", ")))
	default:
		s.failShape(shapef("data object has no rows (keys %s)", strings.Join(other, ", ")))
	}
}

// looksKeyed reports whether the object at s.pos is itself a collection of
// records keyed by id (`"data": {"17": {...}, ...}`) rather than an envelope:
// its first key is an integer whose value is an object. The position is left
// unchanged.
func (d *decoder) looksKeyed() bool {
	s := &d.env
	save := s.pos
	s.pos++
	n := 0
	keyed := false
	if s.objectNext(&n) {
		_, ok, overflow := parseInt64(s.key)
		keyed = (ok || overflow) && s.peek() == '{'
	}
	if s.syntax {
		return false
	}
	s.err = nil
	s.pos = save
	return keyed
}

// pagingField reads an integer paging field (a number or a numeric string).
func (d *decoder) pagingField(pg *paging, k string) {
	s := d.s
	v, ok := d.intValue(k, false)
	if s.err != nil || !ok {
		return
	}
	if v < 0 || v > 1<<31 {
		s.failShape(shapef("%s: %d out of range", k, v))
		return
	}
	switch k {
	case "total":
		pg.total, pg.hasTotal = int(v), true
	case "per_page":
		pg.perPage, pg.hasPer = int(v), true
	case "current_page":
		pg.current, pg.hasCurrent = int(v), true
	case "last_page":
		pg.last, pg.hasLast = int(v), true
	}
}

// pagingObject reads a "meta" or "pagination" object.
func (d *decoder) pagingObject(pg *paging, level int) {
	s := &d.env
	if !s.enterObject("meta") {
		if s.err != nil && !s.syntax {
			// A meta that is not an object carries no paging: ignore it.
			s.err = nil
			s.skipAll()
		}
		return
	}
	for n := 0; s.objectNext(&n); {
		switch k := string(s.key); k {
		case "total", "per_page", "current_page", "last_page":
			d.pagingField(pg, k)
		case "pagination", "page":
			if level < 2 {
				d.pagingObject(pg, level+1)
			} else {
				s.skipAll()
			}
		default:
			s.skipAll()
		}
	}
}

// errorObject reads {"message": ..., "details": [...]} (or a bare string).
func (d *decoder) errorObject(pg *paging) {
	s := &d.env
	switch s.peek() {
	case '"':
		pg.errMsg = &errorBody{Message: bytesToString(s.stringBytes())}
		return
	case '{':
	default:
		s.skipAll() // null, false, ...: no error
		return
	}
	eb := &errorBody{}
	s.pos++
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "message":
			if v, ok := d.strValue("error.message", false); ok {
				eb.Message = v
			} else if s.err != nil && !s.syntax {
				s.err = nil
				s.skipAll()
			}
		case "details":
			eb.Details = d.details()
		default:
			s.skipAll()
		}
	}
	pg.errMsg = eb
}

func (d *decoder) details() []string {
	s := &d.env
	var out []string
	switch s.peek() {
	case '[':
		s.pos++
		for n := 0; s.arrayNext(&n); {
			if s.peek() == '"' {
				out = append(out, bytesToString(s.stringBytes()))
			} else {
				st, en := s.skipAll()
				out = append(out, string(s.data[st:en]))
			}
		}
	case '"':
		out = append(out, bytesToString(s.stringBytes()))
	default:
		s.skipAll()
	}
	return out
}

// decodeRow decodes the row at the scanner's position into *r (zero on
// entry). A row that does not decode is rewound, skipped (which validates its
// syntax) and returned as a *RecordError with its raw bytes. A syntax error
// is left in the scanner for the envelope to report.
func decodeRow[T any, P decodable[T]](d *decoder, r P, key []byte, idx int, endpoint string, page int) *RecordError {
	s := d.s
	s.ws()
	start := s.pos
	keyed := key != nil
	var k string
	if keyed {
		k = string(key) // s.key is reused while the row decodes
	}
	if !r.decode(d) && s.err == nil {
		c := byte(0)
		if start < len(s.data) {
			c = s.data[start]
		}
		s.failShape(shapef("record: want an object, got %s", kindName(c)))
	}
	var cause error
	if s.err == nil {
		r.setRaw(d.own(s.data[start:s.pos]))
		cause = r.finish(k, keyed, d)
	} else {
		if s.syntax {
			return nil
		}
		cause = s.err
		s.err = nil
		s.pos = start
		s.skipAll() // validates the record's syntax, whatever its depth
		if s.err != nil {
			return nil
		}
	}
	if cause == nil {
		return nil
	}
	id := k
	if id == "" {
		id = r.recordKey()
	}
	if id == "" {
		id = "#" + strconv.Itoa(idx)
	}
	return &RecordError{Endpoint: endpoint, Page: page, Key: id, Raw: d.own(s.data[start:s.pos]), Err: cause}
}

// decodePage decodes a list page of T. Records never alias body (their Raw
// bytes are copied into arenas of the page), so the caller may reuse it.
// capHint presizes Records.
func decodePage[T any, P decodable[T]](endpoint string, page int, body []byte, capHint int) (*Page[T], error) {
	data, err := prepare(body)
	if err != nil {
		return nil, malformed(endpoint, page, err)
	}
	d := newDecoder(data)
	p := &Page[T]{Number: page, Bytes: len(body)}
	if capHint > 0 {
		p.Records = make([]T, 0, min(capHint, 1000))
	}
	pg, err := d.envelope(func(key []byte, idx int) {
		var zero T
		if n := len(p.Records); n < cap(p.Records) {
			// The slot is zero (fresh memory, or cleared below): taking it
			// writes nothing.
			p.Records = p.Records[:n+1]
		} else {
			p.Records = append(p.Records, zero)
		}
		rej := decodeRow[T, P](d, &p.Records[len(p.Records)-1], key, idx, endpoint, page)
		if d.env.err != nil || rej != nil {
			p.Records[len(p.Records)-1] = zero
			p.Records = p.Records[:len(p.Records)-1]
		}
		if rej != nil {
			p.Rejects = append(p.Rejects, *rej)
		}
	})
	if err != nil {
		var re *ResponseError
		if errors.As(err, &re) {
			re.Endpoint, re.Page = endpoint, page
		}
		return nil, err
	}
	if pg.errMsg != nil {
		return nil, errorBodyError(endpoint, page, 200, pg.errMsg)
	}
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

// errorBodyError maps an error object to an *APIError of the matching class.
func errorBodyError(endpoint string, page, status int, eb *errorBody) *APIError {
	e := &APIError{Endpoint: endpoint, Page: page, Status: status, Message: eb.Message, Details: eb.Details, Fields: eb.Fields}
	e.Kind = classifyMessage(eb.Message)
	if e.Kind == nil {
		e.Kind = ErrErrorResponse
	}
	return e
}

// classifyMessage maps the documented error messages to their class.
func classifyMessage(msg string) error {
	m := strings.ToLower(strings.TrimSpace(msg))
	switch {
	case strings.Contains(m, msgDailyQuota), strings.Contains(m, "daily") && strings.Contains(m, "quota"):
		return ErrDailyQuota
	case strings.Contains(m, msgRateLimit):
		return ErrRateLimited
	case m == "invalid authentication":
		return ErrUnauthorized
	case m == "forbidden access":
		return ErrForbidden
	case m == "data not found":
		return ErrNotFound
	case m == "internal server error":
		return ErrServer
	}
	return nil
}

// DecodeList decodes one list response body of the main interface in any
// tolerated shape (see the package documentation). The records' Raw fields
// are copies: they do not alias body. Records that do not decode are in
// Page.Rejects; the error is for the page as a whole (ErrMalformedResponse,
// ErrUnexpectedShape, or an *APIError for an error object).
//
//	page, err := extract.DecodeList[extract.Brand](body)
func DecodeList[T any, P decodable[T]](body []byte) (*Page[T], error) {
	return decodePage[T, P]("", 1, body, capFor(body))
}

// capFor guesses how many records a body holds (about 256 bytes or more
// each) to presize Records.
func capFor(body []byte) int { return min(len(body)/256+1, 1000) }

// DecodeCommunications decodes one response body of the communications
// endpoint: {"data": {"rows": {"<record id>": {...}}, paging...}} and its
// tolerated variants (rows as [] or an array of records carrying an id).
// Raw fields are copies: they do not alias body.
func DecodeCommunications(body []byte) (*Page[Communication], error) {
	return decodePage[Communication]("", 1, body, capFor(body))
}

// singleObject decodes the body of a single-object endpoint (brand or
// project detail) into rec: the object itself, or the object wrapped in
// {"data": ...}. Returns the object's span.
func singleObject(endpoint string, body []byte, decodeFn func(d *decoder) bool) ([]byte, error) {
	data, err := prepare(body)
	if err != nil {
		return nil, malformed(endpoint, 0, err)
	}
	data = bytes.Clone(data) // the detail's Raw fields alias this copy
	d := newDecoder(data)
	s := d.s
	if s.peek() != '{' {
		s.failShape(shapef("response is a JSON %s, want an object", kindName(s.peek())))
		return nil, withEndpoint(pageError(s), endpoint)
	}
	// First pass: validate the document, find an error object or a data
	// wrapper.
	var dataSpan []byte
	var eb *errorBody
	var pg paging
	keys := 0
	s.pos++
	for n := 0; s.objectNext(&n); {
		keys++
		switch string(s.key) {
		case "data":
			st, en := s.skipAll()
			if s.err == nil && s.data[st] == '{' {
				dataSpan = s.data[st:en:en]
			}
		case "error":
			d.errorObject(&pg)
			eb = pg.errMsg
		default:
			s.skipAll()
		}
	}
	s.end()
	if s.err != nil {
		return nil, withEndpoint(pageError(s), endpoint)
	}
	if eb != nil {
		return nil, errorBodyError(endpoint, 0, 200, eb)
	}
	if keys == 0 {
		return nil, &ResponseError{Endpoint: endpoint, Reason: "empty object where a record was expected", Kind: ErrUnexpectedShape}
	}
	obj := data
	if dataSpan != nil {
		obj = dataSpan
	}
	d.env.reset(obj)
	s.ws()
	start := s.pos
	decodeFn(d)
	s.end()
	if s.err != nil {
		return nil, &RecordError{Endpoint: endpoint, Key: "", Raw: obj, Err: s.err}
	}
	return obj[start:len(bytes.TrimRight(obj, " \t\r\n"))], nil
}

func withEndpoint(err error, endpoint string) error {
	var re *ResponseError
	if errors.As(err, &re) {
		re.Endpoint = endpoint
	}
	return err
}

// DecodeProject decodes the body of GET /v1/projects/{id}: the project
// object, wrapped or not in {"data": ...} and/or {"project_info": ...}.
func DecodeProject(body []byte) (*Project, error) {
	return decodeProject("", body)
}

func decodeProject(endpoint string, body []byte) (*Project, error) {
	p := &Project{}
	raw, err := singleObject(endpoint, body, p.decode)
	if err != nil {
		return nil, err
	}
	p.Raw = raw
	if p.ID == "" {
		return nil, &RecordError{Endpoint: endpoint, Raw: raw, Err: shapef("project detail has no project id")}
	}
	return p, nil
}

// DecodeBrandDetail decodes the body of GET /v1/brands/{id}:
// {"brand_info": {...}, "general_info": {...}, "metadata": {...}}, wrapped or
// not in {"data": ...}; a bare brand object is accepted too.
func DecodeBrandDetail(body []byte) (*BrandDetail, error) {
	return decodeBrandDetail("", body)
}

func decodeBrandDetail(endpoint string, body []byte) (*BrandDetail, error) {
	bd := &BrandDetail{}
	raw, err := singleObject(endpoint, body, func(d *decoder) bool {
		s := d.s
		save := s.pos
		if !s.enterObject("brand detail") {
			return false
		}
		hasInfo := false
		for n := 0; s.objectNext(&n); {
			switch string(s.key) {
			case "brand_info":
				hasInfo = true
				s.ws()
				st := s.pos
				if bd.Brand.decode(d) && s.err == nil {
					bd.Brand.Raw = s.data[st:s.pos:s.pos]
				}
			case "general_info":
				st, en := s.skip()
				bd.GeneralInfo = s.data[st:en:en]
			case "metadata":
				st, en := s.skip()
				bd.Metadata = s.data[st:en:en]
			default:
				s.skip()
			}
		}
		if s.err == nil && !hasInfo {
			// A bare brand object: the document is the brand.
			end := s.pos
			s.pos = save
			s.ws()
			st := s.pos
			bd.Brand.decode(d)
			if s.err == nil {
				bd.Brand.Raw = s.data[st:end:end]
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	bd.Raw = raw
	if bd.Brand.ID == "" {
		return nil, &RecordError{Endpoint: endpoint, Raw: raw, Err: shapef("brand detail has no brand id")}
	}
	return bd, nil
}
