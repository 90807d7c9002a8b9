package extract

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a hand-rolled, allocation-light JSON reader over one byte slice.
//
// It validates as it reads (strict RFC 8259 grammar: no trailing commas, no
// unescaped control characters in strings, no leading zeros in numbers) and
// keeps the first error: once err is set every method is a no-op that returns
// zero values, so loops over objects and arrays end on their own. An error is
// either a syntax error (the bytes are not JSON: fatal for the whole page) or a
// shape error (valid JSON of an unexpected type: fatal for one record).
//
// Skipping is iterative with an explicit stack (one byte per level), so
// hostile nesting can neither overflow the goroutine stack nor hang the
// decoder. Nesting is valid JSON at any depth: a value nested deeper than
// maxDepth is a shape error of its record (ErrTooDeep), never a syntax
// error of the page.
type scanner struct {
	data   []byte
	pos    int
	err    error
	syntax bool   // err is a JSON syntax error
	key    []byte // last object key read by objectNext (valid until the next read)
	buf    []byte // scratch for unescaping keys
	sbuf   []byte // scratch for unescaping string values
	stack  []byte // container stack of skip
	ascii  bool   // the last string scanned had only ASCII bytes (escapes aside)
}

// maxDepth bounds the nesting of a value a record keeps (its raw JSON lands
// in a jsonb column): deeper, the record is rejected alone (ErrTooDeep) and
// the rest of its page proceeds.
//
// The limits it stays under: PostgreSQL 15's jsonb input, with the default
// max_stack_depth of 2MB, takes objects nested 12 000 levels and refuses
// 14 000 ("stack depth limit exceeded"; arrays alike); encoding/json (the
// page spool, transform.CleanJSON) refuses past 10 000. 9 000 levels, plus
// the few a record's own decoder reads and the spool's envelope adds, fit
// all three, so any record that jsonb can store is stored, save for the
// band from 9 000 to about 13 000 levels.
const maxDepth = 9000

// maxKeptStack: a skip stack larger than this (a value nested deeper) is
// not kept for the next skip.
const maxKeptStack = 64 << 10

// depthError is a value nested deeper than maxDepth. It is valid JSON: the
// record is rejected, not the page.
func depthError() error {
	return &shapeError{msg: fmt.Sprintf("value nested deeper than %d levels (more than the warehouse's jsonb columns are kept to)", maxDepth), kind: ErrTooDeep}
}

// syntaxError reports bytes that are not JSON.
type syntaxError struct {
	Offset int
	Msg    string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

func (s *scanner) reset(data []byte) {
	s.data = data
	s.pos = 0
	s.err = nil
	s.syntax = false
	s.key = nil
}

func (s *scanner) failSyntax(msg string) {
	if s.err == nil {
		s.err = &syntaxError{Offset: s.pos, Msg: msg}
		s.syntax = true
	}
}

func (s *scanner) failSyntaxf(format string, args ...any) {
	if s.err == nil {
		s.failSyntax(fmt.Sprintf(format, args...))
	}
}

// failShape records a shape (type) error for the value being read.
func (s *scanner) failShape(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *scanner) ws() {
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return // compact JSON: the common case
	}
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end of input or
// after an error.
func (s *scanner) peek() byte {
	if s.err != nil {
		return 0
	}
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// kindName names the JSON kind that starts with c.
func kindName(c byte) string {
	switch {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "number"
	case c == 0:
		return "end of input"
	default:
		return fmt.Sprintf("%q", rune(c))
	}
}

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// specialMask flags (in the top bit of each byte) the bytes of x that are a
// quote, a backslash or a control character (< 0x20). Borrows can flag false
// bytes only above a true one, so the lowest flag is always exact.
func specialMask(x uint64) uint64 {
	ctl := (x - swarLo*0x20) & ^x & swarHi
	q := x ^ (swarLo * '"')
	q = (q - swarLo) & ^q & swarHi
	b := x ^ (swarLo * '\\')
	b = (b - swarLo) & ^b & swarHi
	return ctl | q | b
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanString reads the string starting at s.pos (which holds '"') and returns
// the span of its contents between the quotes and whether it has escapes.
func (s *scanner) scanString() (start, end int, esc bool) {
	data := s.data
	n := len(data)
	i := s.pos + 1
	start = i
	var hi uint64 // OR of the string's raw bytes: is it all ASCII?
	for {
		if i+8 <= n {
			x := binary.LittleEndian.Uint64(data[i:])
			m := specialMask(x)
			if m == 0 {
				hi |= x
				i += 8
				continue
			}
			tz := bits.TrailingZeros64(m) // top bit of the first special byte
			hi |= x & (1<<(tz&^7) - 1)    // the bytes before it
			i += tz >> 3
		} else if i >= n {
			s.pos = n
			s.failSyntax("unterminated string")
			return start, start, false
		}
		c := data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			s.ascii = hi&swarHi == 0
			return start, i, esc
		case c == '\\':
			esc = true
			if i+1 >= n {
				s.pos = n
				s.failSyntax("unterminated string")
				return start, start, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					s.pos = i
					s.failSyntax(`invalid \u escape in string`)
					return start, start, false
				}
				i += 6
			default:
				s.pos = i
				s.failSyntax("invalid escape in string")
				return start, start, false
			}
		case c < 0x20:
			s.pos = i
			s.failSyntax("control character in string")
			return start, start, false
		default:
			hi |= uint64(c)
			i++
		}
	}
}

func hexVal(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		default:
			r |= rune(c-'A') + 10
		}
	}
	return r
}

// unescape appends the decoded form of the already validated string contents
// src to dst. Lone surrogates become U+FFFD.
func unescape(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		if c != '\\' {
			j := i + 1
			for j < len(src) && src[j] != '\\' {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		switch src[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hexVal(src[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, hexVal(src[i+2:])); r2 != utf8.RuneError {
						r = r2
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, src[i+1])
		}
		i += 2
	}
	return dst
}

// bytesToString converts decoded string bytes to a Go string, replacing
// invalid UTF-8 like encoding/json does. (Callers that know the bytes are
// ASCII convert directly.)
func bytesToString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// stringBytes reads a string value at s.pos and returns its decoded bytes,
// valid until the next read. The caller has checked that s.pos holds '"'.
func (s *scanner) stringBytes() []byte {
	st, en, esc := s.scanString()
	if s.err != nil {
		return nil
	}
	if !esc {
		return s.data[st:en]
	}
	s.sbuf = unescape(s.sbuf[:0], s.data[st:en])
	return s.sbuf
}

// scanNumber validates the number at s.pos and returns its span and whether
// it is an integer (no fraction, no exponent).
func (s *scanner) scanNumber() (start, end int, isInt bool) {
	data := s.data
	n := len(data)
	i := s.pos
	start = i
	isInt = true
	if i < n && data[i] == '-' {
		i++
	}
	switch {
	case i < n && data[i] == '0':
		i++
	case i < n && data[i] >= '1' && data[i] <= '9':
		i = digitsEnd(data, i)
	default:
		return s.failNumber(start, i, "invalid number")
	}
	if i < n && data[i] == '.' {
		isInt = false
		d := i + 1
		if i = digitsEnd(data, d); i == d {
			return s.failNumber(start, i, "invalid number: no digits after the decimal point")
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		isInt = false
		d := i + 1
		if d < n && (data[d] == '+' || data[d] == '-') {
			d++
		}
		if i = digitsEnd(data, d); i == d {
			return s.failNumber(start, i, "invalid number: no digits in the exponent")
		}
	}
	s.pos = i
	return start, i, isInt
}

// digitsEnd returns the index of the first byte of data at or after i that is
// not an ASCII digit (len(data) if there is none).
func digitsEnd(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// failNumber records the syntax error msg at byte i of the number that starts
// at start and returns what scanNumber returns on error.
func (s *scanner) failNumber(start, i int, msg string) (int, int, bool) {
	s.pos = i
	s.failSyntax(msg)
	return start, start, false
}

// literal consumes lit (true, false or null) at s.pos.
func (s *scanner) literal(lit string) {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return
	}
	s.failSyntax("invalid literal")
}

// null consumes a null at the next value position and reports whether there
// was one.
func (s *scanner) null() bool {
	switch s.peek() {
	case 'n':
		s.literal("null")
		return s.err == nil
	case 'f': // a PHP encoder's missing value
		s.literal("false")
		return s.err == nil
	}
	return false
}

// skip validates and skips the next value, returning its span. A value
// nested deeper than maxDepth is skipped whole, then reported as a shape
// error (ErrTooDeep) with the scanner after it.
func (s *scanner) skip() (start, end int) { return s.skipDepth(maxDepth) }

// skipAll validates and skips the next value whatever its depth: for values
// that are not kept (envelope members, a rejected record being stepped
// over), where depth is no reason to refuse. The stack costs one byte per
// level: at most the size of the body.
func (s *scanner) skipAll() (start, end int) { return s.skipDepth(0) }

// skipDepth is skip with a depth limit (0: none).
func (s *scanner) skipDepth(limit int) (start, end int) {
	s.ws()
	start = s.pos
	stack := s.stack[:0]
	deepest := 0
loop:
	for s.err == nil {
		// A value is expected at s.pos.
		s.ws()
		if s.pos >= len(s.data) {
			s.failSyntax("unexpected end of input")
			break
		}
		switch c := s.data[s.pos]; {
		case c == '{' || c == '[':
			s.pos++
			s.ws()
			if s.pos < len(s.data) && s.data[s.pos] == c+2 { // '}' == '{'+2, ']' == '['+2
				s.pos++
				break
			}
			stack = append(stack, c)
			if len(stack) > deepest {
				deepest = len(stack)
			}
			if c == '{' {
				s.objectKey()
			}
			continue
		case c == '"':
			s.scanString()
		case c == 't':
			s.literal("true")
		case c == 'f':
			s.literal("false")
		case c == 'n':
			s.literal("null")
		case c == '-' || (c >= '0' && c <= '9'):
			s.scanNumber()
		default:
			s.failSyntaxf("unexpected %s", kindName(c))
		}
		// After a value: close containers or move on to the next element.
		for s.err == nil {
			if len(stack) == 0 {
				break loop
			}
			s.ws()
			if s.pos >= len(s.data) {
				s.failSyntax("unexpected end of input")
				break
			}
			top := stack[len(stack)-1]
			c := s.data[s.pos]
			if c == ',' {
				s.pos++
				if top == '{' {
					s.ws()
					s.objectKey()
				}
				break
			}
			if c == top+2 {
				s.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			s.failSyntaxf("unexpected %s after a value", kindName(c))
		}
	}
	if cap(stack) > maxKeptStack {
		stack = nil
	}
	s.stack = stack[:0]
	if limit > 0 && deepest > limit && s.err == nil {
		s.failShape(depthError())
	}
	return start, s.pos
}

// objectKey reads `"key" :` at s.pos (whitespace skipped) and leaves the key
// span unescaped in s.key.
func (s *scanner) objectKey() {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		if s.pos >= len(s.data) {
			s.failSyntax("unexpected end of input")
		} else {
			s.failSyntaxf("want an object key, got %s", kindName(s.data[s.pos]))
		}
		return
	}
	st, en, esc := s.scanString()
	if s.err != nil {
		return
	}
	if esc {
		s.buf = unescape(s.buf[:0], s.data[st:en])
		s.key = s.buf
	} else {
		s.key = s.data[st:en]
	}
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		s.failSyntax("want ':' after an object key")
		return
	}
	s.pos++
}

// objectNext advances inside an object whose '{' has been consumed. It returns
// true with the key in s.key and s.pos at the value, or false at the closing
// brace or on error. n counts the members read so far (start at 0).
func (s *scanner) objectNext(n *int) bool { return s.next(n, '}') }

// keySet is the keys a decoder knows for one kind of object, in the order
// the service writes them, precomputed so that `"key":` at the expected place
// is matched with three word compares.
type keySet struct {
	keys []string
	pats []keyPat
}

// keyPat is `"key":` as little-endian words with masks, for keys of up to
// 21 bytes.
type keyPat struct {
	w, m [3]uint64
	n    int // len(`"key":`)
}

// newKeySet builds a keySet; keys must be plain ASCII without quotes or
// backslashes.
func newKeySet(keys ...string) *keySet {
	ks := &keySet{keys: keys}
	for _, k := range keys {
		pat := `"` + k + `":`
		var p keyPat
		p.n = len(pat)
		if p.n > 24 {
			p.n = 0 // never matched fast
		} else {
			for i := 0; i < len(pat); i++ {
				p.w[i/8] |= uint64(pat[i]) << (8 * (i % 8))
				p.m[i/8] |= 0xff << (8 * (i % 8))
			}
		}
		ks.pats = append(ks.pats, p)
	}
	return ks
}

// Results of nextKey besides a key index.
const (
	keyOther = -1 // a key not in the set, left in s.key
	keyEnd   = -2 // the closing brace, or an error
)

// nextKey advances inside an object whose '{' has been consumed, like
// objectNext, and returns the index in ks of the member's key, keyOther for
// another key (in s.key) or keyEnd. When the n-th key is written exactly as
// ks.keys[n] followed by ':' (compact JSON in the usual order), it is matched
// without scanning.
func (s *scanner) nextKey(n *int, ks *keySet) int {
	if s.err == nil && *n < len(ks.pats) {
		i := s.pos
		data := s.data
		ok := true
		if *n > 0 {
			ok = i < len(data) && data[i] == ','
			i++
		}
		if p := &ks.pats[*n]; ok && p.n > 0 && i+24 <= len(data) {
			w := data[i : i+24]
			if binary.LittleEndian.Uint64(w)&p.m[0] == p.w[0] &&
				binary.LittleEndian.Uint64(w[8:])&p.m[1] == p.w[1] &&
				binary.LittleEndian.Uint64(w[16:])&p.m[2] == p.w[2] {
				s.key = data[i+1 : i+p.n-2]
				s.pos = i + p.n
				*n++
				return *n - 1
			}
		}
	}
	if !s.objectNext(n) {
		return keyEnd
	}
	for j, k := range ks.keys {
		if string(s.key) == k {
			return j
		}
	}
	return keyOther
}

// arrayNext advances inside an array whose '[' has been consumed: true with
// s.pos at the next element, false at the closing bracket or on error.
func (s *scanner) arrayNext(n *int) bool { return s.next(n, ']') }

// next is objectNext (closing is '}') and arrayNext (closing is ']'). The
// container's opening byte, which kindName names, is closing-2.
func (s *scanner) next(n *int, closing byte) bool {
	if s.err != nil {
		return false
	}
	s.ws()
	if s.pos >= len(s.data) {
		s.failSyntax("unexpected end of input in " + kindName(closing-2))
		return false
	}
	c := s.data[s.pos]
	if c == closing {
		s.pos++
		return false
	}
	if *n > 0 {
		if c != ',' {
			s.failSyntaxf("want ',' or '%c' in %s, got %s", closing, kindName(closing-2), kindName(c))
			return false
		}
		s.pos++
	}
	*n++
	if closing == ']' {
		return true
	}
	s.ws()
	s.objectKey()
	return s.err == nil
}

// emptyOther consumes an empty container of the other kind ("[]" where an
// object is expected, "{}" where an array is) and reports whether it did.
func (s *scanner) emptyOther(open byte) bool {
	if s.pos < len(s.data) && s.data[s.pos] == open {
		j := s.pos + 1
		for j < len(s.data) && (s.data[j] == ' ' || s.data[j] == '\t' || s.data[j] == '\n' || s.data[j] == '\r') {
			j++
		}
		if j < len(s.data) && s.data[j] == open+2 {
			s.pos = j + 1
			return true
		}
	}
	return false
}

// enterObject starts reading an object value. It returns true when '{' was
// consumed; false for null, for an empty array (the service's habit for empty
// collections) or on error (a shape error naming what for other kinds).
func (s *scanner) enterObject(what string) bool { return s.enter('{', what) }

// enterArray starts reading an array value: true when '[' was consumed; false
// for null, for an empty object, or on error.
func (s *scanner) enterArray(what string) bool { return s.enter('[', what) }

// enter is enterObject (open is '{') and enterArray (open is '[').
func (s *scanner) enter(open byte, what string) bool {
	c := s.peek()
	switch c {
	case open:
		s.pos++
		return true
	case 'n':
		s.literal("null")
		return false
	case 'f': // a PHP encoder's missing value
		s.literal("false")
		return false
	case '{' + '[' - open: // the other kind, accepted when empty
		if s.emptyOther(c) {
			return false
		}
	case 0:
		s.failSyntax("unexpected end of input")
		return false
	}
	s.failShape(shapef("%s: want %s, got %s", what, kindName(open), kindName(c)))
	return false
}

// end checks that only whitespace follows the document.
func (s *scanner) end() {
	if s.err != nil {
		return
	}
	s.ws()
	if s.pos < len(s.data) {
		s.failSyntaxf("unexpected %s after the top-level value", kindName(s.data[s.pos]))
	}
}
