package reliability

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestS02Faults: 5% 500, 2% HTML 502, 1% truncated bodies, 1% answers
// slower than the request timeout, 2% spurious 429 and 1% dropped
// connections. One run converges to the truth and records its retries.
func TestS02Faults(t *testing.T) {
	sc := newScenario(t, 2, "Faults: 500, HTML 502, truncated, slow, spurious 429, dropped")
	t.Parallel()
	sz := currentSizes()
	o := defaultSandbox()
	o.Emails = sz.faultEmails
	o.Extra = []string{"--fault-500", "0.05", "--fault-502-html", "0.02", "--fault-truncate", "0.01",
		"--fault-slow", "0.01", "--slow-delay", "6s", "--fault-429", "0.02", "--fault-drop", "0.01"}
	r := newRig(t, sc, o)

	res := r.run(map[string]string{"AGENCY_REQUEST_TIMEOUT": "2s"}) // slow answers (6s) time out
	mustSucceed(t, "run with faults", res)
	st := r.sb.stats()
	var faults int64
	kinds := slices.Sorted(maps.Keys(st.Faults))
	var parts []string
	for _, k := range kinds {
		faults += st.Faults[k]
		parts = append(parts, fmt.Sprintf("%d %s", st.Faults[k], k))
	}
	sc.fig("%d requests, %d faults injected (%s)", st.Requests, faults, strings.Join(parts, ", "))
	sc.fig("retries %d (summary log), requests used %d", res.num("retries"), res.num("requests_used"))
	for _, k := range []string{"500", "502_html", "truncate", "slow", "429", "drop"} {
		if st.Faults[k] == 0 {
			t.Errorf("no %s fault was injected in %d requests: the scenario did not exercise it", k, st.Requests)
		}
	}
	// Every injected fault costs one failed attempt, and so one retry, with
	// one exception: a dropped connection of a GET on a reused keep-alive
	// connection is sent again by net/http's Transport itself, unseen by the
	// client: neither a retry nor counted in the quota ledger. Those hidden
	// re-sends are the difference between what the sandbox saw and what the
	// worker counted; they must be drops, and account for every fault the
	// worker did not retry. (A known defect of the client, reported: the
	// ledger under-counts them.)
	var retries, used int
	if err := r.pool.QueryRow(context.Background(), "SELECT retries, requests_used FROM "+pgx.Identifier{r.schema, "sync_runs"}.Sanitize()+
		" WHERE status = 'succeeded'").Scan(&retries, &used); err != nil {
		t.Fatalf("read the run's row: %v", err)
	}
	if retries != res.num("retries") || used != res.num("requests_used") {
		t.Errorf("sync_runs records %d retries and %d requests; the summary %d and %d", retries, used, res.num("retries"), res.num("requests_used"))
	}
	ledger := ledgerTotal(t, r.pool, r.schema)
	hidden := int(st.Requests) - ledger
	sc.fig("quota ledger %d, sandbox counted %d requests: %d dropped GET(s) re-sent by net/http's Transport unseen by the worker (known issue)", ledger, st.Requests, hidden)
	if ledger != used {
		t.Errorf("the quota ledger counts %d requests, the run used %d", ledger, used)
	}
	if hidden < 0 || int64(hidden) > st.Faults["drop"] || int64(retries+hidden) != faults {
		t.Errorf("the worker counted %d requests and %d retries; the sandbox saw %d requests and injected %d faults (%d drops)",
			ledger, retries, st.Requests, faults, st.Faults["drop"])
	}
	if hidden > 0 {
		t.Logf("KNOWN ISSUE: %d dropped connection(s) re-sent by net/http's Transport, not counted in the quota ledger", hidden)
	}
	checks, rows := compareWithTruth(t, r.pool, r.schema, r.sb.truth())
	sc.fig("%s", summarize(checks, rows))
	checkIntegrity(t, r.pool, r.schema)
}
