package reliability

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// fleetSizes are the scenario's agencies: brands, projects a brand and
// e-mails, the biggest first; the soak's are larger.
func fleetAgencies() []*fleetAgency {
	scale := 1
	if soak {
		scale = 4
	}
	spec := []struct {
		name           string
		brands, per    int
		emails         int
		refused, quota bool
	}{
		{"big", 6, 4, 15_000 * scale, false, false},
		{"large", 6, 3, 8_000 * scale, false, false},
		{"mid1", 5, 3, 5_000 * scale, false, false},
		{"mid2", 4, 3, 4_000 * scale, false, false},
		{"mid3", 4, 2, 3_000 * scale, false, false},
		{"small1", 3, 3, 2_000, false, false},
		{"small2", 3, 2, 1_500, false, false},
		{"small3", 2, 2, 1_000, false, false},
		{"tiny", 2, 1, 500, false, false},
		{"quota", 2, 2, 6_000, false, true},
		{"refused", 2, 2, 1_000, true, false},
		{"late", 3, 2, 2_000, false, false}, // appended to FLEET_FILE while the fleet runs
	}
	var out []*fleetAgency
	for i, s := range spec {
		a := &fleetAgency{name: s.name, emails: s.emails, refused: s.refused, quota: s.quota}
		a.opts.Brands, a.opts.ProjectsPerBrand, a.opts.Seed = s.brands, s.per, int64(100+i)
		if s.quota {
			a.opts.DailyQuota = 20 // its lists and details take 18, its e-mails 6 more
		}
		out = append(out, a)
	}
	return out
}

// TestS22Fleet: 3 fleet workers, 12 agencies of different sizes at the
// sandboxes' real limits, one with a refused key and one whose quota runs out
// mid-sync. One worker is SIGKILLed mid-sync, another stopped (SIGTERM) and
// restarted, and an agency is appended to FLEET_FILE while they run. Every
// healthy agency ends equal to its truth; the quota-limited one completes on
// the service's next day without a failed run; no agency has two syncs at once;
// each agency's requests stay within its minimum plus one request per
// interruption; the refused key is tried once, notified once, and resumes when
// its key file changes; no key is in the database or any output.
func TestS22Fleet(t *testing.T) {
	sc := newScenario(t, 22, "Fleet: 3 workers on River, 12 agencies; SIGKILL, stop and restart, an agency appended")
	agencies := fleetAgencies()
	r := newFleetRig(t, agencies)
	byName := map[string]*fleetAgency{}
	for _, a := range agencies {
		byName[a.name] = a
	}
	truths := map[string]truth{}
	for _, a := range agencies {
		truths[a.name] = a.sb.truth()
	}
	r.writeFleetFile(len(agencies) - 1) // all but "late"
	for _, id := range []string{"w1", "w2", "w3"} {
		r.startWorker(id)
	}

	killedAt, killed := r.killMidSync(byName["big"], truths["big"])
	r.writeFleetFile(len(agencies))
	appendedAt := time.Now()
	stoppedAt, stopped := r.stopAndRestart(killed)
	r.checkRefused(byName["refused"])
	r.crossQuotaDay(byName["quota"])

	for _, a := range agencies {
		if a.refused {
			continue
		}
		waitFor(t, a.name+" synced and settled", 100*time.Millisecond, func() bool { return r.settled(a) })
	}
	late := r.runs(byName["late"])
	if len(late) > 0 {
		sc.fig("the appended agency's first sync started %.1f s after FLEET_FILE gained it", late[0].started.Sub(appendedAt).Seconds())
	}
	r.checkStatus(byName)
	r.fixRefusedKey(byName["refused"])

	var bad []string
	for _, a := range agencies {
		runs := r.runs(a)
		at := time.Time{}
		if r.heldBy(a, killed) {
			at = killedAt
		}
		for _, o := range overlaps(runs, at) {
			bad = append(bad, a.name+": "+o)
		}
		r.checkAgency(sc, a, truths[a.name], runs)
	}
	if len(bad) > 0 {
		t.Errorf("overlapping syncs:\n%s", strings.Join(bad, "\n"))
	}
	sc.fig("SIGKILL of %s at +%s, SIGTERM of %s at +%s (restarted)", killed, killedAt.Sub(sc.start).Round(time.Second),
		stopped, stoppedAt.Sub(sc.start).Round(time.Second))
	r.checkNoKeys(sc)
}

// killMidSync SIGKILLs the worker syncing a once a has spent a third of
// its requests (its lists and details done or under way) and before its
// backfill is done.
func (r *fleetRig) killMidSync(a *fleetAgency, tr truth) (time.Time, string) {
	r.t.Helper()
	minimum, _ := tr.minimumRequests()
	var holder string
	waitFor(r.t, a.name+" mid-sync", 20*time.Millisecond, func() bool {
		if int(a.sb.stats().Keyed()) < minimum/3 {
			return false
		}
		st, err := readBackfill(r.t.Context(), r.pool, a.schema)
		holder = r.holder(a.name)
		return err == nil && !st.done && holder != ""
	})
	if holder == "" {
		r.t.FailNow()
	}
	res := r.workers[holder].kill()
	r.outputs = append(r.outputs, res.stdout, res.stderr)
	r.t.Logf("SIGKILL %s while it synced %s", holder, a.name)
	return time.Now(), holder
}

// stopAndRestart stops (SIGTERM) a live worker while it syncs an agency,
// then starts it again under the same name.
func (r *fleetRig) stopAndRestart(killed string) (time.Time, string) {
	r.t.Helper()
	var target, agency string
	waitFor(r.t, "a live worker mid-sync", 20*time.Millisecond, func() bool {
		for _, j := range r.jobs() {
			if j.state == "running" && len(j.by) > 0 && j.by[len(j.by)-1] != killed {
				target, agency = j.by[len(j.by)-1], j.agency
				return r.runCount(&fleetAgency{schema: r.schemaOf(j.agency)}, "running") > 0
			}
		}
		return false
	})
	if target == "" {
		r.t.FailNow()
	}
	w := r.workers[target]
	w.signal(syscall.SIGTERM)
	res := w.wait()
	at := time.Now()
	r.outputs = append(r.outputs, res.stdout, res.stderr)
	if res.code != 0 || !strings.Contains(res.stderr, "fleet worker stopped") {
		r.t.Errorf("%s after SIGTERM: exit %d\n%s", target, res.code, tail([]byte(res.stderr), 10))
	}
	r.t.Logf("SIGTERM %s while it synced %s; restarting it", target, agency)
	r.startWorker(target)
	return at, target
}

func (r *fleetRig) schemaOf(agency string) string {
	for _, a := range r.agencies {
		if a.name == agency {
			return a.schema
		}
	}
	return ""
}

// heldBy reports whether the killed worker held one of a's syncs: its
// runs may lack an end.
func (r *fleetRig) heldBy(a *fleetAgency, worker string) bool {
	for _, j := range r.jobs() {
		if j.agency == a.name && slices.Contains(j.by, worker) {
			return true
		}
	}
	return false
}

// checkRefused waits until the refused key parked its agency: one failed
// run, one notification.
func (r *fleetRig) checkRefused(a *fleetAgency) {
	r.t.Helper()
	waitFor(r.t, a.name+" parked on its refused key", 50*time.Millisecond, func() bool {
		return r.jobWaits(a.name, "credentials")
	})
	if n := r.runCount(a, "failed"); n != 1 {
		r.t.Errorf("%s: %d failed runs, want the one whose key was refused", a.name, n)
	}
	waitFor(r.t, "the refused key's notification", 50*time.Millisecond, func() bool { return len(r.notify.Texts()) > 0 })
}

// crossQuotaDay waits until the quota-limited agency waits for the next
// quota day, then moves its service's clock past midnight.
func (r *fleetRig) crossQuotaDay(a *fleetAgency) {
	r.t.Helper()
	waitFor(r.t, a.name+" waiting for its next quota day", 50*time.Millisecond, func() bool {
		return r.jobWaits(a.name, "quota")
	})
	if n := r.runCount(a, "partial"); n == 0 {
		r.t.Errorf("%s waits for its quota day without a partial run", a.name)
	}
	before := a.sb.stats().QuotaDay
	a.sb.advance(20 * time.Minute)
	if after := a.sb.stats().QuotaDay; after == before {
		r.t.Fatalf("the sandbox's quota day did not turn (%s)", after)
	}
}

// checkStatus reads fleet status: every agency listed, the refused one held.
func (r *fleetRig) checkStatus(byName map[string]*fleetAgency) {
	r.t.Helper()
	st := r.fleetStatus()
	if len(st) != len(byName) {
		r.t.Errorf("fleet status lists %d agencies, want %d", len(st), len(byName))
	}
	if s := st["refused"]; s == nil || s["state"] != "held" || s["hold"] != "credentials" {
		r.t.Errorf("fleet status of the refused agency: %v", s)
	}
	if s := st["quota"]; s == nil || s["state"] != "idle" || s["last_run"] == nil {
		r.t.Errorf("fleet status of the quota agency: %v", s)
	}
	for _, w := range r.workers {
		if !w.running() {
			continue
		}
		addr := workerAddr(w)
		for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": `agency="big"`, "/": `data-agency="late"`} {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				r.t.Errorf("%s%s: %v", addr, path, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
				r.t.Errorf("%s%s: %d, want %q", addr, path, resp.StatusCode, want)
			}
		}
	}
}

// fixRefusedKey writes the refused agency's right key: a worker sees the
// key file change and its sync resumes.
func (r *fleetRig) fixRefusedKey(a *fleetAgency) {
	r.t.Helper()
	if n := len(r.notify.Texts()); n != 1 || !strings.Contains(r.notify.Texts()[0], "failed") {
		r.t.Errorf("%d notifications before the key was fixed (%q), want one of the failure", n, r.notify.Texts())
	}
	r.writeKeys(a, true)
	waitFor(r.t, a.name+" synced with its new key", 100*time.Millisecond, func() bool { return r.settled(a) })
}

// checkAgency compares a's warehouse with its truth and its requests with
// its minimum.
func (r *fleetRig) checkAgency(sc *scenario, a *fleetAgency, tr truth, runs []fleetRun) {
	r.t.Helper()
	checks, rows := compareWithTruth(r.t, r.pool, a.schema, tr)
	checkIntegrity(r.t, r.pool, a.schema)
	st := a.sb.stats()
	minimum := oracle.MinimumRequests(oracle.Truth(tr).FirstSync()).Total
	lost := interruptions(runs)
	bound := minimum + lost
	if a.refused {
		// The request its refused key spent; and the e-mails (their key
		// is good) synced in that run, so the run after the fix reads
		// their increment once more.
		bound += 2
	}
	if a.quota {
		// A sync that spans a second service day reads that day too: its
		// e-mails increment from the backfill's end to the new day, one
		// request more than a first sync done within one day.
		bound++
	}
	statuses := map[string]int{}
	failed := 0 // failed runs but those killed with their worker
	for _, x := range runs {
		statuses[x.status]++
		if x.status == "failed" && !strings.Contains(x.errorText, "killed") {
			failed++
		}
	}
	if int(st.Keyed()) > bound {
		_, byEndpoint := tr.minimumRequests()
		var more []string
		for ep, n := range st.ByEndpoint {
			if int(n) != byEndpoint[ep] {
				more = append(more, fmt.Sprintf("%s %d (minimum %d)", ep, n, byEndpoint[ep]))
			}
		}
		slices.Sort(more)
		r.t.Errorf("%s: %d requests, more than its minimum %d plus %d interrupted runs' requests in flight: %s (%d keyless)",
			a.name, st.Keyed(), minimum, lost, strings.Join(more, ", "), st.Keyless)
	}
	// The quota agency's runs end partial until its next service day, then
	// succeed; a run of it killed with the worker that held it (the SIGKILL
	// may fall on it too) is failed by the kill, not by the quota.
	if a.quota && (failed != 0 || statuses["succeeded"] != 1) {
		r.t.Errorf("%s: runs %v, want partial ones then one success, none failed but by the worker's SIGKILL", a.name, statuses)
	}
	sc.fig("%s: %s; %d requests (minimum %d, %d interrupted); runs %s", a.name, summarize(checks, rows), st.Keyed(), minimum, lost, tally(statuses))
}

// checkNoKeys scans the queue, the agencies' bookkeeping and every output
// for any 8 characters in a row of any key.
func (r *fleetRig) checkNoKeys(sc *scenario) {
	r.t.Helper()
	var keys []string
	for _, a := range r.agencies {
		keys = append(keys, a.apiKey, a.commsKey, a.opts.RevokedKey)
	}
	db := r.databaseText()
	if l := leaksIn(db, keys); len(l) > 0 {
		r.t.Errorf("keys in the database: %v", l)
	}
	for _, w := range r.workers {
		if w.running() {
			w.signal(syscall.SIGTERM)
		}
		res := w.wait()
		r.outputs = append(r.outputs, res.stdout, res.stderr)
	}
	out := strings.Join(r.outputs, "\n")
	if l := leaksIn(out, keys); len(l) > 0 {
		r.t.Errorf("keys in the workers' outputs: %v", l)
	}
	if !strings.Contains(out, `"msg":"fleet sync succeeded"`) || len(db) < 1000 {
		r.t.Errorf("the audit saw too little: %d bytes of output, %d of database", len(out), len(db))
	}
	sc.fig("%d keys searched in %s of database rows and %s of output: %s", len(keys), mb(int64(len(db))), mb(int64(len(out))),
		fmt.Sprintf("%d found", len(leaksIn(db+out, keys))))
}
