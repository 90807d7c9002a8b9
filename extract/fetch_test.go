package extract

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
)

// TestSplitPageNamesEnvelope: SplitPage says which envelope a page came in
// and which paging fields it carried (agencysync check reports both).
func TestSplitPageNamesEnvelope(t *testing.T) {
	rec := `{"id":"1","name":"Acme"}`
	all := []string{"total", "per_page", "current_page", "last_page"}
	cases := []struct {
		name, body, envelope string
		fields               []string
	}{
		{"canonical", `{"data":[` + rec + `],"total":9,"per_page":1,"current_page":1,"last_page":9}`, EnvelopeCanonical, all},
		{"bare array", `[` + rec + `]`, EnvelopeBareArray, nil},
		{"data without paging", `{"data":[` + rec + `]}`, EnvelopeNoPaging, nil},
		{"paging under meta", `{"data":[` + rec + `],"meta":{"total":9,"per_page":1,"current_page":1,"last_page":9}}`, EnvelopeMetaPaging, all},
		{"paging under pagination, total only", `{"data":[` + rec + `],"pagination":{"total":"9"}}`, EnvelopePaginationPaging, []string{"total"}},
		{"laravel paginator", `{"current_page":1,"data":[` + rec + `],"first_page_url":"u?page=1","from":1,"last_page":9,"last_page_url":"u?page=9",` +
			`"links":[],"next_page_url":"u?page=2","path":"u","per_page":1,"prev_page_url":null,"to":1,"total":9}`, EnvelopePHPPaginator, all},
		{"laravel resource", `{"data":[` + rec + `],"links":{"first":"u?page=1","next":"u?page=2"},"meta":{"current_page":1,"from":1,"last_page":9,"path":"u","per_page":1,"to":1,"total":9}}`,
			EnvelopePHPResource, all},
		{"communications shape", `{"data":{"rows":{"17":` + rec + `},"total":9,"per_page":1,"current_page":1,"last_page":9}}`, EnvelopeRowsKeyed, all},
		{"rows array", `{"data":{"rows":[` + rec + `],"total":9,"per_page":1}}`, EnvelopeRowsArray, []string{"total", "per_page"}},
		{"data keyed by id", `{"data":{"17":` + rec + `}}`, EnvelopeDataKeyed, nil},
		{"paging fields only", `{"total":0,"per_page":1,"current_page":1,"last_page":0}`, EnvelopeEmpty, all},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustSplit(t, c.body)
			if p.Envelope != c.envelope || !slices.Equal(p.PagingFields, c.fields) {
				t.Fatalf("envelope %q, paging fields %v; want %q, %v", p.Envelope, p.PagingFields, c.envelope, c.fields)
			}
		})
	}
}

// TestGenericFetchesAgainstSandboxVariants: ListPage, Object and
// CommunicationsRecords fetch one page or object of any endpoint, split
// generically: the envelope is the one the sandbox's variant serves, each
// record is its JSON as received, and every request is counted.
func TestGenericFetchesAgainstSandboxVariants(t *testing.T) {
	cases := []struct {
		variant, envelope string
	}{
		{"", EnvelopeCanonical},
		{sandbox.VariantBareArray, EnvelopeBareArray},
		{sandbox.VariantNoPaging, EnvelopeNoPaging},
		{sandbox.VariantMetaPaging, EnvelopeMetaPaging},
		{sandbox.VariantPaginationPaging, EnvelopePaginationPaging},
		{sandbox.VariantRowsShape, EnvelopeRowsKeyed},
		{sandbox.VariantRowsArray, EnvelopeRowsArray},
		{sandbox.VariantPHPPaginator, EnvelopePHPPaginator},
		{sandbox.VariantPHPResource, EnvelopePHPResource},
	}
	for _, c := range cases {
		t.Run("variant "+c.variant, func(t *testing.T) {
			s := startSandbox(t, func(o *sandbox.Options) {
				if c.variant != "" {
					o.Variants = []string{c.variant}
				}
			})
			counter := &countingCounter{}
			cl := sandboxClient(t, s, func(o *Options) { o.Counter = counter })
			ctx := context.Background()
			p, err := cl.ListPage(ctx, stream.EndpointProjects, nil, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if p.Envelope != c.envelope || len(p.Records) != 1 {
				t.Fatalf("projects: envelope %q with %d records, want %q with 1", p.Envelope, len(p.Records), c.envelope)
			}
			id := gjson.GetBytes(p.Records[0].Raw, "id").String()
			if id == "" {
				id = p.Records[0].Key
			}
			obj, err := cl.Object(ctx, stream.EndpointProject, ID(id))
			if err != nil {
				t.Fatal(err)
			}
			if got := gjson.GetBytes(obj, "id").String(); got != id || !gjson.GetBytes(obj, "team").Exists() {
				t.Fatalf("project %s detail: id %q, team %v", id, got, gjson.GetBytes(obj, "team").Exists())
			}
			q := url.Values{"level": {"brand"}}
			if p, err = cl.ListPage(ctx, stream.EndpointProfitability, q, 1, 1); err != nil || p.Rows() != 1 {
				t.Fatalf("profitability level=brand: %v, %v", p, err)
			}
			if lvl := gjson.GetBytes(p.Records[0].Raw, "level").String(); lvl != "brand" {
				t.Fatalf("profitability level=brand answered level %q", lvl)
			}
			cp, err := cl.CommunicationsRecords(ctx, CommsQuery{DomainID: 1, UserIDs: []int64{1, 2, 3, 4, 5}, PerPage: 1}, 1)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Envelope != EnvelopeRowsKeyed || len(cp.Records) != 1 || cp.Records[0].Key == "" {
				t.Fatalf("communications: envelope %q, records %v", cp.Envelope, cp.Records)
			}
			if !strings.Contains(string(cp.Records[0].Raw), `"users"`) {
				t.Fatalf("communication record %s has no users", cp.Records[0].Raw)
			}
			if st := s.Stats(); counter.n != 4 || st.Requests-st.Keyless != 4 {
				t.Fatalf("counted %d, sandbox saw %d keyed requests; want 4", counter.n, st.Requests-st.Keyless)
			}
		})
	}
}

// TestGenericFetchErrors: an unknown endpoint name sends nothing; a refused
// key is ErrUnauthorized, as for the typed calls.
func TestGenericFetchErrors(t *testing.T) {
	s := startSandbox(t, nil)
	cl := sandboxClient(t, s, nil)
	ctx := context.Background()
	if _, err := cl.ListPage(ctx, "tasks", nil, 1, 1); err == nil || !strings.Contains(err.Error(), "tasks") {
		t.Fatalf("unknown endpoint: %v", err)
	}
	if _, err := cl.Object(ctx, stream.EndpointBrands, "1"); err == nil {
		t.Fatal("Object of a list endpoint: no error")
	}
	if st := s.Stats(); st.Requests != 0 {
		t.Fatalf("%d requests sent for unknown endpoints", st.Requests)
	}
	bad := sandboxClient(t, s, func(o *Options) { o.APIKey = "sandbox-revoked-key" })
	if _, err := bad.ListPage(ctx, stream.EndpointBrands, nil, 1, 1); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("revoked key: %v, want ErrUnauthorized", err)
	}
}

// TestPathsByEndpoint: every declared endpoint is asked at its declared
// path unless Paths names it; a path for an endpoint no stream declares is
// refused; ListPage's lookup knows only the lists and Object's only the
// details.
func TestPathsByEndpoint(t *testing.T) {
	override := map[stream.Kind]string{}
	paths := Paths{}
	for _, s := range stream.All() {
		for _, ep := range s.Endpoints {
			if _, ok := override[ep.Kind()]; !ok {
				override[ep.Kind()] = ep.Name
				paths[ep.Name] = "/x/" + ep.Name
			}
		}
	}
	c, err := New(Options{BaseURL: "http://127.0.0.1:1", CommsURL: "http://127.0.0.1:2", Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stream.All() {
		for _, ep := range s.Endpoints {
			want := ep.Path
			if p, ok := paths[ep.Name]; ok {
				want = p
			}
			if got := c.endpoints[ep.Name].Path; got != want {
				t.Errorf("endpoint %s asked at %q, want %q", ep.Name, got, want)
			}
			_, list := c.endpoint(ep.Name, stream.KindList, stream.KindChild)
			_, object := c.endpoint(ep.Name, stream.KindDetail)
			if list != (ep.Kind() == stream.KindList || ep.Kind() == stream.KindChild) || object != (ep.Kind() == stream.KindDetail) {
				t.Errorf("endpoint %s (%s): list %v, object %v", ep.Name, ep.Kind(), list, object)
			}
		}
	}
	if _, err := New(Options{BaseURL: "http://127.0.0.1:1", Paths: Paths{"no_such_endpoint": "/x"}}); !errors.Is(err, ErrNotConfigured) ||
		!strings.Contains(err.Error(), "no_such_endpoint") {
		t.Errorf("a path for an undeclared endpoint: %v", err)
	}
}
