package transform

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

func declared(t testing.TB, name string) *stream.Stream {
	t.Helper()
	s, ok := stream.Lookup(name)
	if !ok {
		t.Fatalf("no stream %s", name)
	}
	return s
}

// applied returns every stream by name as it reads under field map m
// (stream.Apply, which refuses a map Validate refuses).
func applied(t testing.TB, m stream.FieldMap) map[string]*stream.Stream {
	t.Helper()
	streams, err := stream.Apply(m)
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]*stream.Stream, len(streams))
	for _, s := range streams {
		byName[s.Name] = s
	}
	return byName
}

// run transforms raw records (key "" unless given as "key|json").
func run(t testing.TB, s *stream.Stream, endpoint string, params map[string]string, snapshot time.Time, raws ...string) Batch {
	t.Helper()
	recs := make([]stream.Record, len(raws))
	for i, r := range raws {
		if k, body, ok := strings.Cut(r, "|"); ok && !strings.HasPrefix(r, "{") {
			recs[i] = stream.Record{Key: k, Raw: json.RawMessage(body)}
			continue
		}
		recs[i] = stream.Record{Raw: json.RawMessage(r)}
	}
	return Records(Input{Stream: s, Endpoint: endpoint, Params: params, Snapshot: snapshot}, recs)
}

// rowsOf returns a table's rows as column → value maps.
func rowsOf(b Batch, table string) []map[string]any {
	tr := b.Rows(table)
	if tr == nil {
		return nil
	}
	out := make([]map[string]any, len(tr.Rows))
	for i, r := range tr.Rows {
		m := map[string]any{}
		for j, c := range tr.Table.Columns {
			m[c.Name] = r[j]
		}
		out[i] = m
	}
	return out
}

func date(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

func instant(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

const brand42 = `{"brand_info":{"id":"42","name":"Cofetăria Dulce Tradiție","status":"active","date_created":"2021-03-15",
"account_manager":"Mădălina Georgescu ","projects_count":4,
"financial_summary":{"total_budget":125000.50,"invoiced":"80000","collected":79999.99,"currency":"RON"}}}`

func TestBrands(t *testing.T) {
	snapshot := time.Date(2024, 11, 5, 23, 30, 0, 0, time.FixedZone("EET", 2*3600))
	noSummary := `{"brand_info":{"id":43,"name":"Vinăria Dealul Mare","financial_summary":false,"projects_count":null,"date_created":"0000-00-00"}}`
	badDecimal := `{"brand_info":{"id":"44","financial_summary":{"invoiced":"12,5"}}}`
	negative := `{"brand_info":{"id":"45","projects_count":-1}}`
	missing := `{"brand_info":{"name":"Fără id"}}`
	newer := strings.Replace(brand42, "Cofetăria Dulce Tradiție", "Cofetăria Dulce Tradiție SRL", 1)

	out := run(t, declared(t, "brands"), stream.EndpointBrands, nil, snapshot, brand42, noSummary, badDecimal, negative, missing, newer)
	brands := rowsOf(out, "brands")
	if len(brands) != 2 {
		t.Fatalf("brands = %+v", brands)
	}
	b := brands[0]
	if b["brand_id"] != "42" || b["name"] != "Cofetăria Dulce Tradiție SRL" || b["status"] != "active" ||
		b["account_manager"] != "Mădălina Georgescu" || b["projects_count"] != int64(4) || b["date_created"] != date("2021-03-15") {
		t.Errorf("brand = %+v (the repeated brand's last version wins)", b)
	}
	if b["total_budget"] != "125000.50" || b["invoiced"] != "80000" || b["collected"] != "79999.99" || b["currency"] != "RON" {
		t.Errorf("financial_summary not flattened exactly: %+v", b)
	}
	if b["general_info"] != nil || b["metadata"] != nil || b["detail_raw"] != nil {
		t.Errorf("a list brand must leave the detail fields NULL (kept as stored)")
	}
	if string(b["raw"].(json.RawMessage)) != newer {
		t.Errorf("raw = %s, want the record as received", b["raw"])
	}
	if b2 := brands[1]; b2["brand_id"] != "43" || b2["total_budget"] != nil || b2["projects_count"] != nil || b2["date_created"] != nil {
		t.Errorf("brand without summary = %+v", b2)
	}

	snaps := rowsOf(out, "brand_financial_snapshots")
	if len(snaps) != 1 {
		t.Fatalf("snapshots = %+v, want one (brand 42 only)", snaps)
	}
	if s := snaps[0]; s["brand_id"] != "42" || s["snapshot_date"] != date("2024-11-05") || s["invoiced"] != "80000" {
		t.Errorf("snapshot = %+v, want the calendar day 2024-11-05 as given", s)
	}

	wantErr := map[string]string{"44": "not a decimal", "45": "negative projects_count"}
	if len(out.Rejects) != 3 {
		t.Fatalf("rejects = %+v", out.Rejects)
	}
	for _, r := range out.Rejects {
		if r.Stream != stream.RejectBrands {
			t.Errorf("stream = %q", r.Stream)
		}
		want, ok := wantErr[r.Key]
		if ok && !strings.Contains(r.Error, want) {
			t.Errorf("reject %s: error %q, want %q", r.Key, r.Error, want)
		}
		if !ok && (!strings.HasPrefix(r.Key, "sha256:") || !strings.Contains(r.Error, "without id")) {
			t.Errorf("reject = %+v, want the brand without id keyed by hash", r)
		}
	}
}

func TestBrandDetails(t *testing.T) {
	detail := `{"brand_info":` + brand42[len(`{"brand_info":`):len(brand42)-1] +
		`,"general_info":{"website":"https://dulcetraditie.ro","cui":"RO123"},"metadata":{"tags":["retail"]}}`
	out := run(t, declared(t, "brands"), stream.EndpointBrand, nil, date("2024-11-05"), detail)
	brands := rowsOf(out, "brands")
	if len(brands) != 1 || out.Len("brand_financial_snapshots") != 1 || len(out.Rejects) != 0 {
		t.Fatalf("out = %+v %+v", brands, out.Rejects)
	}
	b := brands[0]
	if string(b["general_info"].(json.RawMessage)) != `{"website":"https://dulcetraditie.ro","cui":"RO123"}` ||
		string(b["metadata"].(json.RawMessage)) != `{"tags":["retail"]}` || b["raw"] != nil ||
		string(b["detail_raw"].(json.RawMessage)) != detail || b["name"] != "Cofetăria Dulce Tradiție" {
		t.Errorf("brand = %+v (the detail goes to detail_raw, the list's raw is kept)", b)
	}
}

// A PHP encoder writes an empty object as []: general_info and metadata,
// which hold objects, store it as {} as they store the canonical {}; null
// and false are a missing value (NULL, the stored value kept). raw keeps
// the record as received.
func TestBrandDetailEmptyObjects(t *testing.T) {
	info := brand42[len(`{"brand_info":`) : len(brand42)-1]
	tests := []struct {
		name, generalInfo, metadata string
		wantGeneralInfo, wantMeta   any // string: the stored JSON; nil: NULL
	}{
		{"canonical {}", `{}`, `{}`, `{}`, `{}`},
		{"PHP []", `[]`, `[]`, `{}`, `{}`},
		{"PHP [] pretty-printed", "[\n    ]", `[ ]`, `{}`, `{}`},
		{"one [] beside an object", `{"website":"https://dulcetraditie.ro","cui":"RO123"}`, `[]`,
			`{"website":"https://dulcetraditie.ro","cui":"RO123"}`, `{}`},
		{"null and false are missing", `null`, `false`, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detail := `{"brand_info":` + info + `,"general_info":` + tt.generalInfo + `,"metadata":` + tt.metadata + `}`
			out := run(t, declared(t, "brands"), stream.EndpointBrand, nil, date("2024-11-05"), detail)
			brands := rowsOf(out, "brands")
			if len(brands) != 1 || len(out.Rejects) != 0 {
				t.Fatalf("out = %+v %+v", brands, out.Rejects)
			}
			b := brands[0]
			for col, want := range map[string]any{"general_info": tt.wantGeneralInfo, "metadata": tt.wantMeta} {
				got, _ := b[col].(json.RawMessage)
				if want == nil && b[col] != nil || want != nil && string(got) != want {
					t.Errorf("%s = %s, want %v", col, got, want)
				}
			}
			if string(b["detail_raw"].(json.RawMessage)) != detail {
				t.Errorf("detail_raw = %s, want the record as received", b["detail_raw"])
			}
		})
	}
}

// A brand's date_created served as a timestamp at midnight UTC (a Laravel
// date cast, a SQL datetime) is its date; any other time of day rejects the
// brand, saying the value is a timestamp.
func TestBrandDateCreatedForms(t *testing.T) {
	tests := []struct {
		name, value string
		want        time.Time // zero: rejected
		reason      string
	}{
		{"date", `"2021-03-15"`, date("2021-03-15"), ""},
		{"Laravel date cast", `"2021-03-15T00:00:00.000000Z"`, date("2021-03-15"), ""},
		{"SQL datetime at midnight", `"2021-03-15 00:00:00"`, date("2021-03-15"), ""},
		{"RFC 3339 at midnight UTC", `"2021-03-15T00:00:00+00:00"`, date("2021-03-15"), ""},
		{"a time of day", `"2021-03-15T09:30:00.000000Z"`, time.Time{}, `date_created: want a date YYYY-MM-DD, got the timestamp "2021-03-15T09:30:00.000000Z"`},
		{"a local midnight in UTC", `"2021-03-14T22:00:00.000000Z"`, time.Time{}, `got the timestamp "2021-03-14T22:00:00.000000Z"`},
		{"midnight of another zone", `"2021-03-15T00:00:00+02:00"`, time.Time{}, `got the timestamp "2021-03-15T00:00:00+02:00"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := strings.Replace(brand42, `"date_created":"2021-03-15"`, `"date_created":`+tt.value, 1)
			out := run(t, declared(t, "brands"), stream.EndpointBrands, nil, date("2024-11-05"), rec)
			if tt.want.IsZero() {
				if len(out.Rejects) != 1 || out.Len("brands") != 0 || !strings.Contains(out.Rejects[0].Error, tt.reason) ||
					out.Rejects[0].Key != "42" {
					var errs []string
					for _, r := range out.Rejects {
						errs = append(errs, r.Key+": "+r.Error)
					}
					t.Fatalf("brands = %d, rejects = %q; want brand 42 rejected saying %s", out.Len("brands"), errs, tt.reason)
				}
				return
			}
			if len(out.Rejects) != 0 {
				t.Fatalf("rejected: %s", out.Rejects[0].Error)
			}
			b := rowsOf(out, "brands")[0]
			if got, _ := b["date_created"].(time.Time); !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Errorf("date_created = %v, want %v", b["date_created"], tt.want)
			}
			if string(b["raw"].(json.RawMessage)) != rec {
				t.Errorf("raw = %s, want the record as received", b["raw"])
			}
		})
	}
}

// TestMappedJSONBColumnsAreStorable: a jsonb column read from a field of a
// record that is not valid UTF-8 (a body in Latin-1 that declared no
// charset) or holds an escaped NUL is stored as jsonb takes it — invalid
// bytes and NULs as U+FFFD — like the record's raw; a text column too.
func TestMappedJSONBColumnsAreStorable(t *testing.T) {
	detail := `{"brand_info":` + brand42[len(`{"brand_info":`):len(brand42)-1] +
		",\"general_info\":{\"country\":\"Rom\xe2nia\",\"city\":\"Bucure\\u0000ti\"},\"metadata\":{\"note\":\"Caf\xe9\"}}"
	out := run(t, declared(t, "brands"), stream.EndpointBrand, nil, date("2024-11-05"), detail)
	brands := rowsOf(out, "brands")
	if len(brands) != 1 || len(out.Rejects) != 0 {
		t.Fatalf("out = %+v %+v", brands, out.Rejects)
	}
	for col, v := range brands[0] {
		var b []byte
		switch x := v.(type) {
		case json.RawMessage:
			if !json.Valid(x) {
				t.Errorf("%s: not JSON: %q", col, x)
			}
			b = x
		case string:
			b = []byte(x)
		}
		if !utf8.Valid(b) || strings.Contains(string(b), `\u0000`) || strings.IndexByte(string(b), 0) >= 0 {
			t.Errorf("%s: %q is not storable", col, b)
		}
	}
	if gi := string(brands[0]["general_info"].(json.RawMessage)); !strings.Contains(gi, "Rom\uFFFDnia") || !strings.Contains(gi, "Bucure\uFFFDti") {
		t.Errorf("general_info %s: want the invalid byte and the NUL as U+FFFD", gi)
	}
}

func TestContacts(t *testing.T) {
	list := []string{
		`{"id":"c1","first_name":"Ilinca","last_name":"Vasilescu","full_name":"Ilinca Vasilescu ","email":" Ilinca@Dulce.ro",
"phone":"","position":"Director marketing","is_primary":true}`,
		`{"contact_info":{"id":"c2","first_name":"Radu","last_name":null,"full_name":"Radu ","phone":false,"is_primary":"0"}}`,
		`{"first_name":"Fără"}`,
	}
	brands := declared(t, "brands")
	out := run(t, brands, stream.EndpointBrandContacts, map[string]string{"brand_id": "42"}, time.Time{}, list...)
	contacts := rowsOf(out, "brand_contacts")
	if len(contacts) != 2 || len(out.Rejects) != 1 {
		t.Fatalf("out = %+v, %+v", contacts, out.Rejects)
	}
	c := contacts[0]
	if c["brand_id"] != "42" || c["contact_id"] != "c1" || c["full_name"] != "Ilinca Vasilescu" || c["email"] != "Ilinca@Dulce.ro" ||
		c["phone"] != nil || c["is_primary"] != true || c["position"] != "Director marketing" {
		t.Errorf("contact = %+v", c)
	}
	if c2 := contacts[1]; c2["last_name"] != nil || c2["full_name"] != "Radu" || c2["phone"] != nil || c2["email"] != nil || c2["is_primary"] != false {
		t.Errorf("contact 2 = %+v", c2)
	}
	if r := out.Rejects[0]; r.Stream != stream.RejectBrandContacts || !strings.HasPrefix(r.Key, "sha256:") {
		t.Errorf("reject = %+v", r)
	}
	none := run(t, brands, stream.EndpointBrandContacts, nil, time.Time{}, list[0])
	if none.Len("brand_contacts") != 0 || len(none.Rejects) != 1 || !strings.Contains(none.Rejects[0].Error, "brand id") {
		t.Errorf("contacts without brand = %+v", none.Rejects)
	}
}

const project7 = `{"id":"7","brand_id":42,"name":"Campanie Crăciun 2024","status":"in_progress","start_date":"2024-10-01",
"deadline":"2024-12-20","updated_at":"2024-11-04T10:00:00.654321Z","closed_at":null,
"budget":{"amount":"30000.00","currency":"RON"},
"team":[{"user_id":"12","full_name":"Ana-Maria Popescu","role":"Account"},{"user_id":"ext-3","full_name":"Studio Foto ","role":"Freelancer"},
  {"user_id":12,"full_name":"Ana-Maria Popescu","role":"Lead"}],
"deliverables":{"d1":{"name":"Concept","due_date":"2024-10-15","status":"delivered","delivered_at":"2024-10-14T16:00:00Z"},
  "d2":{"name":"Spot TV","due_date":"2024-12-01","status":"open"}},
"history":[{"at":"2024-10-01T09:00:00Z","field":"status","from":null,"to":"planned","by_user_id":12},
  {"at":"2024-10-01T09:00:00Z","field":"status","from":"planned","to":"in_progress","by_user_id":"12"},
  {"at":"2024-10-02T09:00:00Z","field":"budget","from":{"amount":1},"to":2}]}`

func project(id, extra string) string {
	s := strings.Replace(project7, `"id":"7"`, `"id":"`+id+`"`, 1)
	if extra != "" {
		s = strings.Replace(s, `"team":[`, `"team":[`+extra, 1)
	}
	return s
}

func TestProjects(t *testing.T) {
	projects := declared(t, "projects")
	list := run(t, projects, stream.EndpointProjects, nil, time.Time{}, project7)
	if list.Len("projects") != 1 || list.Rows("project_team_members") != nil || list.Rows("project_deliverables") != nil ||
		list.Rows("project_history") != nil {
		t.Fatalf("a list project must not touch children: %+v", list.Tables)
	}
	if p := rowsOf(list, "projects")[0]; string(p["raw"].(json.RawMessage)) != project7 || p["detail_raw"] != nil {
		t.Errorf("list project raw = %s, detail_raw = %s", p["raw"], p["detail_raw"])
	}

	noTeamID := project("8", `{"full_name":"Fără Id"},`)
	noDeliverableID := strings.Replace(project("9", ""), `"deliverables":{`, `"deliverables":{"":{"name":"x"},`, 1)
	noAt := strings.Replace(project("10", ""), `"history":[`, `"history":[{"field":"status"},`, 1)
	noField := strings.Replace(project("11", ""), `"history":[`, `"history":[{"at":"2024-10-01T09:00:00Z"},`, 1)
	badBudget := strings.Replace(project("12", ""), `"30000.00"`, `"abc"`, 1)
	noID := strings.Replace(project7, `"id":"7",`, ``, 1)
	empty := `{"project_info":{"id":"13","team":[],"deliverables":{},"history":null,"budget":"150.5"}}`

	out := run(t, projects, stream.EndpointProject, nil, time.Time{}, project7, noTeamID, noDeliverableID, noAt, noField, badBudget, noID, empty)
	ps := rowsOf(out, "projects")
	if len(ps) != 2 {
		t.Fatalf("projects = %+v, rejects %+v", ps, out.Rejects)
	}
	for _, child := range []string{"project_team_members", "project_deliverables"} {
		if got := out.Rows(child).Parents; len(got) != 2 || got[0] != "7" || got[1] != "13" {
			t.Errorf("%s replaced for parents %v, want 7 and 13", child, got)
		}
	}
	p := ps[0]
	if p["raw"] != nil || string(p["detail_raw"].(json.RawMessage)) != project7 {
		t.Errorf("detail project raw = %s, detail_raw = %s", p["raw"], p["detail_raw"])
	}
	if p["brand_id"] != "42" || p["budget_amount"] != "30000.00" || p["budget_currency"] != "RON" || p["deadline"] != date("2024-12-20") ||
		p["closed_at"] != nil || p["updated_at"].(time.Time).Nanosecond() != 654321000 {
		t.Errorf("project = %+v", p)
	}
	if e := ps[1]; e["budget_amount"] != "150.5" || e["budget_currency"] != nil {
		t.Errorf("a bare budget amount: %+v", e)
	}
	team := rowsOf(out, "project_team_members")
	if len(team) != 2 {
		t.Fatalf("team = %+v", team)
	}
	if m := team[0]; m["user_id"] != "12" || m["role"] != "Lead" || m["platform_user_id"] != int64(12) {
		t.Errorf("member = %+v (a repeated member's last entry wins; numeric ids become platform_user_id)", m)
	}
	if m := team[1]; m["platform_user_id"] != nil || m["full_name"] != "Studio Foto" {
		t.Errorf("member = %+v", m)
	}
	ds := rowsOf(out, "project_deliverables")
	if len(ds) != 2 || ds[0]["deliverable_id"] != "d1" || ds[1]["delivered_at"] != nil || ds[0]["status"] != "delivered" {
		t.Errorf("deliverables (keyed by id) = %+v", ds)
	}
	h := rowsOf(out, "project_history")
	if len(h) != 3 {
		t.Fatalf("history = %+v", h)
	}
	if h[0]["seq"] != int32(1) || h[1]["seq"] != int32(2) || h[2]["seq"] != int32(1) || h[0]["from_value"] != nil ||
		h[1]["to_value"] != "in_progress" || h[2]["by_user_id"] != nil || h[2]["from_value"] != `{"amount":1}` || h[2]["to_value"] != "2" {
		t.Errorf("history = %+v (same at and field: seq 1, 2; any JSON value as text)", h)
	}

	want := map[string]string{"8": "team member 0 without user_id", "9": "deliverable 0 without id", "10": "history entry 0 without at",
		"11": "history entry 0 without field", "12": "budget.amount"}
	if len(out.Rejects) != len(want)+1 {
		t.Fatalf("rejects = %+v", out.Rejects)
	}
	for _, r := range out.Rejects {
		if w, ok := want[r.Key]; ok {
			if !strings.Contains(r.Error, w) {
				t.Errorf("reject %s: %q, want %q", r.Key, r.Error, w)
			}
		} else if !strings.HasPrefix(r.Key, "sha256:") {
			t.Errorf("unexpected reject %+v", r)
		}
	}
}

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

func TestFinance(t *testing.T) {
	fin := declared(t, "finance")
	budgets := run(t, fin, stream.EndpointBudgets, nil, time.Time{},
		`{"id":"b0","project_id":"`+strings.Repeat("7", 1001)+`","amount":1}`,
		`{"id":"b1","project_id":7,"brand_id":"42","amount":30000.00,"currency":"RON","period_start":"2024-10-01","period_end":"2024-12-31"}`,
		`{"budget_info":{"id":"b2","amount":1e3,"project_id":false}}`,
		`{"id":"b3","amount":"NaN"}`,
		`{"amount":1}`)
	bs := rowsOf(budgets, "budgets")
	if len(bs) != 2 || bs[0]["amount"] != "30000.00" || bs[1]["amount"] != "1000" || bs[1]["project_id"] != nil ||
		bs[0]["project_id"] != "7" || bs[0]["period_end"] != date("2024-12-31") {
		t.Errorf("budgets = %+v", bs)
	}
	if r := budgets.Rejects; len(r) != 3 || r[0].Key != "b0" || !strings.Contains(r[0].Error, "project_id is 1001 bytes") ||
		r[1].Key != "b3" || r[1].Stream != stream.RejectBudgets || !strings.HasPrefix(r[2].Key, "sha256:") {
		t.Errorf("budget rejects = %+v", r)
	}

	inv := run(t, fin, stream.EndpointInvoices, nil, time.Time{},
		`{"id":"i1","number":"AG-2024-0113","project_id":"7","brand_id":"42","issue_date":"2024-11-01","due_date":"2024-11-30",
"amount":-150.25,"currency":"RON","status":"issued","updated_at":"2024-11-01T08:00:00.000001Z"}`,
		`{"id":"i1","number":"AG-2024-0113","amount":"-150.250","status":"paid"}`)
	if is := rowsOf(inv, "invoices"); len(is) != 1 || is[0]["amount"] != "-150.250" || is[0]["status"] != "paid" {
		t.Errorf("invoices = %+v (the last version wins)", is)
	}

	col := run(t, fin, stream.EndpointCollections, nil, time.Time{},
		`{"id":"c1","invoice_id":"i1","collected_on":"2024-11-20","amount":"0.10","currency":"RON"}`)
	if cs := rowsOf(col, "collections"); len(cs) != 1 || cs[0]["invoice_id"] != "i1" || cs[0]["amount"] != "0.10" {
		t.Errorf("collections = %+v", cs)
	}

	pay := run(t, fin, stream.EndpointPayments, nil, time.Time{},
		`{"id":"p1","payee":" Studio Foto SRL ","paid_on":"2024-11-21","amount":2500,"currency":"EUR"}`,
		`{"id":"p2","amount":"1.2.3"}`, `{"id":"p3","currency":"EUR","amount":null}`)
	if ps := rowsOf(pay, "payments"); len(ps) != 1 || ps[0]["payee"] != "Studio Foto SRL" || len(pay.Rejects) != 2 ||
		pay.Rejects[0].Stream != stream.RejectPayments || pay.Rejects[1].Key != "p3" || !strings.Contains(pay.Rejects[1].Error, "without amount") {
		t.Errorf("payments = %+v %+v", ps, pay.Rejects)
	}

	prof := run(t, fin, stream.EndpointProfitability, map[string]string{"level": "project"}, time.Time{},
		`{"level":"project","entity_id":7,"period":"2024-11","revenue":30000,"cost":"21000.5","margin":8999.5,"currency":"RON"}`,
		`{"level":"brand","entity_id":"42","period":"2024-11","revenue":"1"}`,
		`{"entity_id":"8","period":"2024-11"}`,
		`{"level":"team","entity_id":"7","period":"2024-11"}`,
		`{"level":"project","entity_id":"7","period":"noiembrie"}`,
		`{"level":"project","entity_id":"","period":"2024-11"}`)
	pr := rowsOf(prof, "profitability")
	if len(pr) != 3 || pr[0]["period"] != date("2024-11-01") || pr[0]["cost"] != "21000.5" || pr[2]["level"] != "project" {
		t.Errorf("profitability = %+v (a row without level takes the request's)", pr)
	}
	if r := prof.Rejects; len(r) != 3 || r[0].Key != "team/7/2024-11" || !strings.Contains(r[1].Error, "YYYY-MM") ||
		!strings.HasPrefix(r[2].Key, "sha256:") {
		t.Errorf("profitability rejects = %+v", r)
	}

	sum := run(t, fin, stream.EndpointAgencySummary, nil, time.Time{},
		`{"period":"2024-10","total_budget":500000,"invoiced":"320000.75","collected":300000,"paid":120000,"profit":180000.75,"currency":"RON"}`,
		`{"period":"2024-13"}`)
	if ss := rowsOf(sum, "agency_finance_summary"); len(ss) != 1 || ss[0]["profit"] != "180000.75" || len(sum.Rejects) != 1 ||
		sum.Rejects[0].Key != "2024-13" {
		t.Errorf("summary = %+v %+v", ss, sum.Rejects)
	}
}

// The encoder's habits the service may have (api-assumptions.md): false for
// a missing value, numbers as strings, [] for an empty object, {} for an
// empty array, <thing>_info wrappers, ids as numbers. Each reads as the
// canonical record does.
func TestToleratedVariants(t *testing.T) {
	fin := declared(t, "finance")
	canonical := `{"id":"i9","number":"AG-9","project_id":"7","brand_id":null,"issue_date":"2024-11-01","amount":1250.50,"currency":"RON","status":"issued","due_date":null}`
	variants := map[string]string{
		"false for missing":           `{"id":"i9","number":"AG-9","project_id":"7","brand_id":false,"issue_date":"2024-11-01","amount":1250.50,"currency":"RON","status":"issued","due_date":false}`,
		"numbers as strings":          `{"id":"i9","number":"AG-9","project_id":"7","issue_date":"2024-11-01","amount":"1250.50","currency":"RON","status":"issued"}`,
		"ids as numbers":              `{"id":"i9","number":"AG-9","project_id":7,"issue_date":"2024-11-01","amount":1250.50,"currency":"RON","status":"issued"}`,
		"[] for an object":            `{"id":"i9","number":"AG-9","project_id":"7","brand_id":[],"issue_date":"2024-11-01","amount":1250.50,"currency":"RON","status":"issued"}`,
		"date as a Laravel date cast": `{"id":"i9","number":"AG-9","project_id":"7","issue_date":"2024-11-01T00:00:00.000000Z","amount":1250.50,"currency":"RON","status":"issued"}`,
		"date as a SQL datetime":      `{"id":"i9","number":"AG-9","project_id":"7","issue_date":"2024-11-01 00:00:00","amount":1250.50,"currency":"RON","status":"issued"}`,
		"wrapped":                     `{"invoice_info":{"invoice_id":"i9","number":"AG-9","project_id":"7","issue_date":"2024-11-01","amount":1250.50,"currency":"RON","status":"issued"}}`,
		"other wrapper":               `{"record_info":{"id":"i9","number":"AG-9","project_id":"7","issue_date":"2024-11-01","amount":1250.50,"currency":"RON","status":"issued"}}`,
	}
	want := rowsOf(run(t, fin, stream.EndpointInvoices, nil, time.Time{}, canonical), "invoices")[0]
	for name, v := range variants {
		out := run(t, fin, stream.EndpointInvoices, nil, time.Time{}, v)
		if len(out.Rejects) > 0 {
			t.Errorf("%s: rejected: %s", name, out.Rejects[0].Error)
			continue
		}
		got := rowsOf(out, "invoices")[0]
		for col, w := range want {
			if col == "raw" {
				continue
			}
			if got[col] != w {
				t.Errorf("%s: %s = %v, canonical %v", name, col, got[col], w)
			}
		}
	}
}

// AGENCY_FIELD_MAP: a service whose projects name their fields title,
// state, due_date and budget_total fills the columns once they are mapped,
// coerced as the canonical fields are; unmapped, the columns stay NULL and
// the coverage says so.
func TestFieldMapRemap(t *testing.T) {
	renamed := `{"id":"7","title":"Campanie","state":"activ","due_date":"2024-12-20","budget_total":"30000.00"}`
	plain := run(t, declared(t, "projects"), stream.EndpointProjects, nil, time.Time{}, renamed)
	p := rowsOf(plain, "projects")[0]
	if p["name"] != nil || p["status"] != nil || p["deadline"] != nil || p["budget_amount"] != nil {
		t.Fatalf("unmapped = %+v", p)
	}
	for _, col := range []string{"projects.name", "projects.status", "projects.deadline", "projects.budget_amount"} {
		if plain.Coverage.Nulls[col] != 1 {
			t.Errorf("coverage of %s = %d NULLs, want 1", col, plain.Coverage.Nulls[col])
		}
	}
	if plain.Coverage.Rows["projects"] != 1 || plain.Coverage.Nulls["projects.project_id"] != 0 {
		t.Errorf("coverage = %+v", plain.Coverage)
	}
	if _, ok := plain.Coverage.Nulls["projects.raw"]; ok {
		t.Errorf("derived column raw counted in coverage")
	}

	projects := applied(t, stream.FieldMap{"projects.name": "title", "projects.status": "state",
		"projects.deadline": "due_date", "projects.budget_amount": "budget_total"})["projects"]
	mapped := run(t, projects, stream.EndpointProjects, nil, time.Time{}, renamed,
		`{"id":"8","title":"x","due_date":"soon"}`)
	p = rowsOf(mapped, "projects")[0]
	if p["name"] != "Campanie" || p["status"] != "activ" || p["deadline"] != date("2024-12-20") || p["budget_amount"] != "30000.00" {
		t.Errorf("mapped = %+v", p)
	}
	if len(mapped.Rejects) != 1 || mapped.Rejects[0].Key != "8" || !strings.Contains(mapped.Rejects[0].Error, "due_date") {
		t.Errorf("a mapped value that cannot be coerced is a rejected record: %+v", mapped.Rejects)
	}
}

func TestRecordErrors(t *testing.T) {
	errs := []extract.RecordError{
		{Endpoint: "invoices", Page: 3, Key: "i9", Raw: json.RawMessage(`{"id":"i9","amount":{}}`), Err: errors.New("amount: object where a number belongs")},
		{Endpoint: "communications", Page: 1, Key: "", Raw: json.RawMessage(`{"email": tru`), Err: errors.New("syntax error")},
		{Endpoint: "invoices", Page: 3, Key: "#4", Raw: json.RawMessage(`[1]`), Err: errors.New("array where an object belongs")},
	}
	rs := RecordErrors(stream.RejectInvoices, errs)
	if len(rs) != 3 {
		t.Fatalf("rejects = %+v", rs)
	}
	if !strings.HasPrefix(rs[2].Key, "sha256:") {
		t.Errorf("key = %q: a position on the page (#4) is not a key", rs[2].Key)
	}
	if rs[0].Key != "i9" || rs[0].Stream != stream.RejectInvoices || string(rs[0].Payload) != string(errs[0].Raw) ||
		!strings.Contains(rs[0].Error, "decode invoices page 3") || !strings.Contains(rs[0].Error, "object where a number") {
		t.Errorf("reject = %+v", rs[0])
	}
	var s string
	if err := json.Unmarshal(rs[1].Payload, &s); err != nil || s != `{"email": tru` {
		t.Errorf("payload of non-JSON bytes = %s, want them as a JSON string", rs[1].Payload)
	}
	if !strings.HasPrefix(rs[1].Key, "sha256:") {
		t.Errorf("key = %q, want a payload hash", rs[1].Key)
	}
}

func TestRawJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"valid JSON unchanged", `{"b":1, "a":"Ș"}`, `{"b":1, "a":"Ș"}`},
		{"empty is null", ``, `null`},
		{"NUL escape replaced", `{"a":"x\u0000y"}`, `{"a":"x` + "\uFFFD" + `y"}`},
		{"lone surrogate replaced", `["\ud800"]`, `["` + "\uFFFD" + `"]`},
		{"surrogate pair kept", `["\ud83d\ude00"]`, `["😀"]`},
		{"big numbers exact", `{"n":12345678901234567890.123456789,"z":"\u0000"}`, `{"n":12345678901234567890.123456789,"z":"` + "\uFFFD" + `"}`},
		{"not JSON becomes a string", `<html>`, `"\u003chtml\u003e"`},
		{"invalid UTF-8 repaired", "\"a\xffb\"", `"a` + "\uFFFD" + `b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(CleanJSON(json.RawMessage(tt.in))); got != tt.want {
				t.Errorf("CleanJSON(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestBatchAppendAndJSON(t *testing.T) {
	var b Batch
	fin := declared(t, "finance")
	b.Append(run(t, fin, stream.EndpointBudgets, nil, time.Time{}, `{"id":"b1","amount":1}`))
	b.Append(run(t, declared(t, "communications"), stream.EndpointCommunications, nil, time.Time{},
		`1|{"email":{"subject":"s","email_at":"2024-01-01T00:00:00.5Z"},"users":{"from":[{"email":"a@b.ro"}],"to":[]}}`))
	b.Append(run(t, fin, stream.EndpointBudgets, nil, time.Time{}, `{"amount":1}`))
	if b.Len("budgets") != 1 || b.Len("emails") != 1 || b.Len("users") != 1 || b.Len("email_recipients") != 1 || len(b.Rejects) != 1 {
		t.Errorf("batch = %+v", b)
	}
	if b.Records() != 3 || b.Coverage.Rows["budgets"] != 1 {
		t.Errorf("records = %d, coverage %+v", b.Records(), b.Coverage)
	}
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var back Batch
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	at := back.Column("emails", "email_at")
	if back.Len("emails") != 1 || at[0] != instant("2024-01-01T00:00:00.5Z") || back.Column("emails", "record_id")[0] != int64(1) ||
		back.Column("budgets", "amount")[0] != "1" || len(back.Rows("email_recipients").Parents) != 1 {
		t.Errorf("round trip: %+v", back.Tables)
	}
}

// TestNewRowsDoNotOverlap: rows carved out of one chunk are zero, as long
// as asked, and an append to one cannot write into the next.
func TestNewRowsDoNotOverlap(t *testing.T) {
	var p plan
	rows := make([][]any, 0, 600)
	for i := range cap(rows) {
		r := p.newRow(1 + i%13)
		if len(r) != 1+i%13 || cap(r) != len(r) || slices.ContainsFunc(r, func(v any) bool { return v != nil }) {
			t.Fatalf("row %d: len %d cap %d %v", i, len(r), cap(r), r)
		}
		r[0] = i
		rows = append(rows, r)
	}
	for i := range rows {
		if grown := append(rows[i], "appended"); len(grown) != len(rows[i])+1 {
			t.Fatalf("append to row %d: %v", i, grown)
		}
	}
	for i, r := range rows {
		if r[0] != i || slices.Contains(r, any("appended")) {
			t.Fatalf("row %d = %v: another row wrote into it", i, r)
		}
	}
}
