package sandbox

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestSlidingWindow checks the rule "at most n accepted arrivals in any
// window" on exact times.
func TestSlidingWindow(t *testing.T) {
	l := newLimiter("t", 10)
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	for k := 0; k < 5; k++ {
		if !l.allowAt(ms(0)) {
			t.Fatalf("burst request %d refused", k)
		}
	}
	for k := 0; k < 5; k++ {
		if !l.allowAt(ms(600)) {
			t.Fatalf("request %d at 600ms refused", k)
		}
	}
	if l.allowAt(ms(700)) || l.allowAt(ms(999)) {
		t.Fatal("11th request within one second accepted")
	}
	for k := 0; k < 5; k++ {
		if !l.allowAt(ms(1000)) {
			t.Fatalf("request %d at 1000ms refused after the first five left the window", k)
		}
	}
	if l.allowAt(ms(1500)) {
		t.Fatal("accepted while ten requests lie in (500ms, 1500ms]")
	}
	if !l.allowAt(ms(1600)) {
		t.Fatal("refused at 1600ms")
	}
	// Evenly spaced requests at exactly the rate always pass.
	even := newLimiter("even", 10)
	for k := 0; k < 100; k++ {
		if !even.allowAt(ms(100 * k)) {
			t.Fatalf("evenly spaced request %d refused", k)
		}
	}
	// Non-integer rates: 2.5/s means 2 requests per 800ms.
	frac := newLimiter("frac", 2.5)
	if !frac.allowAt(0) || !frac.allowAt(0) || frac.allowAt(ms(799)) || !frac.allowAt(ms(800)) {
		t.Fatal("rate 2.5 misapplied")
	}
	slow := newLimiter("slow", 0.5)
	if !slow.allowAt(0) || slow.allowAt(ms(1999)) || !slow.allowAt(ms(2000)) {
		t.Fatal("rate 0.5 misapplied")
	}
}

func TestRateLimitOverHTTP(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.NoLimits = false; o.Rate = 5 })
	start := time.Now()
	var ok, limited int
	for k := 0; k < 8; k++ {
		r := get(t, s, "/v1/brands?per_page=1")
		switch r.status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			if string(r.body) != body429Rate {
				t.Fatalf("rate body %q", r.body)
			}
			limited++
		default:
			t.Fatalf("status %d", r.status)
		}
	}
	if time.Since(start) < 900*time.Millisecond && (ok != 5 || limited != 3) {
		t.Fatalf("burst of 8 at rate 5: %d ok, %d limited", ok, limited)
	}
	time.Sleep(1100 * time.Millisecond)
	if r := get(t, s, "/v1/brands?per_page=1"); r.status != http.StatusOK {
		t.Fatalf("after the window: %d", r.status)
	}
	st := s.Stats()
	if st.RateLimited != int64(limited) || st.ByStatus["429"] != int64(limited) {
		t.Fatalf("stats %+v", st)
	}
	// 429s do not count against the quota.
	if st.QuotaUsed != int64(ok+1) {
		t.Fatalf("quota used %d, want %d", st.QuotaUsed, ok+1)
	}
}

func TestDailyQuotaResetsAtMidnight(t *testing.T) {
	tz := time.FixedZone("UTC+3", 3*3600)
	s := startSmall(t, func(o *Options) {
		o.NoLimits = false
		o.Rate = 1000
		o.DailyQuota = 3
		o.QuotaTZ = tz
		o.Start = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC) // 15:00 in UTC+3
	})
	for k := 0; k < 3; k++ {
		if r := get(t, s, "/v1/brands"); r.status != http.StatusOK {
			t.Fatalf("request %d: %d", k, r.status)
		}
	}
	r := get(t, s, "/v1/brands")
	if r.status != http.StatusTooManyRequests || string(r.body) != body429Quota {
		t.Fatalf("4th request: %d %q", r.status, r.body)
	}
	if r := commsPost(t, s, `{"user_id":[1]}`); r.status != http.StatusTooManyRequests || string(r.body) != body429Quota {
		t.Fatalf("shared scope: comms not refused: %d", r.status)
	}
	// 20:59 UTC is 23:59 in UTC+3: still the same quota day.
	if _, err := s.Advance(8*time.Hour + 59*time.Minute); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "/v1/brands"); r.status != http.StatusTooManyRequests {
		t.Fatalf("before midnight: %d", r.status)
	}
	// 21:00 UTC is midnight in UTC+3.
	if _, err := s.Advance(time.Minute); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "/v1/brands"); r.status != http.StatusOK {
		t.Fatalf("after midnight: %d %s", r.status, r.body)
	}
	st := s.Stats()
	if st.QuotaExceeded != 3 || st.QuotaUsed != 1 || st.QuotaDay != "2026-11-02" {
		t.Fatalf("stats: exceeded %d used %d day %s", st.QuotaExceeded, st.QuotaUsed, st.QuotaDay)
	}
}

func TestQuotaCountingRule(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.NoLimits = false; o.Rate = 1000; o.DailyQuota = 100 })
	apiGet(t, s, "/v1/brands", "wrong")           // 401: not counted
	get(t, s, "/v1/brands/999999")                // 404: counted
	get(t, s, "/v1/brands?page=0")                // 400: counted
	apiGet(t, s, "/v1/brands", s.opts.ForeignKey) // 403: counted
	commsPost(t, s, `{"user_id":[1]}`)            // 200 on the shared scope: counted
	if err := s.SetFaults(Faults{Err500: 1}); err != nil {
		t.Fatal(err)
	}
	get(t, s, "/v1/brands") // injected 500: counted
	if err := s.SetFaults(Faults{Spurious429: 1}); err != nil {
		t.Fatal(err)
	}
	get(t, s, "/v1/brands") // spurious 429: not counted
	if got := s.Stats().QuotaUsed; got != 5 {
		t.Fatalf("quota used %d, want 5", got)
	}
	if err := s.SpendQuota(90); err != nil {
		t.Fatal(err)
	}
	if err := s.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	var ok int
	for k := 0; k < 10; k++ {
		if get(t, s, "/v1/brands").status == http.StatusOK {
			ok++
		}
	}
	if ok != 5 {
		t.Fatalf("after spending 95 of 100: %d more accepted", ok)
	}
}

func TestSeparateScopes(t *testing.T) {
	s := startSmall(t, func(o *Options) {
		o.NoLimits = false
		o.Rate = 1000
		o.DailyQuota = 2
		o.LimitsScope = ScopeSeparate
	})
	for k := 0; k < 2; k++ {
		if r := get(t, s, "/v1/brands"); r.status != http.StatusOK {
			t.Fatalf("api %d: %d", k, r.status)
		}
	}
	if r := get(t, s, "/v1/brands"); r.status != http.StatusTooManyRequests {
		t.Fatalf("api over quota: %d", r.status)
	}
	for k := 0; k < 2; k++ {
		if r := commsPost(t, s, `{"user_id":[1]}`); r.status != http.StatusOK {
			t.Fatalf("comms %d: %d", k, r.status)
		}
	}
	if r := commsPost(t, s, `{"user_id":[1]}`); r.status != http.StatusTooManyRequests {
		t.Fatalf("comms over quota: %d", r.status)
	}
	st := s.Stats()
	if st.Quota["api"].Used != 2 || st.Quota["comms"].Used != 2 || st.QuotaUsed != 4 {
		t.Fatalf("quota %+v", st.Quota)
	}
}

func TestNoLimits(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.NoLimits = true; o.Rate = 1; o.DailyQuota = 1 })
	for k := 0; k < 20; k++ {
		if r := get(t, s, "/v1/brands?per_page=1"); r.status != http.StatusOK {
			t.Fatalf("request %d: %d", k, r.status)
		}
	}
	if got := s.Stats().QuotaUsed; got != 20 {
		t.Fatalf("requests still counted: %d", got)
	}
}

func TestPerPageCapMainLists(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.MaxPerPage = 7 })
	l := decodeList(t, get(t, s, "/v1/projects?per_page=1000&page=2"))
	total := len(s.data.projects)
	if l.PerPage != 7 || len(l.Data) != 7 || l.Total != total || l.LastPage != (total+6)/7 || l.CurrentPage != 2 {
		t.Fatalf("capped: %+v", l)
	}
	if d := decodeList(t, get(t, s, "/v1/projects")); d.PerPage != 7 {
		t.Fatalf("default above the cap answered %d", d.PerPage)
	}
	s2 := startSmall(t, nil)
	if d := decodeList(t, get(t, s2, "/v1/projects")); d.PerPage != defaultPerPage {
		t.Fatalf("default per_page %d", d.PerPage)
	}
	last := decodeList(t, get(t, s2, "/v1/projects?per_page=5&page="+strconv.Itoa((total+4)/5)))
	if len(last.Data) != total-5*((total+4)/5-1) {
		t.Fatalf("last page has %d rows", len(last.Data))
	}
}

func TestPageBounds(t *testing.T) {
	for _, c := range []struct {
		p        page
		from, to int
	}{
		{page{total: 45, perPage: 20, current: 1}, 0, 20},
		{page{total: 45, perPage: 20, current: 3}, 40, 45},
		{page{total: 45, perPage: 20, current: 4}, 45, 45},
		{page{total: 40, perPage: 20, current: 3}, 40, 40},
		{page{total: 0, perPage: 20, current: 1}, 0, 0},
		{page{total: 45, perPage: 8, current: 1<<61 + 1}, 45, 45}, // (page-1)*per_page overflows
	} {
		if from, to := c.p.bounds(); from != c.from || to != c.to {
			t.Errorf("%+v: [%d, %d), want [%d, %d)", c.p, from, to, c.from, c.to)
		}
	}
	s := startSmall(t, nil)
	if l := decodeList(t, get(t, s, "/v1/projects?per_page=8&page=2305843009213693953")); len(l.Data) != 0 {
		t.Fatalf("huge page answered %d rows", len(l.Data))
	}
}
