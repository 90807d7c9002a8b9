package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/inventory"
)

// charsetHas says, for each non-ASCII character of the sandbox's data,
// whether ISO-8859-1, windows-1250 and ISO-8859-16 have it (from the
// charsets' published tables, written by hand: not the decoder under test).
var charsetHas = map[rune][3]bool{
	'ă': {false, true, true}, 'Ă': {false, true, true}, 'â': {true, true, true}, 'Â': {true, true, true},
	'î': {true, true, true}, 'Î': {true, true, true}, 'ș': {false, false, true}, 'Ș': {false, false, true},
	'ț': {false, false, true}, 'Ț': {false, false, true}, 'ş': {false, true, false}, 'ţ': {false, true, false},
	'–': {false, true, false}, '„': {false, true, true}, '”': {false, true, true}, '📅': {}, '🎄': {},
}

// asServed is text as a server writing charset c (0, 1, 2 as in
// charsetHas) serves it and a reader of that charset reads it back: every
// character c lacks is '?'.
func asServed(t *testing.T, text string, c int) string {
	t.Helper()
	return strings.Map(func(r rune) rune {
		if r < 0x80 {
			return r
		}
		has, ok := charsetHas[r]
		if !ok {
			t.Fatalf("the sandbox's data holds %q, which charsetHas does not list", r)
		}
		if has[c] {
			return r
		}
		return '?'
	}, text)
}

// TestDeclaredCharsetsLandExact: the sandbox serving every answer in
// ISO-8859-1, windows-1250 or ISO-8859-16, declared in Content-Type: every
// e-mail's raw record and subject land as the truth's text, each character
// the charset has as it is (Café, Ştefan, Ștefan, Țară), the others as the
// '?' the server wrote; the run succeeds without an invalid_utf8 warning.
func TestDeclaredCharsetsLandExact(t *testing.T) {
	t.Parallel()
	for c, charset := range []string{"ISO-8859-1", "windows-1250", "ISO-8859-16"} {
		t.Run(charset, func(t *testing.T) {
			t.Parallel()
			o := smallSandbox()
			o.Emails = 600
			h := newHarness(t, o, nil)
			if err := h.sb.SetTwists(sandbox.Twists{HostileTwists: sandbox.HostileTwists{Charset: &charset}}); err != nil {
				t.Fatal(err)
			}
			res := h.run(Request{})
			if res.Status != StatusSucceeded {
				t.Fatalf("run %s: %v", res.Status, res.Err)
			}
			for _, w := range res.Warnings {
				if w.Kind == inventory.KindInvalidUTF8 {
					t.Errorf("warning %s", w.Message)
				}
			}
			got := map[string][2]string{}
			rows, err := h.pool.Query(context.Background(), "SELECT record_id::text, raw::text, subject FROM "+h.table("emails"))
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id, raw, subject string
				if err := rows.Scan(&id, &raw, &subject); err != nil {
					t.Fatal(err)
				}
				got[id] = [2]string{raw, subject}
			}
			n := 0
			for _, l := range h.truth()["communications"] {
				if l.Bad {
					continue
				}
				n++
				g, ok := got[l.Key]
				if !ok {
					t.Fatalf("e-mail %s did not land", l.Key)
				}
				var want, have any
				if err := json.Unmarshal([]byte(asServed(t, string(l.Record), c)), &want); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(g[0]), &have); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(want, have) {
					t.Fatalf("e-mail %s: raw\n%s\nwant\n%s", l.Key, g[0], asServed(t, string(l.Record), c))
				}
				subject, _ := want.(map[string]any)["email"].(map[string]any)["subject"].(string)
				if g[1] != subject {
					t.Fatalf("e-mail %s: subject %q, want %q", l.Key, g[1], subject)
				}
			}
			if n != len(got) || n == 0 {
				t.Errorf("%d e-mails landed, the truth has %d", len(got), n)
			}
		})
	}
}

// TestUndeclaredLatin1IsWarned: the same bodies in ISO-8859-1 without a
// declared charset land as today (invalid bytes as U+FFFD), and the run
// warns per stream, naming ISO-8859-1 first.
func TestUndeclaredLatin1IsWarned(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Emails = 600
	h := newHarness(t, o, nil)
	charset, undeclared := "ISO-8859-1", true
	if err := h.sb.SetTwists(sandbox.Twists{HostileTwists: sandbox.HostileTwists{Charset: &charset, CharsetUndeclared: &undeclared}}); err != nil {
		t.Fatal(err)
	}
	res := h.run(Request{})
	if res.Status != StatusWarning || res.Err != nil {
		t.Errorf("run %s: %v; want warning (complete, with the invalid_utf8 warnings)", res.Status, res.Err)
	}
	warned := map[string]inventory.Warning{}
	for _, w := range res.Warnings {
		if w.Kind == inventory.KindInvalidUTF8 {
			warned[w.Stream] = w
		}
	}
	for _, stream := range []string{"communications", "brand_details", "projects"} {
		w, ok := warned[stream]
		if !ok || w.Count == 0 || len(w.Candidates) == 0 || w.Candidates[0] != "ISO-8859-1" || !strings.Contains(w.Message, "ISO-8859-1") {
			t.Errorf("%s: warning %+v, want one naming ISO-8859-1", stream, w)
		}
	}
	want, _ := h.truth().Counts("communications")
	if got := h.count("SELECT count(*) FROM " + h.table("emails")); got != want {
		t.Errorf("emails: %d landed, the truth has %d", got, want)
	}
	if got := h.count("SELECT count(*) FROM " + h.table("emails") + " WHERE raw::text LIKE '%\uFFFD%'"); got == 0 {
		t.Error("no e-mail holds U+FFFD: were the bodies not Latin-1?")
	}
	stored := h.count("SELECT count(*) FROM "+h.table("sync_runs")+" WHERE warnings::text LIKE $1", "%invalid_utf8%")
	if stored != 1 {
		t.Errorf("sync_runs rows with the invalid_utf8 warning: %d, want 1", stored)
	}
}

// TestDuplicateIDsLastWinsAndWarned: a communications page whose rows
// object holds an id twice (the proxy appends the page's first e-mail again
// with another subject): the last one is stored, every other e-mail lands,
// and the run warns (duplicate_id) with the count.
func TestDuplicateIDsLastWinsAndWarned(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	h := newHarness(t, o, nil)
	var pages atomic.Int32
	var dupID atomic.Int64
	proxy := rewritingProxy(t, h.sb.CommsURL(), func(resp *http.Response) bool { return resp.StatusCode == 200 }, func(body []byte) []byte {
		rows := gjson.GetBytes(body, "data.rows")
		if !rows.IsObject() || rows.Index == 0 {
			return body
		}
		var key, rec string
		rows.ForEach(func(k, v gjson.Result) bool { key, rec = k.String(), v.Raw; return false })
		if key == "" {
			return body
		}
		pages.Add(1)
		id, _ := strconv.ParseInt(key, 10, 64)
		dupID.Store(id)
		again := regexp.MustCompile(`"subject":"[^"]*"`).ReplaceAllString(rec, `"subject":"the last one wins"`)
		end := rows.Index + len(rows.Raw) - 1 // the rows object's closing brace
		return slices.Concat(body[:end], []byte(`,"`+key+`":`+again), body[end:])
	})
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	h.eng, _ = h.wire(wiring{commsURL: srv.URL})
	res := h.run(Request{Streams: []string{"communications"}})
	if res.Status != StatusWarning || res.Err != nil || pages.Load() == 0 {
		t.Fatalf("run %s (%v) over %d rewritten pages; want warning (complete, with the duplicate_id warning)", res.Status, res.Err, pages.Load())
	}
	var w *inventory.Warning
	for i := range res.Warnings {
		if res.Warnings[i].Kind == inventory.KindDuplicateID {
			w = &res.Warnings[i]
		}
	}
	if w == nil || w.Stream != "communications" || w.Column != "emails" || w.Count != int64(pages.Load()) || !strings.Contains(w.Message, "last") {
		t.Fatalf("warning %+v, want duplicate_id on emails counting %d", w, pages.Load())
	}
	want, _ := h.truth().Counts("communications")
	if got := h.count("SELECT count(*) FROM " + h.table("emails")); got != want || w.Records != int64(want)+w.Count {
		t.Errorf("emails: %d landed, truth %d; warning counts %d records", got, want, w.Records)
	}
	if n := h.count("SELECT count(*) FROM "+h.table("emails")+" WHERE record_id = $1 AND subject = 'the last one wins'", dupID.Load()); n != 1 {
		t.Errorf("e-mail %d: the last version was not stored", dupID.Load())
	}
}
