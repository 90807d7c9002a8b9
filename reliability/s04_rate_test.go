package reliability

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestS04Rate: at the service's default 10 requests/s (the sandbox's default
// --rate and agencysync's default AGENCY_RATE_LIMIT), a whole backfill meets
// no "Rate limit exceeded".
func TestS04Rate(t *testing.T) {
	sc := newScenario(t, 4, "Rate: the default 10/s over a whole backfill")
	sz := currentSizes()
	o := defaultSandbox()
	o.NoLimits = false // the sandbox enforces 10/s and the daily quota
	o.Emails, o.Brands = sz.rateEmails, sz.rateBrands
	r := newRig(t, sc, o)
	delete(r.env, "AGENCY_RATE_LIMIT") // the worker's default pace

	res := r.run(nil)
	mustSucceed(t, "backfill at 10/s", res)
	st := r.sb.stats()
	minimum, _ := r.sb.truth().minimumRequests()
	pace := float64(res.num("requests_used")) / res.took.Seconds()
	sc.fig("%d requests in %s (%.1f/s; minimum %d)", res.num("requests_used"), res.took.Round(100*time.Millisecond), pace, minimum)
	sc.fig("429s counted by the sandbox: %d rate-limited, %d quota", st.RateLimited, st.QuotaExceeded)
	if st.RateLimited != 0 || st.ByStatus["429"] != 0 {
		t.Errorf("the sandbox refused %d requests for the rate (%d 429s in all); the worker's retries:\n%s",
			st.RateLimited, st.ByStatus["429"], grepLines(res.stderr, "retrying"))
	}
	if int(st.Keyed()) != res.num("requests_used") {
		t.Errorf("the sandbox served %d requests with the key, the run reports %d", st.Keyed(), res.num("requests_used"))
	}
	if res.num("requests_used") < minimum || res.num("requests_used") < 50 {
		t.Errorf("only %d requests (minimum %d): the pace was not exercised", res.num("requests_used"), minimum)
	}
	checks, rows := compareWithTruth(t, r.pool, r.schema, r.sb.truth())
	sc.fig("%s", summarize(checks, rows))

	// The check above can fail: the same sandbox refuses a burst beyond 10/s.
	var wg sync.WaitGroup
	codes := make([]int, 25)
	for k := range codes {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, r.sb.apiURL+"/v1/brands?per_page=1", nil)
			req.Header.Set("Authorization", apiKey)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				codes[k] = resp.StatusCode
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if after := r.sb.stats(); after.RateLimited == 0 {
		t.Errorf("a burst of 25 requests was not rate limited (statuses %v): the sandbox does not enforce the rate", codes)
	} else {
		t.Logf("control: a burst of 25 requests met %d rate refusals", after.RateLimited)
	}
}
