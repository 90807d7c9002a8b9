package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/webhook"
)

// statusJSON is what these tests read of `status --json`.
type statusJSON struct {
	Streams []struct {
		Stream      string  `json:"stream"`
		Rejected    int     `json:"rejected"`
		LastSuccess *string `json:"last_success"`
	} `json:"streams"`
	Runs []struct {
		Status          string `json:"status"`
		OpenRejects     int    `json:"open_rejects"`
		RejectsResolved int    `json:"rejects_resolved"`
	} `json:"runs"`
}

func readStatus(t *testing.T, vars map[string]string) statusJSON {
	t.Helper()
	code, out, errs := mainWith(vars, "status", "--json")
	if code != ExitOK {
		t.Fatalf("status exit %d: %s", code, errs)
	}
	var rep statusJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return rep
}

func (s statusJSON) stream(t *testing.T, name string) (rejected int, fresh bool) {
	t.Helper()
	for _, st := range s.Streams {
		if st.Stream == name {
			return st.Rejected, st.LastSuccess != nil
		}
	}
	t.Fatalf("no stream %s in status", name)
	return 0, false
}

// TestRejectedInvoicesWarnNotifyAndResolve: against a service whose
// invoices all fail to decode, run exits 0 with the run `warning` (status,
// status --json), finance not fresh, and the webhook gets one message naming
// invoices, redacted; with SYNC_FAIL_ON=rejects the run exits 1, and a bad
// SYNC_FAIL_ON exits 2 naming it. With the field map in force, the
// invoices land: status shows 0 open rejects, the webhook says the sync
// recovered, and the next run is succeeded.
func TestRejectedInvoicesWarnNotifyAndResolve(t *testing.T) {
	t.Parallel()
	hook := webhook.Start(t)
	messages := hook.Texts
	sb, o := startSandbox(t, func(o *sandbox.Options) { o.Variants = []string{sandbox.VariantRenamedFields} })
	vars := syncEnv(t, sb, o, map[string]string{"SYNC_NOTIFY_URL": hook.URL("/services/T0/B0/hooksecretpath")})

	code, out, errs := mainWith(vars, "run")
	if code != ExitOK {
		t.Fatalf("run exit %d, want 0 (warnings exit 0 by default):\n%s", code, errs)
	}
	assertNoSecrets(t, out, errs)
	rep := readStatus(t, vars)
	invoices, fresh := rep.stream(t, "finance")
	if len(rep.Runs) != 1 || rep.Runs[0].Status != "warning" || invoices == 0 || rep.Runs[0].OpenRejects != invoices || fresh {
		t.Fatalf("status after the run: %+v (finance: %d rejected, fresh %v); want warning, every invoice open, finance not fresh", rep, invoices, fresh)
	}
	if code, out, _ := mainWith(vars, "status"); code != ExitOK || !strings.Contains(out, "ended warning") {
		t.Errorf("status (table) does not say the run ended warning:\n%s", out)
	}
	if got := messages(); len(got) != 1 || !strings.Contains(got[0], "warnings") || !strings.Contains(got[0], "invoices") ||
		strings.Contains(got[0], "hooksecretpath") {
		t.Fatalf("webhook messages %q, want one naming invoices", got)
	}
	assertNoSecrets(t, messages()...)

	vars["SYNC_FAIL_ON"] = "rejects"
	if code, _, errs := mainWith(vars, "run", "--streams", "finance"); code != ExitFailure || !strings.Contains(errs, "SYNC_FAIL_ON") {
		t.Fatalf("run with SYNC_FAIL_ON=rejects: exit %d, want 1 naming SYNC_FAIL_ON:\n%s", code, errs)
	}
	vars["SYNC_FAIL_ON"] = "new_fields"
	if code, _, errs := mainWith(vars, "run", "--streams", "finance"); code != ExitOK {
		t.Fatalf("run with SYNC_FAIL_ON=new_fields (no new field): exit %d, want 0:\n%s", code, errs)
	}
	vars["SYNC_FAIL_ON"] = "rejects,everything"
	if code, _, errs := mainWith(vars, "run"); code != ExitUsage || !strings.Contains(errs, "SYNC_FAIL_ON") || !strings.Contains(errs, "everything") {
		t.Fatalf("bad SYNC_FAIL_ON: exit %d, want 2 naming it:\n%s", code, errs)
	}
	vars["SYNC_FAIL_ON"] = "rejects"
	if got := messages(); len(got) != 3 {
		t.Fatalf("%d webhook messages after three warning runs, want 3: %q", len(got), got)
	}

	vars["AGENCY_FIELD_MAP"] = renamedEverywhere
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("run with the field map: exit %d:\n%s", code, errs)
	}
	// The field map changed how invoices are read: the run re-derived them
	// first (a rebuild, which retried the rejects), then synced.
	rep = readStatus(t, vars)
	resolved := 0
	for _, r := range rep.Runs[:2] {
		resolved += r.RejectsResolved
	}
	if rejected, fresh := rep.stream(t, "finance"); rejected != 0 || !fresh || rep.Runs[0].OpenRejects != 0 || resolved != invoices {
		t.Fatalf("status after the mapped run: %+v (finance %d rejected, fresh %v); want 0 open, %d resolved, fresh", rep.Runs[:2], rejected, fresh, invoices)
	}
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("next run: exit %d:\n%s", code, errs)
	}
	if rep = readStatus(t, vars); rep.Runs[0].Status != "succeeded" {
		t.Fatalf("the run after the fix ended %s, want succeeded", rep.Runs[0].Status)
	}
	got := messages()
	recovered := 0
	for _, m := range got[3:] {
		if strings.Contains(m, "recovered") {
			recovered++
		}
	}
	if recovered != 1 {
		t.Errorf("messages after the fix %q, want one recovery", got[3:])
	}
}

// TestFieldMapChangeSendsNoDetailRequest: after a first sync, a run with a
// no-op field map (AGENCY_FIELD_MAP=projects.name=name) sends no detail
// request, and plan said so before it.
func TestFieldMapChangeSendsNoDetailRequest(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, nil)
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("first run exit %d:\n%s", code, errs)
	}
	details := func() int64 {
		st := sb.Stats()
		return st.ByEndpoint["brand_detail"] + st.ByEndpoint["contacts"] + st.ByEndpoint["project_detail"]
	}
	if details() == 0 {
		t.Fatal("the first run fetched no detail")
	}
	vars["AGENCY_FIELD_MAP"] = "projects.name=name"
	code, out, errs := mainWith(vars, "plan")
	if code != ExitOK {
		t.Fatalf("plan exit %d:\n%s", code, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "details" && f[2] != "0" {
			t.Errorf("plan under the field map: %q, want 0 details", line)
		}
	}
	before := details()
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("run with the field map exit %d:\n%s", code, errs)
	}
	if n := details() - before; n != 0 {
		t.Errorf("the run with AGENCY_FIELD_MAP=projects.name=name sent %d detail requests, want 0", n)
	}
}
