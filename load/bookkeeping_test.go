package load

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agencysync/agencysync/transform"
)

// TestLiveRowsAndRejects: live rows per table and scope, soft-deleted rows
// left out, unknown tables and columns refused; rejects counted with their
// sub-streams.
func TestLiveRowsAndRejects(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	b := fullBatch()
	b.Rejects = []transform.Reject{
		{Stream: "brands", Key: "99", Payload: json.RawMessage(`{"id":99}`), Error: "no name"},
		{Stream: "brands.contacts", Key: "c9", Payload: json.RawMessage(`{}`), Error: "no id"},
		{Stream: "communications", Key: "5", Payload: json.RawMessage(`{}`), Error: "bad date"},
	}
	commit(t, s, page{batch: b})
	execSQL(t, pool, "UPDATE "+qualified(schema, "brands")+" SET _deleted_at = now() WHERE brand_id = '43'")
	ctx := t.Context()
	for _, c := range []struct {
		table string
		scope map[string]any
		want  int
		err   error
	}{
		{"brands", nil, 1, nil}, // 43 is soft-deleted
		{"projects", nil, 1, nil},
		{"profitability", nil, 2, nil},
		{"profitability", map[string]any{"level": "project"}, 1, nil},
		{"profitability", map[string]any{"level": "brand", "entity_id": "42"}, 1, nil},
		{"profitability", map[string]any{"level": "agency"}, 0, nil},
		{"project_team_members", nil, 0, ErrUnknownTable}, // no soft deletes
		{"sync_state", nil, 0, ErrUnknownTable},           // not a model table
		{"profitability", map[string]any{"level; DROP TABLE x": "a"}, 0, ErrUnknownTable},
	} {
		n, err := s.LiveRows(ctx, c.table, c.scope)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || n != c.want {
			t.Errorf("LiveRows(%s, %v) = %d, %v; want %d, %v", c.table, c.scope, n, err, c.want, c.err)
		}
	}
	for stream, want := range map[string]int64{"brands": 2, "communications": 1, "projects": 0} {
		if n, err := s.RejectedCount(ctx, stream); err != nil || n != want {
			t.Errorf("RejectedCount(%s) = %d, %v; want %d", stream, n, err, want)
		}
	}
}

// TestStreamResetAndProgress: a stream in progress is one whose cursor a
// run resumes; a reset forgets its state and its details' hashes.
func TestStreamResetAndProgress(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	for _, c := range []struct {
		stream, partition, cursor string
		want                      bool
	}{
		{"communications", "", `{"increment":{"from":"2026-11-01","to":"2026-11-24","next_page":3}}`, true},
		{"finance", "budgets", `{"full_at":"2026-11-20T00:00:00Z"}`, false},
		{"brands", "list", `{}`, false},
	} {
		if err := s.SetState(ctx, c.stream, "", Checkpoint{Partition: c.partition, Cursor: json.RawMessage(c.cursor)}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.StreamInProgress(ctx, c.stream); err != nil || got != c.want {
			t.Errorf("StreamInProgress(%s) with %s = %v, %v; want %v", c.stream, c.cursor, got, err, c.want)
		}
	}
	if err := s.SetState(ctx, "communications", "", Checkpoint{Cursor: json.RawMessage(`{"backfill":{"start":"2026-01-01","end":"2026-11-24","done":true}}`)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.StreamInProgress(ctx, "communications"); got {
		t.Error("a finished backfill is in progress")
	}
	commit(t, s, page{stream: "brands", batch: fullBatch(), listed: []ListedEntity{{ID: "42", Hash: "h42"}, {ID: "43", Hash: "h43"}},
		detailTable: "brands", fetched: &FetchedDetail{ID: "42", Hash: "h42", At: time.Now()}})
	if n := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "detail_state")+" WHERE stream = 'brands' AND detail_hash IS NOT NULL"); n != 1 {
		t.Fatalf("%d fetched details, want 1", n)
	}
	if err := s.ResetStream(ctx, "brands"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, "brands", "list"); !errors.Is(err, ErrNoState) {
		t.Errorf("state after reset: %v", err)
	}
	assertCount(t, pool, 0, "SELECT count(*) FROM "+qualified(schema, "detail_state")+" WHERE detail_hash IS NOT NULL")
	if st, err := s.GetState(ctx, "finance", "budgets"); err != nil || string(st.Cursor) == "{}" {
		t.Errorf("another stream's state went with the reset: %+v %v", st, err)
	}
}

// TestMarkUnlistedWithTheListing: the end of a brands listing marks the
// brands it soft-deleted unlisted and soft-deletes their contacts, in the
// same transaction.
func TestMarkUnlistedWithTheListing(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	s.massShare = 1 // a tiny table whose listing drops a third or more: no mass delete here
	commit(t, s, page{stream: "brands", batch: fullBatch(), listed: []ListedEntity{{ID: "42", Hash: "a"}, {ID: "43", Hash: "b"}}})
	l, err := s.NewListing("brands", nil)
	if err != nil {
		t.Fatal(err)
	}
	var only43 transform.Batch
	full := fullBatch()
	brands := full.Rows("brands")
	id := slices.Index(brands.Table.ColumnNames(), "brand_id")
	for _, row := range brands.Rows {
		if row[id] == "43" {
			only43 = rowsBatch(t, "brands", row)
		}
	}
	if only43.Rows("brands") == nil {
		t.Fatalf("fixture changed: no brand 43 in %v", brands.Rows)
	}
	commit(t, s, page{stream: "brands", batch: only43, sees: l, listed: []ListedEntity{{ID: "43", Hash: "b"}}})
	commit(t, s, page{stream: "brands", ends: []*Listing{l}, unlisted: &Unlisted{Table: "brands", Children: []string{"brand_contacts"}}})
	assertCount(t, pool, 1, "SELECT count(*) FROM "+qualified(schema, "detail_state")+" WHERE listed") // 43
	// No contact of the deleted brand 42 is still live.
	assertCount(t, pool, 0, "SELECT count(*) FROM "+qualified(schema, "brand_contacts")+" WHERE _deleted_at IS NULL")
}

// TestRunsBookkeeping: dead runs closed, unfinished runs since the last
// success listed oldest first, partitions completed since an instant, the
// last runs newest first, and one lock holder at a time.
func TestRunsBookkeeping(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	runs := qualified(schema, "sync_runs")
	for i, st := range []string{"succeeded", "failed", "skipped", "partial", "running"} {
		execSQL(t, pool, "INSERT INTO "+runs+" (run_id, trigger, status, started_at) VALUES (gen_random_uuid(), 'run', $1, now() - $2 * interval '1 hour')", st, 5-i)
	}
	starts, err := s.UnfinishedRunStarts(ctx)
	if err != nil || len(starts) != 3 || !starts[0].Before(starts[1]) || !starts[1].Before(starts[2]) {
		t.Fatalf("unfinished runs %v, %v; want failed, partial, running in order", starts, err)
	}
	if err := s.CloseDeadRuns(ctx); err != nil {
		t.Fatal(err)
	}
	assertCount(t, pool, 0, "SELECT count(*) FROM "+runs+" WHERE status = 'running'")
	recent, err := s.RecentRuns(ctx, 2)
	if err != nil || len(recent) != 2 || recent[0].Status != "failed" || recent[1].Status != "partial" || recent[0].Error == "" {
		t.Errorf("recent runs %+v, %v; want the closed dead run, then the partial one", recent, err)
	}
	if err := s.SetState(ctx, "finance", "", Checkpoint{Partition: "budgets", Succeeded: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState(ctx, "finance", "", Checkpoint{Partition: "invoices"}); err != nil {
		t.Fatal(err)
	}
	done, err := s.PartitionsSucceededSince(ctx, "finance", []string{"budgets", "invoices", "payments"}, starts[0])
	if err != nil || len(done) != 1 || done[0] != "budgets" {
		t.Errorf("completed lists %v, %v; want budgets", done, err)
	}
	lock, ok, err := s.TryLock(ctx, 4242)
	if err != nil || !ok {
		t.Fatalf("first TryLock: %v %v", ok, err)
	}
	if _, ok, err := s.TryLock(ctx, 4242); err != nil || ok {
		t.Fatalf("second TryLock while held: %v %v", ok, err)
	}
	lock.Release()
	again, ok, err := s.TryLock(ctx, 4242)
	if err != nil || !ok {
		t.Fatalf("TryLock after Release: %v %v", ok, err)
	}
	again.Release()
}
