package logging

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"net/url"
	"strings"
)

// encodedForm is a secret as a binary-to-text encoding writes it, cut to
// the characters that depend on the secret's bytes only (so that it is
// found whatever surrounds the secret in the encoded value), and the
// window length that spans at least win bytes of the secret.
type encodedForm struct {
	text string
	win  int
}

// minEncodedWin is the shortest window of an encoded form that is looked
// for: fewer characters (a secret of 4 to 7 bytes at an awkward base64
// alignment) would match ordinary text.
const minEncodedWin = 6

// encodedForms returns the base64 and hex forms of secret s: base64 in the
// standard and URL alphabets at each of the three alignments a secret can
// have inside a longer encoded value (padding never falls inside the
// characters kept), and hex in both cases.
func encodedForms(win int, s string) []encodedForm {
	b64win := (win*8 + 5) / 6 // characters of 6 bits spanning win bytes
	var out []encodedForm
	seen := map[string]bool{}
	add := func(text string, w int) {
		w = min(w, len(text))
		if w < minEncodedWin || seen[text] {
			return
		}
		seen[text] = true
		out = append(out, encodedForm{text: text, win: w})
	}
	for _, e := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for align := range 3 {
			add(base64Core(e, align, s), b64win)
		}
	}
	h := hex.EncodeToString([]byte(s))
	add(h, 2*win)
	add(strings.ToUpper(h), 2*win)
	return out
}

// base64Core is the part of the base64 encoding of s, placed align bytes
// into a 3-byte group, that only s's bits make: its first and last
// characters share bits with the bytes around s and are left out.
func base64Core(e *base64.Encoding, align int, s string) string {
	in := make([]byte, align+len(s))
	copy(in[align:], s)
	enc := e.EncodeToString(in)
	first := (8*align + 5) / 6       // the first character whose bits are all s's
	last := 8 * (align + len(s)) / 6 // past the last one
	return enc[first:last]
}

// encodedMarks are the pieces Body's screen looks for of an encoded form:
// its first and last window, as they are, URL-encoded and with escaped
// slashes.
func encodedMarks(f encodedForm) [][]byte {
	var marks [][]byte
	for _, piece := range []string{f.text[:f.win], f.text[len(f.text)-f.win:]} {
		for _, form := range []string{piece, url.QueryEscape(piece), strings.ReplaceAll(piece, "/", `\/`)} {
			marks = append(marks, []byte(form))
		}
	}
	return marks
}

// screen finds out in one pass whether a body holds any of a set of
// marks, whatever their number. Every mark of at least screenMin bytes holds
// a 4-byte word at an offset of the body that is a multiple of 4, at one of
// its first four offsets: those words of every mark are kept in a bit set
// (by hash) and a map, the body's words at every fourth offset are looked
// up, and only a hit is compared with the marks it may start. Shorter marks
// are searched for one by one.
type screen struct {
	bits   [1 << 10]uint64 // 2^16 bits, by hash of a word of a mark
	byWord map[uint32][]screenMark
	short  [][]byte
}

// screenMark is a mark and the offset in it of the word it is filed under.
type screenMark struct {
	m  []byte
	at int
}

// screenMin is the shortest mark the words find: a 4-byte word at one of
// four offsets.
const screenMin = 7

func newScreen(marks [][]byte) *screen {
	s := &screen{byWord: map[uint32][]screenMark{}}
	seen := map[string]bool{}
	for _, m := range marks {
		if seen[string(m)] {
			continue
		}
		seen[string(m)] = true
		if len(m) < screenMin {
			s.short = append(s.short, m)
			continue
		}
		for at := range 4 {
			w := binary.LittleEndian.Uint32(m[at:])
			h := screenHash(w)
			s.bits[h>>6] |= 1 << (h & 63)
			s.byWord[w] = append(s.byWord[w], screenMark{m: m, at: at})
		}
	}
	return s
}

func screenHash(w uint32) uint32 { return (w * 0x9E3779B1) >> 16 }

// hit reports whether b holds one of the screen's marks.
func (s *screen) hit(b []byte) bool {
	if s == nil {
		return false
	}
	for _, m := range s.short {
		if bytes.Contains(b, m) {
			return true
		}
	}
	for i := 0; i+4 <= len(b); i += 4 {
		w := binary.LittleEndian.Uint32(b[i:])
		h := screenHash(w)
		if s.bits[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, sm := range s.byWord[w] {
			if start := i - sm.at; start >= 0 && bytes.HasPrefix(b[start:], sm.m) {
				return true
			}
		}
	}
	return false
}
