package sandbox

import (
	"maps"
	"strconv"
	"sync"
	"time"
)

// Stats is a snapshot of what the sandbox served, as GET /_sandbox/stats
// returns it. Admin requests are not counted.
type Stats struct {
	// Requests is the number of requests to the two data listeners that ended
	// (answered, dropped or abandoned by the client).
	Requests int64 `json:"requests"`
	// Keyless counts the requests among Requests that carried no key at all
	// (answered 401, never counted against a quota): the worker's clock
	// probes. Requests - Keyless is what a key sent.
	Keyless int64 `json:"keyless"`
	// ByStatus counts answers by HTTP status code ("200", "429", ...).
	ByStatus map[string]int64 `json:"by_status"`
	// ByEndpoint counts requests by endpoint name (brands, brand_detail,
	// contacts, projects, project_detail, budgets, invoices, collections,
	// payments, profitability, summary, communications, unknown).
	ByEndpoint map[string]int64 `json:"by_endpoint"`
	// RateLimited counts genuine "Rate limit exceeded" answers.
	RateLimited int64 `json:"rate_limited"`
	// QuotaExceeded counts "Daily quota exceeded" answers.
	QuotaExceeded int64 `json:"quota_exceeded"`
	// Spurious429 counts injected "Rate limit exceeded" answers (fault_429).
	Spurious429 int64 `json:"spurious_429"`
	// Faults counts injected faults by kind: 500, 502_html, 503, truncate,
	// slow, drop, 429.
	Faults map[string]int64 `json:"faults"`
	// Dropped counts connections closed without an answer (fault_drop).
	Dropped int64 `json:"dropped"`
	// Aborted counts requests whose client went away before the answer.
	Aborted int64 `json:"aborted"`
	// QuotaUsed is the number of requests counted against today's quota, over
	// all limit scopes.
	QuotaUsed int64 `json:"quota_used"`
	// QuotaDay is today's quota day (YYYY-MM-DD in QuotaTZ).
	QuotaDay string `json:"quota_day"`
	// Quota details each limit scope: "shared", or "api" and "comms".
	Quota map[string]QuotaUsage `json:"quota"`
	// Now is the sandbox clock.
	Now time.Time `json:"now"`
	// Emails is the number of e-mails that exist.
	Emails int `json:"emails"`
}

// QuotaUsage is one limit scope's use of today's quota.
type QuotaUsage struct {
	Day   string `json:"day"`
	Used  int64  `json:"used"`
	Limit int    `json:"limit"`
}

type statsCollector struct {
	mu            sync.Mutex
	requests      int64
	keyless       int64
	byStatus      map[int]int64
	byEndpoint    map[string]int64
	rateLimited   int64
	quotaExceeded int64
	spurious      int64
	faults        map[string]int64
	dropped       int64
	aborted       int64
}

func newStatsCollector() *statsCollector {
	c := &statsCollector{}
	c.reset()
	return c
}

func (c *statsCollector) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests, c.keyless, c.rateLimited, c.quotaExceeded, c.spurious, c.dropped, c.aborted = 0, 0, 0, 0, 0, 0, 0
	c.byStatus = map[int]int64{}
	c.byEndpoint = map[string]int64{}
	c.faults = map[string]int64{}
}

// outcome is how a request ended, for the stats.
type outcome struct {
	endpoint string
	status   int    // 0 when no answer was sent
	fault    string // injected fault kind, if any
	rate     bool   // genuine rate-limit 429
	quota    bool   // daily-quota 429
	dropped  bool
	aborted  bool
	keyless  bool // the request carried no key
}

func (c *statsCollector) record(o outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	if o.keyless {
		c.keyless++
	}
	c.byEndpoint[o.endpoint]++
	if o.status != 0 {
		c.byStatus[o.status]++
	}
	if o.fault != "" {
		c.faults[o.fault]++
	}
	if o.fault == faultName429 {
		c.spurious++
	}
	if o.rate {
		c.rateLimited++
	}
	if o.quota {
		c.quotaExceeded++
	}
	if o.dropped {
		c.dropped++
	}
	if o.aborted {
		c.aborted++
	}
}

func (c *statsCollector) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{
		Requests:      c.requests,
		Keyless:       c.keyless,
		ByStatus:      make(map[string]int64, len(c.byStatus)),
		ByEndpoint:    maps.Clone(c.byEndpoint),
		RateLimited:   c.rateLimited,
		QuotaExceeded: c.quotaExceeded,
		Spurious429:   c.spurious,
		Faults:        maps.Clone(c.faults),
		Dropped:       c.dropped,
		Aborted:       c.aborted,
	}
	for k, v := range c.byStatus {
		s.ByStatus[strconv.Itoa(k)] = v
	}
	return s
}

// Keyed is the number of requests that carried a key (Requests - Keyless):
// what a worker's ledger and its runs count.
func (s Stats) Keyed() int64 { return s.Requests - s.Keyless }
