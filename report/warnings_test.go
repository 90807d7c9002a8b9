package report

import (
	"encoding/json"
	"testing"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/inventory"
)

// TestStatusShowsWarnings: status prints the last run's coverage warnings,
// one line each naming stream, kind and the message (column, candidates,
// the AGENCY_FIELD_MAP hint), "none" for a run without, nothing before any
// run; status --json carries them under "warnings".
func TestStatusShowsWarnings(t *testing.T) {
	t.Parallel()
	name := inventory.Warning{Kind: inventory.KindNullColumn, Stream: "projects", Column: "projects.name", Field: "name",
		Records: 600, Count: 600, Share: 1, Candidates: []string{"title"},
		Message: "projects.name is empty (NULL) in 600 of 600 projects records; its field name was present in 0 of the 12 records observed; unmapped fields that look like it: title (map one with AGENCY_FIELD_MAP=projects.name=title)"}
	rejected := inventory.Warning{Kind: inventory.KindRejectedStream, Stream: "invoices", Records: 420, Count: 420, Share: 1,
		Reason: "invoice without amount", Message: "420 of 420 invoices records were rejected, most (420) because: invoice without amount — the service's shapes probably differ from the mapping (run agencysync check)"}
	for _, c := range []struct {
		name      string
		warnings  *engine.RunWarnings
		want, not []string
	}{
		{"renamed fields", &engine.RunWarnings{RunID: "0f3c2a9e-1111-2222-3333-444455556666", Warnings: []inventory.Warning{rejected, name}},
			[]string{"Warnings of the last run (0f3c2a9e-1111-2222-3333-444455556666): 2", "projects  null_column",
				"AGENCY_FIELD_MAP=projects.name=title", "invoices  rejected_stream", "because: invoice without amount"}, nil},
		{"a clean run", &engine.RunWarnings{RunID: "5a1b", Warnings: []inventory.Warning{}},
			[]string{"Warnings of the last run (5a1b): none"}, []string{"null_column"}},
		{"no run yet", nil, nil, []string{"Warnings of the last run"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &engine.StatusReport{Schema: "agency", QuotaDay: "2026-11-24", Warnings: c.warnings}
			assertStatus(t, rep, c.want, c.not)
			js, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Warnings *struct {
					RunID    string              `json:"run_id"`
					Warnings []inventory.Warning `json:"warnings"`
				} `json:"warnings"`
			}
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			if (back.Warnings == nil) != (c.warnings == nil) ||
				c.warnings != nil && len(back.Warnings.Warnings) != len(c.warnings.Warnings) {
				t.Errorf("status --json warnings = %s", js)
			}
		})
	}
}
