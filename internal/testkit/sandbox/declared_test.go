package sandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// TestDeclaredLists: a declared list and a list asked per parent are
// served at their paths from the records given, paged with the canonical
// envelope and counted under their names; an unknown parent is 404, a
// foreign key 403, and a declaration replaced serves its new records.
func TestDeclaredLists(t *testing.T) {
	t.Parallel()
	s := startSmall(t, func(o *Options) { o.ForeignKey = "other-agency" })
	recs := func(prefix string, n int) []DeclaredRecord {
		out := make([]DeclaredRecord, n)
		for i := range out {
			id := fmt.Sprintf("%s%d", prefix, i+1)
			out[i] = DeclaredRecord{ID: id, JSON: json.RawMessage(`{"id":"` + id + `"}`)}
		}
		return out
	}
	s.Declare(DeclaredList{Name: "things", Path: "/v1/things", Records: map[string][]DeclaredRecord{"": recs("t", 5)}})
	s.Declare(DeclaredList{Name: "thing_parts", Path: "/v1/things/{id}/parts",
		Records: map[string][]DeclaredRecord{"t1": recs("p", 3), "t2": nil}})

	page := get(t, s, "/v1/things?page=2&per_page=2").json(t)
	data, _ := page["data"].([]any)
	if len(data) != 2 || data[0].(map[string]any)["id"] != "t3" || page["total"] != float64(5) || page["last_page"] != float64(3) {
		t.Fatalf("page 2 of things: %v", page)
	}
	if parts := get(t, s, "/v1/things/t1/parts").json(t); parts["total"] != float64(3) {
		t.Fatalf("parts of t1: %v", parts)
	}
	if empty := get(t, s, "/v1/things/t2/parts").json(t); empty["total"] != float64(0) {
		t.Fatalf("parts of t2: %v", empty)
	}
	if r := get(t, s, "/v1/things/t9/parts"); r.status != http.StatusNotFound {
		t.Fatalf("parts of an unknown thing: %d", r.status)
	}
	if r := apiGet(t, s, "/v1/things", "other-agency"); r.status != http.StatusForbidden {
		t.Fatalf("a foreign key: %d", r.status)
	}
	s.Declare(DeclaredList{Name: "things", Path: "/v1/things", Records: map[string][]DeclaredRecord{"": recs("t", 1)}})
	if one := get(t, s, "/v1/things").json(t); one["total"] != float64(1) {
		t.Fatalf("after the records changed: %v", one)
	}
	if st := s.Stats(); st.ByEndpoint["things"] != 3 || st.ByEndpoint["thing_parts"] != 3 {
		t.Fatalf("requests by endpoint: %v", st.ByEndpoint)
	}
}
