package reliability

import (
	"strings"
	"testing"
	"time"
)

// newQuotaDay moves the sandbox's clock past its midnight. The worker takes
// its quota day from the service's clock (the Date header of its answers),
// so this starts a new quota day for both: nothing of the worker is touched.
func (r *rig) newQuotaDay(advance time.Duration) {
	r.t.Helper()
	before := r.sb.stats().QuotaDay
	r.sb.advance(advance)
	if after := r.sb.stats().QuotaDay; after == before {
		r.t.Fatalf("advancing the sandbox clock by %s did not cross its midnight (quota day %s)", advance, after)
	}
}

// TestS03Quota: a sandbox quota smaller than the backfill needs. The worker
// spends its own budget and stops before the service refuses anything (exit
// 75); after midnight the next run completes. Variant: the key's quota was
// partly spent elsewhere: the service's 429 comes, the stop is clean, and
// nothing is lost.
func TestS03Quota(t *testing.T) {
	sc := newScenario(t, 3, "Quota: the budget stops the run before the service does; next day completes")
	sz := currentSizes()
	const quota = 40
	// One request in flight, as at the default limit of 10/s: with n in
	// flight, the n-1 sent before the first refusal came back are refused
	// too (counted, nothing lost), and the bound below is the default's.
	quotaEnv := map[string]string{"AGENCY_DAILY_QUOTA": "40", "AGENCY_QUOTA_RESERVE": "0%", "SYNC_MAX_IN_FLIGHT": "1"}
	sandboxOpts := func(emails int) sandboxOptions {
		o := defaultSandbox()
		o.NoLimits, o.Rate, o.DailyQuota = false, 1000, quota
		o.Emails, o.Brands, o.ProjectsPerBrand = emails, 4, 3
		// Ten minutes before the sandbox's midnight, so that the next quota
		// day is twenty minutes away.
		o.Start = time.Now().UTC().Truncate(24 * time.Hour).Add(-10 * time.Minute)
		return o
	}

	t.Run("own budget", func(t *testing.T) {
		t.Parallel()
		sc := sc.in(t)
		r := newRig(t, sc, sandboxOpts(sz.quotaEmails))
		tr := r.sb.truth()
		ids, bad := tr.emailIDs()
		minimum, _ := tr.minimumRequests()
		if minimum <= quota || minimum > 2*quota-10 {
			t.Fatalf("the sync needs %d requests: not between one and two days of %d", minimum, quota)
		}

		res := r.run(quotaEnv)
		st := r.sb.stats()
		if res.code != 75 || res.status() != "partial" {
			t.Fatalf("first day: %s, want exit 75 and a partial run\n%s", res, tail([]byte(res.stderr), 20))
		}
		if res.num("requests_used") != quota || st.Keyed() != quota {
			t.Errorf("first day: the run used %d requests, the sandbox saw %d with the key; the budget is %d", res.num("requests_used"), st.Keyed(), quota)
		}
		if st.QuotaExceeded != 0 || st.ByStatus["429"] != 0 {
			t.Errorf("the sandbox refused %d requests for the daily quota (%d 429s)", st.QuotaExceeded, st.ByStatus["429"])
		}
		pages := checkWholePages(t, r.pool, r.schema, ids, bad)
		sc.fig("own budget: day 1 exit %d after %d of %d needed requests (%d pages), %d quota 429s", res.code, st.Keyed(), minimum, pages, st.QuotaExceeded)

		// Same day again: nothing left, so nothing sent with the key — only
		// the clock probe every run starts with, which carries none (a 401,
		// no quota), to learn whether the service's day has moved on.
		again := r.run(quotaEnv)
		st1 := r.sb.stats()
		if again.code != 75 || st1.Requests != st.Requests+1 || st1.Keyless != st.Keyless+1 || st1.ByStatus["401"] != st.ByStatus["401"]+1 || st1.QuotaUsed != st.QuotaUsed {
			t.Errorf("same-day rerun: %s; the sandbox saw %d more requests (%d more 401s), %d more counted against its quota; want only the keyless clock probe",
				again, st1.Requests-st.Requests, st1.ByStatus["401"]-st.ByStatus["401"], st1.QuotaUsed-st.QuotaUsed)
		}

		r.newQuotaDay(20 * time.Minute)
		res = r.run(quotaEnv)
		mustSucceed(t, "the run after midnight", res)
		st2 := r.sb.stats()
		if st2.QuotaExceeded != 0 {
			t.Errorf("the sandbox refused %d requests for the daily quota", st2.QuotaExceeded)
		}
		sc.fig("own budget: day 2 exit %d with %d requests; %d quota 429s in all", res.code, res.num("requests_used"), st2.QuotaExceeded)
		checks, rows := compareWithTruth(t, r.pool, r.schema, r.sb.truth())
		sc.fig("own budget: %s", summarize(checks, rows))
	})

	t.Run("spent elsewhere", func(t *testing.T) {
		t.Parallel()
		sc := sc.in(t)
		r := newRig(t, sc, sandboxOpts(sz.quotaEmails/3))
		tr := r.sb.truth()
		ids, bad := tr.emailIDs()
		const elsewhere = 15
		r.sb.admin("POST", "quota", map[string]any{"spend": elsewhere}, nil)

		res := r.run(quotaEnv)
		st := r.sb.stats()
		if res.code != 75 || res.status() != "partial" {
			t.Fatalf("first day: %s, want exit 75 and a partial run\n%s", res, tail([]byte(res.stderr), 20))
		}
		if st.QuotaExceeded < 1 || st.QuotaExceeded > 2 {
			t.Errorf("the sandbox refused %d requests for the daily quota; want the one that stopped the run (and at most the one prefetched)", st.QuotaExceeded)
		}
		if !strings.Contains(res.stderr, "daily quota") {
			t.Errorf("the run does not say that the daily quota stopped it:\n%s", tail([]byte(res.stderr), 10))
		}
		pages := checkWholePages(t, r.pool, r.schema, ids, bad)
		sc.fig("spent elsewhere (%d of %d): day 1 exit %d after %d accepted requests, %d quota 429s, %d whole pages kept",
			elsewhere, quota, res.code, st.Keyed()-st.QuotaExceeded, st.QuotaExceeded, pages)

		days := 1
		for res.status() != "succeeded" {
			if days > 5 {
				t.Fatalf("not complete after %d days: %s", days, res)
			}
			r.newQuotaDay(24 * time.Hour)
			days++
			res = r.run(quotaEnv)
			if res.code != 0 && res.code != 75 {
				t.Fatalf("day %d: %s\n%s", days, res, tail([]byte(res.stderr), 20))
			}
		}
		sc.fig("spent elsewhere: complete on day %d", days)
		checks, rows := compareWithTruth(t, r.pool, r.schema, r.sb.truth())
		sc.fig("spent elsewhere: %s", summarize(checks, rows))
	})
}
