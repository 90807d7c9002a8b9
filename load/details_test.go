package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// A simulated quarter of nightly runs over 4 400 entities (400 brands, 4 000
// projects) on a fake clock, every entity listed on the same first day:
// every detail is refreshed before it is older than the maximum age, and no
// day refreshes more than its even share plus what changed (new entities
// included) — but the day after a missed run, which catches up on one more
// share.
func TestDetailRefreshStaggeredOverDays(t *testing.T) {
	t.Parallel()
	ds, pool := detailStateOnSchema(t)
	ctx := context.Background()
	const (
		maxAgeDays = 30
		days       = 75
		missed     = 40 // no run that day
		// slack: the entities added later take consecutive numbers, but
		// where they start in the cycle of slots depends on the others.
		slack = 2
	)
	maxAge := maxAgeDays * 24 * time.Hour
	rng := rand.New(rand.NewPCG(13, 3))
	type entity struct {
		hash    int       // version of its detail-owned fields
		fetched time.Time // the test's own record of the last fetch
		changed bool      // changed since its last fetch
	}
	streams := map[string][]*entity{"brands": make([]*entity, 400), "projects": make([]*entity, 4000)}
	for _, list := range streams {
		for i := range list {
			list[i] = &entity{changed: true}
		}
	}
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	changed := map[string]int{} // entities changed since the last run
	for day := 0; day <= days; day++ {
		now := start.AddDate(0, 0, day).Add(time.Duration(rng.IntN(60)) * time.Minute) // the nightly run starts at 02:00–03:00
		if day > 0 {
			for s, list := range streams {
				for _, e := range list {
					if rng.IntN(100) == 0 { // 1 % of the entities change each day
						e.hash++
						if !e.changed {
							e.changed = true
							changed[s]++
						}
					}
				}
				if day%20 == 0 { // new entities now and then
					for range 7 {
						streams[s] = append(streams[s], &entity{changed: true})
						changed[s]++
					}
				}
			}
		}
		if day == missed {
			continue
		}
		for s, list := range streams {
			entries := make([]ListedEntity, len(list))
			for i, e := range list {
				entries[i] = ListedEntity{ID: fmt.Sprint(i), Hash: fmt.Sprint(e.hash)}
			}
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return ds.recordListed(ctx, tx, s, entries) }); err != nil {
				t.Fatal(err)
			}
			p := RefreshPolicy{MaxAge: maxAge, Now: now}
			n, err := ds.CountDue(ctx, pool, s, p)
			if err != nil {
				t.Fatal(err)
			}
			due, err := ds.Due(ctx, pool, s, p, ListRecords{})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(due) {
				t.Errorf("day %d %s: CountDue %d, Due %d", day, s, n, len(due))
			}
			share := (len(list) + maxAgeDays - 1) / maxAgeDays
			limit := share + changed[s] + slack
			if day == missed+1 {
				limit += share
			}
			if day > 0 && len(due) > limit {
				t.Errorf("day %d %s: %d details due, more than the share %d plus %d changed (+%d)", day, s, len(due), share, changed[s], slack)
			}
			dueSet := map[string]bool{}
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				for _, d := range due {
					dueSet[d.ID] = true
					if err := ds.fetched(ctx, tx, s, d.ID, d.Hash, now); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range list {
				id := fmt.Sprint(i)
				if dueSet[id] {
					e.fetched, e.changed = now, false
					continue
				}
				if e.changed {
					t.Errorf("day %d %s %s: changed but not due", day, s, id)
				}
				if age := now.Sub(e.fetched); age >= maxAge {
					t.Errorf("day %d %s %s: %s old and not refreshed", day, s, id, age)
				}
			}
			changed[s] = 0
		}
		if t.Failed() {
			return
		}
	}
}

func TestDetailRefreshNeedsAPositiveMaxAge(t *testing.T) {
	t.Parallel()
	ds, pool := detailStateOnSchema(t)
	if _, err := ds.Due(context.Background(), pool, "brands", RefreshPolicy{Now: time.Now()}, ListRecords{}); !errors.Is(err, ErrBadMaxAge) {
		t.Errorf("Due without a max age: %v, want ErrBadMaxAge", err)
	}
	if _, err := NewDetailState(""); err == nil {
		t.Error("NewDetailState accepted an empty schema")
	}
}

// detailStateOnSchema returns a DetailState on a fresh, migrated schema and
// the pool it is read through.
func detailStateOnSchema(t *testing.T) (*DetailState, *pgxpool.Pool) {
	t.Helper()
	pool, schema := warehousetestSchema(t)
	ds, err := NewDetailState(schema)
	if err != nil {
		t.Fatal(err)
	}
	return ds, pool
}

// Due returns, with each due entity, its list record as its table stores it
// (the raw column the entity list fills): the base its detail is read with.
// An entity without a row has none; without ListRecords, none is read.
func TestDueWithListRecords(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	brands, ok := stream.Lookup("brands")
	if !ok {
		t.Fatal("no brands stream")
	}
	records := ListRecordsOf(brands)
	if records != (ListRecords{Table: "brands", Key: "brand_id", KeyType: "text", Raw: "raw"}) {
		t.Fatalf("ListRecordsOf(brands) = %+v", records)
	}
	if r := ListRecordsOf(&stream.Stream{Name: "none"}); r != (ListRecords{}) {
		t.Errorf("a stream without entities: %+v", r)
	}
	list := `{"brand_info":{"id":"42","name":"Cofetăria","account_manager":"Ana Pop"}}`
	commit(t, s, page{batch: transform.Records(transform.Input{Stream: brands, Endpoint: stream.EndpointBrands},
		[]stream.Record{{Raw: json.RawMessage(list)}})})
	ds, err := NewDetailState(schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return ds.recordListed(ctx, tx, "brands", []ListedEntity{{ID: "42", Hash: "h42"}, {ID: "43", Hash: "h43"}})
	}); err != nil {
		t.Fatal(err)
	}
	p := RefreshPolicy{MaxAge: 24 * time.Hour, Now: time.Now()}
	due, err := ds.Due(ctx, pool, "brands", p, records)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 2 {
		t.Fatalf("due = %+v", due)
	}
	for _, d := range due {
		switch d.ID {
		case "42":
			var got, want any
			if err := json.Unmarshal(d.Base, &got); err != nil || json.Unmarshal([]byte(list), &want) != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("brand 42: base %s (%v), want the stored list record %s", d.Base, err, list)
			}
		case "43":
			if d.Base != nil {
				t.Errorf("brand 43 has no row, but a base %s", d.Base)
			}
		}
	}
	plain, err := ds.Due(ctx, pool, "brands", p, ListRecords{})
	if err != nil || len(plain) != 2 || plain[0].Base != nil || plain[1].Base != nil {
		t.Errorf("Due without ListRecords = %+v, %v", plain, err)
	}
}

// TestDueWithListRecordsPlansWithoutStatistics: Due's join of 20 000 due
// projects to their table, neither ever analysed (a first sync lists them
// seconds before its details task asks which are due), is not planned as a
// nested loop that re-reads a whole input per due entity — neither when
// every project is due nor when a few are.
func TestDueWithListRecordsPlansWithoutStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema, rec := planPool(t)
	ds, err := NewDetailState(schema)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	execSQL(t, pool, fmt.Sprintf(`INSERT INTO %s (project_id, name, raw)
SELECT g::text, 'Proiect ' || g, jsonb_build_object('id', g::text, 'name', 'Proiect ' || g, 'status', 'in_progress')
FROM generate_series(1, %d) AS g`, qualified(schema, "projects"), n))
	entries := make([]ListedEntity, n)
	for i := range entries {
		entries[i] = ListedEntity{ID: fmt.Sprint(i + 1), Hash: "h"}
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return ds.recordListed(ctx, tx, "projects", entries) }); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"projects", "detail_state"} {
		if n := queryInt(t, pool, "SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass", qualified(schema, table)); n >= 0 {
			t.Fatalf("%s has statistics (reltuples %d): the test needs a table never analysed", table, n)
		}
	}
	projects, _ := stream.Lookup("projects")
	now := time.Now()
	p := RefreshPolicy{MaxAge: 30 * 24 * time.Hour, Now: now}
	explain := func(what string, want int) {
		t.Helper()
		rec.take()
		due, err := ds.Due(ctx, pool, "projects", p, ListRecordsOf(projects))
		if err != nil {
			t.Fatal(err)
		}
		if len(due) != want || len(due) > 0 && len(due[0].Base) == 0 {
			t.Fatalf("%s: %d due (want %d), the first with base %q", what, len(due), want, due[0].Base)
		}
		stmts := rec.take()
		if len(stmts) != 1 {
			t.Fatalf("%s: %d statements recorded, want Due's", what, len(stmts))
		}
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return explainAll(t, ctx, tx, what, stmts) }); err != nil {
			t.Fatal(err)
		}
	}
	explain("every project due", n)
	// All fetched now but a few changed since.
	execSQL(t, pool, "UPDATE "+qualified(schema, "detail_state")+" SET detail_hash = CASE WHEN entity_id IN ('7', '70', '700') THEN 'old' ELSE list_hash END, detail_synced_at = $1", now)
	explain("three projects due", 3)
}
