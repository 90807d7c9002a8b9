package transform

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// detailWithBase transforms one detail record of endpoint with base, the
// entity's stored list record, as the engine's details task hands it over.
func detailWithBase(t *testing.T, s *stream.Stream, endpoint, detail, base string) Batch {
	t.Helper()
	rec := stream.Record{Raw: json.RawMessage(detail)}
	if base != "" {
		rec.Base = json.RawMessage(base)
	}
	return Records(Input{Stream: s, Endpoint: endpoint, Snapshot: date("2024-11-05")}, []stream.Record{rec})
}

// A brand's detail that leaves out fields its list served (name,
// account_manager) reads them from the brand's stored list record: its row
// does not write NULL over the listed values. What the detail carries wins,
// an explicit null or false included; nested paths fall back member by
// member; raw and detail_raw stay the records as received.
func TestBrandDetailReadsAbsentFieldsFromItsListRecord(t *testing.T) {
	brands := declared(t, "brands")
	list := `{"brand_info":{"id":"42","name":"Cofetăria Dulce Tradiție","status":"active","date_created":"2021-03-15",
"account_manager":"Mădălina Georgescu ","projects_count":4,
"financial_summary":{"total_budget":"125000.50","invoiced":"80000","collected":"79999.99","currency":"RON"}}}`
	detail := `{"brand_info":{"id":"42","status":"inactive","date_created":"2021-03-15","projects_count":5,
"financial_summary":{"total_budget":"130000","currency":"RON"}},"general_info":{"website":"https://dulcetraditie.ro"},"metadata":{}}`

	b := rowsOf(detailWithBase(t, brands, stream.EndpointBrand, detail, list), "brands")
	if len(b) != 1 {
		t.Fatalf("brands = %+v", b)
	}
	got := b[0]
	if got["name"] != "Cofetăria Dulce Tradiție" || got["account_manager"] != "Mădălina Georgescu" {
		t.Errorf("name %v, account_manager %v: want the list record's values for the fields the detail leaves out", got["name"], got["account_manager"])
	}
	if got["status"] != "inactive" || got["projects_count"] != int64(5) || got["total_budget"] != "130000" {
		t.Errorf("status %v, projects_count %v, total_budget %v: want the detail's values", got["status"], got["projects_count"], got["total_budget"])
	}
	if got["invoiced"] != "80000" || got["collected"] != "79999.99" {
		t.Errorf("invoiced %v, collected %v: want the list's, absent from the detail's financial_summary", got["invoiced"], got["collected"])
	}
	if got["raw"] != nil || string(got["detail_raw"].(json.RawMessage)) != detail {
		t.Errorf("raw %s, detail_raw %s: want the detail as received in detail_raw only", got["raw"], got["detail_raw"])
	}

	// Explicit null and false are the detail's: NULL, no fallback; so is a
	// financial_summary that is null.
	explicit := strings.Replace(detail, `"id":"42",`, `"id":"42","name":null,"account_manager":false,`, 1)
	explicit = strings.Replace(explicit, `"financial_summary":{"total_budget":"130000","currency":"RON"}`, `"financial_summary":null`, 1)
	e := rowsOf(detailWithBase(t, brands, stream.EndpointBrand, explicit, list), "brands")
	if len(e) != 1 || e[0]["name"] != nil || e[0]["account_manager"] != nil || e[0]["invoiced"] != nil || e[0]["currency"] != nil {
		t.Errorf("explicit nulls = %+v, want NULL name, account_manager and financial summary", e)
	}

	// Without a base (a brand not stored yet) the detail is read alone.
	n := rowsOf(detailWithBase(t, brands, stream.EndpointBrand, detail, ""), "brands")
	if len(n) != 1 || n[0]["name"] != nil || n[0]["status"] != "inactive" {
		t.Errorf("without a base = %+v", n)
	}
}

// A project detail's child tables are the detail's alone: a replaced child
// table whose array the detail leaves out names no parent (the stored
// children stay), while an empty one replaces them with none; history is
// not read from the list record either.
func TestProjectDetailChildrenIgnoreTheListRecord(t *testing.T) {
	projects := declared(t, "projects")
	list := `{"id":"7","brand_id":"42","name":"Campanie","status":"in_progress","start_date":"2024-10-01","deadline":"2024-12-20",
"updated_at":"2024-11-01T10:00:00Z","budget":{"amount":"30000.00","currency":"RON"},"team":[{"user_id":"3","role":"x"}],"history":[{"at":"2024-10-01T09:00:00Z","field":"status"}]}`
	detail := `{"id":"7","brand_id":"42","status":"in_progress","start_date":"2024-10-01","updated_at":"2024-11-01T10:00:00Z",
"budget":{"amount":"30000.00","currency":"RON"},"deliverables":[]}`
	out := detailWithBase(t, projects, stream.EndpointProject, detail, list)
	p := rowsOf(out, "projects")
	if len(p) != 1 || p[0]["name"] != "Campanie" || p[0]["deadline"] != date("2024-12-20") {
		t.Fatalf("projects = %+v, want the listed name and deadline", p)
	}
	if tr := out.Rows("project_team_members"); tr != nil && (len(tr.Rows) > 0 || len(tr.Parents) > 0) {
		t.Errorf("team = %+v, parents %v: the detail has no team key, so it must name no parent", tr.Rows, tr.Parents)
	}
	if tr := out.Rows("project_deliverables"); tr == nil || len(tr.Rows) != 0 || len(tr.Parents) != 1 || tr.Parents[0] != "7" {
		t.Errorf("deliverables = %+v: an empty array replaces the project's deliverables with none", tr)
	}
	if out.Len("project_history") != 0 {
		t.Errorf("history read from the list record: %+v", out.Rows("project_history").Rows)
	}
	// A team that is null is the detail's word too: replaced with none.
	nullTeam := strings.Replace(detail, `"deliverables":[]`, `"deliverables":[],"team":null`, 1)
	nb := detailWithBase(t, projects, stream.EndpointProject, nullTeam, list)
	if tr := nb.Rows("project_team_members"); tr == nil || len(tr.Parents) != 1 {
		t.Errorf("null team = %+v, want the project named as replaced", tr)
	}
}
