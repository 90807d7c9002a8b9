package stream_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// Every declaration is complete: Check passes on all of them, and the
// declared names a sync derives (streams, endpoints, listings, reject
// streams, inventory names) are each used once.
func TestEveryDeclarationIsComplete(t *testing.T) {
	if err := stream.Check(stream.All()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stream.All() {
		names = append(names, s.Name)
		if s.Hooks == "" && len(s.Lists) == 0 {
			t.Errorf("stream %s: neither lists nor hooks: nothing would run it", s.Name)
		}
	}
	if !slices.Equal(stream.Names(), names) {
		t.Fatalf("Names() = %v, want All()'s %v", stream.Names(), names)
	}
}

// A declaration that lacks what the engine needs to run it is refused, each
// with an error that says what is missing.
func TestIncompleteDeclarationsAreRefused(t *testing.T) {
	list := stream.Endpoint{Name: "things", Path: "/v1/things", Paging: stream.PagingList, Pagination: stream.StyleDefaults(stream.StylePage), Incremental: true}
	detail := stream.Endpoint{Name: "thing", Path: "/v1/things/{id}", Paging: stream.PagingDetail}
	child := stream.Endpoint{Name: "thing_parts", Path: "/v1/things/{id}/parts", Paging: stream.PagingList,
		Pagination: stream.StyleDefaults(stream.StylePage), Parent: "things"}
	things := func() *stream.Table {
		return &stream.Table{Name: "things", Noun: "thing", Reject: "things", SoftDelete: true, Endpoints: []string{"things", "thing"},
			DetailFields: []string{"name"},
			Columns: []stream.Column{{Name: "thing_id", Field: "id", Type: stream.ID, Key: true}, {Name: "name", Field: "name", Type: stream.Text},
				{Name: "updated_at", Field: "updated_at", Type: stream.Timestamptz}}}
	}
	parts := &stream.Table{Name: "thing_parts", Noun: "part", Reject: "things.parts", SoftDelete: true, Endpoints: []string{"thing_parts"},
		Columns: []stream.Column{{Name: "thing_id", Param: "thing_id", Derived: stream.DerivedParam, Type: stream.ID, Key: true},
			{Name: "part_id", Field: "id", Type: stream.ID, Key: true}}}
	good := stream.Stream{Name: "things", Main: "things", Endpoints: []stream.Endpoint{list, detail, child},
		Lists: []stream.List{{Partition: "list", Endpoint: "things", Incremental: true}}}
	if _, err := stream.New(good, things(), parts); err != nil {
		t.Fatalf("a complete declaration: %v", err)
	}
	noDetailFields := things()
	noDetailFields.DetailFields = nil
	noUpdatedAt := things()
	noUpdatedAt.Columns = noUpdatedAt.Columns[:2]
	badReject := things()
	badReject.Reject = "other"
	objectText := things()
	objectText.Columns[1].Object = true
	for _, tc := range []struct {
		name   string
		edit   func(s *stream.Stream)
		tables []*stream.Table
		want   string
	}{
		{"a list no listing asks", func(s *stream.Stream) { s.Lists = nil }, []*stream.Table{things(), parts}, "never run"},
		{"detail without detail fields", nil, []*stream.Table{noDetailFields, parts}, "entity list"},
		{"incremental without updated_at", nil, []*stream.Table{noUpdatedAt, parts}, "updated_at"},
		{"no main table", func(s *stream.Stream) { s.Main = "" }, []*stream.Table{things(), parts}, "main table"},
		{"reject stream of another name", nil, []*stream.Table{badReject, parts}, "reject stream"},
		{"child without its table", nil, []*stream.Table{things()}, "thing_parts"},
		{"an object that is not jsonb", nil, []*stream.Table{objectText, parts}, "Object on a text column"},
		{"window without hooks", func(s *stream.Stream) {
			s.Endpoints = append(s.Endpoints, stream.Endpoint{Name: "w", Path: "/w", Paging: stream.PagingWindow, Pagination: stream.StyleDefaults(stream.StylePage)})
		}, []*stream.Table{things(), parts}, "hooks"},
		{"two listings in one partition", func(s *stream.Stream) { s.Lists = append(s.Lists, s.Lists[0]) }, []*stream.Table{things(), parts}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			s.Endpoints = slices.Clone(good.Endpoints)
			s.Lists = slices.Clone(good.Lists)
			if tc.edit != nil {
				tc.edit(&s)
			}
			_, err := stream.New(s, tc.tables...)
			if !errors.Is(err, stream.ErrDeclaration) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrDeclaration naming %q", err, tc.want)
			}
		})
	}
	if err := stream.Check(append(stream.All(), stream.All()[0])); !errors.Is(err, stream.ErrDeclaration) {
		t.Fatalf("a stream declared twice: %v", err)
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
		if tb.SoftDelete && tb.Reject == "" {
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
