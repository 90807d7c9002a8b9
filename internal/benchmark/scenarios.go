package benchmark

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// workerTimeout bounds one agencysync process.
const workerTimeout = 20 * time.Minute

// dailyQuota is the workers' AGENCY_DAILY_QUOTA (the service's default).
const dailyQuota = 10000

// fail is the row of a figure that could not be measured.
func fail(id, figure string, err error) Row {
	return Row{ID: id, Figure: figure, Result: "not measured", Verdict: Failed, Detail: err.Error()}
}

// backfillRun is one first sync of a whole agency.
type backfillRun struct {
	requests     int64 // the sandbox's count
	requestsUsed int64 // sync_runs.requests_used
	byEndpoint   map[string]int64
	rssKiB       int64
	took, wall   time.Duration
}

// backfillSet is a size's runs and its minimum.
type backfillSet struct {
	emails  int
	minimum Minimum
	runs    []backfillRun
}

// backfills runs figures 1 and 6: full first syncs of a small and a large
// agency (limits off), alternately, and reports request efficiency (large)
// and peak RSS (both, pair by pair).
func (h *harness) backfills(ctx context.Context) []Row {
	f1 := fmt.Sprintf("Request efficiency: first sync of %s, requests ÷ minimum", describe(h.sizes.agency(h.sizes.BackfillLarge)))
	f6 := fmt.Sprintf("Memory: worker peak RSS, first sync of %s vs %s e-mails", Int(int64(h.sizes.BackfillSmall)), Int(int64(h.sizes.BackfillLarge)))
	sets := []*backfillSet{{emails: h.sizes.BackfillSmall}, {emails: h.sizes.BackfillLarge}}
	sandboxes := make([]*Sandbox, len(sets))
	for i, set := range sets {
		sb, err := startSandbox(ctx, h.sandboxBin, h.sizes.agency(set.emails))
		if err != nil {
			return []Row{fail("1", f1, err), fail("6", f6, err)}
		}
		defer sb.Stop()
		head, err := sb.Head(ctx)
		if err != nil {
			return []Row{fail("1", f1, err), fail("6", f6, err)}
		}
		set.minimum = oracle.MinimumRequests(head.Inventory)
		sandboxes[i] = sb
	}
	for run := range h.cfg.Runs {
		for i, set := range sets {
			r, err := h.backfillOnce(ctx, sandboxes[i])
			if err != nil {
				return []Row{fail("1", f1, err), fail("6", f6, err)}
			}
			h.log("first sync of %s e-mails, run %d/%d: %d requests (minimum %d), sync_runs %d, %s, peak RSS %s",
				Int(int64(set.emails)), run+1, h.cfg.Runs, r.requests, set.minimum.Total, r.requestsUsed,
				r.took.Round(time.Millisecond), Bytes(float64(r.rssKiB)*1024))
			set.runs = append(set.runs, r)
		}
	}
	small, large := sets[0], sets[1]
	return []Row{efficiencyRow("1", f1, large, small), memoryRow("6", f6, small, large)}
}

func (h *harness) backfillOnce(ctx context.Context, sb *Sandbox) (backfillRun, error) {
	schema := newSchema()
	defer h.dropSchema(schema)
	if err := sb.ResetStats(ctx); err != nil {
		return backfillRun{}, err
	}
	env := sb.WorkerEnv(h.dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "1000"
	res, err := h.runSucceeded(ctx, "backfill", "first sync", env, "run")
	if err != nil {
		return backfillRun{}, err
	}
	st, err := sb.Stats(ctx)
	if err != nil {
		return backfillRun{}, err
	}
	used, _, err := h.lastRun(ctx, schema)
	if err != nil {
		return backfillRun{}, err
	}
	return backfillRun{requests: st.Keyed(), requestsUsed: used, byEndpoint: keyedByEndpoint(st), rssKiB: res.MaxRSSKiB,
		took: syncTook(res), wall: res.Wall}, nil
}

func efficiencyRow(id, figure string, large, small *backfillSet) Row {
	ints := func(x float64) string { return Int(int64(x)) }
	requests := float64s(large.runs, func(r backfillRun) float64 { return float64(r.requests) })
	used := float64s(large.runs, func(r backfillRun) float64 { return float64(r.requestsUsed) })
	minimum := float64(large.minimum.Total)
	med := Median(float64s(requests, func(n float64) float64 { return Ratio(n, minimum) }))
	detail := []string{
		fmt.Sprintf("requests per run (sandbox) %s, sync_runs.requests_used %s, minimum %s", List(requests, ints), List(used, ints), Int(int64(minimum))),
		"minimum by endpoint: " + endpointList(large.minimum.ByEndpoint),
	}
	if ex := EndpointExcess(large.runs[len(large.runs)-1].byEndpoint, large.minimum.ByEndpoint); len(ex) > 0 {
		detail = append(detail, "beyond the minimum by endpoint (last run): "+endpointList(ex))
	}
	smallRatios := float64s(small.runs, func(r backfillRun) float64 { return Ratio(float64(r.requests), float64(small.minimum.Total)) })
	detail = append(detail, fmt.Sprintf("at %s e-mails: %s (minimum %s)", Int(int64(small.emails)),
		List(smallRatios, func(x float64) string { return Float(x, 3) }), Int(int64(small.minimum.Total))))
	detail = append(detail, "sync time per run "+List(float64s(large.runs, func(r backfillRun) float64 { return r.took.Seconds() }),
		func(x float64) string { return Float(x, 1) + " s" }))
	return Row{ID: id, Figure: figure,
		Result:  fmt.Sprintf("%s (%s / %s)", Float(med, 3), Int(int64(Median(requests))), Int(int64(minimum))),
		Target:  "1.00",
		Verdict: Check(med, math.Round(med*100)/100 <= 1.00),
		Detail:  strings.Join(detail, "; ")}
}

func memoryRow(id, figure string, small, large *backfillSet) Row {
	mb := func(r backfillRun) float64 { return float64(r.rssKiB) * 1024 / 1e6 }
	s, l := float64s(small.runs, mb), float64s(large.runs, mb)
	ratios := PairRatios(l, s)
	ratio, lmed, smed := Median(ratios), Median(l), Median(s)
	_, lmax := MinMax(l)
	return Row{ID: id, Figure: figure,
		Result:  fmt.Sprintf("%s MB vs %s MB (×%s)", Float(smed, 1), Float(lmed, 1), Float(ratio, 2)),
		Target:  "≤ 1.2×, ≤ 100 MB",
		Verdict: Check(ratio, max(ratio, 1/ratio) <= 1.2 && max(lmed, smed) <= 100),
		Detail: fmt.Sprintf("peak RSS (getrusage ru_maxrss) per run: %s MB and %s MB; large ÷ small per run %s; largest %s MB",
			List(s, func(x float64) string { return Float(x, 1) }), List(l, func(x float64) string { return Float(x, 1) }),
			List(ratios, func(x float64) string { return Float(x, 2) }), Float(lmax, 1))}
}

func float64s[T any](xs []T, f func(T) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func endpointList[V int | int64](m map[string]V) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %s", k, Int(int64(m[k]))))
	}
	return strings.Join(parts, ", ")
}

// pace runs figure 2: a first sync against a sandbox enforcing 10
// requests/s with 50 ms latency; wall time ÷ (requests ÷ 10/s).
func (h *harness) pace(ctx context.Context) []Row {
	figure := "Pace: wall time ÷ (requests ÷ 10/s), sandbox at 10/s with 50 ms latency"
	o := h.sizes.Pace
	o.Rate, o.Latency = 10, 50*time.Millisecond
	sb, err := startSandbox(ctx, h.sandboxBin, o)
	if err != nil {
		return []Row{fail("2", figure, err)}
	}
	defer sb.Stop()
	var ratios, tookRatios, requests, other, comms, commsDur []float64
	var limited int64
	for run := range h.cfg.Runs {
		r, err := h.paceOnce(ctx, sb)
		if err != nil {
			return []Row{fail("2", figure, err)}
		}
		ideal := float64(r.requests) / 10
		ratios = append(ratios, Ratio(r.wall.Seconds(), ideal))
		tookRatios = append(tookRatios, Ratio(r.took.Seconds(), ideal))
		requests = append(requests, float64(r.requests))
		other, comms = append(other, ms(r.spacing.Other)), append(comms, ms(r.spacing.Comms))
		commsDur = append(commsDur, ms(r.spacing.CommsRequestMedian))
		limited += r.limited
		h.log("pace, run %d/%d: %d requests in %s (sync %s): ratio %.3f, %d × 429",
			run+1, h.cfg.Runs, r.requests, r.wall.Round(time.Millisecond), r.took.Round(time.Millisecond), ratios[run], r.limited)
	}
	med := Median(ratios)
	return []Row{{ID: "2", Figure: figure,
		Result:  fmt.Sprintf("%s, %d × 429", Float(med, 3), limited),
		Target:  "≤ 1.05, 0 × 429",
		Verdict: Check(med, med <= 1.05 && limited == 0),
		Detail: fmt.Sprintf("first sync of %s: %s requests; process wall time ÷ ideal per run %s; the sync's own time (log: sync started → sync summary) ÷ ideal %s; 429s counted by the sandbox (rate_limited and by_status) over all runs: %d; mean interval between request starts (worker's debug log) before a list or detail request %s ms, before a communications page %s ms (a page's request itself: median %s ms)",
			describe(o), List(requests, func(x float64) string { return Int(int64(x)) }),
			List(ratios, func(x float64) string { return Float(x, 3) }), List(tookRatios, func(x float64) string { return Float(x, 3) }), limited,
			List(other, func(x float64) string { return Float(x, 1) }), List(comms, func(x float64) string { return Float(x, 1) }),
			List(commsDur, func(x float64) string { return Float(x, 1) }))}}
}

type paceRun struct {
	requests, limited int64
	wall, took        time.Duration
	spacing           Spacing
}

func (h *harness) paceOnce(ctx context.Context, sb *Sandbox) (paceRun, error) {
	schema := newSchema()
	defer h.dropSchema(schema)
	env := sb.WorkerEnv(h.dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "10"
	// Migrations first, so that the measured process is the sync alone.
	if _, err := h.runSucceeded(ctx, "pace-migrate", "migrate up", env, "migrate", "up"); err != nil {
		return paceRun{}, err
	}
	if err := sb.ResetStats(ctx); err != nil {
		return paceRun{}, err
	}
	env["LOG_LEVEL"] = "debug" // one line per request: the spacing of the requests
	res, err := h.runSucceeded(ctx, "pace", "paced sync", env, "run", "--no-migrate")
	if err != nil {
		return paceRun{}, err
	}
	st, err := sb.Stats(ctx)
	if err != nil {
		return paceRun{}, err
	}
	return paceRun{requests: st.Keyed(), limited: max(st.RateLimited, st.ByStatus["429"]), wall: res.Wall, took: syncTook(res),
		spacing: RequestSpacing(res.Stderr)}, nil
}

// pipeline runs figure 3: e-mails/s of `agencysync run --streams
// communications` (limits off, no latency) against raw COPY of the same
// e-mails, recipients and users into unlogged, index-free tables. The
// worker's rate is reported twice, each against the same raw COPY of the
// same run: over the sync's own time (its log from "sync started" to "sync summary": fetch, decode,
// transform, load, bookkeeping) and over the whole process (its wall time
// from exec to exit: start, schema migration, the sync, exit).
func (h *harness) pipeline(ctx context.Context) []Row {
	n := Int(int64(h.sizes.PipelineEmails))
	figure := fmt.Sprintf("Pipeline: e-mails/s of agencysync run (communications, %s e-mails; the sync's own time) ÷ raw COPY", n)
	figureWhole := fmt.Sprintf("Pipeline: e-mails/s of the whole agencysync run process (start, migration, fetch, decode, load; %s e-mails) ÷ raw COPY", n)
	sb, err := startSandbox(ctx, h.sandboxBin, childproc.SandboxOptions{Emails: h.sizes.PipelineEmails, NoLimits: true})
	if err != nil {
		return []Row{fail("3", figure, err), fail("3", figureWhole, err)}
	}
	defer sb.Stop()
	var runs []pipelineRun
	for run := range h.cfg.Runs {
		r, err := h.pipelineOnce(ctx, sb)
		if err != nil {
			return []Row{fail("3", figure, err), fail("3", figureWhole, err)}
		}
		runs = append(runs, r)
		h.log("pipeline, run %d/%d: agencysync %.0f e-mails/s (whole process %.0f), raw COPY %.0f e-mails/s, ratio %.3f (whole process %.3f); CPU a page: worker %.1f ms, sandbox %.1f ms, PostgreSQL %.1f ms (raw COPY: PostgreSQL %.1f ms)",
			run+1, h.cfg.Runs, r.workerRate, r.wholeRate, r.rawRate, Ratio(r.workerRate, r.rawRate), Ratio(r.wholeRate, r.rawRate),
			ms(r.workerCPU), ms(r.sandboxCPU), ms(r.pgCPU), ms(r.rawPGCPU))
	}
	return pipelineRows(figure, figureWhole, runs, h.pgRoot > 0)
}

// pipelineRows renders figure 3's two rows from its runs: the worker's rate
// over the sync's own time and over the whole process, each divided by the
// raw COPY rate of the same run (pgCPU: PostgreSQL's CPU time was measured).
func pipelineRows(figure, figureWhole string, runs []pipelineRun, pgCPU bool) []Row {
	var worker, whole, raw, ratios, wholeRatios []float64
	for _, r := range runs {
		worker, whole, raw = append(worker, r.workerRate), append(whole, r.wholeRate), append(raw, r.rawRate)
		ratios = append(ratios, Ratio(r.workerRate, r.rawRate))
		wholeRatios = append(wholeRatios, Ratio(r.wholeRate, r.rawRate))
	}
	budget := runs
	med, wholeMed := Median(ratios), Median(wholeRatios)
	rate := func(x float64) string { return Int(int64(math.Round(x))) }
	ratio := func(x float64) string { return Float(x, 3) }
	msList := func(f func(pipelineRun) time.Duration) string {
		return List(float64s(budget, func(r pipelineRun) float64 { return ms(f(r)) }), func(x float64) string { return Float(x, 1) })
	}
	rawDetail := fmt.Sprintf("raw COPY e-mails/s per run (the oracle's rows of the ground truth; row encoding and COPY, one transaction per 1000) %s",
		List(raw, rate))
	detail := fmt.Sprintf("agencysync e-mails/s per run (e-mails ÷ the sync's own time, its log from sync started to sync summary: fetch, decode, transform, load, bookkeeping; not process start or migration) %s; %s; ratio per run %s; time a 1000-e-mail page per run: agencysync %s ms, raw COPY %s ms; CPU a page per run: worker %s ms, sandbox %s ms",
		List(worker, rate), rawDetail, List(ratios, ratio),
		List(worker, func(x float64) string { return Float(PageSize/x*1000, 1) }), List(raw, func(x float64) string { return Float(PageSize/x*1000, 1) }),
		msList(func(r pipelineRun) time.Duration { return r.workerCPU }), msList(func(r pipelineRun) time.Duration { return r.sandboxCPU }))
	if pgCPU {
		detail += fmt.Sprintf(", PostgreSQL %s ms (raw COPY: PostgreSQL %s ms, the harness %s ms)",
			msList(func(r pipelineRun) time.Duration { return r.pgCPU }), msList(func(r pipelineRun) time.Duration { return r.rawPGCPU }),
			msList(func(r pipelineRun) time.Duration { return r.rawOwnCPU }))
	}
	wholeDetail := fmt.Sprintf("agencysync e-mails/s per run (e-mails ÷ the process's wall time, exec to exit: start, schema migration of an empty schema, fetch, decode, transform, load, bookkeeping, exit) %s; the same runs' raw COPY as the row above: %s; ratio per run %s; process wall time per run %s s, of which outside the sync's took %s s",
		List(whole, rate), rawDetail, List(wholeRatios, ratio),
		List(float64s(budget, func(r pipelineRun) float64 { return r.wall.Seconds() }), func(x float64) string { return Float(x, 2) }),
		List(float64s(budget, func(r pipelineRun) float64 { return (r.wall - r.took).Seconds() }), func(x float64) string { return Float(x, 2) }))
	return []Row{
		{ID: "3", Figure: figure,
			Result:  fmt.Sprintf("%s (%s vs %s e-mails/s)", Float(med, 2), rate(Median(worker)), rate(Median(raw))),
			Target:  "≥ 0.5",
			Verdict: Check(med, med >= 0.5),
			Detail:  detail},
		{ID: "3", Figure: figureWhole,
			Result:  fmt.Sprintf("%s (%s vs %s e-mails/s)", Float(wholeMed, 2), rate(Median(whole)), rate(Median(raw))),
			Target:  "≥ 0.5",
			Verdict: Check(wholeMed, wholeMed >= 0.5),
			Detail:  wholeDetail},
	}
}

// pipelineRun is one run of figure 3, with the CPU time each process spent
// per 1000 e-mails.
type pipelineRun struct {
	workerRate, wholeRate, rawRate float64 // e-mails/s: the sync's took, the process's wall time, raw COPY
	took, wall                     time.Duration
	workerCPU, sandboxCPU, pgCPU   time.Duration // during the sync
	rawPGCPU, rawOwnCPU            time.Duration // during the raw COPY (PostgreSQL; the harness encoding rows)
}

func (h *harness) pipelineOnce(ctx context.Context, sb *Sandbox) (pipelineRun, error) {
	var r pipelineRun
	schema := newSchema()
	defer h.dropSchema(schema)
	env := sb.WorkerEnv(h.dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "1000"
	sbBefore, pgBefore := treeCPU(sb.Pid()), h.pgCPU()
	res, err := h.runSucceeded(ctx, "pipeline", "communications sync", env, "run", "--streams", "communications")
	if err != nil {
		return r, err
	}
	h.workerGone(ctx) // its backends' CPU time is in the postmaster's once they ended
	sbAfter, pgAfter := treeCPU(sb.Pid()), h.pgCPU()
	st, err := sb.Stats(ctx)
	if err != nil {
		return r, err
	}
	emails := max(st.Emails, 1)
	perPage := func(d time.Duration) time.Duration { return d * PageSize / time.Duration(emails) }
	r.took, r.wall = syncTook(res), res.Wall
	r.workerRate = Ratio(float64(st.Emails), r.took.Seconds())
	r.wholeRate = Ratio(float64(st.Emails), r.wall.Seconds())
	r.workerCPU, r.sandboxCPU, r.pgCPU = perPage(res.CPU), perPage(sbAfter-sbBefore), perPage(pgAfter-pgBefore)

	copier, err := NewRawCopier(ctx, h.pool, schema)
	if err != nil {
		return r, err
	}
	var spent, ownCPU, pgCPU time.Duration
	copied := 0
	err = sb.CommsPages(ctx, PageSize, func(page *oracle.Comms) error {
		own, pg := threadCPU(), h.pgCPU()
		d, err := copier.Copy(ctx, h.pool, page)
		ownCPU, pgCPU = ownCPU+threadCPU()-own, pgCPU+h.pgCPU()-pg
		spent += d
		copied += len(page.Emails)
		return err
	})
	if err != nil {
		return r, err
	}
	r.rawRate = Ratio(float64(copied), spent.Seconds())
	r.rawPGCPU, r.rawOwnCPU = perPage(pgCPU), perPage(ownCPU)
	return r, nil
}

// steady runs figures 4 and 5 on the steady-state agency (the sandbox's
// default in make bench): a first sync, a day of changes, the nightly run, a
// no-op re-run and a full refresh of every stream.
func (h *harness) steady(ctx context.Context) []Row {
	f4 := fmt.Sprintf("Steady state: nightly run after a day of changes (%s), share of the %s-request daily quota",
		describe(h.sizes.agency(h.sizes.SteadyEmails)), Int(dailyQuota))
	f4b := "Steady state: nightly run ÷ full refresh of every stream, requests"
	f5 := "No-op re-run: rows written, WAL bytes, requests"
	var nightly, nightlyUsed, full, share, noopRows, noopWAL, noopReq []float64
	var detail, walDetail, byEndpoint string
	for run := range h.cfg.Runs {
		r, err := h.steadyOnce(ctx)
		if err != nil {
			return []Row{fail("4", f4, err), fail("4", f4b, err), fail("5", f5, err)}
		}
		detail, walDetail, byEndpoint = r.changes, r.walDetail, endpointList(r.nightlyByEndpoint)
		nightly, full = append(nightly, float64(r.nightly)), append(full, float64(r.full))
		nightlyUsed = append(nightlyUsed, float64(r.nightlyUsed))
		share = append(share, float64(r.nightly)/dailyQuota*100)
		noopRows, noopWAL, noopReq = append(noopRows, float64(r.noopRows)), append(noopWAL, float64(r.noopWAL)), append(noopReq, float64(r.noopRequests))
		h.log("steady state, run %d/%d: nightly %d requests (sync_runs %d), full refresh %d; no-op %d rows, %s WAL, %d requests",
			run+1, h.cfg.Runs, r.nightly, r.nightlyUsed, r.full, r.noopRows, Bytes(float64(r.noopWAL)), r.noopRequests)
	}
	ints := func(x float64) string { return Int(int64(x)) }
	ratios := PairRatios(nightly, full)
	medShare, medRatio := Median(share), Median(ratios)
	_, maxRows := MinMax(noopRows)
	walNote := "a private cluster: exact, but for autovacuum and checkpoints"
	if !h.private {
		walNote = "a shared server: other sessions' WAL counts too"
	}
	return []Row{
		{ID: "4", Figure: f4, Result: fmt.Sprintf("%s requests = %s %%", ints(Median(nightly)), Float(medShare, 2)), Target: "≤ 3 %",
			Verdict: Check(medShare, medShare <= 3),
			Detail: fmt.Sprintf("requests per run (sandbox) %s, sync_runs.requests_used %s; by endpoint (last run): %s; after %s",
				List(nightly, ints), List(nightlyUsed, ints), byEndpoint, detail)},
		{ID: "4", Figure: f4b, Result: fmt.Sprintf("%s (%s vs %s requests)", Float(medRatio, 3), ints(Median(nightly)), ints(Median(full))), Target: "",
			Verdict: Info,
			Detail:  fmt.Sprintf("full refresh (run --full-refresh brands,projects,finance,communications) requests per run %s; ratio per run %s", List(full, ints), List(ratios, func(x float64) string { return Float(x, 3) }))},
		{ID: "5", Figure: f5, Result: fmt.Sprintf("%s rows, %s WAL, %s requests", ints(Median(noopRows)), Bytes(Median(noopWAL)), ints(Median(noopReq))), Target: "0 rows",
			Verdict: Check(maxRows, maxRows == 0),
			Detail: fmt.Sprintf("a second run right after the nightly one, nothing changed: rows (sync_runs.rows_by_table) per run %s; WAL (pg_current_wal_insert_lsn difference around the process, on %s) per run %s; requests per run %s",
				List(noopRows, ints), walNote, List(noopWAL, Bytes), List(noopReq, ints)) + lastWAL(walDetail)},
	}
}

type steadyRun struct {
	nightly, nightlyUsed, full      int64
	noopRows, noopWAL, noopRequests int64
	changes                         string
	walDetail                       string // the no-op's WAL by relation (pg_walinspect)
	nightlyByEndpoint               map[string]int64
}

func (h *harness) steadyOnce(ctx context.Context) (steadyRun, error) {
	var r steadyRun
	sb, err := startSandbox(ctx, h.sandboxBin, h.sizes.agency(h.sizes.SteadyEmails))
	if err != nil {
		return r, err
	}
	defer sb.Stop()
	schema := newSchema()
	defer h.dropSchema(schema)
	env := sb.WorkerEnv(h.dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "1000"
	var last map[string]int64 // the latest run's requests by endpoint
	run := func(what string, args ...string) (*childproc.Result, int64, error) {
		if err := sb.ResetStats(ctx); err != nil {
			return nil, 0, err
		}
		res, err := h.runSucceeded(ctx, "steady-"+strings.ReplaceAll(what, " ", "-"), what, env, args...)
		if err != nil {
			return nil, 0, err
		}
		st, err := sb.Stats(ctx)
		if err != nil {
			return nil, 0, err
		}
		last = keyedByEndpoint(st)
		return res, st.Keyed(), nil
	}
	if _, _, err := run("first sync", "run"); err != nil {
		return r, err
	}
	head, err := sb.Head(ctx)
	if err != nil {
		return r, err
	}
	if r.changes, err = h.dayOfChanges(ctx, sb, head); err != nil {
		return r, err
	}
	if _, r.nightly, err = run("nightly run", "run"); err != nil {
		return r, err
	}
	r.nightlyByEndpoint = last
	if r.nightlyUsed, _, err = h.lastRun(ctx, schema); err != nil {
		return r, err
	}
	lsn, err := h.walLSN(ctx)
	if err != nil {
		return r, err
	}
	if _, r.noopRequests, err = run("no-op run", "run"); err != nil {
		return r, err
	}
	end, err := h.walLSN(ctx)
	if err != nil {
		return r, err
	}
	if r.noopWAL, err = h.walSince(ctx, lsn); err != nil {
		return r, err
	}
	r.walDetail = h.walBreakdown(ctx, lsn, end)
	if _, r.noopRows, err = h.lastRun(ctx, schema); err != nil {
		return r, err
	}
	if _, r.full, err = run("full refresh", "run", "--full-refresh", "brands,projects,finance,communications"); err != nil {
		return r, err
	}
	return r, nil
}

// dayOfChanges advances the sandbox a day, appends e-mails (5000 on the
// default agency), changes the deadline of 2% of the projects and the
// amount of 1% of the finance records (every 50th project, every 100th
// budget, invoice, collection and payment), and says what it did.
func (h *harness) dayOfChanges(ctx context.Context, sb *Sandbox, head *TruthHead) (string, error) {
	if _, err := sb.Advance(ctx, 24*time.Hour); err != nil {
		return "", err
	}
	if err := sb.AppendEmails(ctx, h.sizes.SteadyAppend); err != nil {
		return "", err
	}
	st, err := sb.Stats(ctx)
	if err != nil {
		return "", err
	}
	projects, finance, err := editRecords(ctx, sb, head, st.Now, 0, 100)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("the sandbox clock advanced 24 h, %s e-mails appended (%s in all), %d of %d projects' deadline and %d of %d finance records' amount changed",
		Int(int64(h.sizes.SteadyAppend)), Int(int64(st.Emails)), projects, len(head.Projects), finance, len(head.Finance)), nil
}

func lastWAL(d string) string {
	if d == "" {
		return ""
	}
	return "; the last run's WAL: " + d
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
