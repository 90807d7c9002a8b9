package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ErrValue is wrapped by every error of Coerce: a value of the wrong kind or
// format for its column. The record holding it is rejected.
var ErrValue = errors.New("value does not fit its column")

// MaxKeyBytes bounds text that lands in a key or an index: PostgreSQL refuses
// btree entries over about 2700 bytes, which would fail a whole page.
const MaxKeyBytes = 1000

func valueErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrValue, fmt.Sprintf(format, args...))
}

// Coerce reads the JSON value r for column c: nil (NULL) when r is absent
// (see Absent), otherwise the Go value of c.Type (see Type). what names the
// field in errors.
func (c *Column) Coerce(r gjson.Result, what string) (any, error) {
	if c.Type == Boolean {
		return coerceBool(r, what)
	}
	if Absent(r) {
		if c.Object && r.Type == gjson.JSON {
			return json.RawMessage("{}"), nil // [] for an empty object
		}
		return nil, nil
	}
	var v any
	var err error
	switch c.Type {
	case Text:
		v, err = c.text(r, what)
	case ID:
		v, err = coerceID(r, what)
	case BigInt:
		v, err = coerceInt(r, what, 64)
	case Integer:
		v, err = coerceInt(r, what, 32)
	case Numeric:
		v, err = coerceDecimal(r, what)
	case Date:
		v, err = coerceTime(r, what, dateOnly)
	case Month:
		v, err = coerceTime(r, what, monthOnly)
	case Timestamptz:
		v, err = coerceTime(r, what, anyInstant)
	case JSONB:
		v = json.RawMessage(r.Raw) // as received; the transform makes it storable
	default:
		return nil, fmt.Errorf("coerce %s: unknown type %q", what, c.Type)
	}
	if err != nil || v == nil {
		return nil, err
	}
	return v, c.validate(v, what)
}

// Read reads column c from view v: Coerce(v.Value(c), c.Field), without
// working out what Coerce does not read (a number's float value). A view
// with a base reads c there when it holds none of c's paths (see
// View.WithBase).
func (c *Column) Read(v *View) (any, error) {
	if v.base != nil {
		v = v.reading(c)
	}
	if len(c.Alternates) > 0 {
		return c.Coerce(v.Value(c), c.Field)
	}
	raw, ok := v.lookup(c.Field)
	if !ok {
		return c.Coerce(gjson.Result{}, c.Field)
	}
	if raw != "" && (raw[0] == '-' || isDigit(raw[0])) {
		// A member's number text is the number alone: parseValue's result
		// but for Num.
		return c.Coerce(gjson.Result{Type: gjson.Number, Raw: raw}, c.Field)
	}
	return c.Coerce(parseValue(raw), c.Field)
}

// validate applies c's constraints to a value read.
func (c *Column) validate(v any, what string) error {
	switch x := v.(type) {
	case string:
		if (c.Key || c.Indexed || c.Type == ID) && len(x) > MaxKeyBytes {
			return valueErr("%s is %d bytes long, more than the %d a key may have", what, len(x), MaxKeyBytes)
		}
		if len(c.OneOf) > 0 && !slices.Contains(c.OneOf, x) {
			return valueErr("%s %q is not one of %s", what, x, strings.Join(c.OneOf, ", "))
		}
	case int64:
		if c.NonNegative && x < 0 {
			return valueErr("negative %s %d", what, x)
		}
	}
	return nil
}

func (c *Column) text(r gjson.Result, what string) (any, error) {
	var s string
	switch r.Type {
	case gjson.String:
		s = r.Str
	case gjson.Number:
		s = r.Raw
	default:
		if !c.AnyJSON {
			return nil, valueErr("%s: want a string, got %s", what, kind(r))
		}
		s = compactJSON(r.Raw)
	}
	if c.Trim {
		s = strings.TrimSpace(s)
	}
	if s == "" && !c.KeepEmpty {
		return nil, nil
	}
	return CleanText(s), nil
}

func compactJSON(raw string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return raw
	}
	return b.String()
}

func coerceID(r gjson.Result, what string) (any, error) {
	switch r.Type {
	case gjson.String:
		s := strings.TrimSpace(r.Str)
		if s == "" {
			return nil, nil
		}
		return CleanText(s), nil
	case gjson.Number:
		if !IsInteger(r.Raw) {
			return nil, valueErr("%s: id must be a string or an integer, got the number %s", what, r.Raw)
		}
		return r.Raw, nil
	}
	return nil, valueErr("%s: id must be a string or an integer, got %s", what, kind(r))
}

// numberText is the text a number column reads from r: a number's literal
// text (never through float64) or a string's, trimmed ("" for NULL). want
// names what the column holds, for the error any other value gets.
func numberText(r gjson.Result, what, want string) (string, error) {
	switch r.Type {
	case gjson.String:
		return strings.TrimSpace(r.Str), nil
	case gjson.Number:
		return r.Raw, nil
	}
	return "", valueErr("%s: want %s, got %s", what, want, kind(r))
}

func coerceInt(r gjson.Result, what string, bits int) (any, error) {
	s, err := numberText(r, what, "an integer")
	if err != nil || s == "" {
		return nil, err
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return nil, valueErr("%s: integer %s out of range", what, s)
		}
		return nil, valueErr("%s: want an integer, got %q", what, s)
	}
	if bits == 32 {
		return int32(n), nil
	}
	return n, nil
}

func coerceBool(r gjson.Result, what string) (any, error) {
	switch r.Type {
	case gjson.True:
		return true, nil
	case gjson.False, gjson.Null:
		return false, nil
	case gjson.Number:
		if !IsInteger(r.Raw) {
			return nil, valueErr("%s: want 1, 0, true, false or null, got %s", what, r.Raw)
		}
		return strings.Trim(r.Raw, "-+0") != "", nil
	case gjson.String:
		switch strings.TrimSpace(r.Str) {
		case "1", "true", "TRUE", "True", "yes":
			return true, nil
		case "0", "false", "FALSE", "False", "no", "":
			return false, nil
		}
		return nil, valueErr("%s: want 1, 0, true, false or null, got the string %q", what, strings.TrimSpace(r.Str))
	}
	if !r.Exists() || Absent(r) {
		return false, nil
	}
	return nil, valueErr("%s: want 1, 0, true, false or null, got %s", what, kind(r))
}

func coerceDecimal(r gjson.Result, what string) (any, error) {
	s, err := numberText(r, what, "a decimal number")
	if err != nil || s == "" {
		return nil, err
	}
	d, ok := CanonicalDecimal(s)
	if !ok {
		return nil, valueErr("%s %q is not a decimal number", what, s)
	}
	return d, nil
}

type timeKind int

const (
	dateOnly timeKind = iota
	monthOnly
	anyInstant
)

func coerceTime(r gjson.Result, what string, k timeKind) (any, error) {
	if r.Type != gjson.String {
		return nil, valueErr("%s: want a date string, got %s", what, kind(r))
	}
	s := strings.TrimSpace(r.Str)
	if s == "" || s == "0000-00-00" || s == "0000-00-00 00:00:00" {
		return nil, nil
	}
	switch k {
	case dateOnly:
		t, ok := ParseDate(s)
		if !ok {
			return midnightDate(s, what)
		}
		return t, nil
	case monthOnly:
		t, err := time.Parse("2006-01", s)
		if err != nil {
			return nil, valueErr("%s %q is not a YYYY-MM month", what, s)
		}
		return t, nil
	}
	t, ok := ParseInstant(s)
	if !ok {
		return nil, valueErr("%s: want an RFC 3339 timestamp, got %q", what, s)
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// midnightDate reads a date column's value s that is no YYYY-MM-DD: a
// timestamp written at 00:00:00 (any zeros fraction) in UTC (zone Z, a zero
// offset or none) is its date, as a date cast serialised as a timestamp
// is ("2025-12-27T00:00:00.000000Z", "2025-12-27 00:00:00"). Another time
// of day, or another zone's midnight, names a different date in another
// zone: refused, saying so.
func midnightDate(s, what string) (any, error) {
	if len(s) > 10 {
		day, okDay := ParseDate(s[:10])
		t, okInstant := ParseInstant(s)
		if okDay && okInstant {
			// The offset is whole minutes, the fraction under a second: the
			// instant is the day's midnight only when both are zero.
			if s[11:19] == "00:00:00" && t.Equal(day) {
				return day, nil
			}
			return nil, valueErr("%s: want a date YYYY-MM-DD, got the timestamp %q: a date column takes a timestamp only at midnight UTC (a time of day names another date in another zone)", what, s)
		}
	}
	return nil, valueErr("%s: want a date YYYY-MM-DD, got %q", what, s)
}

// JSONType names r's JSON type: null, boolean, number, string, array or
// object.
func JSONType(r gjson.Result) string {
	switch r.Type {
	case gjson.Null:
		return "null"
	case gjson.False, gjson.True:
		return "boolean"
	case gjson.Number:
		return "number"
	case gjson.String:
		return "string"
	}
	if r.IsArray() {
		return "array"
	}
	return "object"
}

// kind is r's JSON type for errors, with its article: "a string", "an
// object", "null".
func kind(r gjson.Result) string {
	switch t := JSONType(r); t {
	case "null":
		return t
	case "array", "object":
		return "an " + t
	default:
		return "a " + t
	}
}

// maxDecimalExponent bounds exponents so "1e999999999" cannot blow up memory.
const maxDecimalExponent = 1000

// CanonicalDecimal validates s as a decimal number —
// [+-]? digits* (. digits*)? ([eE] [+-]? digits)? with at least one digit —
// and returns its canonical text: no exponent, no leading zeros, no negative
// zero; the digits after the point kept as given ("1250.50").
func CanonicalDecimal(s string) (string, bool) {
	b := s
	neg, is := signAt(b, 0)
	i := digitsEnd(b, is)
	intPart := b[is:i]
	frac := ""
	if i < len(b) && b[i] == '.' {
		fs := i + 1
		i = digitsEnd(b, fs)
		frac = b[fs:i]
	}
	if len(intPart)+len(frac) == 0 {
		return "", false
	}
	exp := 0
	hasExp := false
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		hasExp = true
		eneg, es := signAt(b, i+1)
		for i = es; i < len(b) && isDigit(b[i]); i++ {
			if exp > maxDecimalExponent {
				return "", false
			}
			exp = exp*10 + int(b[i]-'0')
		}
		if i == es || exp > maxDecimalExponent {
			return "", false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(b) {
		return "", false
	}
	// The common case: already canonical.
	if !hasExp && b[0] != '+' && len(intPart) > 0 && (len(intPart) == 1 || intPart[0] != '0') &&
		b[len(b)-1] != '.' && !(neg && allZeroDigits(b)) {
		return s, true
	}
	digits := intPart + frac
	point := len(intPart) + exp
	scale := max(len(frac)-exp, 0)
	var ip, fp string
	switch {
	case point <= 0:
		ip = "0"
		fp = strings.Repeat("0", -point) + digits
	case point >= len(digits):
		ip = digits + strings.Repeat("0", point-len(digits))
	default:
		ip, fp = digits[:point], digits[point:]
	}
	for len(ip) > 1 && ip[0] == '0' {
		ip = ip[1:]
	}
	if ip == "" {
		ip = "0"
	}
	if len(fp) > scale {
		fp = fp[:scale] // only zeros can be beyond the scale here
	}
	out := ip
	if fp != "" {
		out += "." + fp
	}
	if neg && !allZeroDigits(out) {
		out = "-" + out
	}
	return out, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// signAt reads the optional sign at s[i]: whether it is '-', and the index
// after it.
func signAt(s string, i int) (neg bool, next int) {
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		return s[i] == '-', i + 1
	}
	return false, i
}

// digitsEnd returns the index after the digits from b[i] on (i when there
// are none).
func digitsEnd[T ~string | ~[]byte](b T, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func allZeroDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '1' && s[i] <= '9' {
			return false
		}
	}
	return true
}

func daysIn(year int, month time.Month) int {
	return time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func num(s string) (int, bool) {
	v := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v, true
}

// ParseDate parses YYYY-MM-DD as UTC midnight.
func ParseDate(s string) (time.Time, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	y, ok1 := num(s[0:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)) {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC), true
}

// ParseInstant parses an RFC 3339 timestamp into UTC, keeping up to
// nanoseconds. Tolerated: a space or 't' for 'T', 'z' for 'Z', ',' for the
// decimal point, offsets written ±HH:MM, ±HHMM or ±HH, no zone at all (taken
// as UTC), and a bare date (UTC midnight).
func ParseInstant(s string) (time.Time, bool) {
	if len(s) == 10 {
		return ParseDate(s)
	}
	if len(s) < 19 || s[13] != ':' || s[16] != ':' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') {
		return time.Time{}, false
	}
	day, ok := ParseDate(s[:10])
	if !ok {
		return time.Time{}, false
	}
	hh, ok1 := num(s[11:13])
	mi, ok2 := num(s[14:16])
	ss, ok3 := num(s[17:19])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mi > 59 || ss > 59 {
		return time.Time{}, false
	}
	i := 19
	ns := 0
	if i < len(s) && (s[i] == '.' || s[i] == ',') {
		i++
		fs := i
		scale := 100000000
		for i < len(s) && isDigit(s[i]) {
			if i-fs < 9 {
				ns += int(s[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == fs {
			return time.Time{}, false
		}
	}
	offset := 0
	if i < len(s) {
		switch s[i] {
		case 'Z', 'z':
			i++
		case '+', '-':
			sign := 1
			if s[i] == '-' {
				sign = -1
			}
			rest := s[i+1:]
			var oh, om int
			ok := false
			switch {
			case len(rest) == 5 && rest[2] == ':':
				oh, ok = num(rest[0:2])
				if ok {
					om, ok = num(rest[3:5])
				}
			case len(rest) == 4:
				oh, ok = num(rest[0:2])
				if ok {
					om, ok = num(rest[2:4])
				}
			case len(rest) == 2:
				oh, ok = num(rest)
			}
			if !ok || oh > 23 || om > 59 {
				return time.Time{}, false
			}
			offset = sign * (oh*3600 + om*60)
			i = len(s)
		default:
			return time.Time{}, false
		}
	}
	if i != len(s) {
		return time.Time{}, false
	}
	return day.Add(time.Duration(hh)*time.Hour + time.Duration(mi)*time.Minute +
		time.Duration(ss)*time.Second + time.Duration(ns) - time.Duration(offset)*time.Second), true
}

// CleanText returns s as PostgreSQL text can hold it: valid UTF-8 without NUL
// characters (each replaced by U+FFFD).
func CleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}
