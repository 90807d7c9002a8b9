package transform

import (
	"encoding/json"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// A rebuild re-derives rows from what the warehouse stored — the raw list
// record, the raw detail, the key columns — with the current mapping, as
// a sync that received those records would have.
func TestRebuildFromStoredRaw(t *testing.T) {
	byName := applied(t, stream.FieldMap{"projects.name": "title", "projects.status": "state"})
	day := date("2024-11-05")

	list := `{"id":"7","title":"Campanie","state":"activ"}`
	detail := `{"id":"7","title":"Campanie (detaliu)","state":"activ","team":[{"user_id":"12","role":"Lead"}]}`
	b, err := Rebuild(byName["projects"], "projects", []Stored{
		{Key: map[string]string{"project_id": "7"}, Raw: map[string]json.RawMessage{"raw": json.RawMessage(list), "detail_raw": json.RawMessage(detail)}},
		{Key: map[string]string{"project_id": "8"}, Raw: map[string]json.RawMessage{"raw": json.RawMessage(`{"id":"8","title":"Doar listă"}`)}},
	}, day)
	if err != nil {
		t.Fatal(err)
	}
	ps := rowsOf(b, "projects")
	if len(ps) != 3 {
		t.Fatalf("projects = %+v", ps)
	}
	// The list row, then the detail row (load keeps the list's raw, the
	// detail's values): the order a sync writes them.
	if ps[0]["name"] != "Campanie" || string(ps[0]["raw"].(json.RawMessage)) != list || ps[0]["detail_raw"] != nil ||
		ps[2]["name"] != "Campanie (detaliu)" || ps[2]["status"] != "activ" || ps[2]["raw"] != nil {
		t.Errorf("projects = %+v", ps)
	}
	if ps[1]["project_id"] != "8" || ps[1]["name"] != "Doar listă" {
		t.Errorf("list-only project = %+v", ps[1])
	}
	if team := rowsOf(b, "project_team_members"); len(team) != 1 || team[0]["role"] != "Lead" ||
		len(b.Rows("project_team_members").Parents) != 1 {
		t.Errorf("team = %+v", team)
	}

	// Rows keyed outside the record: e-mails by record id, contacts by
	// brand, profitability by level.
	emails, err := Rebuild(byName["communications"], "emails", []Stored{{Key: map[string]string{"record_id": "2701"},
		Raw: map[string]json.RawMessage{"raw": json.RawMessage(`{"email":{"subject":"s","email_at":"2024-11-04T08:00:00Z"},"users":{"from":[{"email":"A@b.ro"}]}}`)}}}, day)
	if err != nil || emails.Len("emails") != 1 || emails.Column("emails", "record_id")[0] != int64(2701) || emails.Len("users") != 1 {
		t.Errorf("emails = %+v, %v", emails.Tables, err)
	}
	contacts, err := Rebuild(byName["brands"], "brand_contacts", []Stored{{Key: map[string]string{"brand_id": "42", "contact_id": "c1"},
		Raw: map[string]json.RawMessage{"raw": json.RawMessage(`{"id":"c1","full_name":"Ilinca "}`)}}}, day)
	if c := rowsOf(contacts, "brand_contacts"); err != nil || len(c) != 1 || c[0]["brand_id"] != "42" || c[0]["full_name"] != "Ilinca" {
		t.Errorf("contacts = %+v, %v", c, err)
	}
	prof, err := Rebuild(byName["finance"], "profitability", []Stored{{Key: map[string]string{"level": "brand", "entity_id": "42", "period": "2024-11-01"},
		Raw: map[string]json.RawMessage{"raw": json.RawMessage(`{"entity_id":"42","period":"2024-11","revenue":"1"}`)}}}, day)
	if p := rowsOf(prof, "profitability"); err != nil || len(p) != 1 || p[0]["level"] != "brand" {
		t.Errorf("profitability = %+v, %v", p, err)
	}
	if _, err := Rebuild(byName["projects"], "project_team_members", nil, day); err == nil {
		t.Error("a child table rebuilt on its own")
	}
	if _, err := Rebuild(byName["projects"], "invoices", nil, day); err == nil {
		t.Error("a table of another stream")
	}
}

// A rebuild reads the stored detail with the stored list record as its
// base, as the sync did: a field the detail left out keeps the list's
// value, and a replaced child table whose array the detail left out names
// no parent.
func TestRebuildDetailReadsAbsentFieldsFromRaw(t *testing.T) {
	projects := declared(t, "projects")
	list := `{"id":"7","name":"Campanie","status":"in_progress","deadline":"2024-12-20"}`
	detail := `{"id":"7","status":"finalizat","deliverables":[{"id":"d1","name":"Spot"}]}`
	b, err := Rebuild(projects, "projects", []Stored{{Key: map[string]string{"project_id": "7"},
		Raw: map[string]json.RawMessage{"raw": json.RawMessage(list), "detail_raw": json.RawMessage(detail)}}}, date("2024-11-05"))
	if err != nil {
		t.Fatal(err)
	}
	ps := rowsOf(b, "projects")
	if len(ps) != 2 || ps[1]["name"] != "Campanie" || ps[1]["deadline"] != date("2024-12-20") || ps[1]["status"] != "finalizat" {
		t.Errorf("projects = %+v, want the detail row with the listed name and deadline", ps)
	}
	if tr := b.Rows("project_team_members"); tr != nil && len(tr.Parents) > 0 {
		t.Errorf("team parents = %v: the detail has no team key", tr.Parents)
	}
	if tr := b.Rows("project_deliverables"); tr == nil || len(tr.Rows) != 1 || len(tr.Parents) != 1 {
		t.Errorf("deliverables = %+v", tr)
	}
}
