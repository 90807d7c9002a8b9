package load

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestFastPathMergesRowsOfParentsNotNamed: a child table's batch that names
// one parent (with no children stored) but also holds a row of another
// parent, stored already, must not be copied straight in: the write merges
// it in the page's first attempt — the new child inserted, the stored one
// updated — and replaces only the named parent's children.
func TestFastPathMergesRowsOfParentsNotNamed(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	first := rowsBatch(t, "project_team_members", []any{"7", "12", int64(12), "Ana-Maria Popescu", "Account"})
	first.Tables["project_team_members"].Parents = []any{"7"}
	commit(t, s, Page{Batch: first})

	next := rowsBatch(t, "project_team_members",
		[]any{"8", "13", int64(13), "Ștefan Ionescu", "Creative"},
		[]any{"7", "12", int64(12), "Ana-Maria Popescu", "Lead"})
	next.Tables["project_team_members"].Parents = []any{"8"}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	stages := &stageSet{known: conn.Conn().PgConn().CustomData()}
	var got Counts
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var werr error
		got, werr = s.commit(ctx, tx, &Page{Batch: next}, stages, true)
		return werr
	})
	if err != nil {
		t.Fatalf("fast-path write of a batch with a stored row of another parent: %v", err)
	}
	if c := got.Tables["project_team_members"]; c != (TableCounts{Inserted: 1, Updated: 1}) {
		t.Errorf("project_team_members = %+v, want 1 inserted and 1 updated", c)
	}
	assertText(t, pool, "7/12/Lead 8/13/Creative", "SELECT string_agg(project_id || '/' || user_id || '/' || role, ' ' ORDER BY project_id) FROM "+
		qualified(schema, "project_team_members"))
}
