package reliability

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/agencysync/agencysync/warehouse"
)

// TestS12StopInFlight: SIGTERM at 20 seeded random moments of a communications
// backfill — 10 in one range, 10 with AGENCY_COMMS_BACKFILL_WINDOW — each
// stopped run followed by the next (its resumption), then runs to the end. 0
// records lost, 0 runs that end succeeded with a shortfall, and a stopped run
// exits 75 (or 0 when it had completed first).
func TestS12StopInFlight(t *testing.T) {
	sc := newScenario(t, 12, "Stop: SIGTERM at 20 random moments of a backfill, with and without windows")
	seed := killSeed(t)
	t.Logf("stop seed %d (replay with AGENCYSYNC_SEED=%d)", seed, seed)
	for k, mode := range []struct {
		name   string
		window string
	}{{"one range", ""}, {"windows", "240h"}} {
		t.Run(mode.name, func(t *testing.T) {
			sc := sc.in(t)
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(k+1)))
			o := twistSandbox()
			_, o.Emails = twistSizes()
			o.Extra = []string{"--max-per-page", "20", "--jitter", "20ms"}
			o.Latency = 10 * time.Millisecond
			r := newRig(t, sc, o)
			// One request in flight: the backfill's pace the stops are
			// timed for (at the rig's 1000/s, pages fetched several at a
			// time end it before the tenth stop).
			env := map[string]string{"SYNC_MAX_IN_FLIGHT": "1"}
			if mode.window != "" {
				env["AGENCY_COMMS_BACKFILL_WINDOW"] = mode.window
			}
			for kk, v := range r.env {
				if _, set := env[kk]; !set {
					env[kk] = v
				}
			}
			lockID := warehouse.SyncLockID(r.schema)
			const stops = 10
			lies, codes := 0, map[int]int{}
			stoppedInFlight := 0
			for s := 1; s <= stops; s++ {
				runsBefore := r.runCount()
				w := startWorker(t, env, "run", "--streams", "communications")
				// A random moment: once the run is under way (its sync_runs
				// row written: a signal in the first microseconds of a
				// process, before Go installs its handler, is the
				// operating system's to handle; the command line's own test
				// covers a signal while the warehouse is opened) and 0 to 40
				// more e-mails (0 to 2 pages) are stored, plus 0 to 40 ms
				// (about one page's time).
				target := r.storedCount() + rng.IntN(41)
				d := time.Duration(rng.IntN(41)) * time.Millisecond
				waitFor(t, "e-mails stored", 2*time.Millisecond, func() bool {
					return (r.runCount() > runsBefore && r.storedCount() >= target) || !w.running()
				})
				select {
				case <-w.done:
				case <-time.After(d):
				}
				if w.running() {
					stoppedInFlight++
				}
				w.signal(syscall.SIGTERM)
				res := w.wait()
				codes[res.code]++
				h := r.emailHoldings()
				if honest(t, fmt.Sprintf("stop %d (after %d e-mails +%s)", s, target, d), res, h) {
					lies++
				}
				if res.code != 0 && res.code != 75 {
					t.Errorf("stop %d: exit %d, want 75 (stopped, resumes) or 0 (complete)\n%s", s, res.code, errorLines(res.stderr))
				}
				r.syncLockFree(lockID)
			}
			runs, last := r.runUntilComplete(3, env, "run", "--streams", "communications")
			final := r.emailHoldings()
			if !final.complete() {
				t.Errorf("after %d stops and %d runs: %s", stops, runs, final)
			}
			if last.code != 0 {
				t.Errorf("the last run: %s", last)
			}
			sc.fig("%s: %d SIGTERMs (%d while running; exits %v), then %d runs to the end; %d successes with a shortfall; %d of %d e-mails lost",
				mode.name, stops, stoppedInFlight, codes, runs, lies, len(final.missing), final.truth)
		})
	}
}
