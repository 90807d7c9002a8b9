package transform

import (
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/stream"
)

// TestChildValueErrorsNameTheirElement: a child value that does not fit its
// column rejects the whole record, and the reason names the element of the
// array (or object keyed by id) it came from, by noun and position; a child
// read from an object of the record itself has no element to name.
func TestChildValueErrorsNameTheirElement(t *testing.T) {
	t.Parallel()
	snapshot := time.Date(2024, 11, 5, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, stream, endpoint, raw string
		want                        string
	}{
		{"object keyed by id", "projects", stream.EndpointProject,
			strings.Replace(project("14", ""), `"deliverables":{`, `"deliverables":{"d9":{"name":"Afiș","due_date":"mâine"},`, 1),
			"deliverable 0: value does not fit its column: due_date"},
		{"array", "projects", stream.EndpointProject,
			project("15", `{"user_id":{"id":3},"full_name":"Studio Foto"},`),
			"team member 0: value does not fit its column: user_id"},
		{"object of the record", "brands", stream.EndpointBrands,
			`{"brand_info":{"id":"42","name":"Cofetăria Dulce Tradiție"},"financial_summary":{"total_budget":"mult","currency":"RON"}}`,
			"value does not fit its column: financial_summary.total_budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := run(t, declared(t, c.stream), c.endpoint, nil, snapshot, c.raw)
			if out.Len(c.stream) != 0 || len(out.Rejects) != 1 {
				t.Fatalf("%d %s, %d rejects: want the record rejected", out.Len(c.stream), c.stream, len(out.Rejects))
			}
			if got := out.Rejects[0].Error; !strings.HasPrefix(got, c.want) {
				t.Errorf("reject reason %q, want it to start %q", got, c.want)
			}
		})
	}
}
