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

// agencyRig is an agency under measurement: its sandbox, the head of the
// sandbox's ground truth, the requests a first sync needs at least, and a
// fresh warehouse schema with the worker's environment against both.
type agencyRig struct {
	sb      *Sandbox
	head    *TruthHead
	minimum oracle.Minimum
	schema  string
	env     map[string]string
}

// startAgency starts a sandbox with options o, reads its truth's head and
// names a fresh schema; the worker's environment has AGENCY_RATE_LIMIT=1000.
// closeAgency undoes it.
func (h *harness) startAgency(ctx context.Context, o childproc.SandboxOptions) (*agencyRig, error) {
	sb, err := startSandbox(ctx, h.sandboxBin, o)
	if err != nil {
		return nil, err
	}
	head, err := sb.Head(ctx)
	if err != nil {
		sb.Stop()
		return nil, err
	}
	a := &agencyRig{sb: sb, head: head, minimum: oracle.MinimumRequests(head.Inventory), schema: newSchema()}
	a.env = sb.WorkerEnv(h.dsn, a.schema)
	a.env["AGENCY_RATE_LIMIT"] = "1000"
	return a, nil
}

// closeAgency drops the agency's schema, then stops its sandbox.
func (h *harness) closeAgency(a *agencyRig) {
	h.dropSchema(a.schema)
	a.sb.Stop()
}

// failRows are the rows of figure 8's figures that could not be measured.
func failRows(figures []string, err error) []Row {
	var rows []Row
	for _, f := range figures {
		rows = append(rows, fail("8", f, err))
	}
	return rows
}

// largeFigures names the large agency's six figures (name describes the
// agency): the first sync, the nightly run after a day of changes, the
// days' spread, the highest day, the hourly runs and the rolling re-read.
func largeFigures(z LargeSizes, name string) []string {
	return []string{
		fmt.Sprintf("Large agency: first sync of %s, requests ÷ minimum", name),
		fmt.Sprintf("Large agency: nightly run after a day of changes (%s e-mails), share of the %s-request daily quota",
			Int(int64(z.DayAppend)), Int(dailyQuota)),
		fmt.Sprintf("Large agency: %d simulated days (a nightly run and %d hourly runs a day), highest day ÷ average day", z.Days, hourlyRuns),
		fmt.Sprintf("Large agency: the highest of the %d days, share of the quota", z.Days),
		fmt.Sprintf("Large agency: hourly run --streams communications (+1 h, %s e-mails), requests per run", Int(int64(z.HourlyAppend))),
		fmt.Sprintf("Large agency: the rolling re-read of the e-mail history (SYNC_COMMS_REFRESH_AGE), requests a day over the %d days", z.Days),
	}
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
	o := withLimitsOff(z.Agency)
	figs := largeFigures(z, describe(o))
	a, err := h.startAgency(ctx, o)
	if err != nil {
		return failRows(figs, err)
	}
	defer h.closeAgency(a)
	if h.private { // the harsher case: tables filled seconds ago, never analysed by autovacuum
		restore, err := h.autovacuumOff(ctx)
		if err != nil {
			return failRows(figs, err)
		}
		defer restore()
	}
	var autovacuum string
	if err := h.pool.QueryRow(ctx, "SHOW autovacuum").Scan(&autovacuum); err != nil {
		return failRows(figs, fmt.Errorf("read autovacuum: %w", err))
	}

	first, err := h.runCounted(ctx, a.sb, "large-first-sync", a.env, succeeded("large first sync"), "run")
	if err != nil {
		return failRows(figs, err)
	}
	h.log("large agency: first sync %d requests (minimum %d) in %s", first.requests, a.minimum.Total, syncTook(first.res).Round(time.Second))
	rows := []Row{firstSyncRow(figs[0], first, a.minimum, autovacuum)}

	s, err := h.simulateDays(ctx, a, z, first.day)
	if err != nil {
		return append(rows, failRows(figs[1:], err)...)
	}
	ledger, err := h.quotaLedger(ctx, a.schema)
	if err != nil {
		return append(rows, failRows(figs[1:], err)...)
	}
	days := make([]QuotaDay, 0, len(s.byDay))
	for _, day := range sortedKeys(s.byDay) {
		days = append(days, QuotaDay{Day: day, Ledger: ledger[day], Sandbox: s.byDay[day]})
	}
	firstDay := QuotaDay{Day: first.day, Ledger: ledger[first.day], Sandbox: first.requests}
	spread := SpreadOf(days)
	return append(rows, nightlyRow(figs[1], s.nightlies[0], s.changes),
		s.spreadRow(figs[2], days, spread, firstDay, z.HourlyAppend),
		highestDayRow(figs[3], spread),
		s.hourlyRow(figs[4]),
		refreshRow(figs[5], days, s.refreshByDay))
}

// firstSyncRow is figure 8's first row: the large agency's first sync,
// its requests ÷ the minimum, with the run's status, time, memory and
// requests by endpoint (autovacuum is the server's setting during it).
func firstSyncRow(figure string, first sandboxRun, minimum oracle.Minimum, autovacuum string) Row {
	ratio := Ratio(float64(first.requests), float64(minimum.Total))
	detail := []string{fmt.Sprintf("status %s (exit %d) on a fresh schema, autovacuum %s during it, sync time %s s, peak RSS %s, sync_runs.requests_used %s",
		first.res.Status(), first.res.Code, autovacuum, Float(syncTook(first.res).Seconds(), 1), Bytes(float64(first.res.MaxRSSKiB)*1024),
		Int(int64(first.res.Num("requests_used"))))}
	detail = append(detail, "minimum by endpoint: "+endpointList(minimum.ByEndpoint))
	if ex := EndpointExcess(first.byEndpoint, minimum.ByEndpoint); len(ex) > 0 {
		detail = append(detail, "beyond the minimum by endpoint: "+endpointList(ex))
	}
	return Row{ID: "8", Figure: figure,
		Result:  fmt.Sprintf("%s (%s / %s)", Float(ratio, 3), Int(first.requests), Int(int64(minimum.Total))),
		Target:  "1.00, succeeded",
		Verdict: Check(ratio, math.Round(ratio*100)/100 <= 1.00),
		Detail:  strings.Join(detail, "; ")}
}

// largeDays gathers the large agency's simulated days after its first
// sync: the runs' requests by service day and what the rows report.
type largeDays struct {
	changes      string           // what the day of changes before the first nightly run did
	byDay        map[string]int64 // the sandbox's requests by service day
	refreshByDay map[string]int64 // the communications-refresh task's requests by service day
	nightlies    []sandboxRun
	hourly       []float64 // requests of the hourly runs but each service day's first
	over         []string  // hourly runs above 2 requests: day, hour, requests
	// The first run of each service day re-reads the communications
	// lookback window once (by design): those runs are reported apart.
	rereads    []float64
	rereadList []string
	lastDay    string // the service day of the latest run
}

// simulateDays runs the large agency's days after its first sync (which
// ended on firstDay): a day of changes and the nightly run, then the
// hourly runs until the next nightly run, Days times; each later nightly
// run follows an hour's changes.
func (h *harness) simulateDays(ctx context.Context, a *agencyRig, z LargeSizes, firstDay string) (*largeDays, error) {
	// The first sync ran at midnight; nightly runs run at SYNC_SCHEDULE's
	// default hour. Day 1: a day of changes, the nightly run; then the
	// hourly runs until the next nightly run.
	if _, err := a.sb.Advance(ctx, nightlyHour*time.Hour); err != nil {
		return nil, err
	}
	changes, err := h.editDay(ctx, a.sb, a.head, 0, 24*time.Hour, z.DayAppend, 100)
	if err != nil {
		return nil, err
	}
	s := &largeDays{changes: changes, byDay: map[string]int64{}, refreshByDay: map[string]int64{}, lastDay: firstDay}
	for d := 1; d <= z.Days; d++ {
		if d > 1 {
			if _, err := h.editDay(ctx, a.sb, a.head, d-1, time.Hour, z.HourlyAppend, laterFinanceEvery); err != nil {
				return nil, err
			}
		}
		n, err := h.runCounted(ctx, a.sb, fmt.Sprintf("large-nightly-%02d", d), a.env, succeeded(fmt.Sprintf("nightly run of day %d", d)), "run")
		if err != nil {
			return nil, err
		}
		s.lastDay = n.day
		s.nightlies = append(s.nightlies, n)
		if err := h.countDay(ctx, a.schema, s, n); err != nil {
			return nil, err
		}
		hours := hourlyRuns
		if d == z.Days { // the last day's runs after midnight belong to a day not simulated
			hours = hourlyRuns - nightlyHour
		}
		for hr := 1; hr <= hours; hr++ {
			if err := h.hourlyRun(ctx, a, s, d, hr, z.HourlyAppend); err != nil {
				return nil, err
			}
		}
		h.log("large agency: day %d (%s): nightly %d requests, %d in all", d, n.day, n.requests, s.byDay[n.day])
	}
	return s, nil
}

// hourlyRun is the hr-th hourly run of day d: the sandbox clock +1 h,
// emails e-mails appended, then agencysync run --streams communications,
// counted into s.
func (h *harness) hourlyRun(ctx context.Context, a *agencyRig, s *largeDays, d, hr, emails int) error {
	if _, err := a.sb.Advance(ctx, time.Hour); err != nil {
		return err
	}
	if err := a.sb.AppendEmails(ctx, emails); err != nil {
		return err
	}
	r, err := h.runCounted(ctx, a.sb, fmt.Sprintf("large-hourly-%02d-%02d", d, hr), a.env,
		succeeded(fmt.Sprintf("hourly run %d of day %d", hr, d)), "run", "--streams", "communications")
	if err != nil {
		return err
	}
	if err := h.countDay(ctx, a.schema, s, r); err != nil {
		return err
	}
	s.addHourly(r)
	return nil
}

// countDay adds run r's requests to its service day, and the requests of
// the communications-refresh task of the schema's newest run.
func (h *harness) countDay(ctx context.Context, schema string, s *largeDays, r sandboxRun) error {
	s.byDay[r.day] += r.requests
	n, err := h.lastRefresh(ctx, schema)
	s.refreshByDay[r.day] += n
	return err
}

// addHourly files an hourly run: the service day's first run among the
// lookback re-reads, any other among the hourly runs (and in over when
// above 2 requests).
func (s *largeDays) addHourly(r sandboxRun) {
	if r.day != s.lastDay { // the service day's first run
		s.lastDay = r.day
		s.rereads = append(s.rereads, float64(r.requests))
		s.rereadList = append(s.rereadList, fmt.Sprintf("%s %s %d", r.day[5:], r.at, r.requests))
		return
	}
	s.hourly = append(s.hourly, float64(r.requests))
	if r.requests > 2 {
		s.over = append(s.over, fmt.Sprintf("%s %s %d", r.day[5:], r.at, r.requests))
	}
}

// nightlyRow is figure 8's nightly run after a day of changes (n1, after
// changes): its requests' share of the daily quota.
func nightlyRow(figure string, n1 sandboxRun, changes string) Row {
	share := float64(n1.requests) / dailyQuota * 100
	return Row{ID: "8", Figure: figure,
		Result:  fmt.Sprintf("%s requests = %s %%", Int(n1.requests), Float(share, 2)),
		Target:  "≤ 2 % (≤ 200)",
		Verdict: Check(share, share <= 2),
		Detail: fmt.Sprintf("status %s; by endpoint: %s; after %s; sync_runs.requests_used %s",
			n1.res.Status(), endpointList(n1.byEndpoint), changes, Int(int64(n1.res.Num("requests_used"))))}
}

// spreadRow is figure 8's simulated days: the highest quota day ÷ the
// average day, with every day's ledger checked against the sandbox's count
// (firstDay is the first sync's day, not among days; hourlyAppend the
// e-mails appended before each run).
func (s *largeDays) spreadRow(figure string, days []QuotaDay, spread DaySpread, firstDay QuotaDay, hourlyAppend int) Row {
	nightlyCounts := float64s(s.nightlies, func(r sandboxRun) float64 { return float64(r.requests) })
	ints := func(x float64) string { return Int(int64(x)) }
	ledgerNote := "every day's ledger = the sandbox's count"
	if len(spread.Mismatches) > 0 || firstDay.Ledger != firstDay.Sandbox {
		ledgerNote = "**the ledger and the sandbox disagree** on the days in brackets (first-sync day: ledger " +
			Int(firstDay.Ledger) + ", sandbox " + Int(firstDay.Sandbox) + ")"
	}
	return Row{ID: "8", Figure: figure,
		Result:  fmt.Sprintf("%s (%s vs %s requests)", Float(spread.Ratio, 2), Int(spread.Highest.Ledger), Float(spread.Average, 1)),
		Target:  "≤ 1.5",
		Verdict: Check(spread.Ratio, spread.Ratio <= 1.5),
		Detail: fmt.Sprintf("requests a quota day (api_quota_usage; the service's day from its Date header; sandbox clock +1 h before every run, the nightly run at 02:00 as SYNC_SCHEDULE's default, the hourly runs at the other hours; the first day starts with the 02:00 nightly run): %s; %s; nightly runs' requests %s; all %d runs succeeded; day k's nightly run follows %s e-mails appended in its last hour and a different 2 %% of deadlines and 0.1 %% of amounts changed (day 1: the day of changes above; 0.1 %%, not 1 %%, to save time: each finance list's changes of a day fit one page either way)",
			dayList(days), ledgerNote, List(nightlyCounts, ints), len(s.nightlies)+len(s.hourly), Int(int64(hourlyAppend)))}
}

// highestDayRow is figure 8's highest quota day: its share of the daily
// quota, beside the average day's.
func highestDayRow(figure string, spread DaySpread) Row {
	hiShare := float64(spread.Highest.Ledger) / dailyQuota * 100
	return Row{ID: "8", Figure: figure,
		Result:  fmt.Sprintf("%s %% (%s, %s requests)", Float(hiShare, 2), spread.Highest.Day, Int(spread.Highest.Ledger)),
		Target:  "≤ 3 %",
		Verdict: Check(hiShare, hiShare <= 3),
		Detail:  fmt.Sprintf("average day %s requests = %s %% of the quota", Float(spread.Average, 1), Float(spread.Average/dailyQuota*100, 2))}
}

// hourlyRow is figure 8's hourly communications runs: the most requests a
// run and the median, each service day's first run (the lookback
// re-read) reported apart.
func (s *largeDays) hourlyRow(figure string) Row {
	ints := func(x float64) string { return Int(int64(x)) }
	_, hi := MinMax(s.hourly)
	_, hiReread := MinMax(s.rereads)
	counts := map[int64]int{}
	for _, n := range s.hourly {
		counts[int64(n)]++
	}
	var byRequests []string
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		byRequests = append(byRequests, fmt.Sprintf("%d runs of %d", counts[n], n))
	}
	return Row{ID: "8", Figure: figure,
		Result:  fmt.Sprintf("%s at most, median %s (the day's lookback re-read apart)", ints(hi), Float(Median(s.hourly), 1)),
		Target:  "≤ 2",
		Verdict: Check(hi, hi <= 2),
		Detail: fmt.Sprintf("%d hourly runs, all succeeded, besides each service day's first run (it re-reads the lookback window once a day, and reads the day's share of the history's re-read when no nightly run did yet, by design: %d runs, %s at most, median %s: %s); runs by requests: %s; above 2 (day, hour, requests): %s",
			len(s.hourly), len(s.rereads), ints(hiReread), Float(Median(s.rereads), 1), orNone(s.rereadList), strings.Join(byRequests, ", "), orNone(s.over))}
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
	a, err := h.startAgency(ctx, o)
	if err != nil {
		return []Row{fail("8", figure, err)}
	}
	defer h.closeAgency(a)
	a.env["AGENCY_DAILY_QUOTA"] = strconv.Itoa(z.HugeQuota)
	out, err := h.hugeRuns(ctx, a)
	if err != nil {
		return []Row{fail("8", figure, err)}
	}
	if out.ledger, err = h.quotaLedger(ctx, a.schema); err != nil {
		return []Row{fail("8", figure, err)}
	}
	out.truthText = "not compared: the sync did not complete"
	if out.complete {
		checks, err := h.compareWithTruth(ctx, a.sb, a.schema)
		if err != nil {
			return []Row{fail("8", figure, err)}
		}
		out.truthOK, out.truthText = oracle.Summary(checks)
	}
	return []Row{out.row(figure, a.minimum, z.HugeQuota)}
}

// hugeOutcome is what the first sync over several quota days came to.
type hugeOutcome struct {
	runs     []hugeRun
	complete bool // a run succeeded
	failed   bool // a run ended neither succeeded nor partial
	// ledger is the worker's api_quota_usage by day.
	ledger map[string]int64
	// truthOK says whether the warehouse held the truth, truthText how
	// it compared.
	truthOK   bool
	truthText string
}

// hugeRuns repeats agencysync run, the sandbox clock +24 h before each run
// but the first, until a run succeeds, one ends neither succeeded nor
// partial, or maxHugeRuns ran.
func (h *harness) hugeRuns(ctx context.Context, a *agencyRig) (hugeOutcome, error) {
	var out hugeOutcome
	for i := 1; i <= maxHugeRuns && !out.complete && !out.failed; i++ {
		if i > 1 {
			if _, err := a.sb.Advance(ctx, 24*time.Hour); err != nil {
				return out, err
			}
		}
		r, err := h.runCounted(ctx, a.sb, fmt.Sprintf("huge-%02d", i), a.env, func(*childproc.Result) error { return nil }, "run")
		if err != nil {
			return out, err
		}
		st, err := a.sb.Stats(ctx)
		if err != nil {
			return out, err
		}
		hr := hugeRun{day: r.day, code: r.res.Code, status: r.res.Status(), requests: r.requests, quotaUsed: st.QuotaUsed,
			overQuota: st.QuotaExceeded, rateLimits: max(st.RateLimited, st.ByStatus["429"])}
		out.runs = append(out.runs, hr)
		h.log("multi-day first sync, run %d (%s): exit %d, %s, %d requests", i, hr.day, hr.code, hr.status, hr.requests)
		switch {
		case hr.code == 0 && hr.status == "succeeded":
			out.complete = true
		case hr.code == 75 && hr.status == "partial":
		default:
			out.failed = true
		}
	}
	return out, nil
}

// row is the figure's row: met when the sync completed in two runs or
// more, none failed and the warehouse held the truth; the detail lists the
// runs and the requests in all ÷ minimum (quota is AGENCY_DAILY_QUOTA).
func (o hugeOutcome) row(figure string, minimum oracle.Minimum, quota int) Row {
	var total int64
	var parts []string
	for i, r := range o.runs {
		total += r.requests
		parts = append(parts, fmt.Sprintf("run %d on %s: exit %d %s, %s requests (ledger %s, sandbox quota used %s, %d × quota exceeded, %d × 429)",
			i+1, r.day, r.code, r.status, Int(r.requests), Int(o.ledger[r.day]), Int(r.quotaUsed), r.overQuota, r.rateLimits))
	}
	verdict := Met
	if !o.complete || o.failed || !o.truthOK || len(o.runs) < 2 {
		verdict = Missed
	}
	statuses := map[string]int{}
	for _, r := range o.runs {
		statuses[fmt.Sprintf("%s (exit %d)", r.status, r.code)]++
	}
	var st []string
	for _, k := range sortedKeys(statuses) {
		st = append(st, fmt.Sprintf("%d × %s", statuses[k], k))
	}
	result := fmt.Sprintf("%d runs over %d quota days: %s; ", len(o.runs), len(o.runs), strings.Join(st, ", "))
	if o.truthOK {
		result += "warehouse = truth"
	} else {
		result += "warehouse ≠ truth"
	}
	return Row{ID: "8", Figure: figure, Result: result,
		Target:  "no failed run, complete",
		Verdict: verdict,
		Detail: fmt.Sprintf("%s; requests in all %s ÷ minimum %s = %s; %s; AGENCY_DAILY_QUOTA=%d with the default 5 %% reserve, the sandbox enforcing the quota (its day follows its clock, moved +24 h after every partial run)",
			strings.Join(parts, "; "), Int(total), Int(int64(minimum.Total)), Float(Ratio(float64(total), float64(minimum.Total)), 3),
			o.truthText, quota)}
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
