package sandbox

import (
	"bytes"
	"testing"
)

// fingerprint collects the answers to a fixed set of requests.
func fingerprint(t *testing.T, s *Server) [][]byte {
	t.Helper()
	var out [][]byte
	for _, path := range []string{"/v1/brands?per_page=1000", "/v1/projects?per_page=1000",
		pathf("/v1/brands/%d", s.data.brands[3].id), pathf("/v1/brands/%d/contacts", s.data.brands[3].id),
		pathf("/v1/projects/%d", s.data.projects[7].id), "/v1/finance/budgets?per_page=1000",
		"/v1/finance/invoices?per_page=1000", "/v1/finance/collections?per_page=1000",
		"/v1/finance/payments?per_page=1000", "/v1/finance/profitability?per_page=1000", "/v1/finance/summary"} {
		out = append(out, get(t, s, path).body)
	}
	for _, body := range []string{
		`{"user_id":` + allUsers(s.opts.Users) + `,"per_page":1000,"page":2,"with_message":"1"}`,
		`{"user_id":[4,9],"per_page":1000,"date_start":"2026-08-01","date_end":"2026-10-15"}`,
	} {
		out = append(out, commsPost(t, s, body).body)
	}
	var truth bytes.Buffer
	if err := s.Truth(&truth); err != nil {
		t.Fatal(err)
	}
	return append(out, truth.Bytes())
}

func TestDeterminism(t *testing.T) {
	mutate := func(o *Options) { o.BadRecordRate = 0.05; o.Variants = []string{VariantOutsiderRecipients} }
	a := fingerprint(t, startSmall(t, mutate))
	b := fingerprint(t, startSmall(t, mutate))
	for k := range a {
		if !bytes.Equal(a[k], b[k]) {
			t.Fatalf("answer %d differs between equal sandboxes", k)
		}
	}
	c := fingerprint(t, startSmall(t, func(o *Options) { mutate(o); o.Seed = 2 }))
	differ := 0
	for k := range a {
		if !bytes.Equal(a[k], c[k]) {
			differ++
		}
	}
	if differ < len(a)-1 {
		t.Fatalf("only %d of %d answers change with the seed", differ, len(a))
	}
}
