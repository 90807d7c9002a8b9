package stream_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// The declarations name the endpoints exactly as extract does, with its
// canonical paths: AGENCY_PATHS and the request log use those names.
func TestEndpointsMatchExtract(t *testing.T) {
	paths := map[string]string{
		extract.EndpointBrands:         extract.DefaultPaths.Brands,
		extract.EndpointBrand:          extract.DefaultPaths.Brand,
		extract.EndpointBrandContacts:  extract.DefaultPaths.BrandContacts,
		extract.EndpointProjects:       extract.DefaultPaths.Projects,
		extract.EndpointProject:        extract.DefaultPaths.Project,
		extract.EndpointBudgets:        extract.DefaultPaths.Budgets,
		extract.EndpointInvoices:       extract.DefaultPaths.Invoices,
		extract.EndpointCollections:    extract.DefaultPaths.Collections,
		extract.EndpointPayments:       extract.DefaultPaths.Payments,
		extract.EndpointProfitability:  extract.DefaultPaths.Profitability,
		extract.EndpointAgencySummary:  extract.DefaultPaths.AgencySummary,
		extract.EndpointCommunications: extract.DefaultPaths.Communications,
	}
	seen := map[string]bool{}
	for _, s := range stream.All() {
		for _, e := range s.Endpoints {
			want, ok := paths[e.Name]
			if !ok {
				t.Errorf("stream %s: endpoint %q is not an extract endpoint", s.Name, e.Name)
				continue
			}
			if e.Path != want {
				t.Errorf("endpoint %s: path %q, extract's default is %q", e.Name, e.Path, want)
			}
			seen[e.Name] = true
		}
	}
	for name := range paths {
		if !seen[name] {
			t.Errorf("extract endpoint %s is declared by no stream", name)
		}
	}
}

func TestAllStreamsInSyncOrder(t *testing.T) {
	var names []string
	for _, s := range stream.All() {
		names = append(names, s.Name)
	}
	if want := []string{"brands", "projects", "finance", "communications"}; !slices.Equal(names, want) {
		t.Fatalf("All() = %v, want %v", names, want)
	}
	if !slices.Equal(stream.Names(), names) {
		t.Fatalf("Names() = %v, want %v", stream.Names(), names)
	}
}

func TestLookupColumn(t *testing.T) {
	tests := []struct {
		table, column string
		ok            bool
		field         string
		typ           stream.Type
		key           bool
	}{
		{"projects", "name", true, "name", stream.Text, false},
		{"projects", "project_id", true, "id", stream.ID, true},
		{"brands", "total_budget", true, "financial_summary.total_budget", stream.Numeric, false},
		{"emails", "email_at", true, "email.email_at", stream.Timestamptz, false},
		{"users", "avatar_url", true, "avatar", stream.Text, false},
		{"profitability", "period", true, "period", stream.Month, true},
		{"projects", "title", false, "", "", false},
		{"tasks", "name", false, "", "", false},
	}
	for _, tt := range tests {
		c, ok := stream.LookupColumn(tt.table, tt.column)
		if ok != tt.ok {
			t.Errorf("LookupColumn(%s, %s) ok = %v, want %v", tt.table, tt.column, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if c.Field != tt.field || c.Type != tt.typ || c.Key != tt.key {
			t.Errorf("%s.%s = field %q type %s key %v, want %q %s %v", tt.table, tt.column, c.Field, c.Type, c.Key, tt.field, tt.typ, tt.key)
		}
	}
}

func TestValidateFieldMap(t *testing.T) {
	tests := []struct {
		name    string
		in      stream.FieldMap
		wantErr error
		naming  string // the error names this
	}{
		{name: "empty", in: stream.FieldMap{}},
		{name: "renamed projects", in: stream.FieldMap{"projects.name": "title", "projects.status": "state",
			"projects.deadline": "due_date", "projects.budget_amount": "budget_total"}},
		{name: "nested path", in: stream.FieldMap{"brands.total_budget": "finance.budget.total"}},
		{name: "users", in: stream.FieldMap{"users.first_name": "given_name"}},
		{name: "unknown column", in: stream.FieldMap{"projects.title": "name"}, wantErr: stream.ErrUnknownColumn, naming: "title"},
		{name: "unknown table", in: stream.FieldMap{"tasks.name": "title"}, wantErr: stream.ErrUnknownColumn, naming: "tasks"},
		{name: "no table", in: stream.FieldMap{"name": "title"}, wantErr: stream.ErrUnknownColumn, naming: "name"},
		{name: "derived raw", in: stream.FieldMap{"projects.raw": "body"}, wantErr: stream.ErrDerivedColumn, naming: "projects.raw"},
		{name: "derived parent key", in: stream.FieldMap{"project_team_members.project_id": "pid"}, wantErr: stream.ErrDerivedColumn, naming: "project_team_members.project_id"},
		{name: "empty path", in: stream.FieldMap{"projects.name": ""}, wantErr: stream.ErrFieldMapSyntax, naming: "projects.name"},
		{name: "empty segment", in: stream.FieldMap{"projects.name": "a..b"}, wantErr: stream.ErrFieldMapSyntax, naming: "a..b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.naming) {
				t.Fatalf("err %q does not name %q", err, tt.naming)
			}
		})
	}
}

func TestApplyOverridesCopies(t *testing.T) {
	m := stream.FieldMap{"projects.name": "title", "brands.brand_id": "uuid", "users.first_name": "given_name"}
	err := m.Validate()
	if err != nil {
		t.Fatal(err)
	}
	streams, err := stream.Apply(m)
	if err != nil {
		t.Fatal(err)
	}
	get := func(streams []*stream.Stream, table, column string) *stream.Column {
		t.Helper()
		for _, s := range streams {
			if tb, ok := s.Table(table); ok {
				if c, ok := tb.Column(column); ok {
					return c
				}
			}
		}
		t.Fatalf("no %s.%s", table, column)
		return nil
	}
	if c := get(streams, "projects", "name"); c.Field != "title" {
		t.Errorf("projects.name reads %q, want title", c.Field)
	}
	if c := get(streams, "brands", "brand_id"); c.Field != "uuid" || c.Alternates != nil {
		t.Errorf("brands.brand_id reads %q (alternates %v), want uuid alone", c.Field, c.Alternates)
	}
	if c := get(streams, "projects", "status"); c.Field != "status" {
		t.Errorf("projects.status reads %q, want status (not mapped)", c.Field)
	}
	// The declarations are untouched.
	if c, _ := stream.LookupColumn("projects", "name"); c.Field != "name" {
		t.Errorf("declaration changed: projects.name reads %q", c.Field)
	}
	if c, _ := stream.LookupColumn("brands", "brand_id"); c.Field != "id" || len(c.Alternates) != 1 {
		t.Errorf("declaration changed: brands.brand_id reads %q %v", c.Field, c.Alternates)
	}
	if _, err := stream.Apply(stream.FieldMap{"projects.nope": "x"}); !errors.Is(err, stream.ErrUnknownColumn) {
		t.Errorf("Apply unknown column: err = %v", err)
	}
}

// Every table's declaration is usable by load: key columns first, child
// tables after their parent, every soft-delete table with a reject stream.
func TestTablesDeclaredForLoad(t *testing.T) {
	seen := map[string]bool{}
	for _, tb := range stream.Tables() {
		if seen[tb.Name] {
			t.Errorf("table %s twice", tb.Name)
		}
		seen[tb.Name] = true
		if tb.Parent != "" && !seen[tb.Parent] {
			t.Errorf("table %s before its parent %s", tb.Name, tb.Parent)
		}
		if tb.SoftDelete && tb.Reject == "" && tb.Name != "emails" {
			t.Errorf("soft-delete table %s has no reject stream", tb.Name)
		}
		for _, c := range tb.Columns {
			if c.Fallback != "" {
				if _, ok := tb.Column(c.Fallback); !ok {
					t.Errorf("%s.%s falls back to missing column %s", tb.Name, c.Name, c.Fallback)
				}
			}
		}
	}
	if len(seen) != 16 {
		t.Errorf("%d tables declared, want the model's 16", len(seen))
	}
}

// (*Stream).Tables hands out the stream's tables, parents first, in a
// slice the caller may change.
func TestStreamTables(t *testing.T) {
	s, ok := stream.Lookup("projects")
	if !ok {
		t.Fatal("no projects stream")
	}
	tables := s.Tables()
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	if want := []string{"projects", "project_team_members", "project_deliverables", "project_history"}; !slices.Equal(names, want) {
		t.Fatalf("tables = %v, want %v", names, want)
	}
	tables[0] = nil
	if s.Tables()[0] == nil {
		t.Fatal("changing the returned slice changed the declaration")
	}
}
