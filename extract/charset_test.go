package extract

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// TestDeclaredCharsetsAreDecoded: a page whose Content-Type declares
// ISO-8859-1, windows-1250 or ISO-8859-16 reaches the records as the text it
// meant (the bytes below are written by hand from the charsets' tables, not
// by the decoder under test); a page that declares nothing and is not UTF-8
// is delivered as it is, flagged, with the charsets that decode it cleanly
// (ISO-8859-1 first); an unknown label is read as UTF-8 and named; the cap
// counts the decoded bytes.
func TestDeclaredCharsetsAreDecoded(t *testing.T) {
	cases := []struct {
		name, contentType, body, want, charset, unknown, hint string
		invalid                                               bool
	}{
		{name: "latin-1", contentType: "text/plain; charset=ISO-8859-1", body: "Caf\xe9 cr\xe8me r\xe9union",
			want: "Café crème réunion", charset: "ISO-8859-1"},
		{name: "latin-1 label", contentType: "text/plain;charset=\"latin1\"", body: "Caf\xe9", want: "Café", charset: "ISO-8859-1"},
		{name: "windows-1250", contentType: "text/plain; charset=windows-1250", body: "\xaatefan \xdear\xe3 \xba\xfe",
			want: "Ştefan Ţară şţ", charset: "windows-1250"},
		{name: "cp1250 (WHATWG label)", contentType: "application/json; charset=cp1250", body: "\xdear\xe3", want: "Ţară", charset: "windows-1250"},
		{name: "iso-8859-16", contentType: "text/plain; charset=ISO-8859-16", body: "\xaatefan \xdear\xe3 \xba\xfe",
			want: "Ștefan Țară șț", charset: "ISO-8859-16"},
		{name: "utf-8 declared", contentType: "text/plain; charset=UTF-8", body: "Ștefan", want: "Ștefan"},
		{name: "undeclared latin-1", contentType: "text/plain", body: "Caf\xe9 cr\xe8me r\xe9union", want: "Caf\xe9 cr\xe8me r\xe9union",
			invalid: true, hint: "ISO-8859-1, windows-1252, ISO-8859-2, windows-1250"},
		{name: "undeclared windows-1252 quotes", contentType: "application/json", body: "\x93quoted\x94", want: "\x93quoted\x94",
			invalid: true, hint: "windows-1252, windows-1250"},
		{name: "unknown label", contentType: "text/plain; charset=x-martian", body: "Ștefan", want: "Ștefan", unknown: "x-martian"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = w.Write([]byte(`{"data":{"rows":{"7":{"email":{"subject":"` + tc.body + `"}}},"total":1,"per_page":1000,"current_page":1,"last_page":1}}`))
			})
			var mu sync.Mutex
			var infos []RequestInfo
			o := fastOptions(srv.URL, srv.URL)
			o.Hook = func(ri RequestInfo) { mu.Lock(); infos = append(infos, ri); mu.Unlock() }
			c := newClient(t, o)
			p, err := c.CommunicationsPage(context.Background(), CommsQuery{DomainID: 1, UserIDs: []int64{1}}, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Records) != 1 || !strings.Contains(string(p.Records[0].Raw), `"subject":"`+tc.want+`"`) {
				t.Fatalf("records %q, want the subject %q", p.Records, tc.want)
			}
			ri := infos[len(infos)-1]
			if ri.Charset != tc.charset || ri.UnknownCharset != tc.unknown || ri.InvalidUTF8 != tc.invalid || ri.CharsetHint != tc.hint {
				t.Errorf("charset %q unknown %q invalid %v hint %q; want %q %q %v %q",
					ri.Charset, ri.UnknownCharset, ri.InvalidUTF8, ri.CharsetHint, tc.charset, tc.unknown, tc.invalid, tc.hint)
			}
		})
	}

	// 600 KiB of "é" in Latin-1 is 1.2 MiB decoded: over a 1 MiB cap.
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=ISO-8859-1")
		_, _ = w.Write([]byte(`[{"id":1,"name":"` + strings.Repeat("\xe9", 600<<10) + `"}]`))
	})
	o := fastOptions(srv.URL, "")
	o.MaxBodyBytes = 1 << 20
	if _, err := newClient(t, o).ListPage(context.Background(), stream.EndpointBrands, nil, 1, 1000); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("a body over the cap once decoded: %v", err)
	}
}
