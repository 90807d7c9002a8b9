package logging

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap/zapcore"
)

// Redacted replaces a secret, or a part of one, in redacted text.
const Redacted = "[REDACTED]"

// MinSecretLen is the length under which a secret is not redacted: shorter
// values are not secrets worth garbling every message for (real keys are far
// longer).
const MinSecretLen = 4

// PartialLen is the length of the shortest piece of a secret that is
// redacted on its own: any PartialLen consecutive bytes of a secret (in any
// of the encodings below) are removed wherever they appear, so a key cut
// short by someone else's truncation, or echoed in part, is removed too. A
// secret shorter than PartialLen is matched whole.
const PartialLen = 8

// redactLayers is how many encodings deep a secret is looked for: the text
// as it is, once decoded (a URL-encoded or JSON-escaped key) and twice
// decoded (a JSON-escaped copy of a URL-encoded key, %25-escaped escapes).
const redactLayers = 3

// ClipMargin is what Clip reads beyond the bytes it keeps, so that a secret
// that starts before the cut is recognised whole: more than PartialLen
// bytes of a secret in the longest encoding decoded here (a \u escape of a
// \u escape of a byte is 36 bytes).
const ClipMargin = 64 * PartialLen

// A Redactor removes secrets from text in every form a server could echo
// them in: raw; URL-encoded (%XX in either case, as url.QueryEscape and
// url.PathEscape write it, '+' for a space); JSON-escaped (\uXXXX escapes of
// any character in either case, surrogate pairs, \/ for a slash and the
// other backslash escapes); base64 (standard and URL alphabets, with or
// without padding, the secret alone or inside a longer encoded value such as
// a basic-auth header) and hex (either case); and these nested up to two
// deep (a base64 form with escaped slashes, URL-encoded, ...). A secret split
// by a cut is removed as far as PartialLen of its bytes remain. Redaction
// always comes before truncation: Clip redacts, then cuts.
//
// The zero value and a nil *Redactor redact nothing. A Redactor is
// immutable and safe for concurrent use.
type Redactor struct {
	win     int                 // window length: PartialLen, or the shortest secret's length
	windows map[string]struct{} // every win-byte piece of every secret
	// encoded holds, by length, every window of the secrets' base64 and hex
	// forms (see encodedForms): a window of such a form spans at least win
	// bytes of its secret.
	encoded map[int]map[string]struct{}
	screen  *screen // Body's screen: each secret's first and last window, as echoed, in every form
}

// NewRedactor returns a redactor of the given secrets; empty ones and ones
// shorter than MinSecretLen are ignored.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{win: PartialLen, windows: map[string]struct{}{}}
	for _, s := range secrets {
		if len(s) >= MinSecretLen && len(s) < r.win {
			r.win = len(s)
		}
	}
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		for i := 0; i+r.win <= len(s); i++ {
			w := s[i : i+r.win]
			r.windows[w] = struct{}{}
			// url.QueryEscape writes a space as '+'.
			r.windows[strings.ReplaceAll(w, " ", "+")] = struct{}{}
		}
	}
	if len(r.windows) == 0 {
		return nil
	}
	r.encoded = map[int]map[string]struct{}{}
	var marks [][]byte
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		for _, f := range encodedForms(r.win, s) {
			set := r.encoded[f.win]
			if set == nil {
				set = map[string]struct{}{}
				r.encoded[f.win] = set
			}
			for i := 0; i+f.win <= len(f.text); i++ {
				set[f.text[i:i+f.win]] = struct{}{}
			}
			marks = append(marks, encodedMarks(f)...)
		}
	}
	r.screen = newScreen(append(screenMarks(r.win, secrets), marks...))
	return r
}

// screenMarks returns the pieces Body looks for: the first and the last
// window of each secret, raw, URL-encoded (either case of hex digits) and
// with escaped slashes (PHP's json_encode), each once.
func screenMarks(win int, secrets []string) [][]byte {
	seen := map[string]bool{}
	var marks [][]byte
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		for _, piece := range []string{s[:win], s[len(s)-win:]} {
			q := url.QueryEscape(piece)
			for _, form := range []string{piece, q, strings.ToLower(q), url.PathEscape(piece), strings.ReplaceAll(piece, "/", `\/`)} {
				if !seen[form] {
					seen[form] = true
					marks = append(marks, []byte(form))
				}
			}
		}
	}
	return marks
}

// Body returns a response body with every secret removed, as String does,
// for bodies whose records are stored. Screening comes first and is cheap
// (one pass over the body, see screen): a body that holds neither the first
// nor the last PartialLen bytes of any secret — raw, URL-encoded or with
// escaped slashes, or the first or last window of its base64 or hex forms
// (those too URL-encoded or with escaped slashes) — is returned as it is,
// the same slice. A body that does is
// redacted whole; Redacted holds no character JSON escapes, so a key echoed
// inside a JSON string leaves the body valid JSON. echoed says whether the
// body held a piece of a secret (and was redacted).
func (r *Redactor) Body(b []byte) (out []byte, echoed bool) {
	if r == nil || len(b) < r.win {
		return b, false
	}
	if r.screen.hit(b) {
		return []byte(r.String(string(b))), true
	}
	return b, false
}

// unit is one decoded byte and the span of source bytes it came from.
type unit struct {
	b          byte
	start, end int32
}

// String returns s with every secret removed (each run of source bytes that
// holds a piece of a secret becomes Redacted).
func (r *Redactor) String(s string) string {
	if r == nil || len(s) < r.win {
		return s
	}
	for range 3 {
		spans := r.find(s)
		if len(spans) == 0 {
			return s
		}
		s = replaceSpans(s, spans)
	}
	if len(r.find(s)) > 0 {
		// Only a secret made of the replacement text itself gets here.
		return Redacted + " (text withheld: it kept matching a secret)"
	}
	return s
}

// Clip redacts s and then cuts it to at most n bytes (on a UTF-8 boundary),
// adding "…" when it cut. Only the first n+ClipMargin bytes are read, which
// bounds the work on a huge text without missing a secret that reaches into
// the kept part; and only text from the first n bytes of s is kept, so what
// the redaction saves never pulls the piece of a secret that the read limit
// cut in two into the result.
func (r *Redactor) Clip(s string, n int) string {
	if len(s) <= n {
		return r.String(s)
	}
	pre := s[:min(len(s), n+ClipMargin)]
	var b strings.Builder
	at := 0
	if r != nil && len(pre) >= r.win {
		for _, sp := range r.find(pre) {
			if sp[0] >= n {
				break
			}
			b.WriteString(pre[at:sp[0]])
			b.WriteString(Redacted)
			at = sp[1]
		}
	}
	if at < n {
		b.WriteString(pre[at:n])
	}
	out := b.String()
	if len(out) > n {
		out = out[:n]
	}
	return r.String(strings.ToValidUTF8(out, "")) + "…"
}

// Contains reports whether s holds a piece of a secret (in any encoding
// String removes).
func (r *Redactor) Contains(s string) bool {
	return r != nil && len(s) >= r.win && len(r.find(s)) > 0
}

// find returns the merged source spans of s that hold secret pieces.
func (r *Redactor) find(s string) [][2]int {
	units := make([]unit, len(s))
	for i := range len(s) {
		units[i] = unit{b: s[i], start: int32(i), end: int32(i + 1)}
	}
	var spans [][2]int
	buf := make([]byte, 0, len(s))
	for layer := 0; layer < redactLayers && len(units) >= r.win; layer++ {
		if layer > 0 {
			var changed bool
			units, changed = decodeUnits(units)
			if !changed {
				break
			}
		}
		buf = buf[:0]
		for _, u := range units {
			buf = append(buf, u.b)
		}
		for i := 0; i+r.win <= len(buf); i++ {
			if _, ok := r.windows[string(buf[i:i+r.win])]; ok {
				spans = append(spans, [2]int{int(units[i].start), int(units[i+r.win-1].end)})
			}
		}
		for w, set := range r.encoded {
			for i := 0; i+w <= len(buf); i++ {
				if _, ok := set[string(buf[i:i+w])]; ok {
					spans = append(spans, [2]int{int(units[i].start), int(units[i+w-1].end)})
				}
			}
		}
	}
	if len(spans) == 0 {
		return nil
	}
	// Widen to whole UTF-8 characters, sort and merge.
	for i := range spans {
		for spans[i][0] > 0 && !utf8.RuneStart(s[spans[i][0]]) {
			spans[i][0]--
		}
		for spans[i][1] < len(s) && !utf8.RuneStart(s[spans[i][1]]) {
			spans[i][1]++
		}
	}
	sortSpans(spans)
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return out
}

func sortSpans(spans [][2]int) {
	// Insertion sort: spans come nearly sorted (layer by layer).
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j][0] < spans[j-1][0]; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
}

func replaceSpans(s string, spans [][2]int) string {
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, sp := range spans {
		b.WriteString(s[at:sp[0]])
		b.WriteString(Redacted)
		at = sp[1]
	}
	b.WriteString(s[at:])
	return b.String()
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// hexDigits reads n hex digits from units[i:].
func hexDigits(units []unit, i, n int) (rune, bool) {
	if i+n > len(units) {
		return 0, false
	}
	var r rune
	for _, u := range units[i : i+n] {
		d, ok := hexDigit(u.b)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// byteEscape reads an escape of one byte at units[i:] — %XX, \xXX (Go's %q
// form) or a backslash before one character, such as \n — and returns the
// byte and how many units the escape spans.
func byteEscape(units []unit, i int) (byte, int, bool) {
	switch {
	case units[i].b == '%':
		r, ok := hexDigits(units, i+1, 2)
		return byte(r), 3, ok
	case units[i].b != '\\' || i+1 >= len(units):
		return 0, 0, false
	case units[i+1].b == 'x':
		r, ok := hexDigits(units, i+2, 2)
		return byte(r), 4, ok
	}
	switch c := units[i+1].b; c {
	case '/', '\\', '"', '\'':
		return c, 2, true
	case 'n':
		return '\n', 2, true
	case 't':
		return '\t', 2, true
	case 'r':
		return '\r', 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	}
	return 0, 0, false
}

// decodeUnits decodes one layer of %XX and backslash escapes; each decoded
// byte spans the source bytes of its whole escape.
func decodeUnits(in []unit) ([]unit, bool) {
	out := make([]unit, 0, len(in))
	changed := false
	for i := 0; i < len(in); {
		u := in[i]
		if b, n, ok := byteEscape(in, i); ok {
			out = append(out, unit{b: b, start: u.start, end: in[i+n-1].end})
			i += n
			changed = true
			continue
		}
		if u.b == '\\' && i+1 < len(in) && in[i+1].b == 'u' {
			if r, ok := hexDigits(in, i+2, 4); ok {
				end := in[i+5].end
				next := i + 6
				if r >= 0xD800 && r < 0xDC00 && next+1 < len(in) && in[next].b == '\\' && in[next+1].b == 'u' {
					if lo, ok := hexDigits(in, next+2, 4); ok && lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
						end = in[next+5].end
						next += 6
					}
				}
				var enc [utf8.UTFMax]byte
				n := utf8.EncodeRune(enc[:], r)
				for _, b := range enc[:n] {
					out = append(out, unit{b: b, start: u.start, end: end})
				}
				i = next
				changed = true
				continue
			}
		}
		out = append(out, u)
		i++
	}
	return out, changed
}

// redactingWriter redacts each write: zap writes one log entry per Write,
// so a secret anywhere in an entry (message, field, error, stack) is seen
// whole.
type redactingWriter struct {
	w zapcore.WriteSyncer
	r *Redactor
}

func (rw redactingWriter) Write(p []byte) (int, error) {
	if !rw.r.Contains(string(p)) {
		return rw.w.Write(p)
	}
	if _, err := rw.w.Write([]byte(rw.r.String(string(p)))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (rw redactingWriter) Sync() error { return rw.w.Sync() }

// RedactWriter returns w redacting every write of the given secrets (w
// itself when there are none).
func RedactWriter(w zapcore.WriteSyncer, secrets ...string) zapcore.WriteSyncer {
	r := NewRedactor(secrets...)
	if r == nil {
		return w
	}
	return redactingWriter{w: w, r: r}
}
