package sandbox

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// TestHostileTwistsAdmin: the hostile twists are set and reported through
// /_sandbox/twists; an unknown or multi-byte charset is refused and
// changes nothing.
func TestHostileTwistsAdmin(t *testing.T) {
	s := startSmall(t, nil)
	r := adminCall(t, s, http.MethodPost, "twists", `{"refuse_main_key":true,"gzip_bomb":true,"gzip_bomb_bytes":4096,"charset":"windows-1250","charset_undeclared":true,"echo_key_in_records":true}`)
	if r.status != http.StatusOK {
		t.Fatalf("set: %d %s", r.status, r.body)
	}
	for _, want := range []string{`"refuse_main_key":true`, `"gzip_bomb":true`, `"gzip_bomb_bytes":4096`, `"charset":"windows-1250"`,
		`"charset_undeclared":true`, `"echo_key_in_records":true`, `"endless_body":false`, `"oversize_from_page":0`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("status lacks %s: %s", want, r.body)
		}
	}
	for _, bad := range []string{`{"charset":"UTF-16"}`, `{"charset":"no-such-charset"}`, `{"gzip_bomb_bytes":-1}`} {
		if r := adminCall(t, s, http.MethodPost, "twists", bad); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, r.status, r.body)
		}
	}
	if st := s.TwistsStatus(); st.Charset != "windows-1250" || st.GzipBombBytes != 4096 {
		t.Errorf("a refused change changed the twists: %+v", st.HostileStatus)
	}
}

// TestRefuseMainKey: the main interface answers 401 to its own key, the
// communications endpoint still serves.
func TestRefuseMainKey(t *testing.T) {
	s := startSmall(t, nil)
	on := true
	if err := s.SetTwists(Twists{HostileTwists: HostileTwists{RefuseMainKey: &on}}); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "/v1/brands"); r.status != http.StatusUnauthorized {
		t.Errorf("brands: %d, want 401", r.status)
	}
	if r := commsPost(t, s, `{"user_id":[1],"page":1,"per_page":10}`); r.status != http.StatusOK {
		t.Errorf("communications: %d, want 200", r.status)
	}
}

// rawComms posts a communications request without the transport's
// transparent gzip, and returns the response unread.
func rawComms(t *testing.T, s *Server) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.CommsURL()+CommsPath, strings.NewReader(`{"user_id":[1,2,3],"page":1,"per_page":100}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Workflow-Key", s.opts.CommsKey)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestGzipBombAndEndlessBody: a bomb is a few kilobytes on the wire that
// inflate to the size asked, starting as a communications page; an endless
// body goes on past any size a reader stops at.
func TestGzipBombAndEndlessBody(t *testing.T) {
	s := startSmall(t, nil)
	on, size := true, int64(64<<20)
	if err := s.SetTwists(Twists{HostileTwists: HostileTwists{GzipBomb: &on, GzipBombBytes: &size}}); err != nil {
		t.Fatal(err)
	}
	resp := rawComms(t, s)
	wire, err := io.ReadAll(resp.Body)
	if err != nil || resp.Header.Get("Content-Encoding") != "gzip" || len(wire) > 256<<10 {
		t.Fatalf("bomb: %d bytes on the wire, encoding %q, err %v", len(wire), resp.Header.Get("Content-Encoding"), err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(wire))
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, len(bombStart))
	if _, err := io.ReadFull(zr, head); err != nil || string(head) != bombStart {
		t.Fatalf("bomb starts %q (%v)", head, err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil || n+int64(len(head)) < size {
		t.Errorf("bomb inflates to %d bytes (%v), want %d", n+int64(len(head)), err, size)
	}

	off := false
	if err := s.SetTwists(Twists{HostileTwists: HostileTwists{GzipBomb: &off, EndlessBody: &on}}); err != nil {
		t.Fatal(err)
	}
	resp = rawComms(t, s)
	if resp.ContentLength >= 0 {
		t.Errorf("endless body with a length %d", resp.ContentLength)
	}
	if n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 16<<20)); n != 16<<20 || err != nil {
		t.Errorf("endless body ended after %d bytes (%v)", n, err)
	}

	// From page 2 on: the first page is served as it is.
	two := 2
	if err := s.SetTwists(Twists{HostileTwists: HostileTwists{OversizeFromPage: &two}}); err != nil {
		t.Fatal(err)
	}
	if r := commsPost(t, s, `{"user_id":[1,2,3],"page":1,"per_page":10}`); r.status != http.StatusOK || !json.Valid(r.body) {
		t.Errorf("page 1 with oversize_from_page 2: %d, JSON %v", r.status, json.Valid(r.body))
	}
	req, _ := http.NewRequest(http.MethodPost, s.CommsURL()+CommsPath, strings.NewReader(`{"user_id":[1,2,3],"page":2,"per_page":10}`))
	req.Header.Set("X-Workflow-Key", s.opts.CommsKey)
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if n, err := io.Copy(io.Discard, io.LimitReader(resp2.Body, 4<<20)); n != 4<<20 || err != nil {
		t.Errorf("page 2 with oversize_from_page 2: %d bytes (%v), want an endless body", n, err)
	}
}

// TestCharsetTwist: every data answer is re-encoded into the charset, '?'
// for what it lacks, and the charset is declared unless told not to.
func TestCharsetTwist(t *testing.T) {
	s := startSmall(t, nil)
	want := get(t, s, "/v1/brands/"+firstBrandID(t, s)).body
	if !bytes.ContainsAny(want, "ăîșț") {
		t.Fatal("the brand detail holds no Romanian letter to re-encode")
	}
	for _, tc := range []struct {
		charset    string
		cm         *charmap.Charmap
		undeclared bool
		lossy      bool // the charset lacks ș and ț (comma below)
	}{
		{"ISO-8859-16", charmap.ISO8859_16, false, false},
		{"windows-1250", charmap.Windows1250, false, true},
		{"ISO-8859-1", charmap.ISO8859_1, true, true},
	} {
		if err := s.SetTwists(Twists{HostileTwists: HostileTwists{Charset: &tc.charset, CharsetUndeclared: &tc.undeclared}}); err != nil {
			t.Fatal(err)
		}
		r := get(t, s, "/v1/brands/"+firstBrandID(t, s))
		ct := r.header.Get("Content-Type")
		if declared := strings.Contains(ct, "charset="+tc.charset); declared == tc.undeclared {
			t.Errorf("%s: Content-Type %q", tc.charset, ct)
		}
		if utf8.Valid(r.body) {
			t.Errorf("%s: the body is still UTF-8", tc.charset)
		}
		got, err := tc.cm.NewDecoder().Bytes(r.body)
		if err != nil {
			t.Fatal(err)
		}
		wr, gr := []rune(string(want)), []rune(string(got))
		if len(wr) != len(gr) {
			t.Fatalf("%s: %d characters, want %d", tc.charset, len(gr), len(wr))
		}
		lost := 0
		for i := range wr {
			switch {
			case gr[i] == wr[i]:
			case gr[i] == '?' && wr[i] > 0x7f:
				lost++
			default:
				t.Fatalf("%s: character %d is %q, want %q", tc.charset, i, gr[i], wr[i])
			}
		}
		if (lost > 0) != tc.lossy {
			t.Errorf("%s: %d characters lost", tc.charset, lost)
		}
	}
}

func firstBrandID(t *testing.T, s *Server) string {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, _ := json.Marshal(s.data.brands[0].id)
	return string(b)
}

// TestEchoKeyInRecords: each brand detail and the first e-mails of a page
// carry the request's key in every form of EchoForms, and stay JSON.
func TestEchoKeyInRecords(t *testing.T) {
	s := startSmall(t, nil)
	on := true
	if err := s.SetTwists(Twists{HostileTwists: HostileTwists{EchoKeyInRecords: &on}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    response
		key  string
		n    int
	}{
		{"brand detail", get(t, s, "/v1/brands/"+firstBrandID(t, s)), s.opts.APIKey, 1},
		{"communications", commsPost(t, s, `{"user_id":`+allUsers(40)+`,"page":1,"per_page":50}`), s.opts.CommsKey, echoRowsPerPage},
	} {
		if tc.r.status != http.StatusOK || !json.Valid(tc.r.body) {
			t.Fatalf("%s: %d, valid JSON %v", tc.name, tc.r.status, json.Valid(tc.r.body))
		}
		for name, form := range EchoForms(tc.key) {
			if got := strings.Count(string(tc.r.body), `"`+name+`":"`+form+`"`); got != tc.n {
				t.Errorf("%s: form %s %d times, want %d", tc.name, name, got, tc.n)
			}
		}
	}
}
