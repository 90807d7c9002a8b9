package extract

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// TestEchoedKeysNeverReachTheRecords: a service that echoes the API key in
// the records it serves — a signed link, a note — must not hand the key to
// what stores the records. The page's records and a detail come back with
// the key redacted and still valid JSON, and the records without a key are
// untouched.
func TestEchoedKeysNeverReachTheRecords(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/brands":
			_, _ = w.Write([]byte(`{"data":[` +
				`{"id":1,"name":"Acme","logo":"https://files.example/logo.png?api_key=` + url.QueryEscape(testKey) + `"},` +
				`{"id":2,"name":"Borealis","note":"key ` + testKey + ` used"},` +
				`{"id":3,"name":"Calypso"}` +
				`],"total":3,"per_page":1000,"current_page":1,"last_page":1}`))
		case "/v1/brands/1":
			_, _ = w.Write([]byte(`{"data":{"id":1,"name":"Acme","workflow":"` + testCommsKey + `"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := newClient(t, fastOptions(srv.URL, srv.URL))
	ctx := context.Background()

	p, err := c.ListPage(ctx, stream.EndpointBrands, nil, 1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 3 {
		t.Fatalf("%d records, want 3", len(p.Records))
	}
	detail, err := c.Object(ctx, stream.EndpointBrand, ID("1"))
	if err != nil {
		t.Fatal(err)
	}
	raws := [][]byte{detail}
	for _, r := range p.Records {
		raws = append(raws, r.Raw)
	}
	for _, raw := range raws {
		if !json.Valid(raw) {
			t.Errorf("not JSON: %s", raw)
		}
		for _, secret := range []string{testKey, testCommsKey, url.QueryEscape(testKey)} {
			if strings.Contains(string(raw), secret[:10]) {
				t.Errorf("a key reached a record: %s", raw)
			}
		}
	}
	if got := string(p.Records[2].Raw); got != `{"id":3,"name":"Calypso"}` {
		t.Errorf("a record without a key changed: %s", got)
	}
}
