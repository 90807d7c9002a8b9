package sandbox

import (
	"io"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOptionsValidation(t *testing.T) {
	cases := map[string]func(*Options){
		"brands":          func(o *Options) { o.Brands = 0 },
		"projects":        func(o *Options) { o.ProjectsPerBrand = -1 },
		"users":           func(o *Options) { o.Users = 0 },
		"emails":          func(o *Options) { o.Emails = -1 },
		"history":         func(o *Options) { o.HistoryDays = 0 },
		"start":           func(o *Options) { o.Start = time.Time{} },
		"domain":          func(o *Options) { o.DomainID = 0 },
		"api key":         func(o *Options) { o.APIKey = "" },
		"comms key":       func(o *Options) { o.CommsKey = "" },
		"foreign=api":     func(o *Options) { o.ForeignKey = o.APIKey },
		"revoked=comms":   func(o *Options) { o.RevokedKey = o.CommsKey },
		"rate":            func(o *Options) { o.NoLimits = false; o.Rate = 0 },
		"rate nan":        func(o *Options) { o.NoLimits = false; o.Rate = math.NaN() },
		"quota":           func(o *Options) { o.NoLimits = false; o.DailyQuota = 0 },
		"max per page":    func(o *Options) { o.MaxPerPage = 0 },
		"scope":           func(o *Options) { o.LimitsScope = "global" },
		"fault":           func(o *Options) { o.Faults.Drop = 1.5 },
		"faults sum":      func(o *Options) { o.Faults.Drop = 0.7; o.Faults.Err500 = 0.7 },
		"latency":         func(o *Options) { o.Latency = -time.Second },
		"bad record rate": func(o *Options) { o.BadRecordRate = 2 },
		"variant":         func(o *Options) { o.Variants = []string{"sideways"} },
	}
	for name, mutate := range cases {
		o := smallOptions()
		mutate(&o)
		if _, err := New(o); err == nil || !strings.HasPrefix(err.Error(), "validate options: ") {
			t.Errorf("%s: err %v", name, err)
		}
	}
	o := smallOptions()
	o.LimitsScope, o.QuotaTZ = "", nil
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.LimitsScope != ScopeShared || s.opts.QuotaTZ != time.UTC {
		t.Fatalf("defaults not applied: %q %v", s.opts.LimitsScope, s.opts.QuotaTZ)
	}
	// The same key may serve both interfaces, as the spec's <API_KEY> does.
	o = smallOptions()
	o.CommsKey = o.APIKey
	if _, err := New(o); err != nil {
		t.Fatalf("shared key refused: %v", err)
	}
}

func TestRealisticContent(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.Brands = 30 })
	currencies := map[string]bool{}
	var cents bool
	for _, b := range s.data.brands {
		currencies[b.currency] = true
	}
	for _, inv := range s.data.invoices {
		if inv.amount%100 != 0 {
			cents = true
		}
	}
	if len(currencies) != 3 || !cents {
		t.Fatalf("currencies %v, cents %t", currencies, cents)
	}
	body := string(get(t, s, "/v1/finance/invoices?per_page=1000").body)
	for _, want := range []string{`"currency":"EUR"`, `"currency":"RON"`, `"currency":"USD"`, `"status":"încasată"`} {
		if !strings.Contains(body, want) {
			t.Errorf("invoices lack %s", want)
		}
	}
}

// TestConcurrentUse runs reads, admin changes and the truth together; with
// -race it finds unguarded state.
func TestConcurrentUse(t *testing.T) {
	s := startSmall(t, nil)
	users := allUsers(s.opts.Users)
	var wg sync.WaitGroup
	// Goroutines must not call t.Fatal: they report with t.Error.
	call := func(method, url, key, keyHeader, body string) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set(keyHeader, key)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", url, resp.StatusCode)
		}
	}
	for w := 0; w < 3; w++ {
		wg.Go(func() {
			for k := 0; k < 15; k++ {
				call(http.MethodPost, s.CommsURL()+CommsPath, s.opts.CommsKey, "X-Workflow-Key",
					`{"user_id":`+users+`,"per_page":200,"page":`+strconv.Itoa(1+k%5)+`}`)
				call(http.MethodGet, s.APIURL()+"/v1/finance/invoices?per_page=200", s.opts.APIKey, "Authorization", "")
				call(http.MethodGet, s.APIURL()+"/v1/brands", s.opts.APIKey, "Authorization", "")
			}
		})
	}
	wg.Go(func() {
		for k := 0; k < 15; k++ {
			if _, _, err := s.AppendEmails(10); err != nil {
				t.Error(err)
			}
			subject := "edit"
			if err := s.EditEmail(emailID(s.opts.Seed, uint32(k)), EmailEdit{Subject: &subject, To: &[]int64{int64(k + 1)}}); err != nil {
				t.Error(err)
			}
			amount := Amount(1000 + k)
			if err := s.EditFinance(FinanceInvoices, s.data.invoices[k].id, FinanceEdit{Amount: &amount}); err != nil {
				t.Error(err)
			}
			if _, err := s.Advance(time.Hour); err != nil {
				t.Error(err)
			}
			_ = s.SetFaults(Faults{})
			_ = s.Stats()
		}
	})
	wg.Go(func() {
		for k := 0; k < 3; k++ {
			if err := s.Truth(io.Discard); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if total := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`}`).body).total; total != s.opts.Emails+150 {
		t.Fatalf("total %d", total)
	}
}

// TestMillionEmails checks that 1 000 000 e-mails fit in modest memory and
// that a 1000-row page is served fast.
func TestMillionEmails(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 1 000 000 e-mails")
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	o := DefaultOptions()
	o.Emails = 1_000_000
	o.NoLimits = true
	s := startServer(t, o)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 120<<20 {
		t.Fatalf("heap grew %d MB", grown>>20)
	}
	users := allUsers(o.Users)
	p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"per_page":1000,"page":777}`).body)
	if p.total != 1_000_000 || len(p.keys) != 1000 || p.lastPage != 1000 {
		t.Fatalf("total %d rows %d last %d", p.total, len(p.keys), p.lastPage)
	}
	// A filtered query over all dates: 10 users, then paging through it.
	q := `{"user_id":[1,2,3,4,5,6,7,8,9,10],"per_page":1000,"page":`
	first := decodeComms(t, commsPost(t, s, q+`1}`).body)
	start := time.Now()
	for page := 2; page <= 6; page++ {
		if r := commsPost(t, s, q+strconv.Itoa(page)+`}`); r.status != http.StatusOK {
			t.Fatalf("page %d: %d", page, r.status)
		}
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("5 filtered pages took %v", el)
	}
	if first.total < 10_000 {
		t.Fatalf("10 users match only %d", first.total)
	}
}
