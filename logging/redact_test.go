package logging

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
	"testing"

	"go.uber.org/zap"
)

const secret = "Sk-live/4f9A+b=c&d<e>0123456789"

// TestRedactorEncodings: the key is removed raw, URL-encoded both ways,
// JSON-escaped (escaped slashes, \u escapes in either case), Go-quoted
// (\x escapes), a JSON copy of a URL-encoded copy, and in part (8 characters or more);
// text around it is kept.
func TestRedactorEncodings(t *testing.T) {
	r := NewRedactor(secret, "")
	hex := func(prefix, s string, upper bool) string {
		var b strings.Builder
		for _, c := range s {
			h := "0123456789abcdef"
			if upper {
				h = "0123456789ABCDEF"
			}
			b.WriteString(prefix + string(h[c>>4]) + string(h[c&15]))
		}
		return b.String()
	}
	forms := map[string]string{
		"raw":        secret,
		"query":      url.QueryEscape(secret),
		"path":       url.PathEscape(secret),
		"json":       strings.ReplaceAll(strings.ReplaceAll(secret, "/", `\/`), "&", `\u0026`),
		"u":          hex(`\u00`, secret, false),
		"U":          hex(`\u00`, secret, true),
		"x":          hex(`\x`, secret, false),
		"percent":    hex("%", secret, true),
		"query-json": strings.ReplaceAll(url.QueryEscape(secret), "%", `\u0025`),
		"prefix":     secret[:8],
		"suffix":     secret[len(secret)-9:],
		"middle":     secret[5:20],
		"query-part": url.QueryEscape(secret[3:14]),
	}
	for name, form := range forms {
		in := "before " + form + " after"
		got := r.String(in)
		if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") || !strings.Contains(got, Redacted) {
			t.Errorf("%s: %q -> %q", name, in, got)
		}
		for i := 0; i+8 <= len(secret); i++ {
			if strings.Contains(got, secret[i:i+8]) {
				t.Errorf("%s: %q still holds %q", name, got, secret[i:i+8])
			}
		}
	}
	if got := r.String("nothing secret here, 1234567"); got != "nothing secret here, 1234567" {
		t.Errorf("clean text changed: %q", got)
	}
	var nilR *Redactor
	if nilR.String("x"+secret) != "x"+secret || NewRedactor("abc") != nil {
		t.Error("a nil redactor or one of too-short secrets must redact nothing")
	}
}

// TestClipRedactsBeforeCutting: a key that straddles the cut is removed, not
// cut into a first part that escapes.
func TestClipRedactsBeforeCutting(t *testing.T) {
	r := NewRedactor(secret)
	for cut := 1; cut < len(secret)+5; cut++ {
		in := strings.Repeat("x", 300-cut) + secret + strings.Repeat("y", 50)
		got := r.Clip(in, 300)
		if len(got) > 300+len("…") || !strings.HasSuffix(got, "…") {
			t.Fatalf("cut %d: bad clip %q", cut, got)
		}
		for n := 4; n <= len(secret); n++ {
			if cut >= 4 && strings.HasSuffix(strings.TrimSuffix(got, "…"), secret[:n]) {
				t.Fatalf("cut %d: clip ends with %d characters of the key: %q", cut, n, got)
			}
		}
	}
}

// TestLoggerRedacts: every line of a logger built with secrets is
// redacted, whatever field carries the key.
func TestLoggerRedacts(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "debug", "json", secret)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("key "+secret, zap.String("url", "https://x/?k="+url.QueryEscape(secret)),
		zap.Error(errors.New("echo "+secret[2:20])), zap.Any("m", map[string]string{"k": secret}))
	_ = log.Sync()
	out := buf.String()
	for i := 0; i+8 <= len(secret); i++ {
		for _, f := range []string{secret[i : i+8], url.QueryEscape(secret[i : i+8])} {
			if strings.Contains(out, f) {
				t.Fatalf("log holds %q: %s", f, out)
			}
		}
	}
	if !strings.Contains(out, Redacted) {
		t.Fatalf("nothing redacted: %s", out)
	}
}

// TestClipKeepsOnlyTheStart: when redaction shortens the text, nothing
// from past the cut — where the read limit may split a key — moves in.
func TestClipKeepsOnlyTheStart(t *testing.T) {
	r := NewRedactor(secret)
	in := strings.Repeat(secret, 20) + strings.Repeat("z", 300+ClipMargin-20*len(secret)-5) + secret
	got := r.Clip(in, 300)
	if strings.Contains(got, "z") || strings.Contains(got, secret[:5]) {
		t.Fatalf("clip took text from past the cut: %q", got)
	}
	if got := r.Clip("short "+secret, 300); got != "short "+Redacted {
		t.Fatalf("short text: %q", got)
	}
}
