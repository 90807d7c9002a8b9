package sandbox

import (
	"strconv"
	"time"
)

// enc appends hand-written JSON to a byte slice. Reflection-based encoding is
// several times slower, and the sandbox must serve 1000-row pages fast; the
// hand-written form also gives exact control over field order and shapes.
//
// Separators are implicit: a key or an array element is preceded by a comma
// unless the previous byte opens a container or ends a key.
type enc struct{ b []byte }

func (e *enc) sep() {
	if n := len(e.b); n > 0 {
		switch e.b[n-1] {
		case '{', '[', ':', ',':
		default:
			e.b = append(e.b, ',')
		}
	}
}

func (e *enc) open()        { e.sep(); e.b = append(e.b, '{') }
func (e *enc) close()       { e.b = append(e.b, '}') }
func (e *enc) openArr()     { e.sep(); e.b = append(e.b, '[') }
func (e *enc) closeArr()    { e.b = append(e.b, ']') }
func (e *enc) null()        { e.sep(); e.b = append(e.b, "null"...) }
func (e *enc) raw(s string) { e.sep(); e.b = append(e.b, s...) }

// key writes `"k":`; k must not need escaping. It returns e, so that the
// member's value follows on the same line: e.key("id").int(7).
func (e *enc) key(k string) *enc {
	e.sep()
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
	return e
}

// keyInt writes `"<n>":`.
func (e *enc) keyInt(n int64) {
	e.sep()
	e.b = append(e.b, '"')
	e.b = strconv.AppendInt(e.b, n, 10)
	e.b = append(e.b, '"', ':')
}

// keyStr writes an escaped key.
func (e *enc) keyStr(k string) {
	e.sep()
	e.b = appendJSONString(e.b, k)
	e.b = append(e.b, ':')
}

func (e *enc) str(s string) { e.sep(); e.b = appendJSONString(e.b, s) }

func (e *enc) strOrNull(s string, null bool) {
	if null {
		e.null()
		return
	}
	e.str(s)
}

func (e *enc) int(v int64) { e.sep(); e.b = strconv.AppendInt(e.b, v, 10) }

func (e *enc) bool(v bool) { e.sep(); e.b = strconv.AppendBool(e.b, v) }

// id writes an identifier as a JSON string, or a number when numeric is set.
func (e *enc) id(v int64, numeric bool) {
	e.sep()
	if numeric {
		e.b = strconv.AppendInt(e.b, v, 10)
		return
	}
	e.b = append(e.b, '"')
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, '"')
}

// money writes an amount in cents with two decimals, as a number or a string.
func (e *enc) money(cents int64, asString bool) {
	e.sep()
	if asString {
		e.b = append(e.b, '"')
	}
	e.b = appendCents(e.b, cents)
	if asString {
		e.b = append(e.b, '"')
	}
}

const (
	layoutDate    = "2006-01-02"
	layoutSeconds = "2006-01-02T15:04:05Z"
	layoutMicros  = "2006-01-02T15:04:05.000000Z"
)

func (e *enc) date(t time.Time) {
	e.sep()
	e.b = append(e.b, '"')
	e.b = t.UTC().AppendFormat(e.b, layoutDate)
	e.b = append(e.b, '"')
}

func (e *enc) ts(t time.Time) {
	e.sep()
	e.b = append(e.b, '"')
	e.b = t.UTC().AppendFormat(e.b, layoutSeconds)
	e.b = append(e.b, '"')
}

func (e *enc) tsOrNull(t time.Time) {
	if t.IsZero() {
		e.null()
		return
	}
	e.ts(t)
}

// appendCents appends cents as a decimal with exactly two fraction digits.
func appendCents(b []byte, cents int64) []byte {
	u := uint64(cents)
	if cents < 0 {
		b = append(b, '-')
		u = uint64(-cents)
	}
	b = strconv.AppendUint(b, u/100, 10)
	f := u % 100
	return append(b, '.', byte('0'+f/10), byte('0'+f%10))
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s (text or bytes) as a JSON string. Only the
// bytes JSON requires are escaped; UTF-8 is written as is (the generated text
// is valid UTF-8 and admin input went through encoding/json, which replaces
// invalid bytes).
func appendJSONString[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		b = appendEscape(b, c)
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"':
		return append(b, '\\', '"')
	case '\\':
		return append(b, '\\', '\\')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	default:
		return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
	}
}
