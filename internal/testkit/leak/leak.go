// Package leak holds test oracles that find a key in text, written
// without the code they check (package logging's redactor).
package leak

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
)

// partialLen is the piece of a key that must not remain: logging.PartialLen
// consecutive bytes (all of a shorter key).
const partialLen = 8

// Decoded is an oracle of keys echoed base64- or hex-encoded: it decodes every run of
// base64 characters (either alphabet, at each of the four character
// offsets) and of hex digits (at both offsets) in text — as it is, with
// JSON's escaped slashes undone and URL-decoded — and returns a
// description of the first partialLen bytes of key (all of a shorter key)
// found in what they decode to, or "". It shares no code with the
// redactor (package logging), which looks for encoded windows instead of
// decoding.
func Decoded(text, key string) string {
	w := min(partialLen, len(key))
	texts := []string{text, strings.ReplaceAll(text, `\/`, "/")}
	if u, err := url.QueryUnescape(text); err == nil {
		texts = append(texts, u)
	}
	pieces := make([][]byte, 0, len(key))
	for i := 0; i+w <= len(key); i++ {
		pieces = append(pieces, []byte(key[i:i+w]))
	}
	holds := func(b []byte) string {
		if len(b) < w {
			return ""
		}
		for _, p := range pieces {
			if bytes.Contains(b, p) {
				return string(p)
			}
		}
		return ""
	}
	isB64 := func(c rune) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("+/-_", c)
	}
	isHex := func(c rune) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	for _, t := range texts {
		for _, run := range strings.FieldsFunc(t, func(c rune) bool { return !isB64(c) }) {
			if len(run) < 4 {
				continue
			}
			std := urlAlphabet.Replace(run)
			for off := 0; off < 4 && off < len(std); off++ {
				s := std[off:]
				s = s[:len(s)-len(s)%4]
				if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
					if p := holds(b); p != "" {
						return fmt.Sprintf("base64 run %q decodes to %q", run, p)
					}
				}
			}
		}
		for _, run := range strings.FieldsFunc(t, func(c rune) bool { return !isHex(c) }) {
			for off := 0; off < 2 && off < len(run); off++ {
				s := run[off:]
				s = s[:len(s)-len(s)%2]
				if b, err := hex.DecodeString(s); err == nil {
					if p := holds(b); p != "" {
						return fmt.Sprintf("hex run %q decodes to %q", run, p)
					}
				}
			}
		}
	}
	return ""
}

// urlAlphabet maps base64's URL alphabet to the standard one.
var urlAlphabet = strings.NewReplacer("-", "+", "_", "/")

// Text finds a piece of key (partialLen consecutive bytes, all of a shorter
// key) in text as a server could echo it without a binary-to-text
// encoding: raw, URL-encoded (query and path forms, either case of hex
// digits), JSON-escaped (escaped slashes, every byte \u-escaped in either
// case). It returns a description of the first found, or "".
func Text(text, key string) string {
	w := min(partialLen, len(key))
	for i := 0; i+w <= len(key); i++ {
		p := key[i : i+w]
		var u, U strings.Builder
		for _, c := range []byte(p) {
			fmt.Fprintf(&u, `\u%04x`, c)
			fmt.Fprintf(&U, `\u%04X`, c)
		}
		q := url.QueryEscape(p)
		for name, form := range map[string]string{"raw": p, "query": q, "query-lower": strings.ToLower(q),
			"path": url.PathEscape(p), "json-slashes": strings.ReplaceAll(p, "/", `\/`), "u": u.String(), "U": U.String()} {
			if strings.Contains(text, form) {
				return fmt.Sprintf("%s form %q of key[%d:%d]", name, form, i, i+w)
			}
		}
	}
	return ""
}

// Find is Text, then Decoded: any form of a piece of key in text, or "".
func Find(text, key string) string {
	if l := Text(text, key); l != "" {
		return l
	}
	return Decoded(text, key)
}
