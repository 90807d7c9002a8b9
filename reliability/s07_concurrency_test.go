package reliability

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestS07Concurrency: two workers on one warehouse schema at once — one
// runs, the other records a skipped run and exits 0; never both. First both
// start together on a fresh schema (migrations included), then the second
// starts while the first is known to be mid-run.
func TestS07Concurrency(t *testing.T) {
	sc := newScenario(t, 7, "Concurrency: two workers at once, one runs, one skips")
	o := defaultSandbox()
	o.Brands, o.ProjectsPerBrand, o.Latency = 4, 3, 20*time.Millisecond
	r := newRig(t, sc, o)
	ctx := context.Background()

	// Round 1: both at once.
	a, b := startWorker(t, r.env, "run"), startWorker(t, r.env, "run")
	ra, rb := a.wait(), b.wait()
	statuses := []string{ra.status(), rb.status()}
	slices.Sort(statuses)
	if ra.code != 0 || rb.code != 0 || !slices.Equal(statuses, []string{"skipped", "succeeded"}) {
		t.Fatalf("two workers started together: %s and %s; want one succeeded and one skipped, both exit 0", ra, rb)
	}
	sc.fig("started together: %s and %s (exit %d and %d)", ra.status(), rb.status(), ra.code, rb.code)

	// Round 2: the second starts while the first is mid-run (its running row
	// is in sync_runs and it has sent requests).
	// A slower service keeps the first run going for seconds.
	runs := pgx.Identifier{r.schema, "sync_runs"}.Sanitize()
	r.sb.admin("POST", "faults", map[string]string{"latency": "150ms"}, nil)
	before := r.sb.stats().Keyed()
	first := startWorker(t, r.env, "run", "--full-refresh", "communications")
	waitFor(t, "the first worker running", 10*time.Millisecond, func() bool {
		var n int
		err := r.pool.QueryRow(ctx, "SELECT count(*) FROM "+runs+" WHERE status = 'running'").Scan(&n)
		return (err == nil && n == 1 && r.sb.stats().Keyed() > before) || !first.running()
	})
	if !first.running() {
		t.Fatalf("the first worker ended before the second could start: %s", first.wait())
	}
	second := runWorker(t, r.env, "run")
	stillRunning := first.running()
	rf := first.wait()
	if second.code != 0 || second.status() != "skipped" {
		t.Errorf("the second worker, started mid-run: %s (the first still running when it ended: %v)", second, stillRunning)
	}
	mustSucceed(t, "the first worker", rf)
	sc.fig("started mid-run: the second %s in %s (the first still running: %v, then %s)", second.status(), second.took.Round(time.Millisecond), stillRunning, rf.status())

	got := runStatuses(t, r.pool, r.schema)
	if got["succeeded"] != 2 || got["skipped"] != 2 || len(got) != 2 {
		t.Errorf("sync_runs: %v, want 2 succeeded and 2 skipped", got)
	}
	// The skipped runs sent nothing: the sandbox saw exactly the succeeded runs' requests.
	var used int
	if err := r.pool.QueryRow(ctx, "SELECT coalesce(sum(requests_used), 0) FROM "+runs+" WHERE status = 'succeeded'").Scan(&used); err != nil {
		t.Fatal(err)
	}
	if st := r.sb.stats(); int(st.Keyed()) != used {
		t.Errorf("the sandbox saw %d requests with the key; the succeeded runs used %d", st.Keyed(), used)
	}
	var skippedReason string
	err := r.pool.QueryRow(ctx, "SELECT error FROM "+runs+" WHERE status = 'skipped' LIMIT 1").Scan(&skippedReason)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	sc.fig("sync_runs: %d succeeded, %d skipped (%q); requests only from the succeeded runs", got["succeeded"], got["skipped"], skippedReason)
	checks, rows := compareWithTruth(t, r.pool, r.schema, r.sb.truth())
	sc.fig("%s", summarize(checks, rows))
}
