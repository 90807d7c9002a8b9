package logging

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestBodyRedactsEchoedSecrets: a response body that echoes a key in a
// record — whole, URL-encoded inside a link, with PHP's escaped slashes,
// cut short — comes back without it and still valid JSON; a body without
// a key comes back as the very same bytes (no copy).
func TestBodyRedactsEchoedSecrets(t *testing.T) {
	const key = "sk_live/4f9a+Zq8Lm2Rt7Xw0Pb5Nc3Vd6"
	const comms = "wf-9d8c7b6a5f4e3d2c1b0a"
	r := NewRedactor(key, comms)
	php := strings.ReplaceAll(key, "/", `\/`)
	cases := map[string]string{
		"raw":        `{"data":[{"id":1,"note":"token ` + key + `"}]}`,
		"in a link":  `{"data":[{"id":1,"url":"https://files.example/a.pdf?api_key=` + url.QueryEscape(key) + `"}]}`,
		"php slash":  `{"data":[{"id":1,"note":"` + php + `"}]}`,
		"cut short":  `{"data":[{"id":1,"note":"` + key[:12] + `"}]}`,
		"comms key":  `{"data":[{"id":1,"workflow":"` + comms + `"}]}`,
		"end of key": `{"data":[{"id":1,"note":"…` + key[len(key)-10:] + `"}]}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			out, _ := r.Body([]byte(body))
			got := string(out)
			if !json.Valid([]byte(got)) {
				t.Fatalf("not JSON any more: %s", got)
			}
			for _, form := range []string{key, url.QueryEscape(key), php, key[:8], key[len(key)-8:], comms[:8]} {
				if strings.Contains(got, form) {
					t.Errorf("%q still in %s", form, got)
				}
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("no %s in %s", Redacted, got)
			}
		})
	}
	clean := []byte(`{"data":[{"id":1,"note":"nothing secret here, sk_live is a prefix only"}]}`)
	if got, _ := r.Body(clean); &got[0] != &clean[0] || string(got) != string(clean) {
		t.Errorf("a body without a key was copied or changed: %s", got)
	}
	var none *Redactor
	if got, _ := none.Body(clean); string(got) != string(clean) {
		t.Errorf("a nil redactor changed the body: %s", got)
	}
}

// BenchmarkBodyClean is the cost of screening a 1 MB page that holds no key
// (every page of a sync pays it).
func BenchmarkBodyClean(b *testing.B) {
	r := NewRedactor("sk_live_4f9aZq8Lm2Rt7Xw0Pb5Nc3Vd6", "wf-9d8c7b6a5f4e3d2c1b0a")
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		sb.WriteString(`{"id":` + strings.Repeat("7", i%9+1) + `,"subject":"Quarterly review sk_ wf-","from":{"email":"anna@agency.example"}},`)
	}
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_, _ = r.Body(body)
	}
}
