package reliability

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

// TestS10Secrets: neither key appears in any log line, error text or
// sync_runs row. Every scenario's processes are captured and searched
// (auditOutput) and every scenario's sync_runs rows too (auditRuns, when its
// schema is dropped); this test adds the runs where a key is most at risk —
// debug logging of every request, a rejected key, faults, the status, plan
// and config commands — then waits for all other scenarios and gives the
// verdict over everything.
func TestS10Secrets(t *testing.T) {
	sc := newScenario(t, 10, "Secrets: no key in any output or sync_runs row, across all scenarios")
	o := defaultSandbox()
	o.Brands, o.ProjectsPerBrand, o.Emails = 4, 3, 3000
	o.Extra = []string{"--fault-500", "0.05", "--fault-drop", "0.03", "--fault-429", "0.03"}
	r := newRig(t, sc, o)
	debug := map[string]string{"LOG_LEVEL": "debug"}
	mustSucceed(t, "a run at debug level with faults", r.run(debug))
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"plan"}, {"config"}, {"migrate", "status"}} {
		if res := r.run(debug, args...); res.code != 0 {
			t.Errorf("agencysync %v: %s", args, res)
		}
	}
	if res := r.run(map[string]string{"LOG_LEVEL": "debug", "AGENCY_API_KEY": revokedKey}); res.code != 3 {
		t.Errorf("the revoked key: %s, want exit 3", res)
	}
	if res := r.run(map[string]string{"LOG_LEVEL": "debug", "AGENCY_COMMS_KEY": foreignKey}, "run", "--streams", "communications"); res.code != 3 {
		t.Errorf("a wrong communications key: %s, want exit 3", res)
	}

	auditRuns(t, r.pool, r.schema) // again when the schema is dropped

	// The verdict covers every scenario of this test binary: wait for them.
	wait := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		wait = time.Until(d) - 30*time.Second
	}
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == "1" {
		// With one parallel slot, which this test holds, the others cannot
		// run while it waits: each scenario's own audit is the verdict.
		t.Log("-test.parallel=1: not waiting for the other scenarios; each audits its own outputs and runs")
	} else {
		all := make(chan struct{})
		go func() { scenarios.Wait(); close(all) }()
		select {
		case <-all:
		case <-time.After(wait):
			t.Fatalf("the other scenarios did not end within %s", wait.Round(time.Second))
		}
	}
	audit.Lock()
	outputs, size, leaks := audit.outputs, audit.bytes, append([]string(nil), audit.leaks...)
	runRows := 0
	for _, n := range audit.runRows {
		runRows += n
	}
	audit.Unlock()
	sc.fig("%d captured outputs (%s) and %d sync_runs rows searched for the %d keys: %d found", outputs, mb(size), runRows, len(secrets()), len(leaks))
	if len(leaks) > 0 {
		t.Errorf("keys leaked:\n%v", leaks)
	}
	if outputs < 10 || runRows == 0 {
		t.Errorf("only %d outputs and %d sync_runs rows were searched: the audit saw too little to conclude", outputs, runRows)
	}
}

func mb(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.0f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
