package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
			due, err := ds.Due(ctx, pool, s, p)
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
	if _, err := ds.Due(context.Background(), pool, "brands", RefreshPolicy{Now: time.Now()}); !errors.Is(err, ErrBadMaxAge) {
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
