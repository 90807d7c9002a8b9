package extract

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Page is one page of a list: its records as received, the records set
// aside (Rejects, each with its raw bytes), and the paging fields the server
// answered. An iterator holds one page at a time.
type Page struct {
	Number   int           // page number (1-based): current_page when answered, else the page asked for
	PerPage  int           // per_page answered by the server, else the one asked for
	Total    int           // total matching records, when answered
	LastPage int           // last_page, when answered (or derived from total and per_page)
	Paged    bool          // the response carried paging fields (total or last_page)
	Records  []Record      // the records, in the order received
	Rejects  []RecordError // rows that are not records (not an object, nested too deep); the rest of the page proceeds
	Bytes    int           // size of the response body
	// Envelope names the list envelope the answer came in (an Envelope*
	// constant; set by SplitPage and the generic fetches, "" from the
	// typed decoders).
	Envelope string
	// PagingFields lists the paging fields the answer carried (total,
	// per_page, current_page, last_page), wherever they sat; set with
	// Envelope.
	PagingFields []string
	// Next is the next page the answer names, if any: a Link header's
	// rel="next" URL, else a token or URL in the body (next_page_url,
	// next, next_cursor, next_page_token, links.next, meta.next_cursor,
	// ...). Only the cursor style follows it.
	Next string
	// End, set on the last page a list iterator yields, is the verdict on
	// the listing: proven complete or not, and why.
	End *ListEnd
}

// answered reports whether the answer carried the paging field name.
func (p *Page) answered(name string) bool {
	for _, f := range p.PagingFields {
		if f == name {
			return true
		}
	}
	return false
}

// Rows is the number of rows on the page, records and rejects.
func (p *Page) Rows() int { return len(p.Records) + len(p.Rejects) }

// FirstRaw is the raw bytes of the page's first row, record or reject (nil
// for an empty page): what tells two answers of a list apart.
func (p *Page) FirstRaw() []byte {
	switch {
	case len(p.Records) > 0:
		return p.Records[0].Raw
	case len(p.Rejects) > 0:
		return p.Rejects[0].Raw
	}
	return nil
}

// maxDepth bounds the nesting of a record below its top (its raw JSON lands
// in a jsonb column): deeper, the record is rejected alone (ErrTooDeep) and
// the rest of its page proceeds.
//
// The limits it stays under: PostgreSQL 15's jsonb input, with the default
// max_stack_depth of 2MB, takes objects nested 12 000 levels and refuses
// 14 000 ("stack depth limit exceeded"; arrays alike); encoding/json (the
// page spool, transform.CleanJSON) refuses past 10 000. 9 000 levels, plus
// the few of the record itself and the spool's envelope, fit all three, so
// any record that jsonb can store is stored, save for the band from 9 000
// to about 13 000 levels.
const maxDepth = 9000

// depthError is a record nested deeper than maxDepth. It is valid JSON: the
// record is rejected, not the page.
func depthError() error {
	return &shapeError{msg: fmt.Sprintf("value nested deeper than %d levels (more than the warehouse's jsonb columns are kept to)", maxDepth), kind: ErrTooDeep}
}

// paging is what the envelope said about paging.
type paging struct {
	total, perPage, current, last         int
	hasTotal, hasPer, hasCurrent, hasLast bool
}

// errorBody is the service's {"error": {"message", "details"}}, or a
// validation error's {"message", "errors"}.
type errorBody struct {
	Message string
	Details []string
	Fields  []FieldError // a validation error's fields
}

// utf8BOM is skipped at the start of a body.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// prepare strips a UTF-8 byte order mark and classifies bodies that are not
// JSON at all (a *notJSONError). It does not copy.
func prepare(body []byte) ([]byte, error) {
	b := bytes.TrimPrefix(body, utf8BOM)
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 {
		return nil, errors.New("empty body")
	}
	switch c := t[0]; {
	case c == '<':
		return nil, &notJSONError{what: "HTML page where JSON was expected", head: head(t)}
	case c == '{' || c == '[' || c == '"' || c == 'n' || c == 't' || c == 'f' || c == '-' || (c >= '0' && c <= '9'):
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
