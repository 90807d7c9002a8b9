package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// profitabilityRecords transforms profitability rows of one level, as the
// list returns them.
func profitabilityRecords(t *testing.T, level string, raws ...string) transform.Batch {
	t.Helper()
	s, _ := stream.Lookup("finance")
	recs := make([]stream.Record, len(raws))
	for i, r := range raws {
		recs[i] = stream.Record{Raw: json.RawMessage(r)}
	}
	b := transform.Records(transform.Input{Stream: s, Endpoint: stream.EndpointProfitability, Params: map[string]string{"level": level}}, recs)
	if len(b.Rejects) != 0 {
		t.Fatalf("rejects: %+v", b.Rejects)
	}
	return b
}

// StoredRecords pages a table by its (composite) key, live rows only, with
// the key as text and the raw columns as stored.
func TestStoredRecordsKeysetPaging(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	b := profitabilityRecords(t, "brand",
		`{"entity_id":"42","period":"2024-11","revenue":"1200.50","cost":"800","margin":"400.50","currency":"RON"}`,
		`{"entity_id":"42","period":"2024-10","revenue":"900","cost":"950","margin":"-50","currency":"RON"}`,
		`{"entity_id":"7","period":"2024-11","revenue":"10","currency":"EUR"}`)
	b.Append(profitabilityRecords(t, "project", `{"entity_id":"P-3","period":"2024-11","revenue":"5"}`))
	commit(t, s, page{batch: b})
	if _, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET _deleted_at = now() WHERE entity_id = '7'`, qualified(schema, "profitability"))); err != nil {
		t.Fatal(err)
	}

	var keys []string
	var after []string
	for pages := 0; ; pages++ {
		recs, err := s.StoredRecords(ctx, "profitability", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			if pages != 2 {
				t.Errorf("%d pages of 2, want 2", pages)
			}
			break
		}
		for _, r := range recs {
			keys = append(keys, r.Key["level"]+"/"+r.Key["entity_id"]+"/"+r.Key["period"])
			var raw map[string]any
			if err := json.Unmarshal(r.Raw["raw"], &raw); err != nil || raw["entity_id"] != r.Key["entity_id"] {
				t.Errorf("raw of %v: %s (%v)", r.Key, r.Raw["raw"], err)
			}
		}
		last := recs[len(recs)-1].Key
		after = []string{last["level"], last["entity_id"], last["period"]}
	}
	want := "[brand/42/2024-10-01 brand/42/2024-11-01 project/P-3/2024-11-01]"
	if fmt.Sprint(keys) != want {
		t.Errorf("keys %v, want %s (key order, the deleted row left out)", keys, want)
	}

	// The records as stored rebuild into the rows they came from.
	fin, _ := stream.Lookup("finance")
	recs, err := s.StoredRecords(ctx, "profitability", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := transform.Rebuild(fin, "profitability", recs, day(2024, 11, 5).UTC())
	if err != nil {
		t.Fatal(err)
	}
	if c := commit(t, s, page{batch: rb}); c.Written() != 0 {
		t.Errorf("rebuilding unchanged records wrote %+v", c.Tables)
	}

	if _, err := s.StoredRecords(ctx, "project_team_members", nil, 10); !errors.Is(err, ErrUnknownTable) {
		t.Errorf("a child table: %v, want ErrUnknownTable", err)
	}
	if _, err := s.StoredRecords(ctx, "profitability", []string{"brand"}, 10); err == nil {
		t.Error("a cursor of one value for a key of three")
	}
}

// RejectedRecords lists a table's rejects by id with their keys parsed;
// KeysStored says which keys have a row; CommitRebuild deletes the resolved
// rejects in the page's transaction, and not at all when the page fails.
func TestRejectedRecordsRetry(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	rejects := []transform.Reject{
		transform.NewReject(stream.RejectProfitability, "brand/42/2024-11", json.RawMessage(`{"entity_id":"42","period":"2024-11","revenue":"x"}`), errors.New("revenue: not a number")),
		transform.NewReject(stream.RejectProfitability, "", json.RawMessage(`{"period":"2024-11"}`), errors.New("entity_id is missing")),
		transform.NewReject(stream.RejectInvoices, "INV-9", json.RawMessage(`{"id":"INV-9"}`), errors.New("amount is missing")),
	}
	commit(t, s, page{batch: transform.Batch{Rejects: rejects}})
	commit(t, s, page{batch: profitabilityRecords(t, "project", `{"entity_id":"P-3","period":"2024-11","revenue":"5"}`)})

	got, err := s.RejectedRecords(ctx, "profitability", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID >= got[1].ID {
		t.Fatalf("rejects %+v, want the two of profitability by id", got)
	}
	if kv := got[0].KeyValues; kv["level"] != "brand" || kv["entity_id"] != "42" || kv["period"] != "2024-11-01" || !json.Valid(got[0].Payload) ||
		!strings.Contains(string(got[0].Payload), `"revenue": "x"`) {
		t.Errorf("first reject %+v", got[0])
	}
	if got[1].KeyValues != nil {
		t.Errorf("a hash key parsed as %v", got[1].KeyValues)
	}
	if more, err := s.RejectedRecords(ctx, "profitability", got[0].ID, 10); err != nil || len(more) != 1 || more[0].ID != got[1].ID {
		t.Errorf("after the first: %+v, %v", more, err)
	}

	stored, err := s.KeysStored(ctx, "profitability", [][]any{
		{"project", "P-3", *day(2024, 11, 1)}, {"brand", "42", *day(2024, 11, 1)}, {"project", "P-3", *day(2024, 10, 1)}})
	if err != nil || fmt.Sprint(stored) != "[true false false]" {
		t.Errorf("stored %v, %v", stored, err)
	}

	// A failing page deletes nothing.
	bad := transform.Batch{Rejects: []transform.Reject{{Stream: "x", Key: "k", Payload: json.RawMessage(`{}`), Error: "e"}}}
	bad.Tables = map[string]*transform.TableRows{"profitability": {Rows: [][]any{{"brand"}}}}
	if _, _, err := s.CommitRebuild(ctx, "", RebuildPage{Batch: bad}, []int64{got[0].ID}); err == nil {
		t.Fatal("a malformed page committed")
	}
	if n := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "rejected_records")); n != 3 {
		t.Fatalf("%d rejects after a failed page, want 3", n)
	}
	fin, _ := stream.Lookup("finance")
	fixed, err := transform.Rebuild(fin, "profitability", []transform.Stored{{Key: got[0].KeyValues,
		Raw: map[string]json.RawMessage{"raw": json.RawMessage(`{"entity_id":"42","period":"2024-11","revenue":"12.5"}`)}}}, *day(2024, 11, 5))
	if err != nil {
		t.Fatal(err)
	}
	c, resolved, err := s.CommitRebuild(ctx, "", RebuildPage{Batch: fixed,
		State: &Checkpoint{Partition: "profitability", Cursor: json.RawMessage(`{"after_id":1}`)}}, []int64{got[0].ID})
	if err != nil || resolved != 1 || c.Tables["profitability"].Inserted != 1 {
		t.Fatalf("commit: %+v, %d resolved, %v", c, resolved, err)
	}
	// The resolved reject is gone.
	assertCount(t, pool, 0, "SELECT count(*) FROM "+qualified(schema, "rejected_records")+" WHERE record_key = 'brand/42/2024-11'")
	if err := s.DeleteState(ctx, RebuildStream, "profitability"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, RebuildStream, "profitability"); !errors.Is(err, ErrNoState) {
		t.Errorf("state after DeleteState: %v", err)
	}
}

// A rebuild is no sync: its runs, finished or not, neither end nor extend
// the unfinished syncs whose completed lists the next sync skips.
func TestUnfinishedRunStartsIgnoreRebuilds(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	for i, r := range []struct{ trigger, status string }{{"run", "succeeded"}, {"run", "partial"}, {"rebuild", "succeeded"}, {"rebuild", "partial"}} {
		if _, err := pool.Exec(ctx, "INSERT INTO "+qualified(schema, "sync_runs")+` (run_id, trigger, status, started_at)
VALUES (gen_random_uuid(), $1, $2, now() - $3 * interval '1 hour')`, r.trigger, r.status, 4-i); err != nil {
			t.Fatal(err)
		}
	}
	starts, err := s.UnfinishedRunStarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var partial time.Time
	if err := pool.QueryRow(ctx, "SELECT started_at FROM "+qualified(schema, "sync_runs")+" WHERE trigger = 'run' AND status = 'partial'").Scan(&partial); err != nil {
		t.Fatal(err)
	}
	if len(starts) != 1 || !starts[0].Equal(partial) {
		t.Errorf("unfinished runs %v, want only the partial sync's start %v", starts, partial)
	}
}
