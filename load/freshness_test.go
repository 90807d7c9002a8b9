package load

import (
	"maps"
	"testing"
	"time"
)

// TestFreshnessDefinition: a stream's last success is the oldest last
// success of its regular partitions; details, backfill and verify do not
// age it; a regular partition that never succeeded leaves it unknown; the
// lag is the database's now minus it.
func TestFreshnessDefinition(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	execSQL(t, pool, `INSERT INTO `+qualified(schema, "sync_state")+` (stream, partition, last_success_at) VALUES
	('brands', 'list', now() - interval '10 seconds'),
	('brands', 'details', now() - interval '3 days'),
	('finance', 'budgets', now() - interval '20 seconds'),
	('finance', 'invoices', now() - interval '2 hours'),
	('communications', '', now() - interval '30 seconds'),
	('communications', 'backfill', now() - interval '9 days'),
	('communications', 'verify', NULL),
	('projects', 'list', NULL),
	('projects', 'details', now())`)
	fresh, err := s.Freshness(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"brands": 10 * time.Second, "finance": 2 * time.Hour, "communications": 30 * time.Second, "projects": -1}
	if len(fresh) != len(want) {
		t.Fatalf("Freshness = %+v", fresh)
	}
	common := time.Duration(-1)
	for _, f := range fresh {
		w, ok := want[f.Stream]
		switch {
		case !ok:
			t.Errorf("unexpected stream %q", f.Stream)
		case w < 0:
			if f.LastSuccessAt != nil || f.Lag != nil {
				t.Errorf("%s: last success %v lag %v, want none (its list never succeeded)", f.Stream, f.LastSuccessAt, f.Lag)
			}
		case f.LastSuccessAt == nil || f.Lag == nil:
			t.Errorf("%s: no last success", f.Stream)
		default:
			// The rows share one transaction time and the view one now():
			// every lag is its offset plus the same time since the insert.
			if d := f.Now.Sub(*f.LastSuccessAt) - *f.Lag; d > time.Millisecond || d < -time.Millisecond {
				t.Errorf("%s: lag %s, now - last success %s", f.Stream, *f.Lag, f.Now.Sub(*f.LastSuccessAt))
			}
			since := *f.Lag - w
			if since < 0 {
				t.Errorf("%s: lag %s, want at least %s", f.Stream, *f.Lag, w)
			}
			if common < 0 {
				common = since
			} else if d := since - common; d > time.Millisecond || d < -time.Millisecond {
				t.Errorf("%s: lag %s is not its offset %s plus the %s of the others", f.Stream, *f.Lag, w, common)
			}
		}
	}
}

// TestFreshnessOfAStreamThatLandedNothing: a stream that never landed a
// row while some of its records were rejected is never fresh, whatever its
// partitions' last success says; one that landed rows, or whose lists were
// simply empty, is.
func TestFreshnessOfAStreamThatLandedNothing(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	execSQL(t, pool, `INSERT INTO `+qualified(schema, "sync_state")+` (stream, partition, last_success_at, rows_total, rejected_total) VALUES
	('rejected_all', '', now(), 0, 600),
	('landed_some', '', now(), 12, 600),
	('empty', 'list', now(), 0, 0)`)
	fresh, err := s.Freshness(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range fresh {
		got[f.Stream] = f.LastSuccessAt != nil
	}
	if want := map[string]bool{"rejected_all": false, "landed_some": true, "empty": true}; !maps.Equal(got, want) {
		t.Errorf("fresh = %v, want %v", got, want)
	}
}
