package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/fleet"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/logging"
	"github.com/agencysync/agencysync/metrics"
	"github.com/agencysync/agencysync/progress"
	"github.com/agencysync/agencysync/serve"
	"github.com/agencysync/agencysync/warehouse"
)

// agencySeries are the series a fleet keeps for one agency across its
// syncs; an app with none makes its own registry (newMetrics).
type agencySeries = *metrics.Metrics

// newMetrics returns the registry and the series of the engine a command
// builds: new ones with the process's collectors, or the agency's series a
// fleet keeps (no registry then: the fleet serves /metrics).
func (a *app) newMetrics() (*prometheus.Registry, *metrics.Metrics) {
	if a.series != nil {
		return nil, a.series
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg, metrics.New(reg)
}

func runFleet(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return usagef("fleet needs serve or status: fleet serve | fleet status [--json]")
	}
	switch args[0] {
	case "serve":
		return runFleetServe(ctx, a, args[1:])
	case "status":
		return runFleetStatus(ctx, a, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintln(a.env.Stderr, "usage: agencysync fleet serve | agencysync fleet status [--json]")
		fmt.Fprintln(a.env.Stderr, "Agencies come from FLEET_FILE; the worker's own variables are FLEET_* (docs/fleet.md). fleet status flags:")
		fs := newFlags("fleet status", a)
		fs.Bool("json", false, "print JSON for machines")
		fs.PrintDefaults()
		return nil
	}
	return usagef("fleet %q: want serve or status", args[0])
}

// runFleetServe runs a fleet worker: agencies from FLEET_FILE, their syncs
// from the job queue every worker shares (FLEET_SCHEMA).
func runFleetServe(ctx context.Context, a *app, args []string) error {
	return a.withFleet(ctx, newFlags("fleet serve", a), args, func(f *fleetAgencies, pool *pgxpool.Pool) error {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		return fleet.Serve(ctx, fleet.Options{Settings: f.set, Agencies: f, Pool: pool, HTTPAddr: a.cfg.HTTPAddr,
			Registry: reg, Logger: f.log, Reload: hup})
	})
}

// runFleetStatus prints every agency's state: last run, next run, quota,
// lag, warnings and the worker syncing it.
func runFleetStatus(ctx context.Context, a *app, args []string) error {
	fs := newFlags("fleet status", a)
	asJSON := fs.Bool("json", false, "print JSON for machines")
	return a.withFleet(ctx, fs, args, func(f *fleetAgencies, pool *pgxpool.Pool) error {
		list, err := f.Load(ctx)
		if err != nil {
			return err
		}
		r, err := fleet.NewReporter(pool, f.set.Schema, f)
		if err != nil {
			return err
		}
		rep, err := r.Report(ctx, list)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.env.Stdout, rep)
		}
		rep.Print(a.env.Stdout)
		return nil
	})
}

// withFleet parses a fleet command's flags (it takes no argument), opens
// the fleet (openFleet) and runs do with it, closing the pool after.
func (a *app) withFleet(ctx context.Context, fs *flag.FlagSet, args []string, do func(*fleetAgencies, *pgxpool.Pool) error) error {
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	f, pool, err := a.openFleet(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return do(f, pool)
}

// openFleet reads the fleet worker's settings, connects to the job queue's
// database and migrates the queue (River's migrations).
func (a *app) openFleet(ctx context.Context) (*fleetAgencies, *pgxpool.Pool, error) {
	set, err := config.FleetSettingsFrom(ctx, a.env.Lookup)
	if err != nil {
		return nil, nil, err
	}
	if a.cfg.DatabaseURL.Value() == "" {
		return nil, nil, &config.Error{Variable: "DATABASE_URL", Problem: "is required by a fleet: every worker shares one database (the job queue)",
			Form: "postgres://user:pass@host:5432/db"}
	}
	f, err := a.newFleetAgencies(set)
	if err != nil {
		return nil, nil, err
	}
	pool, err := warehouse.Connect(ctx, a.cfg.DatabaseURL.Value(), warehouse.PoolOptions{
		StatementTimeout: a.cfg.DBStatementTimeout, ApplicationName: "agencysync fleet"})
	if err != nil {
		return nil, nil, err
	}
	if _, err := warehouse.MigrateFleet(ctx, pool, set.Schema, f.log); err != nil {
		pool.Close()
		return nil, nil, err
	}
	return f, pool, nil
}

// fleetAgencies runs each agency of FLEET_FILE through the single-agency
// path (fleet.Agencies): its configuration loaded as a single worker's,
// then wire, runner and engine as `agencysync run` does.
type fleetAgencies struct {
	base *app // the worker's own environment, configuration and log
	set  *config.FleetSettings
	log  *zap.Logger // the worker's log, redacted of every agency's secrets
	sink *fleetSink

	mu   sync.Mutex
	file *config.FleetFile // as last read
}

func (a *app) newFleetAgencies(set *config.FleetSettings) (*fleetAgencies, error) {
	format := a.cfg.LogFormat
	if format == "auto" {
		format = "json"
		if logging.IsTerminal(a.env.Stderr) {
			format = "console"
		}
	}
	sink := newFleetSink(zapcore.AddSync(a.env.Stderr), a.cfg.RedactionSecrets())
	log, err := logging.New(sink, a.cfg.LogLevel, format)
	if err != nil {
		return nil, err
	}
	return &fleetAgencies{base: a, set: set, log: log.With(zap.String("worker", set.WorkerID)), sink: sink}, nil
}

// Load reads FLEET_FILE and every agency's configuration (key files
// included): a problem names the agency and the variable.
func (f *fleetAgencies) Load(ctx context.Context) ([]fleet.Agency, error) {
	data, err := f.base.env.ReadFile(f.set.File)
	if err != nil {
		return nil, &config.Error{Variable: "FLEET_FILE", Problem: fmt.Sprintf("cannot read %q", f.set.File), Form: "a readable YAML file"}
	}
	file, err := config.ParseFleetFile(data, filepath.Dir(f.set.File))
	if err != nil {
		return nil, &config.Error{Variable: "FLEET_FILE", Problem: err.Error()}
	}
	if err := file.CheckSettings(f.set); err != nil {
		return nil, err
	}
	var out []fleet.Agency
	var secrets []string
	for _, ag := range file.Agencies {
		cfg, err := file.Config(ctx, f.env(), ag, Known())
		if err != nil {
			return nil, err
		}
		if err := cfg.Require(config.NeedSync); err != nil {
			return nil, &config.FleetAgencyError{Agency: ag.Name, Err: err}
		}
		out = append(out, fleet.Agency{Name: ag.Name, Schema: ag.Schema, Schedule: cfg.SyncSchedule,
			Location: cfg.QuotaTZ.Location, KeyFiles: file.SecretFiles(ag)})
		secrets = append(secrets, cfg.RedactionSecrets()...)
	}
	f.sink.set(secrets)
	f.mu.Lock()
	f.file = file
	f.mu.Unlock()
	return out, nil
}

// env is what agencies' configurations read: the worker's environment.
func (f *fleetAgencies) env() config.Environment {
	return config.Environment{Lookup: f.base.env.Lookup, ReadFile: f.base.env.ReadFile}
}

// app is the single-agency command context of agency name: its own
// configuration (read now: a rotated key is used), the worker's log.
func (f *fleetAgencies) app(ctx context.Context, name string, series agencySeries) (*app, error) {
	f.mu.Lock()
	file := f.file
	f.mu.Unlock()
	ag, ok := file.Agency(name)
	if !ok {
		return nil, fmt.Errorf("agency %s is not in FLEET_FILE", name)
	}
	cfg, err := file.Config(ctx, f.env(), ag, Known())
	if err != nil {
		return nil, err
	}
	return &app{env: f.base.env, cfg: cfg, log: f.log.With(zap.String("agency", name)), series: series}, nil
}

// Sync runs one sync of the agency as `agencysync serve` would: wired,
// migrated (SYNC_AUTO_MIGRATE), notified (SYNC_NOTIFY_URL), progress in the
// log.
func (f *fleetAgencies) Sync(ctx context.Context, name string, m *metrics.Metrics) (*engine.Result, error) {
	a, err := f.app(ctx, name, m)
	if err != nil {
		return nil, err
	}
	x, err := a.wire(ctx, a.cfg.AutoMigrate, func(runLog *zap.Logger) progress.Display { return progress.NewLog(runLog, 30*time.Second) })
	if err != nil {
		return nil, err
	}
	defer x.close()
	runner, drain, err := a.runner(x)
	if err != nil {
		return nil, err
	}
	defer drain()
	return runner.Run(ctx, engine.Request{Trigger: engine.TriggerServe})
}

// Quota reads the service's clock with one request that carries no key
// (no quota), then the agency's quota day from its ledger.
func (f *fleetAgencies) Quota(ctx context.Context, name string) (fleet.Quota, error) {
	a, err := f.app(ctx, name, nil)
	if err != nil {
		return fleet.Quota{}, err
	}
	w, err := a.openWarehouse(ctx)
	if err != nil {
		return fleet.Quota{}, err
	}
	defer w.Close()
	ledger, clock, err := a.ledger(ctx, w)
	if err != nil {
		return fleet.Quota{}, err
	}
	c, err := extract.New(a.clientOptions(ledger, clock))
	if err != nil {
		return fleet.Quota{}, err
	}
	if err := c.ProbeClock(ctx); err != nil && !errors.Is(err, extract.ErrNoServiceClock) {
		return fleet.Quota{}, fmt.Errorf("read the service's clock: %w", err)
	}
	day := ledger.Today()
	spent, err := ledger.Spent(ctx, day)
	if err != nil {
		return fleet.Quota{}, err
	}
	plan := engine.MakePlan(day, a.cfg.DailyQuota, float64(a.cfg.QuotaReserve), spent, nil, nil)
	now := clock.Now().In(a.cfg.QuotaTZ.Location)
	y, mo, d := now.Date()
	next := time.Date(y, mo, d+1, 0, 0, 0, 0, now.Location())
	return fleet.Quota{Day: day, Left: plan.Budget, NextDay: time.Now().Add(next.Sub(now))}, nil
}

// sqlstateUndefinedTable is PostgreSQL's "relation does not exist".
const sqlstateUndefinedTable = "42P01"

// LastRun reads the start of the agency's newest run that was not skipped;
// a schema without sync_runs (never synced: its first sync migrates it)
// has none.
func (f *fleetAgencies) LastRun(ctx context.Context, name string) (time.Time, bool, error) {
	a, err := f.app(ctx, name, nil)
	if err != nil {
		return time.Time{}, false, err
	}
	w, err := a.openWarehouse(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	defer w.Close()
	store, err := load.New(w.Pool, load.Config{Schema: w.Schema, Logger: a.log})
	if err != nil {
		return time.Time{}, false, err
	}
	runs, err := store.RecentRuns(ctx, 50)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == sqlstateUndefinedTable:
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, err
	}
	for _, r := range runs {
		if r.Status != string(engine.StatusSkipped) {
			return r.StartedAt, true, nil
		}
	}
	return time.Time{}, false, nil
}

// Status is the agency's `agencysync status` report.
func (f *fleetAgencies) Status(ctx context.Context, name string, runs int) (*engine.StatusReport, error) {
	a, err := f.app(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	x, err := a.wireReader(ctx)
	if err != nil {
		return nil, err
	}
	defer x.close()
	return x.eng.Status(ctx, runs)
}

// StatusPage opens the agency's engine for its status page.
func (f *fleetAgencies) StatusPage(ctx context.Context, name string) (serve.StatusSource, func(), error) {
	a, err := f.app(ctx, name, nil)
	if err != nil {
		return nil, nil, err
	}
	x, err := a.wireReader(ctx)
	if err != nil {
		return nil, nil, err
	}
	return x.eng, x.close, nil
}

// fleetSink is a fleet worker's log output: every line is redacted of the
// worker's secrets and of every agency's, the set renewed at each reading
// of FLEET_FILE (a rotated key is redacted from then on).
type fleetSink struct {
	base zapcore.WriteSyncer
	mu   sync.Mutex
	seen []string // every secret seen: a replaced key stays redacted
	cur  atomic.Pointer[zapcore.WriteSyncer]
}

func newFleetSink(base zapcore.WriteSyncer, own []string) *fleetSink {
	s := &fleetSink{base: zapcore.Lock(base)}
	s.set(own)
	return s
}

// set adds secrets to the ones redacted (the redactor is rebuilt only when
// one is new).
func (s *fleetSink) set(secrets []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	added := s.cur.Load() == nil
	for _, x := range secrets {
		if !slices.Contains(s.seen, x) {
			s.seen, added = append(s.seen, x), true
		}
	}
	if added {
		w := logging.RedactWriter(s.base, s.seen...)
		s.cur.Store(&w)
	}
}

func (s *fleetSink) Write(p []byte) (int, error) { return (*s.cur.Load()).Write(p) }

func (s *fleetSink) Sync() error { return s.base.Sync() }
