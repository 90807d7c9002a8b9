package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/logging"
	"github.com/agencysync/agencysync/metrics"
	"github.com/agencysync/agencysync/progress"
	"github.com/agencysync/agencysync/report"
	"github.com/agencysync/agencysync/serve"
	"github.com/agencysync/agencysync/warehouse"
)

// wired is an engine with what it runs on; close releases it all.
type wired struct {
	w        *warehouse.Warehouse
	eng      *engine.Engine
	registry *prometheus.Registry
	metrics  *metrics.Metrics
	live     *progress.Live // the running run's progress (serve's status page reads it)
}

func (x *wired) close() { x.w.Close() }

// wire opens the warehouse, applies pending migrations (unless disabled) and
// builds the engine with its client; the command has checked that the
// variables it uses are set (Config.Require).
func (a *app) wire(ctx context.Context, migrate bool, progress func(*zap.Logger) progress.Display) (*wired, error) {
	return a.build(ctx, opening(migrate), true, progress)
}

// wireReader is wire for the commands that only read the warehouse (plan,
// status): it creates nothing (an unmigrated schema is an error wrapping
// warehouse.ErrMigrationsPending, exit 2) and the engine has no client, so
// no service variable is used.
func (a *app) wireReader(ctx context.Context) (*wired, error) {
	return a.build(ctx, openReadOnly, false, nil)
}

// openMode is how a command opens the warehouse.
type openMode int

const (
	// openMigrate applies pending migrations (creating the schema).
	openMigrate openMode = iota
	// openRequire requires every migration applied; it may create the
	// schema, as EnsureSchema does.
	openRequire
	// openReadOnly requires every migration applied and creates nothing.
	openReadOnly
)

// opening is openMigrate when migrate, else openRequire.
func opening(migrate bool) openMode {
	if migrate {
		return openMigrate
	}
	return openRequire
}

// openFor opens the warehouse as mode says and migrates or checks it.
func (a *app) openFor(ctx context.Context, mode openMode) (*warehouse.Warehouse, error) {
	var w *warehouse.Warehouse
	var err error
	if mode == openReadOnly {
		w, err = a.openExisting(ctx)
	} else {
		w, err = a.openWarehouse(ctx)
	}
	if err != nil {
		return nil, err
	}
	if mode == openMigrate {
		err = warehouse.Migrate(ctx, w.Pool, w.Schema, a.log)
	} else {
		err = requireMigrated(ctx, w, mode)
	}
	if err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func (a *app) build(ctx context.Context, mode openMode, client bool, progress func(*zap.Logger) progress.Display) (*wired, error) {
	cfg := a.cfg
	w, err := a.openFor(ctx, mode)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			w.Close()
		}
	}()
	share := float64(cfg.MassDeleteShare)
	store, err := load.New(w.Pool, load.Config{Schema: w.Schema, StatementTimeout: cfg.DBStatementTimeout, Logger: a.log, MassDeleteShare: &share,
		Redactor: logging.NewRedactor(cfg.RedactionSecrets()...)})
	if err != nil {
		return nil, err
	}
	ledger, clock, err := a.ledger(ctx, w)
	if err != nil {
		return nil, err
	}
	reg, metrics := a.newMetrics()
	var eng *engine.Engine
	var c *extract.Client
	streams, err := declarations(cfg)
	if err != nil {
		return nil, err
	}
	if client {
		opts := a.clientOptions(ledger, clock)
		opts.Hook = func(info extract.RequestInfo) { eng.ObserveRequest(info) }
		opts.Streams = streams
		c, err = extract.New(opts)
		if err != nil { // config refused what extract would (plain http:// to a remote host)
			return nil, err
		}
	}
	live := progressLive()
	eng, err = engine.New(engine.Deps{Pool: w.Pool, Store: store, Ledger: ledger, Client: c, Clock: clock, Metrics: metrics,
		Progress: progress, Live: live, Logger: a.log}, engine.Settings{
		Schema: w.Schema, Mail: engine.MailSettings{DomainID: cfg.CommsDomainID, UserIDs: cfg.CommsUserIDs, BrandURL: cfg.CommsBrandURL,
			WithMessage: cfg.CommsWithMessage, StartDate: cfg.CommsStartDate.Time, Lookback: cfg.CommsLookback,
			BackfillWindow: cfg.CommsBackfillWindow, RefreshAge: cfg.CommsRefreshAge, TZ: cfg.CommsTZ.Location},
		DailyQuota: cfg.DailyQuota, QuotaReserve: float64(cfg.QuotaReserve),
		Priorities: priorities(cfg.Priorities), DetailMaxAge: cfg.DetailMaxAge, IncrementalFullEvery: cfg.FinanceFullEvery,
		NoPrefetch: !cfg.Prefetch, MaxInFlight: cfg.MaxInFlight, SpoolDir: spoolDir(w.Schema, cfg.CommsURL), Now: clock.Now,
		Streams: streams,
	})
	if err != nil {
		return nil, err
	}
	ok = true
	return &wired{w: w, eng: eng, registry: reg, metrics: metrics, live: live}, nil
}

// ledger opens the quota ledger and the service's clock. The quota day is
// the service's: its clock is read off the Date header of its answers, and
// until the first answer from the offset a previous run saw (the worker's
// own clock when none was ever seen).
func (a *app) ledger(ctx context.Context, w *warehouse.Warehouse) (*load.Ledger, *extract.ServiceClock, error) {
	clock := extract.NewServiceClock(time.Now)
	ledger, err := load.NewLedger(w.Pool, w.Schema, a.cfg.QuotaTZ.Location, clock.Now)
	if err != nil {
		return nil, nil, err
	}
	if off, known, err := ledger.ClockOffset(ctx); err != nil {
		return nil, nil, err
	} else if known {
		clock.SetOffset(off)
	}
	return ledger, clock, nil
}

// clientOptions are the client's options from the configuration: every
// request counted in the ledger, the service's clock read off its answers.
func (a *app) clientOptions(ledger *load.Ledger, clock *extract.ServiceClock) extract.Options {
	cfg := a.cfg
	return extract.Options{
		BaseURL: cfg.BaseURL, APIKey: cfg.APIKey.Value(), CommsURL: cfg.CommsURL, CommsKey: cfg.CommsKey.Value(),
		WorkflowID: cfg.WorkflowID, Paths: extractPaths(cfg.Paths), RateLimit: cfg.RateLimit, CommsRateLimit: cfg.CommsRateLimit,
		Timeout: cfg.RequestTimeout, MaxBodyBytes: int64(cfg.MaxResponseBytes), AllowInsecureHTTP: cfg.AllowInsecureHTTP, Counter: ledger, Logger: a.log, Clock: clock,
		Names: extract.SettingNames{BaseURL: "AGENCY_BASE_URL", CommsURL: "AGENCY_COMMS_URL", APIKey: "AGENCY_API_KEY",
			CommsKey: "AGENCY_COMMS_KEY", MaxBodyBytes: "AGENCY_MAX_RESPONSE_BYTES"},
	}
}

// progressLive keeps the progress of each run in memory, for serve's
// status page (a parameter named progress shadows the package in build).
func progressLive() *progress.Live { return progress.NewLive() }

// spoolDir is the page spool's folder: in the system's temporary folder
// ($TMPDIR), one per user, warehouse schema and communications address.
func spoolDir(schema, commsURL string) string {
	sum := sha256.Sum256([]byte(commsURL))
	return filepath.Join(os.TempDir(), fmt.Sprintf("agencysync-spool-%d-%s-%s", os.Getuid(), schema, hex.EncodeToString(sum[:4])))
}

// progress shows bars on a terminal, periodic log lines (with run_id) off one.
func (a *app) progress(every time.Duration) func(*zap.Logger) progress.Display {
	if logging.IsTerminal(a.env.Stderr) {
		return func(*zap.Logger) progress.Display { return progress.NewBar(a.env.Stderr) }
	}
	return func(runLog *zap.Logger) progress.Display { return progress.NewLog(runLog, every) }
}

// exitFor maps a run's result to the documented exit codes: a run that
// ended warning exits 0, or 1 when SYNC_FAIL_ON (failOn) names one of its
// kinds of warnings.
func exitFor(res *engine.Result, failOn config.FailOn) error {
	switch res.Status {
	case engine.StatusSucceeded, engine.StatusSkipped:
		return nil
	case engine.StatusWarning:
		var named []string
		for _, k := range res.WarningKinds() {
			if failOn.Has(string(k)) {
				named = append(named, string(k))
			}
		}
		if len(named) == 0 {
			return nil
		}
		return &exitError{code: ExitFailure, err: fmt.Errorf("the run ended with warnings (%s), and SYNC_FAIL_ON names %s",
			res.WarningSummary(), strings.Join(named, ", "))}
	case engine.StatusPartial:
		return &exitError{code: ExitIncomplete, err: res.Err}
	}
	if errors.Is(res.Err, extract.ErrUnauthorized) {
		return &exitError{code: ExitCredential, err: res.Err}
	}
	return &exitError{code: ExitFailure, err: res.Err}
}

// exitError carries an exit code chosen by a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if p := strings.TrimSpace(part); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

func runRun(ctx context.Context, a *app, args []string) error {
	fs := newFlags("run", a)
	streams := fs.String("streams", "", "comma-separated streams to sync: "+strings.Join(engine.AllStreams, ",")+" (default all)")
	var refresh stringList
	fs.Var(&refresh, "full-refresh", "reset this stream's state first and sync it from scratch (repeatable)")
	noMigrate := fs.Bool("no-migrate", false, "do not apply pending migrations first")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	sel, err := parseStreams(*streams)
	if err != nil {
		return err
	}
	if _, err := engine.ParseStreams(refresh.String()); err != nil && len(refresh) > 0 {
		return usagef("--full-refresh: %v", err)
	}
	if err := a.cfg.Require(syncNeeds(sel)); err != nil {
		return err
	}
	return a.syncOnce(ctx, !*noMigrate, engine.Request{Trigger: engine.TriggerRun, Streams: sel, FullRefresh: refresh})
}

// syncOnce is one sync of run or backfill: it wires the warehouse (migrating
// it first when SYNC_AUTO_MIGRATE and migrate allow), runs req through the
// runner and maps the result to the exit code.
func (a *app) syncOnce(ctx context.Context, migrate bool, req engine.Request) error {
	x, err := a.wire(ctx, a.cfg.AutoMigrate && migrate, a.progress(10*time.Second))
	if err != nil {
		return err
	}
	defer x.close()
	runner, drain, err := a.runner(x)
	if err != nil {
		return err
	}
	defer drain()
	res, err := runner.Run(ctx, req)
	if err != nil {
		return err
	}
	return exitFor(res, a.cfg.FailOn)
}

func runBackfill(ctx context.Context, a *app, args []string) error {
	fs := newFlags("backfill", a)
	stream := fs.String("stream", datedStream(), "stream to backfill (only "+datedStream()+" is paged by date)")
	from := fs.String("from", "", "first day to re-fetch, YYYY-MM-DD (without --from and --to: the days the nightly refresh would re-read next)")
	to := fs.String("to", "", "last day to re-fetch, YYYY-MM-DD (default today; needs --from)")
	noMigrate := fs.Bool("no-migrate", false, "do not apply pending migrations first")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !dated(*stream) {
		return usagef("--stream %q: only %s can be backfilled by date; use run --full-refresh %s", *stream, datedStream(), *stream)
	}
	if *from == "" {
		if *to != "" {
			return usagef("--to needs --from (without both, backfill re-reads the days the nightly refresh would reach next)")
		}
		// The days the refresh would reach next: the history's days (from
		// the start date) and the main interface's clock (the quota day).
		if err := a.cfg.Require(config.NeedBaseURL | config.NeedComms | config.NeedStartDate); err != nil {
			return err
		}
		return a.syncOnce(ctx, !*noMigrate, engine.Request{Trigger: engine.TriggerBackfill, Mail: engine.MailRequest{RefreshNext: true}})
	}
	f, err := parseDay("--from", *from)
	if err != nil {
		return err
	}
	t := time.Now().UTC().Truncate(24 * time.Hour)
	if *to != "" {
		if t, err = parseDay("--to", *to); err != nil {
			return err
		}
	}
	if t.Before(f) {
		return usagef("--to %s is before --from %s", *to, *from)
	}
	// The range is given: the e-mails' start date is not used; the main
	// interface's address tells the service's clock (the quota day).
	if err := a.cfg.Require(config.NeedBaseURL | config.NeedComms); err != nil {
		return err
	}
	return a.syncOnce(ctx, !*noMigrate, engine.Request{Trigger: engine.TriggerBackfill, Mail: engine.MailRequest{Backfill: &engine.Range{From: f, To: t}}})
}

func runPlan(ctx context.Context, a *app, args []string) error {
	fs := newFlags("plan", a)
	streams := fs.String("streams", "", "comma-separated streams to plan (default all)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sel, err := parseStreams(*streams)
	if err != nil {
		return err
	}
	// The plan sends no request: it reads the warehouse, and for the
	// e-mails estimates their history from where it starts.
	if slices.ContainsFunc(sel, dated) {
		if err := a.cfg.Require(config.NeedStartDate); err != nil {
			return err
		}
	}
	x, err := a.wireReader(ctx)
	if err != nil {
		return err
	}
	defer x.close()
	p, err := x.eng.Plan(ctx, sel)
	if err != nil {
		return err
	}
	p.Print(a.env.Stdout)
	return nil
}

func runStatus(ctx context.Context, a *app, args []string) error {
	fs := newFlags("status", a)
	asJSON := fs.Bool("json", false, "print JSON for machines")
	runs := fs.Int("runs", 5, "how many recent runs to show")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	x, err := a.wireReader(ctx)
	if err != nil {
		return err
	}
	defer x.close()
	rep, err := x.eng.Status(ctx, *runs)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(a.env.Stdout, rep)
	}
	report.Status(a.env.Stdout, rep)
	return nil
}

func runServe(ctx context.Context, a *app, args []string) error {
	fs := newFlags("serve", a)
	noMigrate := fs.Bool("no-migrate", false, "do not apply pending migrations first")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := a.cfg.Require(config.NeedSync); err != nil {
		return err
	}
	x, err := a.wire(ctx, a.cfg.AutoMigrate && !*noMigrate, a.progress(30*time.Second))
	if err != nil {
		return err
	}
	defer x.close()
	ready, err := readiness(x.w)
	if err != nil {
		return err
	}
	runner, drain, err := a.runner(x)
	if err != nil {
		return err
	}
	defer drain()
	return serve.Run(ctx, runner, serve.Options{Schedules: schedules(a.cfg.Schedules), Location: a.cfg.QuotaTZ.Location,
		HTTPAddr: a.cfg.HTTPAddr, Gatherer: x.registry, Ready: ready, Logger: a.log,
		Refresh: x.eng.RefreshMetrics, NextRun: x.metrics.NextRun,
		StatusPage: serve.NewStatusPage(x.eng, serve.StatusPageOptions{Logger: a.log, Live: x.live,
			Schedules: schedules(a.cfg.Schedules), Location: a.cfg.QuotaTZ.Location})})
}

// readiness is serve's /readyz check: one statement on a pooled connection
// says the database answers and the schema has every migration of the binary.
func readiness(w *warehouse.Warehouse) (func(ctx context.Context) error, error) {
	r, err := warehouse.NewReadiness(w.Pool, w.Schema)
	if err != nil {
		return nil, err
	}
	return r.Check, nil
}
