package logging

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/leak"
)

// echoedForms are the base64 and hex forms of key a server could echo: the
// key alone or inside a longer encoded text (each of the three alignments
// of base64), in both alphabets, with and without padding, hex in both
// cases, and these inside JSON with escaped slashes or URL-encoded.
func echoedForms(key string) map[string]string {
	forms := map[string]string{}
	for _, pre := range []string{"", "u:", "agency:"} {
		in := []byte(pre + key + "#")
		for name, e := range map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding,
			"std-raw": base64.RawStdEncoding, "url-raw": base64.RawURLEncoding} {
			enc := e.EncodeToString(in)
			forms[fmt.Sprintf("base64 %s after %q", name, pre)] = enc
			forms[fmt.Sprintf("base64 %s after %q, JSON slashes", name, pre)] = strings.ReplaceAll(enc, "/", `\/`)
			forms[fmt.Sprintf("base64 %s after %q, URL-encoded", name, pre)] = url.QueryEscape(enc)
		}
	}
	forms["basic auth"] = "Basic " + base64.StdEncoding.EncodeToString([]byte("agency:"+key))
	forms["hex"] = hex.EncodeToString([]byte(key))
	forms["HEX"] = strings.ToUpper(hex.EncodeToString([]byte(key)))
	forms["hex inside"] = hex.EncodeToString([]byte("x" + key + "y"))
	return forms
}

// TestRedactorEncodedForms: a key echoed base64-encoded (standard and URL
// alphabets, padded or not, at any alignment) or hex-encoded (either case)
// — whole, inside a longer encoded value, in JSON with escaped slashes or
// URL-encoded — is removed by String and by Body, and what remains decodes
// to no 8 bytes of it; the text around it is kept.
func TestRedactorEncodedForms(t *testing.T) {
	for _, key := range []string{secret, "sk_live_4f9aZq8Lm2Rt7Xw0Pb5Nc3Vd6", "0123456789abcdef0123", "wf-9d8c7b6a"} {
		r := NewRedactor(key)
		for name, form := range echoedForms(key) {
			if leak.Decoded(form, key) == "" {
				t.Fatalf("%s: the oracle finds no key in %q", name, form)
			}
			in := "before " + form + " after"
			got := r.String(in)
			if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") || !strings.Contains(got, Redacted) {
				t.Errorf("key %q, %s: %q -> %q", key, name, in, got)
			}
			if l := leak.Decoded(got, key); l != "" {
				t.Errorf("key %q, %s: %q still holds it: %s", key, name, got, l)
			}
			body, _ := json.Marshal(map[string]any{"data": []any{map[string]string{"link": form}}})
			out, echoed := r.Body(body)
			if !echoed || !json.Valid(out) || leak.Decoded(string(out), key) != "" {
				t.Errorf("key %q, %s: Body -> %s (echoed %v)", key, name, out, echoed)
			}
		}
	}
	clean := "plain text aGVsbG8gd29ybGQ= deadbeef 9876fedcba012345"
	if got := NewRedactor(secret).String(clean); got != clean {
		t.Errorf("clean text changed: %q", got)
	}
}
