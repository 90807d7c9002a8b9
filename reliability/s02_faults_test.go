package reliability

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestS02Faults: 5% 500, 2% HTML 502, 1% truncated bodies, 1% answers
// slower than the request timeout, 2% spurious 429 and 1% dropped
// connections. One run converges to the truth and records its retries.
func TestS02Faults(t *testing.T) {
	sc := newScenario(t, 2, "Faults: 500, HTML 502, truncated, slow, spurious 429, dropped")
	sz := currentSizes()
	r := newRig(t, sc, agencyWith(sz.faultEmails, "--fault-500", "0.05", "--fault-502-html", "0.02", "--fault-truncate", "0.01",
		"--fault-slow", "0.01", "--slow-delay", "6s", "--fault-429", "0.02", "--fault-drop", "0.01"))

	res := r.run(map[string]string{"AGENCY_REQUEST_TIMEOUT": "2s"})
	mustSucceed(t, "run with faults", res)
	st := r.sb.stats()
	var faults int64
	for _, n := range st.Faults {
		faults += n
	}
	sc.fig("%d requests, %d faults injected (%s)", st.Requests, faults, tally(st.Faults))
	sc.fig("retries %d (summary log), requests used %d", res.num("retries"), res.num("requests_used"))
	for _, k := range []string{"500", "502_html", "truncate", "slow", "429", "drop"} {
		if st.Faults[k] == 0 {
			t.Errorf("no %s fault was injected in %d requests: the scenario did not exercise it", k, st.Requests)
		}
	}
	// Reconcile the worker's account with the sandbox's, attempt by attempt.
	// Every injected fault costs one failed attempt: a retry logged with the
	// fault's error class, or, for a connection dropped on a reused
	// keep-alive GET, a re-send by net/http's Transport (logged, counted as a
	// retry and in the quota ledger). An attempt that failed on the network
	// before the sandbox saw it is still counted by the worker, which cannot
	// know: the ledger may exceed what the service saw, never fall short.
	var retries, used int
	if err := r.pool.QueryRow(context.Background(), "SELECT retries, requests_used FROM "+pgx.Identifier{r.schema, "sync_runs"}.Sanitize()+
		" WHERE status = 'succeeded'").Scan(&retries, &used); err != nil {
		t.Fatalf("read the run's row: %v", err)
	}
	if retries != res.num("retries") || used != res.num("requests_used") {
		t.Errorf("sync_runs records %d retries and %d requests; the summary %d and %d", retries, used, res.num("retries"), res.num("requests_used"))
	}
	ledger := ledgerTotal(t, r.pool, r.schema)
	if ledger != used {
		t.Errorf("the quota ledger counts %d requests, the run used %d", ledger, used)
	}
	classes := map[string]int{}
	for _, m := range res.logLines("request failed, retrying") {
		c, _ := m["error_class"].(string)
		classes[c]++
	}
	resends := 0
	for _, m := range res.logLines("request re-sent by the HTTP transport after a dead connection") {
		n, _ := m["resends"].(float64)
		resends += int(n)
	}
	var logged int
	for _, n := range classes {
		logged += n
	}
	unseen := ledger - int(st.Keyed()) // the keyless clock probe is no quota request
	sc.fig("quota ledger %d, sandbox saw %d with the key: %d attempt(s) failed on the network before reaching it", ledger, st.Keyed(), unseen)
	sc.fig("retries by class %v, %d transport re-send(s)", classes, resends)
	if unseen < 0 {
		t.Errorf("the quota ledger counts %d requests but the sandbox saw %d with the key: the worker under-counts its quota", ledger, st.Keyed())
	}
	if logged+resends != retries {
		t.Errorf("the worker logged %d retries and %d re-sends, its summary says %d retries", logged, resends, retries)
	}
	want := map[string]int{
		"server":       int(st.Faults["500"] + st.Faults["502_html"]),
		"malformed":    int(st.Faults["truncate"]),
		"rate_limited": int(st.Faults["429"] + st.RateLimited),
	}
	// A fault is seen as its own class, or as a timeout when the answer
	// came too late for the client (a loaded machine can delay any answer
	// past the 2s timeout; the sandbox has counted it by then).
	late := 0
	for c, n := range want {
		if classes[c] > n {
			t.Errorf("%d retries of class %s, more than the %d injected faults of that kind", classes[c], c, n)
		}
		late += max(n-classes[c], 0)
	}
	// Timeouts and network failures: one per slow answer and dropped
	// connection, less the drops the Transport re-sent, plus the attempts
	// the sandbox never saw, plus the faults above that came too late. What
	// is left are healthy answers that came too late: reported, and bounded.
	gotNet := classes["timeout"] + classes["network"] + resends
	wantNet := int(st.Faults["slow"]+st.Faults["drop"]) + max(unseen, 0) + late
	healthyLate := gotNet - wantNet
	sc.fig("%d timeout/network retries and re-sends: %d slow, %d drops, %d unseen attempts, %d faults answered too late, %d healthy answers too late",
		gotNet, st.Faults["slow"], st.Faults["drop"], max(unseen, 0), late, healthyLate)
	if healthyLate < 0 || healthyLate > 3 || late > 3 {
		t.Errorf("%d timeout/network retries and re-sends do not account for the faults: %d slow, %d drops, %d unseen attempts, %d faults answered too late (at most 3 late answers expected)",
			gotNet, st.Faults["slow"], st.Faults["drop"], unseen, late)
	}
	if healthyLate > 0 || late > 0 {
		t.Logf("%d fault(s) and %d healthy answer(s) reached the worker after its 2s timeout: a loaded machine", late, healthyLate)
	}
	for c := range classes {
		if _, ok := want[c]; !ok && c != "timeout" && c != "network" {
			t.Errorf("%d retries of class %s, which no injected fault explains", classes[c], c)
		}
	}
	checks, rows := compareWithTruth(t, r.pool, r.schema, r.sb.truth())
	sc.fig("%s", summarize(checks, rows))
	checkIntegrity(t, r.pool, r.schema)
}
