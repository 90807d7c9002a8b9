package benchmark

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agencysync/agencysync/stream"
)

// raisedLimit is the pace of the raised-limit figure (part of figure 8).
const raisedLimit = 100

// EndpointRate is the pace of one kind of request in a worker's debug log:
// N requests whose starts spanned Span, so Rate = (N−1) ÷ Span requests a
// second (NaN for fewer than two).
type EndpointRate struct {
	N    int
	Span time.Duration
	Rate float64
}

// RequestRate reads agencysync's JSON log at debug level (one "request" line
// per answer, with its time and duration: the request started at ts −
// duration) and measures the pace of the requests whose endpoint match
// accepts, from the first one's start to the last one's.
func RequestRate(log []byte, match func(endpoint string) bool) EndpointRate {
	var starts []time.Time
	for l := range logLines(log) {
		if l.Msg == "request" && match(l.Endpoint) {
			starts = append(starts, l.start())
		}
	}
	r := EndpointRate{N: len(starts), Rate: Ratio(1, 0)}
	if len(starts) < 2 {
		return r
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	r.Span = starts[len(starts)-1].Sub(starts[0])
	r.Rate = Ratio(float64(len(starts)-1), r.Span.Seconds())
	return r
}

// PagesRate reads agencysync's JSON log at debug level and measures how
// fast communications pages went through the whole pipeline — fetched,
// decoded, transformed and committed: N pages from the first page's answer
// to the last "communications range done" line (a range logs it once its
// last page committed), Rate = (N−1) ÷ Span. Requests sent after that line
// (reconciliation) are not counted; before the first answer nothing can
// commit, so the first request's latency is left out, at any pace.
func PagesRate(log []byte) EndpointRate {
	var firstEnd, lastDone time.Time
	var starts []time.Time
	for l := range logLines(log) {
		switch {
		case l.Msg == "communications range done":
			lastDone = l.TS
		case l.Msg == "request" && isComms(l.Endpoint):
			starts = append(starts, l.start())
			if firstEnd.IsZero() || l.TS.Before(firstEnd) {
				firstEnd = l.TS
			}
		}
	}
	n := 0
	for _, s := range starts {
		if !s.After(lastDone) {
			n++
		}
	}
	r := EndpointRate{N: n, Rate: Ratio(1, 0)}
	if n < 2 || !lastDone.After(firstEnd) {
		return r
	}
	r.Span = lastDone.Sub(firstEnd)
	r.Rate = Ratio(float64(n-1), r.Span.Seconds())
	return r
}

// isDetail says whether endpoint is asked per entity: a detail or a list
// asked per entity (the details task's requests).
func isDetail(endpoint string) bool {
	ep, ok := stream.LookupEndpoint(stream.All(), endpoint)
	return ok && (ep.Kind() == stream.KindDetail || ep.Kind() == stream.KindChild)
}

// isComms says whether endpoint is the communications interface's.
func isComms(endpoint string) bool {
	ep, ok := stream.LookupEndpoint(stream.All(), endpoint)
	return ok && ep.Kind() == stream.KindWindow
}

// inflightRun is one first sync measured from its debug log.
type inflightRun struct {
	requests, limited int64
	details, comms    EndpointRate
	wall              time.Duration
}

// Inflight runs the raised-limit figure (part of figure 8): a first sync
// against a sandbox enforcing 100 requests/s with 50 ms latency, with
// AGENCY_RATE_LIMIT=100. Detail requests ÷ the limit must reach 0.9, and
// communications pages (PagesRate: fetched and committed) ÷ the lower of
// the limit and the load path's own ceiling — measured first, as PagesRate
// of `run --streams communications` against a sandbox without limits or
// latency — too, with no 429 from the sandbox. The same sync with SYNC_MAX_IN_FLIGHT=1 (one request
// at a time, as before) is measured alongside, and its request count must be
// the same.
func (h *harness) Inflight(ctx context.Context) []Row {
	const id = "8"
	figure := fmt.Sprintf("Raised limit: details and communications pages ÷ allowed rate, sandbox at %d/s with 50 ms latency", raisedLimit)
	o := h.sizes.Agency
	o.Emails = h.sizes.PipelineEmails

	// The load path's ceiling (no limits, no latency) is measured in every
	// run next to the paced syncs, so that each ratio compares runs made
	// under the same load of the machine.
	free := o
	free.NoLimits = true
	fsb, err := startSandbox(ctx, h.sandboxBin, free)
	if err != nil {
		return []Row{fail(id, figure, err)}
	}
	defer fsb.Stop()
	paced := o
	paced.Rate, paced.Latency, paced.DailyQuota = raisedLimit, 50*time.Millisecond, dailyQuota
	sb, err := startSandbox(ctx, h.sandboxBin, paced)
	if err != nil {
		return []Row{fail(id, figure, err)}
	}
	defer sb.Stop()
	limit := strconv.Itoa(raisedLimit)
	var detailRatios, commsRatios, oneDetailRatios, oneCommsRatios, ceilings []float64
	var limited int64
	sameRequests := true
	var requests []float64
	for run := range h.cfg.Runs {
		c, err := h.inflightOnce(ctx, fsb, "inflight-ceiling", map[string]string{"AGENCY_RATE_LIMIT": "1000"}, "--streams", "communications")
		if err != nil {
			return []Row{fail(id, figure, err)}
		}
		r, err := h.inflightOnce(ctx, sb, "inflight", map[string]string{"AGENCY_RATE_LIMIT": limit})
		if err != nil {
			return []Row{fail(id, figure, err)}
		}
		one, err := h.inflightOnce(ctx, sb, "inflight-one", map[string]string{"AGENCY_RATE_LIMIT": limit, "SYNC_MAX_IN_FLIGHT": "1"})
		if err != nil {
			return []Row{fail(id, figure, err)}
		}
		commsCap := min(float64(raisedLimit), c.comms.Rate)
		ceilings = append(ceilings, c.comms.Rate)
		detailRatios = append(detailRatios, Ratio(r.details.Rate, raisedLimit))
		commsRatios = append(commsRatios, Ratio(r.comms.Rate, commsCap))
		oneDetailRatios = append(oneDetailRatios, Ratio(one.details.Rate, raisedLimit))
		oneCommsRatios = append(oneCommsRatios, Ratio(one.comms.Rate, commsCap))
		limited += r.limited + one.limited
		sameRequests = sameRequests && r.requests == one.requests
		requests = append(requests, float64(r.requests))
		h.log("raised limit, run %d/%d: details %s/s (one at a time %s/s), pages %s/s (%s/s; ceiling %s/s), %d and %d requests, %d × 429",
			run+1, h.cfg.Runs, Float(r.details.Rate, 1), Float(one.details.Rate, 1), Float(r.comms.Rate, 1), Float(one.comms.Rate, 1),
			Float(c.comms.Rate, 1), r.requests, one.requests, r.limited+one.limited)
	}
	ceiling := Median(ceilings)
	dm, cm := Median(detailRatios), Median(commsRatios)
	ok := dm >= 0.9 && cm >= 0.9 && limited == 0 && sameRequests
	f3 := func(x float64) string { return Float(x, 3) }
	return []Row{{ID: id, Figure: figure,
		Result:  fmt.Sprintf("details %s, pages %s, %d × 429", Float(dm, 3), Float(cm, 3), limited),
		Target:  "≥ 0.9 and ≥ 0.9, 0 × 429, requests as one at a time",
		Verdict: Check(min(dm, cm), ok),
		Detail: fmt.Sprintf("first sync of %s at AGENCY_RATE_LIMIT=%d: detail requests a second ÷ %d per run %s (one request in flight, SYNC_MAX_IN_FLIGHT=1: %s); communications pages a second (fetched and committed) ÷ min(%d, the load path's ceiling measured in the same run: median %s pages/s, runs %s) %s (one at a time: %s); requests per sync %s, the same as one at a time: %v; 429s over all runs: %d",
			describe(paced), raisedLimit, raisedLimit, List(detailRatios, f3), List(oneDetailRatios, f3),
			raisedLimit, Float(ceiling, 1), List(ceilings, func(x float64) string { return Float(x, 1) }), List(commsRatios, f3), List(oneCommsRatios, f3),
			List(requests, func(x float64) string { return Int(int64(x)) }), sameRequests, limited)}}
}

// inflightOnce runs one first sync (args after run) on a fresh schema with
// env added, at debug level, and measures it.
func (h *harness) inflightOnce(ctx context.Context, sb *Sandbox, label string, extra map[string]string, args ...string) (inflightRun, error) {
	schema := newSchema()
	defer h.dropSchema(schema)
	env := sb.WorkerEnv(h.dsn, schema)
	for k, v := range extra {
		env[k] = v
	}
	if _, err := h.runSucceeded(ctx, label+"-migrate", "migrate up", env, "migrate", "up"); err != nil {
		return inflightRun{}, err
	}
	if err := sb.ResetStats(ctx); err != nil {
		return inflightRun{}, err
	}
	env["LOG_LEVEL"] = "debug" // one line per request: their pace
	res, err := h.runSucceeded(ctx, label, label+" sync", env, append([]string{"run", "--no-migrate"}, args...)...)
	if err != nil {
		return inflightRun{}, err
	}
	st, err := sb.Stats(ctx)
	if err != nil {
		return inflightRun{}, err
	}
	return inflightRun{requests: st.Keyed(), limited: max(st.RateLimited, st.ByStatus["429"]), wall: res.Wall,
		details: RequestRate(res.Stderr, isDetail), comms: PagesRate(res.Stderr)}, nil
}
