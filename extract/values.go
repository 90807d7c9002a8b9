package extract

import (
	"bytes"
	"time"
)

// Value decoders. Each reads one JSON value at the scanner's position. A value
// of a type the field cannot take sets a shape error naming the field (what)
// and leaves the scanner where it was; the record is then set aside as a
// *RecordError by the page decoder.

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// trimSpace trims ASCII whitespace.
func trimSpace(b []byte) []byte {
	if len(b) == 0 || (b[0] > ' ' && b[len(b)-1] > ' ') {
		return b // the common case
	}
	return bytes.TrimSpace(b)
}

// id reads an identifier: a JSON string (kept as text, surrounding whitespace
// trimmed) or an integer number (its literal text). null and "" are absent.
// Floats, booleans, objects and arrays are refused.
func (d *decoder) id(what string) ID {
	s := d.s
	switch c := s.peek(); {
	case c == '"':
		b := trimSpace(s.stringBytes())
		if len(b) == 0 {
			return ""
		}
		return ID(d.intern(b, s.ascii))
	case c == '-' || isDigit(c):
		p := s.pos
		st, en, isInt := s.scanNumber()
		if s.err != nil {
			return ""
		}
		if !isInt {
			s.pos = p
			s.failShape(shapef("%s: id must be a string or an integer, got the number %s", what, s.data[st:en]))
			return ""
		}
		return ID(d.intern(s.data[st:en], true))
	case c == 'n':
		s.literal("null")
		return ""
	case c == 'f': // a PHP encoder's missing value
		s.literal("false")
		return ""
	case c == 0:
		s.failSyntax("unexpected end of input")
		return ""
	default:
		s.failShape(shapef("%s: id must be a string or an integer, got %s", what, kindName(c)))
		return ""
	}
}

// parseInt64 parses an optionally signed decimal integer. overflow reports a
// well-formed integer outside the int64 range.
func parseInt64(b []byte) (v int64, ok, overflow bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false, false
	}
	var u uint64
	if len(b) <= 18 { // cannot overflow
		for _, c := range b {
			if !isDigit(c) {
				return 0, false, false
			}
			u = u*10 + uint64(c-'0')
		}
		if neg {
			return -int64(u), true, false
		}
		return int64(u), true, false
	}
	for _, c := range b {
		if !isDigit(c) {
			return 0, false, false
		}
		if u > (1<<63)/10 {
			overflow = true
			continue
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			overflow = true
		}
	}
	if overflow {
		return 0, true, true
	}
	if neg {
		return -int64(u), true, false // -(1<<63) wraps to itself: MinInt64
	}
	if u > 1<<63-1 {
		return 0, true, true
	}
	return int64(u), true, false
}

// intValue reads an integer given as a JSON number or a numeric string.
// present is false for null and "". Non-integers are a shape error; ids
// (idKind) that overflow int64 are ErrIDOutOfRange.
func (d *decoder) intValue(what string, idKind bool) (v int64, present bool) {
	s := d.s
	p := s.pos
	var b []byte
	switch c := s.peek(); {
	case c == '"':
		p = s.pos
		b = trimSpace(s.stringBytes())
		if len(b) == 0 {
			return 0, false
		}
	case c == '-' || isDigit(c):
		p = s.pos
		st, en, _ := s.scanNumber()
		b = s.data[st:en]
	case c == 'n':
		s.literal("null")
		return 0, false
	case c == 'f': // a PHP encoder's missing value
		s.literal("false")
		return 0, false
	case c == 0:
		s.failSyntax("unexpected end of input")
		return 0, false
	default:
		s.failShape(shapef("%s: want an integer, got %s", what, kindName(c)))
		return 0, false
	}
	if s.err != nil {
		return 0, false
	}
	v, ok, overflow := parseInt64(b)
	switch {
	case overflow && idKind:
		s.pos = p
		s.failShape(&shapeError{msg: what + ": id " + string(b) + " does not fit int64", kind: ErrIDOutOfRange})
		return 0, false
	case overflow:
		s.pos = p
		s.failShape(shapef("%s: integer %s out of range", what, b))
		return 0, false
	case !ok:
		s.pos = p
		s.failShape(shapef("%s: want an integer, got %q", what, b))
		return 0, false
	}
	return v, true
}

func (d *decoder) int64p(what string) *int64 {
	v, ok := d.intValue(what, false)
	if !ok {
		return nil
	}
	return d.intPtr(v)
}

// boolLoose reads 1/0, true/false, null (false) and the strings "1", "0",
// "true", "false", "yes", "no" and "" (false).
func (d *decoder) boolLoose(what string) bool {
	s := d.s
	switch c := s.peek(); {
	case c == 't':
		s.literal("true")
		return true
	case c == 'f':
		s.literal("false")
		return false
	case c == 'n':
		s.literal("null")
		return false
	case c == '-' || isDigit(c):
		p := s.pos
		st, en, isInt := s.scanNumber()
		if s.err != nil {
			return false
		}
		if !isInt {
			s.pos = p
			s.failShape(shapef("%s: want 1, 0, true, false or null, got %s", what, s.data[st:en]))
			return false
		}
		for _, ch := range s.data[st:en] {
			if ch >= '1' && ch <= '9' {
				return true
			}
		}
		return false
	case c == '"':
		p := s.pos
		b := trimSpace(s.stringBytes())
		switch string(b) {
		case "1", "true", "TRUE", "True", "yes":
			return true
		case "0", "false", "FALSE", "False", "no", "":
			return false
		}
		if s.err == nil {
			s.pos = p
			s.failShape(shapef("%s: want 1, 0, true, false or null, got the string %q", what, b))
		}
		return false
	case c == 0:
		s.failSyntax("unexpected end of input")
		return false
	default:
		s.failShape(shapef("%s: want 1, 0, true, false or null, got %s", what, kindName(c)))
		return false
	}
}

// strValue reads a string; a number is taken as its literal text. present is
// false for null. Booleans, objects and arrays are a shape error. intern
// shares repeated short values within a page.
func (d *decoder) strValue(what string, intern bool) (v string, present bool) {
	s := d.s
	switch c := s.peek(); {
	case c == '"':
		b := s.stringBytes()
		if s.err != nil {
			return "", false
		}
		if intern {
			return d.intern(b, s.ascii), true
		}
		if s.ascii {
			return string(b), true
		}
		return bytesToString(b), true
	case c == '-' || isDigit(c):
		st, en, _ := s.scanNumber()
		if s.err != nil {
			return "", false
		}
		return d.intern(s.data[st:en], true), true
	case c == 'n':
		s.literal("null")
		return "", false
	case c == 'f': // a PHP encoder's missing value
		s.literal("false")
		return "", false
	case c == 0:
		s.failSyntax("unexpected end of input")
		return "", false
	default:
		s.failShape(shapef("%s: want a string, got %s", what, kindName(c)))
		return "", false
	}
}

func (d *decoder) str(what string) string {
	v, _ := d.strValue(what, true)
	return v
}

func (d *decoder) strp(what string, intern bool) *string {
	v, ok := d.strValue(what, intern)
	if !ok {
		return nil
	}
	return d.strPtr(v)
}

// scalarText renders any JSON scalar as text (strings decoded, numbers and
// booleans literally); null is nil; objects and arrays are kept as their
// compact JSON text.
func (d *decoder) scalarText(what string) *string {
	s := d.s
	switch c := s.peek(); c {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return d.strp(what, true)
	case 'n':
		s.literal("null")
		return nil
	case 't', 'f', '{', '[':
		st, en := s.skip()
		if s.err != nil {
			return nil
		}
		return d.strPtr(d.intern(s.data[st:en], false))
	case 0:
		s.failSyntax("unexpected end of input")
		return nil
	default:
		s.failShape(shapef("%s: unexpected %s", what, kindName(c)))
		return nil
	}
}

// decimal reads an exact decimal from a JSON number or a numeric string
// (surrounding whitespace and a leading '+' allowed in strings). null and ""
// are absent. The result is canonical: no exponent, no leading zeros, no
// negative zero; the digits after the point are kept as given ("1250.50").
func (d *decoder) decimal(what string) Decimal {
	s := d.s
	p := s.pos
	var b []byte
	fromString := false
	switch c := s.peek(); {
	case c == '"':
		p = s.pos
		b = trimSpace(s.stringBytes())
		if len(b) == 0 {
			return ""
		}
		fromString = true
	case c == '-' || isDigit(c):
		p = s.pos
		st, en, _ := s.scanNumber()
		b = s.data[st:en]
	case c == 'n':
		s.literal("null")
		return ""
	case c == 'f': // a PHP encoder's missing value
		s.literal("false")
		return ""
	case c == 0:
		s.failSyntax("unexpected end of input")
		return ""
	default:
		s.failShape(shapef("%s: want a decimal number, got %s", what, kindName(c)))
		return ""
	}
	if s.err != nil {
		return ""
	}
	v, ok := d.canonicalDecimal(b, fromString)
	if !ok {
		s.pos = p
		s.failShape(shapef("%s: invalid decimal %q", what, b))
		return ""
	}
	return v
}

// maxDecimalExponent bounds exponents so "1e999999999" cannot blow up memory.
const maxDecimalExponent = 1000

// canonicalDecimal validates b as a decimal and returns its canonical text.
func (d *decoder) canonicalDecimal(b []byte, fromString bool) (Decimal, bool) {
	// Fast path: a JSON number without exponent is already canonical unless it
	// is a negative zero.
	if !fromString && bytes.IndexAny(b, "eE") < 0 && !(b[0] == '-' && allZeroDigits(b)) {
		return Decimal(d.intern(b, true)), true
	}
	return parseDecimal(b)
}

func allZeroDigits(b []byte) bool {
	for _, c := range b {
		if c >= '1' && c <= '9' {
			return false
		}
	}
	return true
}

// parseDecimal is the general decimal grammar:
// [+-]? digits* (. digits*)? ([eE] [+-]? digits)?, with at least one digit in
// the mantissa.
func parseDecimal(b []byte) (Decimal, bool) {
	i := 0
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	is := i
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	intPart := b[is:i]
	var frac []byte
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		frac = b[fs:i]
	}
	if len(intPart)+len(frac) == 0 {
		return "", false
	}
	exp := 0
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		es := i
		for i < len(b) && isDigit(b[i]) {
			if exp > maxDecimalExponent {
				return "", false
			}
			exp = exp*10 + int(b[i]-'0')
			i++
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
	// digits with the point after `point` digits.
	digits := make([]byte, 0, len(intPart)+len(frac)+8)
	digits = append(digits, intPart...)
	digits = append(digits, frac...)
	point := len(intPart) + exp
	scale := len(frac) - exp // digits after the point
	if scale < 0 {
		scale = 0
	}
	var out []byte
	if neg {
		out = append(out, '-')
	}
	var ip, fp []byte
	switch {
	case point <= 0:
		ip = []byte{'0'}
		fp = append(bytes.Repeat([]byte{'0'}, -point), digits...)
	case point >= len(digits):
		ip = append(digits, bytes.Repeat([]byte{'0'}, point-len(digits))...)
	default:
		ip = digits[:point]
		fp = digits[point:]
	}
	for len(ip) > 1 && ip[0] == '0' {
		ip = ip[1:]
	}
	if len(ip) == 0 {
		ip = []byte{'0'}
	}
	if len(fp) > scale {
		fp = fp[:scale] // only zeros can be beyond the scale here
	}
	out = append(out, ip...)
	if len(fp) > 0 {
		out = append(out, '.')
		out = append(out, fp...)
	}
	if neg && allZeroDigits(out) {
		out = out[1:]
	}
	return Decimal(out), true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}

func num(b []byte) (int, bool) {
	v := 0
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// parseDate parses YYYY-MM-DD as UTC midnight.
func parseDate(b []byte) (time.Time, bool) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return time.Time{}, false
	}
	y, ok1 := num(b[0:4])
	m, ok2 := num(b[5:7])
	dd, ok3 := num(b[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || dd < 1 || dd > daysIn(y, m) {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(m), dd, 0, 0, 0, 0, time.UTC), true
}

// parseInstant parses an RFC 3339 timestamp into UTC, keeping up to
// nanoseconds. Tolerated: a space or 't' for 'T', 'z' for 'Z', offsets
// written ±HH:MM, ±HHMM or ±HH, no zone at all (taken as UTC), and a bare
// date (UTC midnight).
func parseInstant(b []byte) (time.Time, bool) {
	if len(b) == 10 {
		return parseDate(b)
	}
	if len(b) < 19 || b[13] != ':' || b[16] != ':' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') {
		return time.Time{}, false
	}
	day, ok := parseDate(b[:10])
	if !ok {
		return time.Time{}, false
	}
	hh, ok1 := num(b[11:13])
	mi, ok2 := num(b[14:16])
	ss, ok3 := num(b[17:19])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mi > 59 || ss > 59 {
		return time.Time{}, false
	}
	i := 19
	ns := 0
	if i < len(b) && (b[i] == '.' || b[i] == ',') {
		i++
		fs := i
		scale := 100000000
		for i < len(b) && isDigit(b[i]) {
			if i-fs < 9 {
				ns += int(b[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == fs {
			return time.Time{}, false
		}
	}
	offset := 0
	if i < len(b) {
		switch b[i] {
		case 'Z', 'z':
			i++
		case '+', '-':
			sign := 1
			if b[i] == '-' {
				sign = -1
			}
			i++
			rest := b[i:]
			var oh, om int
			var ok bool
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
			i = len(b)
		default:
			return time.Time{}, false
		}
	}
	if i != len(b) {
		return time.Time{}, false
	}
	t := day.Add(time.Duration(hh)*time.Hour + time.Duration(mi)*time.Minute +
		time.Duration(ss)*time.Second + time.Duration(ns) - time.Duration(offset)*time.Second)
	return t, true
}

// date reads a calendar date string; null, "" and the zero date "0000-00-00"
// are absent.
func (d *decoder) date(what string) *time.Time {
	t, ok := d.timeValue(what, true)
	if !ok {
		return nil
	}
	return &t
}

// instant reads a timestamp; null and "" are absent.
func (d *decoder) instant(what string) *time.Time {
	t, ok := d.timeValue(what, false)
	if !ok {
		return nil
	}
	return &t
}

func (d *decoder) timeValue(what string, dateOnly bool) (time.Time, bool) {
	s := d.s
	switch c := s.peek(); c {
	case '"':
		p := s.pos
		b := trimSpace(s.stringBytes())
		if s.err != nil || len(b) == 0 || string(b) == "0000-00-00" || string(b) == "0000-00-00 00:00:00" {
			return time.Time{}, false
		}
		var t time.Time
		var ok bool
		if dateOnly {
			t, ok = parseDate(b)
		} else {
			t, ok = parseInstant(b)
		}
		if !ok {
			s.pos = p
			if dateOnly {
				s.failShape(shapef("%s: want a date YYYY-MM-DD, got %q", what, b))
			} else {
				s.failShape(shapef("%s: want an RFC 3339 timestamp, got %q", what, b))
			}
			return time.Time{}, false
		}
		return t, true
	case 'n':
		s.literal("null")
		return time.Time{}, false
	case 'f': // a PHP encoder's missing value
		s.literal("false")
		return time.Time{}, false
	case 0:
		s.failSyntax("unexpected end of input")
		return time.Time{}, false
	default:
		s.failShape(shapef("%s: want a date string, got %s", what, kindName(c)))
		return time.Time{}, false
	}
}
