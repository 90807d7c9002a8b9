package load

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agencysync/agencysync/inventory"
)

const (
	srcProject = `{"id":"17","brand_id":"2","name":"Campanie toamnă","status":"planificat","deadline":"2026-12-15",` +
		`"closed_at":null,"budget":{"amount":12500.50,"currency":"EUR"},"team":[{"user_id":"4","role":"manager"}]}`
	srcProjectPHP = `{"id":"18","brand_id":"2","name":"Rebranding","status":"anulat","deadline":"2027-01-31",` +
		`"closed_at":false,"budget":{"amount":"900.00","currency":"RON"},"team":[],"custom_fields":[]}`
	srcEmail = `{"email":{"type_id":1,"subject":"Re: Ofertă","size":2048},"users":{"from":[{"first_name":"Andrei","last_name":null}],` +
		`"to":{"12":{"first_name":"Ioana","last_name":"Marin"}},"cc":[],"bcc":[]}}`
)

func observeAll(stream string, records ...string) *inventory.Inventory {
	inv := inventory.New()
	inv.SetSampling(0, 1)
	for _, r := range records {
		inv.Observe(stream, []byte(r))
	}
	return inv
}

func TestMergeSourceFields(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	t1 := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	t2 := t1.Add(24 * time.Hour)
	mapping := inventory.Mapping{"projects": {"name": "projects.name", "budget.amount": "projects.budget_amount",
		"team[].role": "project_team_members.role"}}

	// Run 1: two observers of projects (merged by the statement), one of e-mails.
	first := observeAll("projects", srcProject).Fields(mapping)
	first = append(first, observeAll("projects", srcProject).Fields(mapping)...)
	first = append(first, observeAll("communications", srcEmail).Fields(nil)...)
	if err := s.MergeSourceFields(ctx, t1, first); err != nil {
		t.Fatal(err)
	}
	got, err := s.SourceFields(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := observeAll("communications", srcEmail).Fields(nil)
	for _, f := range observeAll("projects", srcProject, srcProject).Fields(mapping) {
		want = append(want, f)
	}
	if len(got) != len(want) {
		t.Fatalf("%d fields stored, want %d", len(got), len(want))
	}
	for i, w := range want {
		w.FirstSeen, w.LastSeen = t1, t1
		g := got[i]
		if g.Stream != w.Stream || g.Path != w.Path || !slices.Equal(g.Types, w.Types) || g.Count != w.Count ||
			g.MappedColumn != w.MappedColumn || !g.FirstSeen.Equal(t1) || !g.LastSeen.Equal(t1) {
			t.Errorf("field %d: got %+v, want %+v", i, g, w)
		}
	}

	// Run 2: a PHP encoder's record adds types and a field; the mapping moves.
	mapping["projects"]["name"] = ""
	mapping["projects"]["status"] = "projects.status"
	if err := s.MergeSourceFields(ctx, t2, observeAll("projects", srcProjectPHP).Fields(mapping)); err != nil {
		t.Fatal(err)
	}
	got, err = s.SourceFields(ctx, "projects")
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]inventory.Field{}
	for _, f := range got {
		if f.Stream != "projects" {
			t.Fatalf("stream filter let %s through", f.Stream)
		}
		byPath[f.Path] = f
	}
	for _, tc := range []struct {
		path         string
		types        []string
		count        int64
		first, last  time.Time
		mappedColumn string
	}{
		{"closed_at", []string{"boolean", "null"}, 3, t1, t2, ""},
		{"budget.amount", []string{"number", "string"}, 3, t1, t2, "projects.budget_amount"},
		{"name", []string{"string"}, 3, t1, t2, ""},
		{"status", []string{"string"}, 3, t1, t2, "projects.status"},
		{"team", []string{"array"}, 3, t1, t2, ""},
		{"team[].role", []string{"string"}, 2, t1, t1, "project_team_members.role"}, // not seen in run 2
		{"custom_fields", []string{"array"}, 1, t2, t2, ""},
	} {
		f, ok := byPath[tc.path]
		if !ok {
			t.Errorf("%s missing", tc.path)
			continue
		}
		if !slices.Equal(f.Types, tc.types) || f.Count != tc.count || !f.FirstSeen.Equal(tc.first) ||
			!f.LastSeen.Equal(tc.last) || f.MappedColumn != tc.mappedColumn {
			t.Errorf("%s: %+v, want types %v count %d first %s last %s mapped %q", tc.path, f, tc.types, tc.count,
				tc.first, tc.last, tc.mappedColumn)
		}
	}

	// What was known before a run tells the coverage warnings what is new.
	known := inventory.KnownOf(got)
	if !known["projects"]["custom_fields"] || known["projects"]["users.to[].first_name"] {
		t.Fatalf("known %v", known)
	}
	if err := s.MergeSourceFields(ctx, t2, nil); err != nil {
		t.Fatalf("empty merge: %v", err)
	}
	// A field without a type (an empty object's path from another tool) is stored with none.
	if err := s.MergeSourceFields(ctx, t2, []inventory.Field{{Stream: "brands", Path: "tags", Count: 1}}); err != nil {
		t.Fatalf("field without types: %v", err)
	}
	if got, err := s.SourceFields(ctx, "brands"); err != nil || len(got) != 1 || len(got[0].Types) != 0 || got[0].Types == nil {
		t.Fatalf("field without types: %+v %v", got, err)
	}
}

func TestMergeSourceFieldsRefuses(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		at     time.Time
		fields []inventory.Field
	}{
		{"no path", now, []inventory.Field{{Stream: "projects", Types: []string{"string"}, Count: 1}}},
		{"no stream", now, []inventory.Field{{Path: "name", Types: []string{"string"}, Count: 1}}},
		{"zero time", time.Time{}, []inventory.Field{{Stream: "projects", Path: "name", Types: []string{"string"}, Count: 1}}},
		{"unknown JSON type", now, []inventory.Field{{Stream: "projects", Path: "name", Types: []string{"integer"}, Count: 1}}},
		{"negative count", now, []inventory.Field{{Stream: "projects", Path: "name", Types: []string{"string"}, Count: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.MergeSourceFields(ctx, tc.at, tc.fields); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if got, err := s.SourceFields(ctx); err != nil || len(got) != 0 {
		t.Fatalf("stored %v, %v", got, err)
	}
}

func TestRunWarnings(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	if _, _, err := s.LastRunWarnings(ctx); !errors.Is(err, ErrNoRun) {
		t.Fatalf("no runs: %v", err)
	}
	old, err := s.StartRun(ctx, Run{Trigger: "test", Streams: []string{"projects"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, old, RunResult{Status: RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	// A run that recorded none shows [] (the column's default).
	id, ws, err := s.LastRunWarnings(ctx)
	if err != nil || id != old || ws == nil || len(ws) != 0 {
		t.Fatalf("run without warnings: %s %v %v", id, ws, err)
	}
	time.Sleep(5 * time.Millisecond) // started_at orders the runs
	runID, err := s.StartRun(ctx, Run{Trigger: "test", Streams: []string{"projects", "communications"}})
	if err != nil {
		t.Fatal(err)
	}
	warnings := inventory.Coverage(inventory.Input{
		Streams: []inventory.StreamRun{
			{Stream: "projects", Records: 32, Columns: []inventory.Column{
				{Column: "projects.name", Field: "name", Types: inventory.TypesFor("text"), Null: 32}}},
			{Stream: "communications", Records: 25, Rejects: map[string]int64{"users.from[].last_name: false": 25}},
		},
		Seen: []inventory.Field{{Stream: "projects", Path: "title", Types: []string{"string"}, Count: 32}},
	})
	if len(warnings) != 2 {
		t.Fatalf("warnings %+v", warnings)
	}
	if err := s.SetRunWarnings(ctx, runID, warnings); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, runID, RunResult{Status: RunPartial}); err != nil {
		t.Fatal(err)
	}
	// A later skipped run does not hide them.
	if _, err := s.RecordSkipped(ctx, Run{Trigger: "test"}, "locked"); err != nil {
		t.Fatal(err)
	}
	id, ws, err = s.LastRunWarnings(ctx)
	if err != nil || id != runID {
		t.Fatalf("last run %s (want %s): %v", id, runID, err)
	}
	if len(ws) != 2 || ws[0].Stream != "communications" || ws[0].Kind != inventory.KindRejectedStream ||
		ws[1].Column != "projects.name" || !slices.Equal(ws[1].Candidates, []string{"title"}) || ws[1].Message != warnings[1].Message {
		t.Fatalf("read back %+v", ws)
	}
	if err := s.SetRunWarnings(ctx, "00000000-0000-0000-0000-000000000000", nil); !errors.Is(err, ErrNoRun) {
		t.Fatalf("unknown run: %v", err)
	}
}
