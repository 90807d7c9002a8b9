package reliability

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/warehouse"
)

// killSeed is the seed of the random kill moments: AGENCYSYNC_SEED, or the
// clock. It is logged so that a failing run can be replayed.
func killSeed(t *testing.T) int64 {
	t.Helper()
	if v := os.Getenv("AGENCYSYNC_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("AGENCYSYNC_SEED=%q is not an integer", v)
		}
		return n
	}
	return time.Now().UnixNano()
}

// TestS01CrashResume: SIGKILL the worker at random moments of a backfill,
// then let it finish. After every kill the warehouse holds whole committed
// pages only; at the end it equals the truth, without duplicates, and the
// requests used stay within the minimum plus one page per kill.
func TestS01CrashResume(t *testing.T) {
	sc := newScenario(t, 1, "Crash and resume: SIGKILL at random moments of a backfill")
	sz := currentSizes()
	seed := killSeed(t)
	t.Logf("kill seed %d (replay with AGENCYSYNC_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))

	r := newRig(t, sc, agencyWith(sz.crashEmails))
	// The bound below is one request lost per kill: one request in flight,
	// as at the default pace (the rig's 1000/s would keep several in flight
	// on a slow answer, and a kill may lose each of them).
	r.env["SYNC_MAX_IN_FLIGHT"] = "1"
	tr := r.sb.truth()
	ids, bad := tr.emailIDs()
	pages := oracle.Pages(len(ids), oracle.PageSize)
	lockID := warehouse.SyncLockID(r.schema)

	// committed reports the backfill pages committed so far, and whether the
	// backfill is done.
	committed := func() (int, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := readBackfill(ctx, r.pool, r.schema)
		if err != nil {
			return 0, false // the tables may not exist yet
		}
		return st.pages, st.done
	}

	if pages < sz.kills+6 {
		t.Fatalf("%d pages leave no room for %d kills", pages, sz.kills)
	}
	targets := rng.Perm(pages - 6)[:sz.kills-1]
	for k := range targets {
		targets[k]++ // pages 1 .. pages-6
	}
	slices.Sort(targets)
	t.Logf("kill after the brands list, then after pages %v", targets)
	kills, early, runs, skipped := 0, 0, 0, 0 // early: kills before the backfill committed a page
	var moments []string
	var final *runResult
	for final == nil {
		if runs > sz.kills+10 {
			t.Fatalf("%d runs and still not complete", runs)
		}
		runs++
		w := startWorker(t, r.env, "run")
		if kills < sz.kills {
			var moment string
			if kills == 0 {
				// The first kill at a random moment of the run's start: once
				// the brands are listed, during the other lists, finance or
				// the details (or, on a fast machine, the first pages).
				waitFor(t, "brands listed", 5*time.Millisecond, func() bool {
					var n int
					err := r.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{r.schema, "detail_state"}.Sanitize()).Scan(&n)
					return (err == nil && n > 0) || !w.running()
				})
				d := time.Duration(rng.IntN(300)) * time.Millisecond
				select {
				case <-w.done:
				case <-time.After(d):
				}
				moment = "after the brands list +" + d.String()
			} else {
				// The others at random moments of the backfill: once a
				// random page has been committed (targets drawn up front,
				// leaving the last pages free so that the run cannot end
				// first), plus a random part of a page's time.
				target := targets[kills-1]
				waitFor(t, "backfill page "+strconv.Itoa(target)+" committed", 5*time.Millisecond, func() bool {
					p, fin := committed()
					return p >= target || fin || !w.running()
				})
				d := time.Duration(rng.IntN(100)) * time.Millisecond
				select {
				case <-w.done:
				case <-time.After(d):
				}
				moment = "after page " + strconv.Itoa(target) + " +" + d.String()
			}
			if w.running() {
				kr := w.kill()
				kills++
				// The killed worker's session may still be finishing a
				// commit it sent before the kill (a page and its cursor, in
				// one transaction): look once it is gone, or the cursor and
				// the e-mails, read one after the other, may straddle it.
				r.syncLockFree(lockID)
				p := checkWholePages(t, r.pool, r.schema, ids, bad)
				if p == 0 {
					early++
				}
				moments = append(moments, moment)
				t.Logf("kill %d %s: %d pages committed, whole (the run had skipped %d list tasks done by the runs before it)",
					kills, moment, p, strings.Count(kr.stderr, "task skipped"))
				continue
			}
		}
		res := w.wait()
		t.Logf("run %d: %s", runs, res)
		switch {
		case res.code == 0 && res.status() == "skipped":
			skipped++ // a killed worker's session outlived it; the lock is polled free first
			r.syncLockFree(lockID)
		case res.code == 0 && res.status() == "succeeded":
			final = res
		default:
			t.Fatalf("run %d after %d kills: %s\n%s", runs, kills, res, tail([]byte(res.stderr), 30))
		}
	}
	if kills < sz.kills {
		t.Errorf("only %d kills landed (want %d): the runs ended first", kills, sz.kills)
	}
	sc.fig("%d e-mails, %d SIGKILLs (seed %d), %d runs", len(ids), kills, seed, runs)

	checks, rows := compareWithTruth(t, r.pool, r.schema, tr)
	sc.fig("%s", summarize(checks, rows))
	checkIntegrity(t, r.pool, r.schema)

	// Requests. The minimum is a complete first sync without interruption;
	// the bound is the minimum plus one page per kill, and the test holds the
	// total to it. The design bounds each part too: a run after
	// unfinished ones the same day does not list again what they completed,
	// so only a kill before the backfill began (early) can cost a list's
	// pages and the detail in flight (a brand's detail is two requests,
	// detail and contacts); every page and detail waits in the spool from
	// its answer to its commit, so a kill during the backfill loses at most
	// the request in flight, prefetching or not.
	st := r.sb.stats()
	minimum, byEndpoint := tr.minimumRequests()
	sum := func(m map[string]int64, eps ...string) (n int) {
		for _, e := range eps {
			n += int(m[e])
		}
		return n
	}
	min64 := map[string]int64{}
	for e, v := range byEndpoint {
		min64[e] = int64(v)
	}
	listEps := oracle.ListEndpoints
	detailEps := oracle.EntityEndpoints(oracle.Truth(tr).FirstSync())
	// Each run's clock probe is a keyless brands request (a 401, no quota).
	lists, listsUsed := sum(min64, listEps...), sum(st.ByEndpoint, listEps...)-int(st.Keyless)
	details, detailsUsed := sum(min64, detailEps...), sum(st.ByEndpoint, detailEps...)
	comms, commsUsed := byEndpoint[oracle.CommsEndpoint], int(st.ByEndpoint[oracle.CommsEndpoint])
	used, strict := int(st.Keyed()), minimum+kills
	sc.fig("requests %d = minimum %d + %d list, %d communications and %d detail requests again (%d of the kills before the backfill)",
		used, minimum, listsUsed-lists, commsUsed-comms, detailsUsed-details, early)
	if used > strict {
		t.Errorf("%d requests exceed the bound: the minimum %d plus one page per kill (%d kills) = %d", used, minimum, kills, strict)
	}
	if listsUsed > (1+early)*lists {
		t.Errorf("%d list requests (a listing is %d): runs listed again what the unfinished runs before them had listed (%d kills before the backfill)",
			listsUsed, lists, early)
	}
	if commsUsed-comms > kills-early {
		t.Errorf("%d communications pages fetched again after %d kills during the backfill: more than the request in flight per kill",
			commsUsed-comms, kills-early)
	}
	if detailsUsed-details > 2*early {
		t.Errorf("%d detail requests fetched again after %d kills before the backfill: more than the detail in flight per kill",
			detailsUsed-details, early)
	}
	if other := used - listsUsed - commsUsed - detailsUsed; other != 0 {
		t.Errorf("%d requests to other endpoints: %v", other, st.ByEndpoint)
	}
	// The ledger counts each request durably before it is sent: it never
	// counts less than the service saw, and at most the requests that a kill
	// interrupted between counting and sending.
	ledger := ledgerTotal(t, r.pool, r.schema)
	sc.fig("quota ledger %d for %d requests served", ledger, used)
	if ledger < used || ledger > used+2*kills {
		t.Errorf("quota ledger %d, the sandbox served %d requests (%d kills)", ledger, used, kills)
	}
	t.Logf("kill moments: %v", moments)
	statuses := runStatuses(t, r.pool, r.schema)
	// A killed worker cannot record its end; the next run that takes the
	// lock closes its row as failed, so none is left 'running'.
	sc.fig("sync_runs: %d succeeded, %d killed runs closed as failed by the next run", statuses["succeeded"], statuses["failed"])
	if statuses["succeeded"] != 1 || statuses["running"] != 0 || statuses["failed"] > kills || statuses["partial"] != 0 {
		t.Errorf("sync_runs: %v, want 1 succeeded, no run left running and at most %d failed (killed)", statuses, kills)
	}
}
