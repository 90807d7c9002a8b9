package transform

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/stream"
)

func ptrTo[T any](v T) *T { return &v }

// listHashOf transforms one raw list record of endpoint and returns its list
// hash.
func listHashOf(t *testing.T, streamName, endpoint, table, raw string) ListHash {
	t.Helper()
	s, ok := stream.Lookup(streamName)
	if !ok {
		t.Fatalf("no stream %s", streamName)
	}
	b := Records(Input{Stream: s, Endpoint: endpoint, Snapshot: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)},
		[]stream.Record{{Raw: json.RawMessage(raw)}})
	hs := ListHashes(&b, table)
	if len(hs) != 1 || len(b.Rejects) != 0 {
		t.Fatalf("%s: hashes %v, rejects %v", raw, hs, b.Rejects)
	}
	return hs[0]
}

// TestBrandListHash: aggregates recomputed by finance leave the hash alone;
// every detail-owned field changes it; the hash is the typed records' (so
// stored hashes stay valid), whatever the shape the fields came in.
func TestBrandListHash(t *testing.T) {
	t.Parallel()
	const base = `{"brand_info":{"id":"7","name":"Alfa SRL","status":"Activ","date_created":"2024-03-01","account_manager":"Ana Pop","projects_count":3,"financial_summary":{"total_budget":"100.00","currency":"RON"}}}`
	hash := func(raw string) ListHash { return listHashOf(t, "brands", stream.EndpointBrands, "brands", raw) }
	h := hash(base)
	want := listHash(ptrTo("brand"), ptrTo("7"), ptrTo("Alfa SRL"), ptrTo("Activ"), ptrTo("2024-03-01T00:00:00Z"), ptrTo("Ana Pop"))
	if h.ID != "7" || h.Hash != want {
		t.Fatalf("hash %+v, want id 7 and the typed records' hash %s", h, want)
	}
	same := map[string]string{
		"projects_count":       strings.Replace(base, `"projects_count":3`, `"projects_count":4`, 1),
		"no projects_count":    strings.Replace(base, `"projects_count":3,`, ``, 1),
		"financial_summary":    strings.Replace(base, `"total_budget":"100.00","currency":"RON"`, `"total_budget":"250.10","invoiced":"1","currency":"EUR"`, 1),
		"id as a number":       strings.Replace(base, `"id":"7"`, `"id":7`, 1),
		"unwrapped":            strings.TrimSuffix(strings.TrimPrefix(base, `{"brand_info":`), `}`),
		"PHP false aggregates": strings.Replace(base, `"projects_count":3`, `"projects_count":false`, 1),
	}
	for name, raw := range same {
		if got := hash(raw); got != h {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := map[string]string{
		"id":              strings.Replace(base, `"id":"7"`, `"id":"8"`, 1),
		"name":            strings.Replace(base, `"Alfa SRL"`, `"Alfa SA"`, 1),
		"status":          strings.Replace(base, `"Activ"`, `"Inactiv"`, 1),
		"date_created":    strings.Replace(base, `"2024-03-01"`, `"2024-03-02"`, 1),
		"no date_created": strings.Replace(base, `"date_created":"2024-03-01",`, ``, 1),
		"account_manager": strings.Replace(base, `"Ana Pop"`, `"Ion Pop"`, 1),
		// Values are delimited: moving a character between fields counts.
		"shifted": strings.Replace(base, `"name":"Alfa SRL","status":"Activ"`, `"name":"Alfa SRLA","status":"ctiv"`, 1),
	}
	for name, raw := range differ {
		if got := hash(raw); got.Hash == h.Hash {
			t.Errorf("%s left the hash unchanged", name)
		}
	}
}

func TestProjectListHash(t *testing.T) {
	t.Parallel()
	const base = `{"project_info":{"id":"11","brand_id":"7","name":"Campanie","status":"in lucru","start_date":"2026-01-01","deadline":"2026-01-20","updated_at":"2026-01-05T10:00:00Z","budget":{"amount":"500.00","currency":"RON"}}}`
	hash := func(raw string) ListHash { return listHashOf(t, "projects", stream.EndpointProjects, "projects", raw) }
	h := hash(base)
	want := listHash(ptrTo("project"), ptrTo("11"), ptrTo("7"), ptrTo("Campanie"), ptrTo("in lucru"),
		ptrTo("2026-01-01T00:00:00Z"), ptrTo("2026-01-20T00:00:00Z"), nil, ptrTo("2026-01-05T10:00:00Z"))
	if h.ID != "11" || h.Hash != want {
		t.Fatalf("hash %+v, want id 11 and the typed records' hash %s", h, want)
	}
	same := map[string]string{
		"budget amount": strings.Replace(base, `"500.00"`, `"750.00"`, 1),
		"no budget":     strings.Replace(base, `,"budget":{"amount":"500.00","currency":"RON"}`, ``, 1),
		"same instant":  strings.Replace(base, `"2026-01-05T10:00:00Z"`, `"2026-01-05T12:00:00+02:00"`, 1),
	}
	for name, raw := range same {
		if got := hash(raw); got != h {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := map[string]string{
		"id":            strings.Replace(base, `"id":"11"`, `"id":"12"`, 1),
		"brand_id":      strings.Replace(base, `"brand_id":"7"`, `"brand_id":"8"`, 1),
		"name":          strings.Replace(base, `"Campanie"`, `"Campanie 2"`, 1),
		"status":        strings.Replace(base, `"in lucru"`, `"finalizat"`, 1),
		"start_date":    strings.Replace(base, `"2026-01-01"`, `"2026-01-02"`, 1),
		"deadline":      strings.Replace(base, `"2026-01-20"`, `"2026-01-21"`, 1),
		"closed_at":     strings.Replace(base, `"updated_at"`, `"closed_at":"2026-01-22T00:00:00Z","updated_at"`, 1),
		"updated_at":    strings.Replace(base, `"2026-01-05T10:00:00Z"`, `"2026-01-05T10:00:01Z"`, 1),
		"no updated_at": strings.Replace(base, `,"updated_at":"2026-01-05T10:00:00Z"`, ``, 1),
	}
	for name, raw := range differ {
		if got := hash(raw); got.Hash == h.Hash {
			t.Errorf("%s left the hash unchanged", name)
		}
	}
}
