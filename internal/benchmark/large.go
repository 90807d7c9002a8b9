package benchmark

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// LargeSizes are the workloads of figure 8: the large agency
// (a first sync, a day of changes, then Days simulated days of nightly and
// hourly runs) and the agency whose first sync spans several quota days.
type LargeSizes struct {
	// Agency is the large agency (limits off).
	Agency childproc.SandboxOptions
	// DayAppend are the e-mails of the day of changes before the measured
	// nightly run, HourlyAppend those appended before every hourly run (and
	// before every later nightly run), and Days the simulated days.
	DayAppend, HourlyAppend, Days int
	// Huge is the agency whose first sync needs more than a day's quota;
	// HugeQuota is the daily quota of its sandbox and worker.
	Huge      childproc.SandboxOptions
	HugeQuota int
}

// laterFinanceEvery is one in how many finance records the days after the
// first change: 0.1 %, not the first day's 1 %. The requests are the same —
// a day's changes of each finance list fit one page either way — but the
// sandbox recomputes every aggregate after each edit, which at the large
// agency's size makes 1 % a day take most of a simulated day's time.
const laterFinanceEvery = 1000

// nightlyHour is the hour of the simulated nightly runs: SYNC_SCHEDULE's
// default, 0 2 * * *.
const nightlyHour = 2

// hourlyRuns is how many hourly communications runs a simulated day has
// besides its nightly run.
const hourlyRuns = 23

// large runs figure 8: the large agency, the raised limit and the first
// sync spanning several quota days.
func (h *harness) large(ctx context.Context) []Row {
	rows := h.largeAgency(ctx)
	rows = append(rows, h.Inflight(ctx)...) // H-conc's raised-limit figure
	return append(rows, h.hugeAgency(ctx)...)
}

// sandboxRun is one agencysync process against a sandbox whose counters
// were reset just before it.
type sandboxRun struct {
	res        *childproc.Result
	requests   int64 // the sandbox's count
	byEndpoint map[string]int64
	day        string // the sandbox's day (YYYY-MM-DD, UTC) when the run ended
	at         string // and its time of day (HH:MM)
}

// runCounted resets the sandbox's counters, runs agencysync and reads the
// counters. A run that does not end as ok allows is an error.
func (h *harness) runCounted(ctx context.Context, sb *Sandbox, label string, env map[string]string,
	ok func(*childproc.Result) error, args ...string) (sandboxRun, error) {
	if err := sb.ResetStats(ctx); err != nil {
		return sandboxRun{}, err
	}
	res, err := h.runWorker(ctx, label, env, args...)
	if err != nil {
		return sandboxRun{}, err
	}
	if err := ok(res); err != nil {
		return sandboxRun{res: res}, err
	}
	st, err := sb.Stats(ctx)
	if err != nil {
		return sandboxRun{}, err
	}
	now := st.Now.UTC()
	return sandboxRun{res: res, requests: st.Keyed(), byEndpoint: keyedByEndpoint(st), day: now.Format(time.DateOnly), at: now.Format("15:04")}, nil
}

// succeeded accepts a run that exited 0 with a succeeded summary.
func succeeded(what string) func(*childproc.Result) error {
	return func(r *childproc.Result) error { return r.Err(what) }
}

// quotaLedger reads a schema's api_quota_usage: requests by quota day.
func (h *harness) quotaLedger(ctx context.Context, schema string) (map[string]int64, error) {
	rows, err := h.pool.Query(ctx, "SELECT day::text, requests FROM "+pgx.Identifier{schema, "api_quota_usage"}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("read api_quota_usage: %w", err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var day string
		var n int64
		if err := rows.Scan(&day, &n); err != nil {
			return nil, fmt.Errorf("read api_quota_usage: %w", err)
		}
		out[day] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read api_quota_usage: %w", err)
	}
	return out, nil
}

// editDay moves the sandbox clock by advance, appends e-mails and changes
// the deadline of 2 % of the projects and the amount of one in financeEvery
// finance records (budgets, invoices, collections, payments; 100: 1 %) — on
// day k different records than on the days before (k < 50). It says what
// it did.
func (h *harness) editDay(ctx context.Context, sb *Sandbox, head *TruthHead, k int, advance time.Duration, emails, financeEvery int) (string, error) {
	now, err := sb.Advance(ctx, advance)
	if err != nil {
		return "", err
	}
	if emails > 0 {
		if err := sb.AppendEmails(ctx, emails); err != nil {
			return "", err
		}
	}
	projects, finance, err := editRecords(ctx, sb, head, now, k, financeEvery)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("clock +%s, %s e-mails appended, %d of %d projects' deadline and %d of %d finance records' amount changed",
		advance, Int(int64(emails)), projects, len(head.Projects), finance, len(head.Finance)), nil
}

// editRecords moves the deadline of every 50th project to a month after
// now and adds 100 to the amount of every financeEvery-th finance record,
// starting from the middle of the first stride plus k (k < 50: day k
// changes other records than the days before). It returns how many of each
// it changed.
func editRecords(ctx context.Context, sb *Sandbox, head *TruthHead, now time.Time, k, financeEvery int) (projects, finance int, err error) {
	deadline := now.AddDate(0, 1, 0).Format(time.DateOnly)
	for i := (25 + k) % 50; i < len(head.Projects); i += 50 {
		if err := sb.EditProject(ctx, head.Projects[i], map[string]any{"deadline": deadline}); err != nil {
			return projects, finance, err
		}
		projects++
	}
	for i := (financeEvery/2 + k) % financeEvery; i < len(head.Finance); i += financeEvery {
		f := head.Finance[i]
		amount, err := strconv.ParseFloat(string(f.Amount), 64)
		if err != nil {
			return projects, finance, fmt.Errorf("parse amount of %s %s: %w", f.Kind, f.ID, err)
		}
		if err := sb.EditFinance(ctx, f.Kind, f.ID, map[string]any{"amount": strconv.FormatFloat(amount+100, 'f', 2, 64)}); err != nil {
			return projects, finance, err
		}
		finance++
	}
	return projects, finance, nil
}

// largeAgency measures the large agency: its first sync (requests ÷
// minimum), the nightly run after a day of changes (share of the quota)
// and Days simulated days of a nightly run and 23 hourly communications
// runs each (the highest day ÷ the average day, the highest day's share,
// hourly requests per run). Days are the service's: the worker takes its
// quota day from the sandbox's Date header, and the day's requests are the
// worker's ledger (api_quota_usage), checked against the sandbox's counts.
func (h *harness) largeAgency(ctx context.Context) []Row {
	z := h.sizes.Large
	o := z.Agency
	o.NoLimits = true
	name := describe(o)
	f1 := fmt.Sprintf("Large agency: first sync of %s, requests ÷ minimum", name)
	f2 := fmt.Sprintf("Large agency: nightly run after a day of changes (%s e-mails), share of the %s-request daily quota",
		Int(int64(z.DayAppend)), Int(dailyQuota))
	f3 := fmt.Sprintf("Large agency: %d simulated days (a nightly run and %d hourly runs a day), highest day ÷ average day", z.Days, hourlyRuns)
	f4 := fmt.Sprintf("Large agency: the highest of the %d days, share of the quota", z.Days)
	f5 := fmt.Sprintf("Large agency: hourly run --streams communications (+1 h, %s e-mails), requests per run", Int(int64(z.HourlyAppend)))
	f6 := fmt.Sprintf("Large agency: the rolling re-read of the e-mail history (SYNC_COMMS_REFRESH_AGE), requests a day over the %d days", z.Days)
	figs := []string{f1, f2, f3, f4, f5, f6}
	failFrom := func(i int, err error) []Row {
		var rows []Row
		for _, f := range figs[i:] {
			rows = append(rows, fail("8", f, err))
		}
		return rows
	}
	sb, err := startSandbox(ctx, h.sandboxBin, o)
	if err != nil {
		return failFrom(0, err)
	}
	defer sb.Stop()
	head, err := sb.Head(ctx)
	if err != nil {
		return failFrom(0, err)
	}
	minimum := oracle.MinimumRequests(head.Inventory)
	schema := newSchema()
	defer h.dropSchema(schema)
	env := sb.WorkerEnv(h.dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "1000"
	if h.private { // the harsher case: tables filled seconds ago, never analysed by autovacuum
		restore, err := h.autovacuumOff(ctx)
		if err != nil {
			return failFrom(0, err)
		}
		defer restore()
	}
	var autovacuum string
	if err := h.pool.QueryRow(ctx, "SHOW autovacuum").Scan(&autovacuum); err != nil {
		return failFrom(0, fmt.Errorf("read autovacuum: %w", err))
	}

	first, err := h.runCounted(ctx, sb, "large-first-sync", env, succeeded("large first sync"), "run")
	if err != nil {
		return failFrom(0, err)
	}
	h.log("large agency: first sync %d requests (minimum %d) in %s", first.requests, minimum.Total, syncTook(first.res).Round(time.Second))
	ratio := Ratio(float64(first.requests), float64(minimum.Total))
	detail := []string{fmt.Sprintf("status %s (exit %d) on a fresh schema, autovacuum %s during it, sync time %s s, peak RSS %s, sync_runs.requests_used %s",
		first.res.Status(), first.res.Code, autovacuum, Float(syncTook(first.res).Seconds(), 1), Bytes(float64(first.res.MaxRSSKiB)*1024),
		Int(int64(first.res.Num("requests_used"))))}
	detail = append(detail, "minimum by endpoint: "+endpointList(minimum.ByEndpoint))
	if ex := EndpointExcess(first.byEndpoint, minimum.ByEndpoint); len(ex) > 0 {
		detail = append(detail, "beyond the minimum by endpoint: "+endpointList(ex))
	}
	rows := []Row{{ID: "8", Figure: f1,
		Result:  fmt.Sprintf("%s (%s / %s)", Float(ratio, 3), Int(first.requests), Int(int64(minimum.Total))),
		Target:  "1.00, succeeded",
		Verdict: Check(ratio, math.Round(ratio*100)/100 <= 1.00),
		Detail:  strings.Join(detail, "; ")}}

	// The first sync ran at midnight; nightly runs run at SYNC_SCHEDULE's
	// default hour. Day 1: a day of changes, the nightly run; then the
	// hourly runs until the next nightly run.
	if _, err := sb.Advance(ctx, nightlyHour*time.Hour); err != nil {
		return append(rows, failFrom(1, err)...)
	}
	changes, err := h.editDay(ctx, sb, head, 0, 24*time.Hour, z.DayAppend, 100)
	if err != nil {
		return append(rows, failFrom(1, err)...)
	}
	byDay := map[string]int64{}
	refreshByDay := map[string]int64{} // the communications-refresh task's requests
	refreshed := func(day string) error {
		n, err := h.lastRefresh(ctx, schema)
		refreshByDay[day] += n
		return err
	}
	var nightlies []sandboxRun
	var hourly []float64
	var over []string // hourly runs above 2 requests: day, hour, requests
	// The first run of each service day re-reads the communications
	// lookback window once (by design): those runs are reported apart.
	var rereads []float64
	var rereadList []string
	lastDay := first.day
	for d := 1; d <= z.Days; d++ {
		if d > 1 {
			if _, err := h.editDay(ctx, sb, head, d-1, time.Hour, z.HourlyAppend, laterFinanceEvery); err != nil {
				return append(rows, failFrom(1, err)...)
			}
		}
		n, err := h.runCounted(ctx, sb, fmt.Sprintf("large-nightly-%02d", d), env, succeeded(fmt.Sprintf("nightly run of day %d", d)), "run")
		if err != nil {
			return append(rows, failFrom(1, err)...)
		}
		lastDay = n.day
		nightlies = append(nightlies, n)
		byDay[n.day] += n.requests
		if err := refreshed(n.day); err != nil {
			return append(rows, failFrom(1, err)...)
		}
		hours := hourlyRuns
		if d == z.Days { // the last day's runs after midnight belong to a day not simulated
			hours = hourlyRuns - nightlyHour
		}
		for hr := 1; hr <= hours; hr++ {
			if _, err := sb.Advance(ctx, time.Hour); err != nil {
				return append(rows, failFrom(1, err)...)
			}
			if err := sb.AppendEmails(ctx, z.HourlyAppend); err != nil {
				return append(rows, failFrom(1, err)...)
			}
			r, err := h.runCounted(ctx, sb, fmt.Sprintf("large-hourly-%02d-%02d", d, hr), env,
				succeeded(fmt.Sprintf("hourly run %d of day %d", hr, d)), "run", "--streams", "communications")
			if err != nil {
				return append(rows, failFrom(1, err)...)
			}
			byDay[r.day] += r.requests
			if err := refreshed(r.day); err != nil {
				return append(rows, failFrom(1, err)...)
			}
			if r.day != lastDay { // the service day's first run
				lastDay = r.day
				rereads = append(rereads, float64(r.requests))
				rereadList = append(rereadList, fmt.Sprintf("%s %s %d", r.day[5:], r.at, r.requests))
				continue
			}
			lastDay = r.day
			hourly = append(hourly, float64(r.requests))
			if r.requests > 2 {
				over = append(over, fmt.Sprintf("%s %s %d", r.day[5:], r.at, r.requests))
			}
		}
		h.log("large agency: day %d (%s): nightly %d requests, %d in all", d, n.day, n.requests, byDay[n.day])
	}
	ledger, err := h.quotaLedger(ctx, schema)
	if err != nil {
		return append(rows, failFrom(1, err)...)
	}
	days := make([]QuotaDay, 0, len(byDay))
	for _, day := range sortedKeys(byDay) {
		days = append(days, QuotaDay{Day: day, Ledger: ledger[day], Sandbox: byDay[day]})
	}
	firstDay := QuotaDay{Day: first.day, Ledger: ledger[first.day], Sandbox: first.requests}

	n1 := nightlies[0]
	share := float64(n1.requests) / dailyQuota * 100
	rows = append(rows, Row{ID: "8", Figure: f2,
		Result:  fmt.Sprintf("%s requests = %s %%", Int(n1.requests), Float(share, 2)),
		Target:  "≤ 2 % (≤ 200)",
		Verdict: Check(share, share <= 2),
		Detail: fmt.Sprintf("status %s; by endpoint: %s; after %s; sync_runs.requests_used %s",
			n1.res.Status(), endpointList(n1.byEndpoint), changes, Int(int64(n1.res.Num("requests_used"))))})

	spread := SpreadOf(days)
	nightlyCounts := float64s(nightlies, func(r sandboxRun) float64 { return float64(r.requests) })
	ints := func(x float64) string { return Int(int64(x)) }
	ledgerNote := "every day's ledger = the sandbox's count"
	if len(spread.Mismatches) > 0 || firstDay.Ledger != firstDay.Sandbox {
		ledgerNote = "**the ledger and the sandbox disagree** on the days in brackets (first-sync day: ledger " +
			Int(firstDay.Ledger) + ", sandbox " + Int(firstDay.Sandbox) + ")"
	}
	rows = append(rows, Row{ID: "8", Figure: f3,
		Result:  fmt.Sprintf("%s (%s vs %s requests)", Float(spread.Ratio, 2), Int(spread.Highest.Ledger), Float(spread.Average, 1)),
		Target:  "≤ 1.5",
		Verdict: Check(spread.Ratio, spread.Ratio <= 1.5),
		Detail: fmt.Sprintf("requests a quota day (api_quota_usage; the service's day from its Date header; sandbox clock +1 h before every run, the nightly run at 02:00 as SYNC_SCHEDULE's default, the hourly runs at the other hours; the first day starts with the 02:00 nightly run): %s; %s; nightly runs' requests %s; all %d runs succeeded; day k's nightly run follows %s e-mails appended in its last hour and a different 2 %% of deadlines and 0.1 %% of amounts changed (day 1: the day of changes above; 0.1 %%, not 1 %%, to save time: each finance list's changes of a day fit one page either way)",
			dayList(days), ledgerNote, List(nightlyCounts, ints), len(nightlies)+len(hourly), Int(int64(z.HourlyAppend)))})
	hiShare := float64(spread.Highest.Ledger) / dailyQuota * 100
	rows = append(rows, Row{ID: "8", Figure: f4,
		Result:  fmt.Sprintf("%s %% (%s, %s requests)", Float(hiShare, 2), spread.Highest.Day, Int(spread.Highest.Ledger)),
		Target:  "≤ 3 %",
		Verdict: Check(hiShare, hiShare <= 3),
		Detail:  fmt.Sprintf("average day %s requests = %s %% of the quota", Float(spread.Average, 1), Float(spread.Average/dailyQuota*100, 2))})
	_, hi := MinMax(hourly)
	_, hiReread := MinMax(rereads)
	counts := map[int64]int{}
	for _, n := range hourly {
		counts[int64(n)]++
	}
	var byRequests []string
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		byRequests = append(byRequests, fmt.Sprintf("%d runs of %d", counts[n], n))
	}
	rows = append(rows, Row{ID: "8", Figure: f5,
		Result:  fmt.Sprintf("%s at most, median %s (the day's lookback re-read apart)", ints(hi), Float(Median(hourly), 1)),
		Target:  "≤ 2",
		Verdict: Check(hi, hi <= 2),
		Detail: fmt.Sprintf("%d hourly runs, all succeeded, besides each service day's first run (it re-reads the lookback window once a day, and reads the day's share of the history's re-read when no nightly run did yet, by design: %d runs, %s at most, median %s: %s); runs by requests: %s; above 2 (day, hour, requests): %s",
			len(hourly), len(rereads), ints(hiReread), Float(Median(rereads), 1), orNone(rereadList), strings.Join(byRequests, ", "), orNone(over))})
	return append(rows, refreshRow(f6, days, refreshByDay))
}

// refreshRow is figure 8's account of the rolling re-read: its requests a
// quota day (whichever run of the day read the day's share) and their share
// of each day's requests; the bars are the days' (no day over 3 %, the
// highest within 1.5 × the average), which include it.
func refreshRow(figure string, days []QuotaDay, byDay map[string]int64) Row {
	var per []float64
	var list []string
	for _, d := range days {
		n := byDay[d.Day]
		per = append(per, float64(n))
		list = append(list, fmt.Sprintf("%s %d of %d", d.Day[5:], n, d.Ledger))
	}
	lo, hi := MinMax(per)
	mean := 0.0
	for _, n := range per {
		mean += n / float64(max(len(per), 1))
	}
	return Row{ID: "8", Figure: figure,
		Result: fmt.Sprintf("%s to %s, mean %s = %s %% of the quota", Int(int64(lo)), Int(int64(hi)), Float(mean, 1), Float(mean/dailyQuota*100, 2)),
		Target: "— (inside the days' bars above)", Verdict: Info,
		Detail: fmt.Sprintf("communications-refresh requests a quota day (sync_runs.streams_detail), of the day's requests: %s; default SYNC_COMMS_REFRESH_AGE (60 days): about 1 000 pages for the whole history, ⌈pages ÷ 60⌉ a day plus the last day taken and a range's rounding",
			strings.Join(list, ", "))}
}

// hugeRun is one run of the first sync that spans several quota days.
type hugeRun struct {
	day        string
	code       int
	status     string
	requests   int64 // the sandbox's count
	quotaUsed  int64 // the sandbox's count against the day's quota
	overQuota  int64 // "Daily quota exceeded" answers
	rateLimits int64
}

// maxHugeRuns bounds the runs of the first sync that spans several days.
const maxHugeRuns = 10

// hugeAgency runs the first sync of an agency larger than a day's quota:
// each run must end succeeded or partial (exit 75), the sandbox clock moves
// a day after a partial run, and at the end the warehouse must hold the
// truth (oracle.Expected).
func (h *harness) hugeAgency(ctx context.Context) []Row {
	z := h.sizes.Large
	o := z.Huge
	o.Rate, o.DailyQuota = 2000, z.HugeQuota
	figure := fmt.Sprintf("First sync of %s over several quota days (%s requests a day): every run succeeded or partial, warehouse = truth",
		describe(o), Int(int64(z.HugeQuota)))
	sb, err := startSandbox(ctx, h.sandboxBin, o)
	if err != nil {
		return []Row{fail("8", figure, err)}
	}
	defer sb.Stop()
	head, err := sb.Head(ctx)
	if err != nil {
		return []Row{fail("8", figure, err)}
	}
	minimum := oracle.MinimumRequests(head.Inventory)
	schema := newSchema()
	defer h.dropSchema(schema)
	env := sb.WorkerEnv(h.dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "1000"
	env["AGENCY_DAILY_QUOTA"] = strconv.Itoa(z.HugeQuota)
	var runs []hugeRun
	complete, failed := false, false
	for i := 1; i <= maxHugeRuns && !complete && !failed; i++ {
		if i > 1 {
			if _, err := sb.Advance(ctx, 24*time.Hour); err != nil {
				return []Row{fail("8", figure, err)}
			}
		}
		r, err := h.runCounted(ctx, sb, fmt.Sprintf("huge-%02d", i), env, func(*childproc.Result) error { return nil }, "run")
		if err != nil {
			return []Row{fail("8", figure, err)}
		}
		st, err := sb.Stats(ctx)
		if err != nil {
			return []Row{fail("8", figure, err)}
		}
		hr := hugeRun{day: r.day, code: r.res.Code, status: r.res.Status(), requests: r.requests, quotaUsed: st.QuotaUsed,
			overQuota: st.QuotaExceeded, rateLimits: max(st.RateLimited, st.ByStatus["429"])}
		runs = append(runs, hr)
		h.log("multi-day first sync, run %d (%s): exit %d, %s, %d requests", i, hr.day, hr.code, hr.status, hr.requests)
		switch {
		case hr.code == 0 && hr.status == "succeeded":
			complete = true
		case hr.code == 75 && hr.status == "partial":
		default:
			failed = true
		}
	}
	ledger, err := h.quotaLedger(ctx, schema)
	if err != nil {
		return []Row{fail("8", figure, err)}
	}
	var total int64
	var parts []string
	for i, r := range runs {
		total += r.requests
		parts = append(parts, fmt.Sprintf("run %d on %s: exit %d %s, %s requests (ledger %s, sandbox quota used %s, %d × quota exceeded, %d × 429)",
			i+1, r.day, r.code, r.status, Int(r.requests), Int(ledger[r.day]), Int(r.quotaUsed), r.overQuota, r.rateLimits))
	}
	truthOK, truthText := false, "not compared: the sync did not complete"
	if complete {
		checks, err := h.compareWithTruth(ctx, sb, schema)
		if err != nil {
			return []Row{fail("8", figure, err)}
		}
		truthOK, truthText = oracle.Summary(checks)
	}
	verdict := Met
	if !complete || failed || !truthOK || len(runs) < 2 {
		verdict = Missed
	}
	statuses := map[string]int{}
	for _, r := range runs {
		statuses[fmt.Sprintf("%s (exit %d)", r.status, r.code)]++
	}
	var st []string
	for _, k := range sortedKeys(statuses) {
		st = append(st, fmt.Sprintf("%d × %s", statuses[k], k))
	}
	result := fmt.Sprintf("%d runs over %d quota days: %s; ", len(runs), len(runs), strings.Join(st, ", "))
	if truthOK {
		result += "warehouse = truth"
	} else {
		result += "warehouse ≠ truth"
	}
	return []Row{{ID: "8", Figure: figure, Result: result,
		Target:  "no failed run, complete",
		Verdict: verdict,
		Detail: fmt.Sprintf("%s; requests in all %s ÷ minimum %s = %s; %s; AGENCY_DAILY_QUOTA=%d with the default 5 %% reserve, the sandbox enforcing the quota (its day follows its clock, moved +24 h after every partial run)",
			strings.Join(parts, "; "), Int(total), Int(int64(minimum.Total)), Float(Ratio(float64(total), float64(minimum.Total)), 3),
			truthText, z.HugeQuota)}}
}

// withLimitsOff returns o with the sandbox's limits off.
func withLimitsOff(o childproc.SandboxOptions) childproc.SandboxOptions {
	o.NoLimits = true
	return o
}

// autovacuumOff turns autovacuum off in the private cluster until the
// returned function turns it back on (a server given by DATABASE_URL is
// never reconfigured).
func (h *harness) autovacuumOff(ctx context.Context) (func(), error) {
	set := func(ctx context.Context, stmt string) error {
		if _, err := h.pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("configure autovacuum: %w", err)
		}
		if _, err := h.pool.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return fmt.Errorf("reload configuration: %w", err)
		}
		return nil
	}
	if err := set(ctx, "ALTER SYSTEM SET autovacuum = off"); err != nil {
		return nil, err
	}
	// pg_reload_conf signals the postmaster; wait until sessions see it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var v string
		if err := h.pool.QueryRow(ctx, "SHOW autovacuum").Scan(&v); err == nil && v == "off" {
			break
		}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := set(ctx, "ALTER SYSTEM RESET autovacuum"); err != nil {
			h.log("turn autovacuum back on: %v", err)
		}
	}, nil
}

// orNone joins xs, or says "none".
func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
