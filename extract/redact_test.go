package extract

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agencysync/agencysync/internal/testkit/leak"
	"github.com/agencysync/agencysync/stream"
)

// keyAlphabet: what real keys are made of (letters, digits and the
// punctuation of base64, URL-safe tokens and "key:secret" forms), including
// characters that URL and JSON encoders escape.
const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~+/=:&<>@!$*"

// fuzzKey maps fuzz bytes to a key of 8 to 64 characters of keyAlphabet.
func fuzzKey(seed []byte) string {
	n := 8 + len(seed)%57
	var b strings.Builder
	for i := range n {
		c := byte(i*37 + 11)
		if len(seed) > 0 {
			c = seed[i%len(seed)] + byte(i/len(seed))*13
		}
		b.WriteByte(keyAlphabet[int(c)%len(keyAlphabet)])
	}
	return b.String()
}

// uEscape writes every byte of s (ASCII) as a JSON \u escape.
func uEscape(s string, upper bool) string {
	var b strings.Builder
	for _, r := range s {
		if upper {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// jsonEscape is s as encoding/json writes it inside a string, with slashes
// escaped as some PHP encoders do.
func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b[1:len(b)-1]), "/", `\/`)
}

// encodings are the forms in which a server could echo a key (the oracle:
// standard library encoders, none of the redaction code). The binary-to-
// text ones (base64, hex) encode a piece of the key differently from the
// whole key: leaks finds them by decoding (leak.Decoded).
var encodings = []struct {
	name   string
	enc    func(string) string
	binary bool
}{
	{"raw", func(s string) string { return s }, false},
	{"query", url.QueryEscape, false},
	{"path", url.PathEscape, false},
	{"json", jsonEscape, false},
	{"json-u", func(s string) string { return uEscape(s, false) }, false},
	{"json-U", func(s string) string { return uEscape(s, true) }, false},
	{"go-quoted", func(s string) string { q := strconv.Quote(s); return q[1 : len(q)-1] }, false},
	{"json-of-query", func(s string) string { return jsonEscape(url.QueryEscape(s)) }, false},
	{"base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }, true},
	{"base64-raw", func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) }, true},
	{"base64url", func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }, true},
	{"base64url-raw", func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }, true},
	{"base64-at-2", func(s string) string { return base64.StdEncoding.EncodeToString([]byte("u:" + s)) }, true},
	{"basic-auth", func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("agency:"+s)) }, true},
	{"base64-json", func(s string) string { return jsonEscape(base64.StdEncoding.EncodeToString([]byte("agency:" + s))) }, true},
	{"hex", func(s string) string { return hex.EncodeToString([]byte(s)) }, true},
	{"HEX", func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) }, true},
}

// leaks returns a description of the first piece of key (PartialLen = 8
// consecutive characters, or all of a shorter key) found in text in any of
// the encodings, or "".
func leaks(text, key string) string {
	if l := leak.Decoded(text, key); l != "" {
		return l
	}
	w := min(8, len(key))
	for _, e := range encodings {
		if e.binary {
			continue
		}
		for i := 0; i+w <= len(key); i++ {
			piece := e.enc(key[i : i+w])
			if strings.Contains(text, piece) {
				return fmt.Sprintf("%s form of key[%d:%d] %q", e.name, i, i+w, piece)
			}
		}
	}
	return ""
}

// roundTripFunc serves requests without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzRedactErrorBody: whatever a server writes in an error body — the key
// raw, URL-encoded, JSON-escaped, \u-escaped, base64 (either alphabet,
// padded or not, at any alignment) or hex, whole or in part, at any
// position (before, across or after the 300-byte cut of messages) — the
// error the client returns, the rejects it hands over and every log line
// hold no 8 consecutive characters of the key in any encoding.
func FuzzRedactErrorBody(f *testing.F) {
	for _, seed := range []struct {
		key    string
		filler string
		pos    uint16
		enc    uint8
		mode   uint8
	}{
		{"k-0123456789abcdef", "Invalid authentication for key ", 31, 0, 0},
		{"abcdefghijklmnopqrstuvwxyz0123456789A", strings.Repeat("x", 290), 285, 0, 0}, // split by the cut
		{"abcdefghijklmnopqrstuvwxyz0123456789A", strings.Repeat("y", 250), 280, 1, 0},
		{"a/b+c=d&e<f>g:h@i!j$k*l", "bad key: ", 9, 1, 1},
		{"a/b+c=d&e<f>g:h@i!j$k*l", "bad key: ", 9, 2, 2},
		{"a/b+c=d&e<f>g:h@i!j$k*l", "bad key: ", 9, 3, 0},
		{"0123456789abcdefghij", "echo ", 5, 4, 1},
		{"0123456789abcdefghij", "echo ", 5, 5, 3},
		{"0123456789abcdefghij", "echo ", 299, 7, 0},
		{"zyxwvutsrqponm", "<html>proxy error ", 18, 0, 4},
		{"zyxwvutsrqponm", "partial ", 8, 17, 0},
		{"sk_live_4f9aZq8Lm2Rt7Xw0Pb5Nc3Vd6", "link ", 5, 8, 3},                         // base64 in a record
		{"sk_live_4f9aZq8Lm2Rt7Xw0Pb5Nc3Vd6", "auth ", 5, 13, 0},                        // a basic-auth header
		{"a/b+c=d&e<f>g:h@i!j$k*l", "signed ", 7, 14, 3},                                // base64 with escaped slashes
		{"0123456789abcdefghij", strings.Repeat("h", 290), 280, 15, 0},                  // hex across the cut
		{"abcdefghijklmnopqrstuvwxyz0123456789A", "HEX ", 4, 16, 4},                     // not JSON at all
		{"abcdefghijklmnopqrstuvwxyz0123456789A", strings.Repeat("b", 250), 260, 11, 2}, // base64url-raw
	} {
		f.Add([]byte(seed.key), seed.filler, seed.pos, seed.enc, seed.mode)
	}
	f.Fuzz(func(t *testing.T, keySeed []byte, filler string, pos uint16, enc, mode uint8) {
		key := fuzzKey(keySeed)
		if len(keySeed) >= 8 && len(keySeed) <= 64 && strings.Trim(string(keySeed), keyAlphabet) == "" {
			key = string(keySeed) // the seeds' keys as written
		}
		// Filler: valid UTF-8 without escape introducers (a lone backslash
		// or % before an escaped key changes what the bytes mean).
		filler = strings.Map(func(r rune) rune {
			if r == '\\' || r == '%' || r == utf8.RuneError {
				return '.'
			}
			return r
		}, strings.ToValidUTF8(filler, "."))
		if len(filler) > 2000 {
			filler = filler[:2000]
		}
		var echoed string
		if e := int(enc) % (len(encodings) + 1); e < len(encodings) {
			echoed = encodings[e].enc(key)
		} else { // a part of the key, at least 8 characters
			a := int(pos) % (len(key) - 7)
			echoed = key[a:]
		}
		p := int(pos) % (len(filler) + 1)
		for p > 0 && p < len(filler) && !utf8.RuneStart(filler[p]) { // keep the filler's characters whole
			p--
		}
		msg := filler[:p] + echoed + filler[p:]

		var status int
		var body string
		switch mode % 5 {
		case 0: // error body, message JSON-encoded
			status = 500
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "details": []string{msg, "x"}}})
			body = string(b)
		case 1: // the JSON layer itself \u-escapes the key
			status = 400
			body = `{"error":{"message":"` + jsonEscape(filler[:p]) + uEscape(key, false) + jsonEscape(filler[p:]) + `"}}`
		case 2: // a 200 carrying an error object
			status = 200
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg}})
			body = string(b)
		case 3: // a record that echoes it in a field of the wrong type
			status = 200
			b, _ := json.Marshal(map[string]any{"data": []any{
				map[string]any{"id": 1, "name": "ok"},
				map[string]any{"id": 2, "projects_count": msg, "note": msg},
			}, "total": 2, "last_page": 1})
			body = string(b)
		case 4: // not JSON at all
			status = 502
			body = msg
			if p%2 == 0 {
				status = 200
			}
		}

		core, logs := observer.New(zapcore.DebugLevel)
		o := fastOptions("http://127.0.0.1:1", "")
		o.APIKey = key
		o.MaxAttempts = 2
		o.Logger = zap.New(core)
		o.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		})}
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for page, err := range c.List(context.Background(), stream.EndpointBrands, ListQuery{}) {
			if err != nil {
				texts = append(texts, err.Error())
				continue
			}
			for _, rj := range page.Rejects {
				texts = append(texts, rj.Error(), string(rj.Raw))
			}
		}
		for _, e := range logs.All() {
			var b bytes.Buffer
			fmt.Fprintf(&b, "%s %v", e.Message, e.ContextMap())
			texts = append(texts, b.String())
		}
		for _, text := range texts {
			if l := leaks(text, key); l != "" {
				t.Fatalf("key %q leaks (%s) in:\n%s", key, l, text)
			}
		}
	})
}
