package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/enginetest"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
)

// notebooks is a stream no product file knows: a paged list of notebooks
// and, per notebook, its paged list of notes, soft-deleted per notebook —
// declared here, its tables created by the test, served by the sandbox
// from the records the test gives. The engine runs it from the
// declaration alone.
func notebooks(t *testing.T) *stream.Stream {
	t.Helper()
	paging := stream.StyleDefaults(stream.StylePage)
	s, err := stream.New(stream.Stream{
		Name: "notebooks", Main: "notebooks",
		Endpoints: []stream.Endpoint{
			{Name: "notebooks", Path: "/v1/notebooks", Paging: stream.PagingList, Pagination: paging},
			{Name: "notebook_notes", Path: "/v1/notebooks/{id}/notes", Paging: stream.PagingList, Pagination: paging,
				Parent: "notebooks", Inventory: "notebook_notes"},
		},
		Lists: []stream.List{{Partition: "list", Endpoint: "notebooks"}},
	},
		&stream.Table{Name: "notebooks", Noun: "notebook", Endpoints: []string{"notebooks"}, Reject: "notebooks", SoftDelete: true,
			DetailFields: []string{"title"},
			Columns: []stream.Column{
				{Name: "notebook_id", Field: "id", Type: stream.ID, Key: true},
				{Name: "title", Field: "title", Type: stream.Text},
				{Name: "raw", Derived: stream.DerivedRecord, Type: stream.JSONB},
			}},
		&stream.Table{Name: "notebook_notes", Noun: "note", Endpoints: []string{"notebook_notes"}, Reject: "notebooks.notes", SoftDelete: true,
			Columns: []stream.Column{
				{Name: "notebook_id", Param: "notebook_id", Derived: stream.DerivedParam, Type: stream.ID, Key: true},
				{Name: "note_id", Field: "id", Type: stream.ID, Key: true},
				{Name: "body", Field: "body", Type: stream.Text},
				{Name: "raw", Derived: stream.DerivedRecord, Type: stream.JSONB},
			}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// notebookData is what the sandbox serves of the notebooks stream: titles
// by notebook id, note bodies by notebook and note id.
type notebookData struct {
	titles map[string]string
	notes  map[string]map[string]string
}

// serve declares the notebooks stream's endpoints to the sandbox, by their
// declared paths, with d's records.
func (d notebookData) serve(sb *sandbox.Server, s *stream.Stream) {
	rec := func(id, field, v string) sandbox.DeclaredRecord {
		return sandbox.DeclaredRecord{ID: id, JSON: json.RawMessage(fmt.Sprintf(`{"id":%q,%q:%q}`, id, field, v))}
	}
	for _, ep := range s.Endpoints {
		l := sandbox.DeclaredList{Name: ep.Name, Path: ep.Path, Records: map[string][]sandbox.DeclaredRecord{}}
		for _, id := range sortedKeys(d.titles) {
			switch ep.Kind() {
			case stream.KindList:
				l.Records[""] = append(l.Records[""], rec(id, "title", d.titles[id]))
			case stream.KindChild:
				l.Records[id] = []sandbox.DeclaredRecord{}
				for _, n := range sortedKeys(d.notes[id]) {
					l.Records[id] = append(l.Records[id], rec(n, "body", d.notes[id][n]))
				}
			}
		}
		sb.Declare(l)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestAStreamDeclaredInATest: a stream declared in a test syncs end to end
// — every notebook and note lands; an unchanged re-run lists the notebooks
// once and asks no notebook's notes; a notebook whose entry changed has
// its notes listed again, and a note it no longer lists is soft-deleted; a
// notebook gone from the list is soft-deleted with its notes — and the
// status reports it beside the product's streams.
func TestAStreamDeclaredInATest(t *testing.T) {
	t.Parallel()
	k := enginetest.New(t, enginetest.SmallSandbox())
	nb := notebooks(t)
	k.Streams = append(stream.All(), nb)
	k.CreateTables(nb)
	eng := k.Engine()
	data := notebookData{titles: map[string]string{}, notes: map[string]map[string]string{}}
	for i := 1; i <= 30; i++ {
		id := fmt.Sprintf("nb%02d", i)
		data.titles[id] = "Notebook " + id
		data.notes[id] = map[string]string{}
		for j := 1; j <= i%4; j++ {
			data.notes[id][fmt.Sprintf("n%d", j)] = fmt.Sprintf("note %d of %s", j, id)
		}
	}
	data.serve(k.SB, nb)
	run := func(what string) (lists, children int64) {
		t.Helper()
		before := k.SB.Stats().ByEndpoint
		res, err := eng.Run(context.Background(), engine.Request{Trigger: engine.TriggerTest, Streams: []string{nb.Name}})
		if err != nil || res.Status != engine.StatusSucceeded {
			t.Fatalf("%s: run %v: %v", what, res.Status, errors.Join(err, res.Err))
		}
		after := k.SB.Stats().ByEndpoint
		return after["notebooks"] - before["notebooks"], after["notebook_notes"] - before["notebook_notes"]
	}
	live := func(table string) int {
		var n int
		if err := k.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+k.Schema+"."+table+" WHERE _deleted_at IS NULL").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	lists, children := run("first sync")
	if lists != 1 || children != 30 || live("notebooks") != 30 || live("notebook_notes") != 45 {
		t.Fatalf("first sync: %d list and %d notes requests, %d notebooks and %d notes live; want 1, 30, 30, 45",
			lists, children, live("notebooks"), live("notebook_notes"))
	}
	if lists, children = run("unchanged re-run"); lists != 1 || children != 0 {
		t.Fatalf("unchanged re-run: %d list and %d notes requests, want 1 and 0", lists, children)
	}
	// nb03 loses a note and gets a new title; nb05 leaves the list.
	delete(data.notes["nb03"], "n1")
	data.titles["nb03"] = "Notebook three"
	delete(data.titles, "nb05")
	data.serve(k.SB, nb)
	if lists, children = run("after the changes"); lists != 1 || children != 1 {
		t.Fatalf("after the changes: %d list and %d notes requests, want 1 and 1 (nb03's)", lists, children)
	}
	if live("notebooks") != 29 || live("notebook_notes") != 45-1-1 {
		t.Fatalf("after the changes: %d notebooks and %d notes live, want 29 and 43 (nb03's n1, nb05's note)",
			live("notebooks"), live("notebook_notes"))
	}
	rep, err := eng.Status(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Streams, func(s engine.StreamStatus) bool { return s.Stream == nb.Name })
	if i < 0 || rep.Streams[i].Rows != 29 || rep.Streams[i].LastSuccess == nil {
		t.Fatalf("status of %s: %+v", nb.Name, rep.Streams)
	}
}

// A declaration naming hooks the engine does not have is refused at
// start-up: it would not run.
func TestUnknownHooksAreRefused(t *testing.T) {
	t.Parallel()
	k := enginetest.New(t, enginetest.SmallSandbox())
	nb := *notebooks(t)
	nb.Hooks, nb.Lists = "nobody", nil
	bad, err := stream.New(nb, notebooks(t).Tables()...)
	if err != nil {
		t.Fatal(err)
	}
	store, err := load.New(k.Pool, load.Config{Schema: k.Schema})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := load.NewLedger(k.Pool, k.Schema, time.UTC, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.New(engine.Deps{Pool: k.Pool, Store: store, Ledger: ledger},
		engine.Settings{Schema: k.Schema, DailyQuota: 10, Streams: append(stream.All(), bad)})
	if !errors.Is(err, stream.ErrDeclaration) {
		t.Fatalf("engine with unknown hooks: %v, want ErrDeclaration", err)
	}
}
