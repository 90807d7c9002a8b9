package benchmark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Report is the outcome of a benchmark session.
type Report struct {
	Machine Machine
	Sizes   Sizes
	Runs    int
	Rows    []Row
	Took    time.Duration
	// OtherCores is how many cores other processes kept busy on average
	// during the session (the machine's busy CPU time minus the
	// benchmark's own; with DATABASE_URL the server's is not the
	// benchmark's own), and Steps the same per step.
	OtherCores float64
	Steps      []Step
	// Earlier, when set, is the session whose rows complete this one's
	// (MergeEarlier).
	Earlier *Report `json:",omitempty"`
}

// Step is one step of a session and how busy the rest of the machine was.
type Step struct {
	Name       string
	Took       time.Duration
	OtherCores float64
}

// BusyLoad is the 1-minute load average at the start, and BusyCores the
// average cores other processes used, from which the machine counts as
// busy: the report then says its timings are noisy.
const (
	BusyLoad  = 1.5
	BusyCores = 0.2
)

// Run builds or finds the binaries, opens the warehouse and measures every
// selected figure. A figure that fails is reported as a row with its error;
// Run itself fails only when nothing can be measured.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	started := time.Now()
	cpuStart, cpuErr := SampleCPU(0)
	h := newHarness(withDefaults(cfg))
	loadStart := LoadAverage()
	removeBinaries, err := h.binaries(ctx)
	if err != nil {
		return nil, err
	}
	defer removeBinaries()
	stop, err := h.startWarehouse(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := h.newReport(ctx, loadStart)
	h.log("%s mode, %d runs a figure; load average %s", h.sizes.Name, h.cfg.Runs, loadStart)

	rows, err := h.runSteps(ctx, rep)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("run benchmarks: no figure selected")
	}
	rep.Rows = sortRows(rows)
	rep.Machine.LoadEnd = LoadAverage()
	stop() // the private cluster's CPU time becomes this process's children's
	rep.OtherCores = -1
	if cpuEnd, err := SampleCPU(0); err == nil && cpuErr == nil {
		rep.OtherCores = OtherCores(cpuStart, cpuEnd)
	}
	rep.Took = time.Since(started)
	return rep, nil
}

// withDefaults returns cfg with at least 3 runs, a log (discarding) and a
// module folder (the current one).
func withDefaults(cfg Config) Config {
	if cfg.Runs < 3 {
		cfg.Runs = 3
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.ModuleDir == "" {
		cfg.ModuleDir = "."
	}
	return cfg
}

// newHarness returns the harness of cfg: its mode's sizes (with
// cfg.LargeDays, when set) and its progress log.
func newHarness(cfg Config) *harness {
	h := &harness{cfg: cfg, sizes: FullSizes, log: func(format string, args ...any) {
		fmt.Fprintf(cfg.Log, "agencybench: "+format+"\n", args...)
	}}
	if cfg.Quick {
		h.sizes = QuickSizes
	}
	if cfg.LargeDays > 0 {
		h.sizes.Large.Days = cfg.LargeDays
	}
	return h
}

// binaries sets the harness's agencysync and agencysandbox: those of
// cfg.BinDir, or, without one, binaries built into a temporary folder
// which the returned function removes.
func (h *harness) binaries(ctx context.Context) (remove func(), err error) {
	remove = func() {}
	bin := h.cfg.BinDir
	if bin == "" {
		dir, err := os.MkdirTemp("", "agencybench-bin-")
		if err != nil {
			return nil, fmt.Errorf("create binaries folder: %w", err)
		}
		remove = func() { os.RemoveAll(dir) }
		h.log("building agencysync and agencysandbox")
		if err := build(ctx, h.cfg.ModuleDir, dir); err != nil {
			remove()
			return nil, err
		}
		bin = dir
	}
	h.agencysync, h.sandboxBin = filepath.Join(bin, "agencysync"), filepath.Join(bin, "agencysandbox")
	for _, b := range []string{h.agencysync, h.sandboxBin} {
		if _, err := os.Stat(b); err != nil {
			remove()
			return nil, fmt.Errorf("find binary: %w", err)
		}
	}
	return remove, nil
}

// startWarehouse opens the warehouse of cfg.DatabaseURL, or starts a
// private cluster (whose postmaster's CPU time then counts as the
// benchmark's). The returned function closes it; calls after the first do
// nothing.
func (h *harness) startWarehouse(ctx context.Context) (stop func(), err error) {
	pool, dsn, private, stopWarehouse, err := openWarehouse(ctx, h.cfg.DatabaseURL, h.cfg.PGBinDir)
	if err != nil {
		return nil, err
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			stopWarehouse()
		}
	}
	h.pool, h.dsn, h.private = pool, dsn, private
	if private {
		h.pgRoot = postmasterPID(ctx, pool)
	}
	return stop, nil
}

// newReport starts the session's report: its sizes and runs, and the
// machine (loadStart is the load average at the start).
func (h *harness) newReport(ctx context.Context, loadStart string) *Report {
	rep := &Report{Sizes: h.sizes, Runs: h.cfg.Runs}
	rep.Machine = DescribeMachine(ctx, h.pool)
	rep.Machine.LoadStart = loadStart
	rep.Machine.Commit = gitDescribe(ctx, h.cfg.ModuleDir)
	rep.Machine.Warehouse = "DATABASE_URL"
	if h.private {
		rep.Machine.Warehouse = "a private cluster started by the harness (warehouse.StartLocal)"
	}
	return rep
}

// benchStep is one step of a session: the figures it measures, its name
// in the log and the report, and what runs it.
type benchStep struct {
	figs []string
	name string
	run  func(context.Context) []Row
}

// steps are the session's steps, in the order they run.
//
// The steps that measure a worker's peak RSS (figures 6 and 11) run before
// the large agency, whose ground truth makes this process large: a worker
// it starts reports in ru_maxrss the larger of its own peak and this
// process's at the start (Go starts a child with vfork, and the kernel
// records the shared memory's high-water mark at the exec), so a worker
// started after the large agency showed this process's 814 MiB, bombs or
// not.
func (h *harness) steps() []benchStep {
	return []benchStep{
		{[]string{"7"}, "micro-benchmarks", h.micro},
		{[]string{"3"}, "pipeline", h.pipeline},
		{[]string{"2"}, "pace", h.pace},
		{[]string{"4", "5"}, "steady state and no-op", h.steady},
		{[]string{"1", "6"}, "first syncs (request efficiency, memory)", h.backfills},
		{[]string{"11"}, "memory under gzip bombs", h.bombs},
		{[]string{"8"}, "large agency (first sync, 14 days, raised limit, several quota days)", h.large},
		{[]string{"9"}, "storage (raw compressed with pglz and lz4)", h.storage},
		{[]string{"10"}, "fleet (agencies per hour per worker, 1 and 3 workers)", h.fleet},
	}
}

// runSteps runs the steps of the selected figures and returns their rows,
// adding each step's time and the other processes' CPU meanwhile to rep.
// A cancelled ctx stops it before the next step.
func (h *harness) runSteps(ctx context.Context, rep *Report) ([]Row, error) {
	var rows []Row
	for _, s := range h.steps() {
		wanted := false
		for _, f := range s.figs {
			wanted = wanted || h.want(f)
		}
		if !wanted {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("run benchmarks: %w", err)
		}
		before, berr := SampleCPU(h.pgRoot)
		h.log("%s …", s.name)
		rows = append(rows, s.run(ctx)...)
		after, aerr := SampleCPU(h.pgRoot)
		step := Step{Name: s.name, Took: after.At.Sub(before.At), OtherCores: -1}
		if berr == nil && aerr == nil {
			step.OtherCores = OtherCores(before, after)
		}
		rep.Steps = append(rep.Steps, step)
		h.log("%s done in %s (other processes used %s cores meanwhile)", s.name, step.Took.Round(time.Second), Float(step.OtherCores, 2))
	}
	return rows, nil
}

// sortRows orders rows by figure number, keeping the order within a figure.
func sortRows(rows []Row) []Row {
	out := make([]Row, 0, len(rows))
	for _, id := range []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"} {
		for _, r := range rows {
			if r.ID == id {
				out = append(out, r)
			}
		}
	}
	for _, r := range rows {
		if (r.ID < "1" || r.ID > "9" || len(r.ID) != 1) && r.ID != "10" && r.ID != "11" {
			out = append(out, r)
		}
	}
	return out
}

// Missed returns the rows that missed their target or could not be measured.
func (r *Report) Missed() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Verdict == Missed || row.Verdict == Failed {
			out = append(out, row)
		}
	}
	return out
}

// Markdown renders the report as BENCHMARKS.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# agencysync benchmarks\n\n")
	cmd := "make bench"
	if r.Sizes.Name == "quick" {
		cmd = "make bench-quick"
	}
	fmt.Fprintf(&b, "Measured by `%s` (`cmd/agencybench`, package `benchmark`) on %s in %s: the real `agencysync` and\n",
		cmd, r.Machine.Date.Format("2006-01-02"), r.Took.Round(time.Second))
	b.WriteString("`agencysandbox` binaries against PostgreSQL, each figure of 1 to 7 the median of " + fmt.Sprint(r.Runs) + " runs (figure 8's long scenarios run once), every ratio taken pair by pair\n")
	b.WriteString("within a run, every scenario run on a fresh warehouse schema dropped afterwards.\n\n")
	b.WriteString("## Machine\n\n")
	b.WriteString(r.Machine.Markdown())
	b.WriteString(r.otherCPU())
	b.WriteString(r.busyNote())
	b.WriteString(r.earlierNote())
	b.WriteString("\n## Results\n\n")
	b.WriteString(Table(r.Rows))
	b.WriteString("\n## How each figure is measured\n\n")
	b.WriteString(r.howFirstSyncsPacePipeline())
	b.WriteString(r.howSteadyMemoryMicro())
	b.WriteString("\n")
	b.WriteString(r.howLargeAgency())
	b.WriteString(r.howStorageBombs())
	b.WriteString("\n" + howClockAndReproduce)
	b.WriteString(r.fleetNote())
	return b.String()
}

// howFirstSyncsPacePipeline says how figures 1 to 3 are measured:
// request efficiency, pace and the pipeline.
func (r *Report) howFirstSyncsPacePipeline() string {
	z := r.Sizes
	return fmt.Sprintf(`1. **Request efficiency** — the sandbox (`+"`--no-limits`"+`) holds %s; the worker
   (`+"`AGENCY_RATE_LIMIT=1000`"+`) runs one `+"`agencysync run`"+` on an empty schema. Requests are the sandbox's count
   (`+"`sync_runs.requests_used`"+` is shown beside it); the minimum is `+"`oracle.MinimumRequests`"+` of the sandbox's ground truth
   (`+"`GET /_sandbox/truth`"+`): ceil(rows/1000) for each list — brands, projects, the seven finance lists (budgets,
   invoices, collections, payments, profitability by project and by brand, the agency summary) and the
   communications — plus per brand its detail and ceil(contacts/1000) contacts requests and per project its detail.
2. **Pace** — the sandbox enforces 10 requests/s (`+"`--rate 10`"+`) with `+"`--latency 50ms`"+` and holds %s; the
   worker runs at its default `+"`AGENCY_RATE_LIMIT=10`"+`. The schema is migrated first (`+"`agencysync migrate up`"+`);
   the ratio is the wall time of the `+"`agencysync run`"+` process ÷ (requests ÷ 10/s); the 429s are the sandbox's
   `+"`rate_limited`"+` and `+"`by_status`"+` counts.
3. **Pipeline** — the sandbox (`+"`--no-limits`"+`, no latency) holds %s e-mails; one
   `+"`agencysync run --streams communications`"+` process on an empty schema (which it migrates first). Its e-mails/s are reported twice, each
   against the same raw COPY of the same run: (a) e-mails ÷ the sync's own time (its log from `+"`sync started`"+` to `+"`sync summary`"+`):
   fetch, decode, transform, load, bookkeeping; (b) e-mails ÷ the process's wall time from exec to exit — the whole
   process: start, configuration, schema migration, the sync, exit. The raw COPY copies the same e-mails,
   recipients and users — rows built from the ground truth by package `+"`oracle`"+`, which shares no code with the
   worker's decoders or transforms — by plain COPY into unlogged, index-free tables of the same schema in
   transactions of 1000 e-mails (only the row encoding and the COPY are timed, as in `+"`load`"+`'s
   `+"`BenchmarkLoadEmails`"+`).
`, describe(z.agency(z.BackfillLarge)), describe(z.Pace), Int(int64(z.PipelineEmails)))
}

// howSteadyMemoryMicro says how figures 4 to 7 are measured: the steady
// state, the no-op re-run, memory and the micro-benchmarks.
func (r *Report) howSteadyMemoryMicro() string {
	z := r.Sizes
	steady := z.agency(z.SteadyEmails)
	return fmt.Sprintf(`4. **Steady state** — the sandbox (`+"`--no-limits`"+`) holds %s: a first sync; then a day of changes (the
   sandbox clock advanced 24 h, %s e-mails appended, the deadline of 2%% of the projects and the amount of 1%%
   of the budgets, invoices, collections and payments changed through the admin API); then the nightly
   `+"`agencysync run`"+`, whose requests are divided by the daily quota (`+"`AGENCY_DAILY_QUOTA=10000`"+`). The naive
   alternative is the same run with every stream's state reset:
   `+"`agencysync run --full-refresh brands,projects,finance,communications`"+`.
5. **No-op re-run** — `+"`agencysync run`"+` again right after the nightly run, nothing changed: rows written from
   `+"`sync_runs.rows_by_table`"+`; WAL bytes from the server's WAL insert position
   (`+"`pg_current_wal_insert_lsn()`"+`) before and after the process, broken down with `+"`pg_walinspect`"+` when it
   is available; requests from the sandbox.
6. **Memory** — the peak RSS (`+"`getrusage`"+` `+"`ru_maxrss`"+` of the exited process) of the first syncs of figure 1,
   %s and %s e-mails, run alternately.
7. **Micro-benchmarks** — `+"`go test -run '^$' -bench ^BenchmarkDecode -benchtime %s -count %d ./extract/`"+` and
   `+"`LOAD_BENCH_EMAILS=%d go test -run '^$' -bench '^(BenchmarkLoadEmails|BenchmarkReloadUnchanged)$' -benchtime 1x -count %d ./load/`"+`
   against the same server; each row gives the medians of the runs.
   The JSON readers are weighed against gjson outside `+"`make bench`"+`, each pair in one process (minimum CPU of 10
   runs each): `+"`BenchmarkPageScanner`"+` (`+"`./extract/`"+`) and `+"`BenchmarkViewReaders`"+` (`+"`./stream/`"+`). The page splitter
   stays (gjson takes ×2.1–3.4 its CPU to split a 1000-e-mail page) and so does the record splitter (×2.2–3.6);
   the participants' lists are read by gjson's ForEach (0.48 ms a page against 0.55 by a hand-written split).
   `+"`BenchmarkPageCPU`"+` (`+"`./engine/`"+`) measures figure 3's worker CPU a page without the fetch and the load: the page
   split, transformed and offered to the field inventory, which observes the records through the views the
   transform made (each record parsed once; 0.97× of parsing the inventory's records again when every record
   is observed, 1.02× — within the runs' spread — at a run's sampling).
`, describe(steady),
		Int(int64(z.SteadyAppend)), Int(int64(z.BackfillSmall)), Int(int64(z.BackfillLarge)),
		z.DecodeBenchtime, r.Runs, z.LoadBenchEmails, r.Runs)
}

// howLargeAgency says how figure 8 is measured: the large agency, the
// raised limit and the first sync over several quota days.
func (r *Report) howLargeAgency() string {
	z := r.Sizes
	return fmt.Sprintf(`8. **The large agency** — the sandbox (`+"`--no-limits`"+`) holds %s. (a) The first sync on a fresh
   schema (`+"`AGENCY_RATE_LIMIT=1000`"+`, otherwise the default configuration), requests ÷ `+"`oracle.MinimumRequests`"+`.
   (b) A day of changes (the sandbox clock +24 h, %s e-mails appended, the deadline of 2%% of the projects and the
   amount of 1%% of the finance records changed through the admin API), then the nightly `+"`agencysync run`"+`: its
   requests ÷ the 10 000-request quota. The first sync runs at midnight of the sandbox's clock, the nightly runs at
   02:00 (`+"`SYNC_SCHEDULE`"+`'s default hour). (c) %d simulated days: each day a nightly run and %d hourly
   `+"`agencysync run --streams communications`"+` at the other hours (the first day from 02:00), the sandbox clock +1 h
   and %s e-mails appended before each hourly run
   and before each later nightly run, which also follows a different 2%% of deadlines and 0.1%% of amounts changed
   (the same requests as 1%%: a day's changes of each finance list fit one page either way; the sandbox recomputes
   every aggregate after each edit, which makes 1%% a day slow).
   A day's requests are the worker's quota ledger (`+"`api_quota_usage`"+`) for that day — the service's day: the worker
   takes its quota day from the sandbox's `+"`Date`"+` header, so the sandbox's virtual clock moves it — cross-checked
   with the sandbox's counts of the day's runs. Every run must succeed. Each day includes its share of the rolling
   re-read of the e-mail history (`+"`SYNC_COMMS_REFRESH_AGE`"+`, task `+"`communications-refresh`"+`, read by the day's first run
   that syncs communications: its requests a day from `+"`sync_runs.streams_detail`"+`). (d) Raised limit (`+"`Inflight`"+`, the
   in-flight change's figure): `+"`AGENCY_RATE_LIMIT=100`"+` against a sandbox enforcing 100 requests/s with 50 ms latency; the
   rates come from the worker's debug log (each request's start = its end − its duration): detail requests ÷ their
   span ÷ 100, communications pages fetched and committed ÷ the lower of 100 and the load path's own ceiling (the same
   measure without limits or latency), the same sync at `+"`SYNC_MAX_IN_FLIGHT=1`"+` beside it. (e) The first sync of %s against a sandbox
   enforcing a daily quota of %s (and 2 000 requests/s): `+"`agencysync run`"+` (`+"`AGENCY_DAILY_QUOTA`"+` the same) is repeated,
   the sandbox clock +24 h after each partial run, until one succeeds; every run must end succeeded or partial (exit
   75), and the warehouse is then compared with the whole truth, table by table (row counts and content checksums
   against `+"`oracle.Expected`"+`, the truth's rows built without the worker's code).
`, describe(withLimitsOff(z.Large.Agency)), Int(int64(z.Large.DayAppend)), z.Large.Days, hourlyRuns, Int(int64(z.Large.HourlyAppend)),
		describe(z.Large.Huge), Int(int64(z.Large.HugeQuota)))
}

// howStorageBombs says how storage (figure 9) and the memory under gzip
// bombs are measured.
func (r *Report) howStorageBombs() string {
	z := r.Sizes
	return fmt.Sprintf(`9. **Storage** — the sandbox (`+"`--no-limits`"+`) holds %s; for e-mails without and with bodies
   (`+"`AGENCY_COMMS_WITH_MESSAGE`"+` 0 and 1), one first `+"`agencysync run`"+` on a fresh schema whose `+"`raw`"+` and `+"`detail_raw`"+`
   columns are compressed with pglz, and one with lz4 (migration 00016's, where the server has it). The schema's
   tables are vacuumed, then measured: `+"`pg_total_relation_size`"+` (indexes and TOAST included) per table and in all,
   `+"`raw`"+` and `+"`detail_raw`"+` as stored (`+"`pg_column_size`"+`), as text (`+"`octet_length(raw::text)`"+`) and by
   `+"`pg_column_compression`"+`, all divided by the e-mails. PostgreSQL compresses a value only when its row passes
   about 2 kB. The page-grouped alternative (not what the warehouse does) stores the e-mails' `+"`raw`"+` as one jsonb
   array per %s e-mails in a scratch table, with each method.
10. **Memory under gzip bombs** — the sandbox (`+"`--no-limits`"+`) holds %s and answers every communications
   page but each range's first with a gzip bomb (twists `+"`gzip_bomb`"+`, 1 GiB inflated, and `+"`oversize_from_page: 2`"+`,
   so that the pages fetched ahead meet several bombs at once). Per run, pair by pair: one first `+"`agencysync run`"+`
   with bombs and one without, each on a fresh schema (`+"`AGENCY_RATE_LIMIT=1000`"+`), at the default requests in
   flight and at `+"`SYNC_MAX_IN_FLIGHT=4`"+`; the figure is the peak RSS (`+"`ru_maxrss`"+`) with bombs ÷ without. The
   bombed run must exit 1 naming `+"`AGENCY_MAX_RESPONSE_BYTES`"+` (default 32 MiB) and write the same rows to every
   table but `+"`emails`"+`, `+"`email_recipients`"+` and `+"`users`"+` as the run without.
`, describe(z.agency(z.StorageEmails)), Int(groupedPage), describe(z.agency(z.BackfillSmall)))
}

// howClockAndReproduce ends "How each figure is measured": the
// sandbox's clock, and how to reproduce the figures.
const howClockAndReproduce = `The sandbox's clock starts at 2026-11-01 (its history ends there) and moves only when a scenario moves it; the
worker takes its quota day from the sandbox's ` + "`Date`" + ` header. ` + "`AGENCY_COMMS_START_DATE`" + ` is the day before the
sandbox's history, so the backfill covers all of it. A sync's own time is read off the worker's log (from
` + "`sync started`" + ` to ` + "`sync summary`" + `, both stamped by the worker's clock).

Reproduce with ` + "`make bench`" + ` (writes this file; about 25 minutes on these 2 cores) or ` + "`make bench-quick`" + ` (the
same table with smaller sizes in a few minutes; printed, this file is left alone). ` + "`DATABASE_URL`" + ` selects the
server; unset, a private cluster is started and thrown away.
`

// Busy reports whether other processes competed for the CPU during the
// session: BusyCores or more on average, or, when that could not be
// measured, a 1-minute load average of BusyLoad or more at the start.
func (r *Report) Busy() bool {
	if r.OtherCores >= 0 {
		return r.OtherCores >= BusyCores
	}
	return firstLoad(r.Machine.LoadStart) >= BusyLoad
}

// busyNote is the Markdown paragraph about the machine's other activity.
func (r *Report) busyNote() string {
	l := firstLoad(r.Machine.LoadStart)
	switch {
	case r.Busy():
		return fmt.Sprintf("\n**The machine was busy**: other jobs ran meanwhile (other processes kept %s of the %d cores busy on\naverage; 1-minute load average %s at the start), so times and rates are noisier and lower than on a quiet\nmachine; request counts, rows, WAL and memory are not affected.\n", Float(r.OtherCores, 2), r.Machine.Cores, Float(l, 2))
	case l >= BusyLoad:
		return fmt.Sprintf("\nThe 1-minute load average was %s at the start (jobs that had just ended), but other processes used\nonly %s cores on average while the benchmark ran.\n", Float(l, 2), Float(r.OtherCores, 2))
	}
	return ""
}

// otherCPU is the Markdown line saying how busy the rest of the machine was.
func (r *Report) otherCPU() string {
	if r.OtherCores < 0 {
		return ""
	}
	var steps []string
	for _, s := range r.Steps {
		if s.OtherCores >= 0 {
			steps = append(steps, fmt.Sprintf("%s %s (%s)", s.Name, Float(s.OtherCores, 2), s.Took.Round(time.Second)))
		}
	}
	server := "PostgreSQL included"
	if r.Machine.Warehouse == "DATABASE_URL" {
		server = "a PostgreSQL server on this machine counts as other"
	}
	return fmt.Sprintf("- other processes' CPU (the machine's busy time minus the benchmark's own, %s): %s cores on average; by step: %s\n",
		server, Float(r.OtherCores, 2), strings.Join(steps, ", "))
}

// postmasterPID finds the private cluster's postmaster: the parent of a
// backend of pool (0 when unknown).
func postmasterPID(ctx context.Context, pool *pgxpool.Pool) int {
	var pid int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	st, err := parseProcPidStat(b)
	if err != nil {
		return 0
	}
	return st.ppid
}

// gitDescribe names the measured source tree ("" outside a git checkout).
func gitDescribe(ctx context.Context, dir string) string {
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return "commit " + strings.TrimSpace(string(out))
}

func firstLoad(s string) float64 {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		return -1
	}
	return v
}
