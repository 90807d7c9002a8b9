package inventory

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

func TestSimilarity(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		like bool
	}{
		{"name", "title", true},
		{"status", "state", true},
		{"deadline", "due_date", true},
		{"budget.amount", "budget_total", true},
		{"budget.currency", "budget_currency", true},
		{"start_date", "starts_on", true},
		{"first_name", "firstname", true},
		{"last_name", "lastName", true},
		{"position", "job_title", true},
		{"is_primary", "primary", true},
		{"number", "invoice_no", true},
		{"issue_date", "issued_on", true},
		{"amount", "total", true},
		{"due_date", "payment_due", true},
		{"adress", "address", true}, // a typo
		{"budget.amount", "budget_currency", false},
		{"deadline", "starts_on", false},
		{"start_date", "due_date", false},
		{"name", "state", false},
		{"first_name", "last_name", false},
		{"email", "phone", false},
	} {
		s := Similarity(tc.a, tc.b)
		if (s >= minSimilarity) != tc.like {
			t.Errorf("Similarity(%q, %q) = %.2f, want similar=%v", tc.a, tc.b, s, tc.like)
		}
	}
}

func TestCoverage(t *testing.T) {
	renamedSeen := []Field{
		{Stream: "projects", Path: "id", Types: []string{TypeString}, Count: 32, MappedColumn: "projects.project_id"},
		{Stream: "projects", Path: "title", Types: []string{TypeString}, Count: 32},
		{Stream: "projects", Path: "state", Types: []string{TypeString}, Count: 32},
		{Stream: "projects", Path: "due_date", Types: []string{TypeString}, Count: 32},
		{Stream: "projects", Path: "budget_total", Types: []string{TypeNumber}, Count: 32},
		{Stream: "projects", Path: "budget_currency", Types: []string{TypeString}, Count: 32},
		{Stream: "projects", Path: "closed_at", Types: []string{TypeNull, TypeString}, Count: 32, MappedColumn: "projects.closed_at"},
		{Stream: "projects", Path: "notes", Types: []string{TypeString}, Count: 2}, // too rare to be a candidate
	}
	projectCols := func(nameNull, statusNull, deadlineNull, amountNull, closedNull int64) []Column {
		return []Column{
			{Column: "projects.name", Field: "name", Types: TypesFor("text"), Null: nameNull},
			{Column: "projects.status", Field: "status", Types: TypesFor("text"), Null: statusNull},
			{Column: "projects.deadline", Field: "deadline", Types: TypesFor("date"), Null: deadlineNull},
			{Column: "projects.budget_amount", Field: "budget.amount", Types: TypesFor("numeric"), Null: amountNull},
			{Column: "projects.closed_at", Field: "closed_at", Types: TypesFor("timestamptz"), Null: closedNull, Sparse: true},
		}
	}
	tests := []struct {
		name string
		in   Input
		want []Warning // Message is checked for its key words only
	}{
		{
			name: "renamed project fields: each NULL column names its replacement",
			in: Input{
				Streams: []StreamRun{{Stream: "projects", Records: 32, Columns: projectCols(32, 32, 31, 32, 30)}},
				Seen:    renamedSeen,
				Known:   KnownOf(renamedSeen),
			},
			want: []Warning{
				{Kind: KindNullColumn, Stream: "projects", Column: "projects.budget_amount", Field: "budget.amount", Records: 32, Count: 32, Share: 1, Candidates: []string{"budget_total"}},
				{Kind: KindNullColumn, Stream: "projects", Column: "projects.deadline", Field: "deadline", Records: 32, Count: 31, Share: 0.969, Candidates: []string{"due_date"}},
				{Kind: KindNullColumn, Stream: "projects", Column: "projects.name", Field: "name", Records: 32, Count: 32, Share: 1, Candidates: []string{"title"}},
				{Kind: KindNullColumn, Stream: "projects", Column: "projects.status", Field: "status", Records: 32, Count: 32, Share: 1, Candidates: []string{"state"}},
			},
		},
		{
			name: "below 95 % NULL, and a sparse column whose field is present: no warning",
			in: Input{
				Streams: []StreamRun{{Stream: "projects", Records: 40, Columns: projectCols(37, 0, 0, 0, 40)}},
				Seen:    renamedSeen,
			},
		},
		{
			name: "a sparse column whose field never came is a renamed field",
			in: Input{
				Streams: []StreamRun{{Stream: "deliverables", Records: 10, Columns: []Column{
					{Column: "project_deliverables.delivered_at", Field: "deliverables[].delivered_at", Types: TypesFor("timestamptz"), Null: 10, Sparse: true}}}},
				Seen: []Field{{Stream: "deliverables", Path: "deliverables[].handed_over_at", Types: []string{TypeString}, Count: 10}},
			},
			want: []Warning{{Kind: KindNullColumn, Stream: "deliverables", Column: "project_deliverables.delivered_at",
				Field: "deliverables[].delivered_at", Records: 10, Count: 10, Share: 1}},
		},
		{
			name: "incompatible types are no candidates: an object for a text column, a string for a flag",
			in: Input{
				Streams: []StreamRun{{Stream: "contacts", Records: 8, Columns: []Column{
					{Column: "brand_contacts.first_name", Field: "first_name", Types: TypesFor("text"), Null: 8},
					{Column: "brand_contacts.is_primary", Field: "is_primary", Types: TypesFor("boolean"), Null: 8},
				}}},
				Seen: []Field{
					{Stream: "contacts", Path: "firstname", Types: []string{TypeObject}, Count: 8},
					{Stream: "contacts", Path: "first_names", Types: []string{TypeString, TypeBoolean}, Count: 8},
					{Stream: "contacts", Path: "primary", Types: []string{TypeString}, Count: 8},
				},
			},
			want: []Warning{
				{Kind: KindNullColumn, Stream: "contacts", Column: "brand_contacts.first_name", Field: "first_name", Records: 8, Count: 8, Share: 1, Candidates: []string{"first_names"}},
				{Kind: KindNullColumn, Stream: "contacts", Column: "brand_contacts.is_primary", Field: "is_primary", Records: 8, Count: 8, Share: 1, Candidates: []string{"primary"}},
			},
		},
		{
			name: "a stream mostly rejected names its most common reason",
			in: Input{Streams: []StreamRun{
				{Stream: "communications", Records: 25, Rejects: map[string]int64{
					"users.from[].last_name: want a string, got false": 20, "email.email_at: not a time": 3}},
				{Stream: "invoices", Records: 100, Rejects: map[string]int64{"amount: not a decimal": 49}},
			}},
			want: []Warning{{Kind: KindRejectedStream, Stream: "communications", Records: 25, Count: 23, Share: 0.92,
				Reason: "users.from[].last_name: want a string, got false"}},
		},
		{
			name: "new fields are announced once, under their new parent only, and not on a first inventory",
			in: Input{
				Seen: []Field{
					{Stream: "projects", Path: "name", Types: []string{TypeString}, Count: 5},
					{Stream: "projects", Path: "custom_fields", Types: []string{TypeObject}, Count: 5},
					{Stream: "projects", Path: "custom_fields.color", Types: []string{TypeString}, Count: 5},
					{Stream: "projects", Path: "team[].email", Types: []string{TypeString}, Count: 2},
					{Stream: "brands", Path: "name", Types: []string{TypeString}, Count: 5},
				},
				Known: Known{"projects": {"name": true, "team[]": true, "team": true}},
			},
			want: []Warning{
				{Kind: KindNewField, Stream: "projects", Field: "custom_fields", Count: 5},
				{Kind: KindNewField, Stream: "projects", Field: "team[].email", Count: 2},
			},
		},
		{
			name: "a new field the mapping reads, or an object holding one, is no news; a new unmapped member of it is",
			in: Input{
				Seen: []Field{
					{Stream: "communications", Path: "subject", Types: []string{TypeString}, Count: 5},
					{Stream: "communications", Path: "users.bcc[]", Types: []string{TypeObject}, Count: 1},
					{Stream: "communications", Path: "users.bcc[].email", Types: []string{TypeString}, Count: 1, MappedColumn: "users.email"},
					{Stream: "communications", Path: "users.bcc[].nickname", Types: []string{TypeString}, Count: 1},
					{Stream: "communications", Path: "email.size", Types: []string{TypeNumber}, Count: 5, MappedColumn: "emails.size_bytes"},
				},
				Known: Known{"communications": {"subject": true, "users.bcc": true}},
			},
			want: []Warning{
				{Kind: KindNewField, Stream: "communications", Field: "users.bcc[].nickname", Count: 1},
			},
		},
		{
			name: "a stream without records warns of nothing",
			in:   Input{Streams: []StreamRun{{Stream: "projects", Records: 0, Columns: projectCols(0, 0, 0, 0, 0)}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Coverage(tc.in)
			if len(got) != len(tc.want) {
				t.Fatalf("%d warnings, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				msg := g.Message
				g.Message = ""
				if g.Candidates == nil {
					g.Candidates = []string{}
				}
				if w.Candidates == nil {
					w.Candidates = []string{}
				}
				gj, _ := json.Marshal(g)
				wj, _ := json.Marshal(w)
				if !bytes.Equal(gj, wj) {
					t.Errorf("warning %d:\n got %s\nwant %s", i, gj, wj)
				}
				for _, word := range []string{g.Stream, g.Column, g.Field, g.Reason} {
					if !strings.Contains(msg, word) {
						t.Errorf("message %q does not name %q", msg, word)
					}
				}
				for _, c := range g.Candidates {
					if !strings.Contains(msg, c) {
						t.Errorf("message %q does not name candidate %q", msg, c)
					}
				}
			}
		})
	}
}

func TestWarningJSONIsStable(t *testing.T) {
	w := Warning{Kind: KindNullColumn, Stream: "projects", Column: "projects.name", Field: "name", Records: 32,
		Count: 32, Share: 1, Candidates: []string{"title"}, Message: "m"}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"null_column","stream":"projects","column":"projects.name","field":"name","records":32,"count":32,"share":1,"candidates":["title"],"message":"m"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back Warning
	if err := json.Unmarshal(b, &back); err != nil || back.Kind != w.Kind || !slices.Equal(back.Candidates, w.Candidates) {
		t.Fatalf("round trip %+v %v", back, err)
	}
}

// TestCoverageOnTheSandbox: on the sandbox's projects, fields the service
// renamed (renamed-fields) warn with their replacements; the canonical
// service and a mapping that follows the renaming warn of nothing.
func TestCoverageOnTheSandbox(t *testing.T) {
	type col struct {
		column, field, typ string
		sparse             bool
	}
	canonical := []col{
		{"projects.project_id", "id", "id", false}, {"projects.brand_id", "brand_id", "id", false},
		{"projects.name", "name", "text", false}, {"projects.status", "status", "text", false},
		{"projects.start_date", "start_date", "date", false}, {"projects.deadline", "deadline", "date", false},
		{"projects.closed_at", "closed_at", "timestamptz", true}, {"projects.updated_at", "updated_at", "timestamptz", false},
		{"projects.budget_amount", "budget.amount", "numeric", false}, {"projects.budget_currency", "budget.currency", "text", false},
	}
	remapped := slices.Clone(canonical)
	for i, c := range remapped {
		if r, ok := map[string]string{"name": "title", "status": "state", "start_date": "starts_on", "deadline": "due_date",
			"budget.amount": "budget_total", "budget.currency": "budget_currency"}[c.field]; ok {
			remapped[i].field = r
		}
	}
	run := func(records [][]byte, cols []col) []Warning {
		o := NewObserver("projects")
		o.SetSampling(0, 1)
		for _, r := range records {
			o.Observe(r)
		}
		mapping := map[string]string{}
		sr := StreamRun{Stream: "projects", Records: int64(len(records))}
		for _, c := range cols {
			mapping[c.field] = c.column
			sr.Columns = append(sr.Columns, Column{Column: c.column, Field: c.field, Types: TypesFor(c.typ),
				Null: o.Records() - o.Filled(c.field), Sparse: c.sparse})
		}
		seen := o.Fields(mapping)
		return Coverage(Input{Streams: []StreamRun{sr}, Seen: seen, Known: KnownOf(seen)})
	}
	renamed := sandboxProjects(t, sandbox.VariantRenamedFields)
	ws := run(renamed, canonical)
	got := map[string][]string{}
	for _, w := range ws {
		if w.Kind != KindNullColumn {
			t.Errorf("unexpected %+v", w)
		}
		got[w.Column] = w.Candidates
	}
	want := map[string][]string{
		"projects.name": {"title"}, "projects.status": {"state"}, "projects.start_date": {"starts_on"},
		"projects.deadline": {"due_date"}, "projects.budget_amount": {"budget_total"},
		"projects.budget_currency": {"budget_currency"},
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %v, want %v", got, want)
	}
	for c, cands := range want {
		if !slices.Equal(got[c], cands) {
			t.Errorf("%s: candidates %v, want %v", c, got[c], cands)
		}
	}
	if ws := run(renamed, remapped); len(ws) != 0 {
		t.Errorf("remapped: %+v", ws)
	}
	if ws := run(sandboxProjects(t), canonical); len(ws) != 0 {
		t.Errorf("canonical: %+v", ws)
	}
	// PHP habits alone do not empty a column (false closed_at is sparse).
	if ws := run(sandboxProjects(t, sandbox.VariantPHP), canonical); len(ws) != 0 {
		t.Errorf("php: %+v", ws)
	}
}

func TestFieldPathAndEstimateNull(t *testing.T) {
	if p := FieldPath("", "budget.amount"); p != "budget.amount" {
		t.Fatal(p)
	}
	if p := FieldPath("team", "role"); p != "team[].role" {
		t.Fatal(p)
	}
	o := NewObserver("projects")
	o.SetSampling(0, 1)
	for _, r := range []string{projectDetail, projectPHP, projectDetail, projectPHP} {
		o.Observe([]byte(r))
	}
	for _, tc := range []struct {
		path     string
		received int64
		want     int64
	}{
		{"name", 600, 0},
		{"closed_at", 600, 600},     // null or false everywhere
		{"budget.amount", 600, 300}, // budget is [] in the PHP record
		{"team[].role", 10, 5},
		{"title", 7, 7},
	} {
		if got := o.EstimateNull(tc.path, tc.received); got != tc.want {
			t.Errorf("%s of %d: %d, want %d", tc.path, tc.received, got, tc.want)
		}
	}
	if got := NewObserver("x").EstimateNull("name", 5); got != 5 {
		t.Errorf("nothing observed: %d", got)
	}
}
