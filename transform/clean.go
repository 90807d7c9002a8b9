package transform

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agencysync/agencysync/extract"
)

// dedup collects rows in first-seen order; a row whose key was seen replaces
// the earlier one (the last one wins).
type dedup[K comparable, R any] struct {
	rows  []R
	index map[K]int
}

func (d *dedup[K, R]) put(key K, row R) {
	if d.index == nil {
		d.index = make(map[K]int)
	}
	if i, ok := d.index[key]; ok {
		d.rows[i] = row
		return
	}
	d.index[key] = len(d.rows)
	d.rows = append(d.rows, row)
}

// cleanText returns s as PostgreSQL text can hold it: valid UTF-8 without NUL
// characters (each replaced by U+FFFD).
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

// maxKeyBytes bounds text that lands in a key or an index: PostgreSQL
// refuses btree entries over about 2700 bytes, which would fail a whole page.
const maxKeyBytes = 1000

// keyLengths checks name/value pairs of key and indexed text against
// maxKeyBytes.
func keyLengths(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if n := len(pairs[i+1]); n > maxKeyBytes {
			return fmt.Errorf("%s is %d bytes long, more than the %d a key may have", pairs[i], n, maxKeyBytes)
		}
	}
	return nil
}

// optText is s cleaned, or nil when s is empty.
func optText(s string) *string {
	if s == "" {
		return nil
	}
	c := cleanText(s)
	return &c
}

// optTrim is s trimmed of surrounding white space and cleaned, or nil when
// nothing is left.
func optTrim(s string) *string {
	return optText(strings.TrimSpace(s))
}

// optTrimPtr is optTrim of *p, nil for nil.
func optTrimPtr(p *string) *string {
	if p == nil {
		return nil
	}
	return optTrim(*p)
}

// optPtr is *p cleaned (the empty string kept), nil for nil.
func optPtr(p *string) *string {
	if p == nil {
		return nil
	}
	c := cleanText(*p)
	return &c
}

// optID is the identifier as text, nil when absent.
func optID(id extract.ID) *string { return optText(string(id)) }

// optDate is the calendar day of *t (a UTC midnight), nil for nil or the zero time.
func optDate(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	d := dateOf(*t)
	return &d
}

// dateOf is the UTC midnight of t's UTC calendar day.
func dateOf(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// optInstant is *t in UTC at microsecond precision, nil for nil or the zero time.
func optInstant(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	i := instant(*t)
	return &i
}

// instant is t in UTC at microsecond precision (what timestamptz keeps).
func instant(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

var decimalPattern = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// decimal is the exact decimal text of d, nil when absent, or an error when d is
// not a finite decimal number.
func decimal(field string, d extract.Decimal) (*string, error) {
	if d == "" {
		return nil, nil
	}
	if !decimalPattern.MatchString(string(d)) {
		return nil, fmt.Errorf("%s %q is not a decimal number", field, string(d))
	}
	s := string(d)
	return &s, nil
}

// decimals converts several decimal fields at once; the first error wins.
type decimals struct{ err error }

func (ds *decimals) conv(field string, d extract.Decimal) *string {
	v, err := decimal(field, d)
	if err != nil && ds.err == nil {
		ds.err = err
	}
	return v
}

// period parses a "YYYY-MM" month into its first day.
func period(s string) (time.Time, error) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("period %q is not a YYYY-MM month", s)
	}
	return t, nil
}

// CleanJSON returns raw as a jsonb column can store it: unchanged when it is
// valid JSON that PostgreSQL accepts; re-encoded with NUL characters and lone
// surrogates replaced by U+FFFD (and invalid UTF-8 repaired) when it needs
// that; a JSON string of the bytes when they are not JSON at all, or JSON
// nested deeper than encoding/json's 10 000 levels (PostgreSQL 15's jsonb
// takes about 13 000 with the default max_stack_depth; extract keeps
// records up to 9 000 and rejects deeper ones, whose payload lands here as
// such a string); JSON null when empty.
func CleanJSON(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null")
	}
	if !jsonbRisky(raw) && json.Valid(raw) {
		return raw
	}
	if json.Valid(raw) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			if out, err := json.Marshal(scrub(v)); err == nil {
				return out
			}
		}
	}
	out, _ := json.Marshal(cleanText(string(raw))) // a string always marshals
	return out
}

// recordJSON is CleanJSON for the Raw of a record decoded by extract, which
// is one valid JSON value: the decoder checks every record it keeps (its
// fuzz tests hold it to that), so the syntax is not checked again here; only
// what a jsonb column refuses (NUL characters, lone surrogates, invalid
// UTF-8) is looked for, and such a record goes through CleanJSON. On a page
// of e-mails this halves the cost of the transform.
func recordJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || jsonbRisky(raw) {
		return CleanJSON(raw)
	}
	return raw
}

// jsonbRisky reports whether raw may hold what PostgreSQL's jsonb refuses:
// invalid UTF-8, an escaped NUL or an escaped surrogate (lone or paired;
// pairs are rare and re-encoding keeps them).
func jsonbRisky(raw []byte) bool {
	return !utf8.Valid(raw) || bytes.Contains(raw, []byte(`\u0000`)) ||
		bytes.Contains(raw, []byte(`\ud`)) || bytes.Contains(raw, []byte(`\uD`))
}

// scrub replaces NUL characters in every string and object key of v.
func scrub(v any) any {
	switch x := v.(type) {
	case string:
		return cleanText(x)
	case []any:
		for i := range x {
			x[i] = scrub(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[cleanText(k)] = scrub(e)
		}
		return out
	default:
		return v
	}
}

// HashKeyPrefix starts the Reject.Key of a record that had no usable key:
// the prefix and a hash of its payload.
const HashKeyPrefix = "sha256:"

// payloadKey is the rejected-record key of a payload without a usable key.
func payloadKey(payload []byte) string {
	sum := sha256.Sum256(payload)
	return HashKeyPrefix + hex.EncodeToString(sum[:16])
}

// NewReject builds the Reject of a record of stream that cannot be loaded:
// raw is the record as received (stored as CleanJSON makes it) and an empty
// key is replaced by a hash of it.
func NewReject(stream, key string, raw json.RawMessage, err error) Reject {
	payload := CleanJSON(raw)
	if key == "" {
		key = payloadKey(payload)
	}
	return Reject{Stream: stream, Key: cleanText(key), Payload: payload, Error: cleanText(err.Error())}
}

// RecordErrors turns records that extract could not decode into Rejects of
// stream (for example StreamCommunications or StreamInvoices).
func RecordErrors(stream string, errs []extract.RecordError) []Reject {
	out := make([]Reject, 0, len(errs))
	for _, e := range errs {
		key := e.Key
		if strings.HasPrefix(key, "#") { // a position on the page, not a key
			key = ""
		}
		err := e.Err
		if err == nil {
			err = errors.New("undecodable record")
		}
		out = append(out, NewReject(stream, key, e.Raw,
			fmt.Errorf("decode %s page %d: %w", e.Endpoint, e.Page, err)))
	}
	return out
}
