package oracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"
)

// object is a JSON object of the truth, its members undecoded. Its getters
// return values ready for COPY: nil is NULL.
type object map[string]json.RawMessage

func objectOf(raw json.RawMessage) (object, error) {
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("want an object: %w", err)
	}
	if o == nil {
		return nil, fmt.Errorf("want an object, got null")
	}
	return o, nil
}

// isNull reports whether the member k is absent or JSON null.
func (o object) isNull(k string) bool {
	v, ok := o[k]
	return !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// child is the member k as an object; nil when absent or null.
func (o object) child(k string) (object, error) {
	if o.isNull(k) {
		return nil, nil
	}
	c, err := objectOf(o[k])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	return c, nil
}

// member decodes the member k into a T; ok is false when k is absent or
// null, or does not decode (err says so, want naming what was wanted).
func member[T any](o object, k, want string) (v T, ok bool, err error) {
	if o.isNull(k) {
		return v, false, nil
	}
	if err := json.Unmarshal(o[k], &v); err != nil {
		return v, false, fmt.Errorf("%s: want %s: %w", k, want, err)
	}
	return v, true, nil
}

// part is child with an absent or null member k as an empty object.
func (o object) part(k string) (object, error) {
	c, err := o.child(k)
	if c == nil && err == nil {
		c = object{}
	}
	return c, err
}

// str is the member k as a string; nil when absent or null.
func (o object) str(k string) (*string, error) {
	s, ok, err := member[string](o, k, "a string")
	if !ok {
		return nil, err
	}
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD") // what text can hold
	return &s, nil
}

// text is str with the empty string as NULL.
func (o object) text(k string) (any, error) {
	s, err := o.str(k)
	if s == nil || *s == "" {
		return nil, err
	}
	return *s, err
}

// kept is str with the empty string kept.
func (o object) kept(k string) (any, error) {
	s, err := o.str(k)
	if s == nil {
		return nil, err
	}
	return *s, err
}

// trimmed is str trimmed of surrounding white space, NULL when nothing is left.
func (o object) trimmed(k string) (any, error) {
	s, err := o.str(k)
	if s == nil {
		return nil, err
	}
	if t := strings.TrimSpace(*s); t != "" {
		return t, err
	}
	return nil, err
}

// id is an identifier, a JSON string or number, as text; NULL when absent,
// null or empty.
func (o object) id(k string) (any, error) {
	if o.isNull(k) {
		return nil, nil
	}
	v := bytes.TrimSpace(o[k])
	if len(v) > 0 && v[0] != '"' {
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, fmt.Errorf("%s: want a string or number id: %w", k, err)
		}
		return n.String(), nil
	}
	return o.text(k)
}

// mustID is id for a key column, which cannot be NULL.
func (o object) mustID(k string) (string, error) {
	v, err := o.id(k)
	if err != nil {
		return "", err
	}
	if v == nil {
		return "", fmt.Errorf("%s is missing", k)
	}
	return v.(string), nil
}

// integer is the member k as an int64; nil when absent or null.
func (o object) integer(k string) (any, error) {
	n, ok, err := member[json.Number](o, k, "an integer")
	if !ok {
		return nil, err
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: want an integer: %w", k, err)
	}
	return i, nil
}

// decimal is the member k, a JSON number, as an exact numeric; nil when
// absent or null.
func (o object) decimal(k string) (any, error) {
	n, ok, err := member[json.Number](o, k, "a number")
	if !ok {
		return nil, err
	}
	var v pgtype.Numeric
	if err := v.ScanScientific(n.String()); err != nil {
		return nil, fmt.Errorf("%s: %q is not a decimal: %w", k, n, err)
	}
	return v, nil
}

// date is the member k, "YYYY-MM-DD" (or an instant, whose UTC day counts),
// as a date; nil when absent, null or empty.
func (o object) date(k string) (any, error) {
	s, err := o.str(k)
	if err != nil || s == nil || *s == "" {
		return nil, err
	}
	if d, err := time.Parse(time.DateOnly, *s); err == nil {
		return d, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a date", k, *s)
	}
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
}

// instant is the member k, an RFC 3339 time, in UTC at the microsecond
// timestamptz keeps; nil when absent, null or empty.
func (o object) instant(k string) (any, error) {
	s, err := o.str(k)
	if err != nil || s == nil || *s == "" {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not an RFC 3339 time", k, *s)
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// flag is the member k read loosely as the API writes flags: true, 1 (any
// non-zero integer), "1", "true" or "yes" are true; false, 0, null, absent,
// "0", "false", "no" or "" are false.
func (o object) flag(k string) (bool, error) {
	if o.isNull(k) {
		return false, nil
	}
	v := bytes.TrimSpace(o[k])
	switch {
	case string(v) == "true":
		return true, nil
	case string(v) == "false":
		return false, nil
	case v[0] == '"':
		s, err := o.str(k)
		if err != nil {
			return false, err
		}
		switch strings.ToLower(strings.TrimSpace(*s)) {
		case "1", "true", "yes":
			return true, nil
		case "0", "false", "no", "":
			return false, nil
		}
		return false, fmt.Errorf("%s: %q is not a flag", k, *s)
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false, fmt.Errorf("%s: %s is not a flag", k, v)
	}
	return n != 0, nil
}

// json is the member k as stored in a jsonb column; nil when absent.
func (o object) json(k string) any {
	v, ok := o[k]
	if !ok {
		return nil
	}
	return rawJSON(v)
}

// rawJSON is a record for a jsonb column.
func rawJSON(raw json.RawMessage) any {
	if !utf8.Valid(raw) {
		return json.RawMessage(bytes.ToValidUTF8(raw, []byte("\uFFFD")))
	}
	return raw
}

// fields runs getters in order and keeps the first error.
type fields struct{ err error }

func (f *fields) v(x any, err error) any {
	if err != nil && f.err == nil {
		f.err = err
	}
	return x
}
