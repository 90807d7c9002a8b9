package reliability

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestS05BadRecords: 1% of the e-mails and finance records are malformed.
// Each lands in rejected_records with its payload and the reason, every
// other record loads, and the run reports how many it rejected; it exits 0
// but ends warning (open rejects). A second run adds no duplicate reject,
// and is warning too: the rejects are still open.
func TestS05BadRecords(t *testing.T) {
	sc := newScenario(t, 5, "Bad records: 1% malformed land in rejected_records")
	sz := currentSizes()
	r := newRig(t, sc, agencyWith(sz.badEmails, "--bad-record-rate", "0.01"))
	tr := r.sb.truth()
	badTotal := tr.bad()
	perStream := map[string]int{}
	for s := range tr {
		if _, b := tr.counts(s); b > 0 {
			perStream[s] = b
		}
	}
	if perStream["communications"] == 0 || len(perStream) < 2 {
		t.Fatalf("the sandbox made too few records bad to test: %v", perStream)
	}

	res := r.run(nil)
	mustWarn(t, "run with bad records", res)
	sc.fig("%d bad records in the truth (%s); the run reports %d rejected", badTotal, tally(perStream), res.num("rejected"))
	if res.num("rejected") != badTotal {
		t.Errorf("the run reports %d rejected records; the truth has %d bad", res.num("rejected"), badTotal)
	}
	ctx := context.Background()
	rr := pgx.Identifier{r.schema, "rejected_records"}.Sanitize()
	var rows, incomplete, recorded int
	if err := r.pool.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE payload IS NULL OR payload = 'null' OR coalesce(error, '') = '') FROM "+rr).Scan(&rows, &incomplete); err != nil {
		t.Fatal(err)
	}
	if err := r.pool.QueryRow(ctx, "SELECT rejected FROM "+pgx.Identifier{r.schema, "sync_runs"}.Sanitize()+" WHERE status = 'warning'").Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if rows != badTotal || incomplete != 0 || recorded != badTotal {
		t.Errorf("rejected_records holds %d rows (%d without payload or error), sync_runs.rejected %d; the truth has %d bad", rows, incomplete, recorded, badTotal)
	}
	var sample string
	if err := r.pool.QueryRow(ctx, "SELECT stream || ' ' || record_key || ': ' || error FROM "+rr+" ORDER BY rejected_id LIMIT 1").Scan(&sample); err == nil {
		t.Logf("a reject: %s", sample)
	}
	checks, total := compareWithTruth(t, r.pool, r.schema, tr)
	sc.fig("%s (rejected_records compared by stream, key and payload)", summarize(checks, total))

	again := r.run(nil)
	mustWarn(t, "second run", again)
	if again.num("rows_written") != 0 {
		t.Errorf("the unchanged re-run wrote %v", again.summary["rows_by_table"])
	}
	var after int
	if err := r.pool.QueryRow(ctx, "SELECT count(*) FROM "+rr).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != rows {
		t.Errorf("rejected_records grew from %d to %d rows on a re-run", rows, after)
	}
	sc.fig("re-run: %d rejects seen again, %d rows in rejected_records (no duplicates), %d rows written", again.num("rejected"), after, again.num("rows_written"))
}
