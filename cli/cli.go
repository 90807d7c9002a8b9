// Package cli is agencysync's command line: it parses arguments, loads the
// configuration, wires the warehouse, the client and the engine, and maps
// outcomes to the documented exit codes.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/logging"
	"github.com/agencysync/agencysync/warehouse"
)

// Exit codes of agencysync (documented in the README).
const (
	ExitOK         = 0  // complete, or skipped because another sync holds the lock
	ExitFailure    = 1  // any other failure
	ExitUsage      = 2  // bad configuration or usage
	ExitCredential = 3  // credentials rejected (401)
	ExitIncomplete = 75 // incomplete, will resume (budget, daily quota or a signal ended the run, a range was not landed whole, a listing not proven complete); EX_TEMPFAIL
)

// usageError is a bad command line; it exits with ExitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Env is what a command runs with: the process's streams and environment.
type Env struct {
	// Stdin feeds commands that read input (psql); nil reads nothing.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Lookup         func(string) (string, bool)
	ReadFile       func(string) ([]byte, error)
}

// OSEnv is the process's own environment.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Lookup: os.LookupEnv, ReadFile: os.ReadFile}
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

func commands() []command {
	return []command{
		{"check", "test both interfaces and the field mapping, ≤ 2 requests per endpoint: check [--json] [--streams a,b]", runCheck},
		{"run", "perform one sync: run [--streams a,b] [--full-refresh STREAM] [--no-migrate]", runRun},
		{"serve", "sync on SYNC_SCHEDULE and serve /healthz, /readyz, /metrics on HTTP_ADDR", runServe},
		{"backfill", "re-fetch a range: backfill --stream communications --from D [--to D]; without --from, the days the nightly refresh would re-read next", runBackfill},
		{"verify", "reconcile e-mails with the service, repair the days that differ: verify [--from D] [--to D] [--json]", runVerify},
		{"rebuild", "re-derive stored records under the current AGENCY_FIELD_MAP, 0 requests: rebuild [--streams a,b] [--batch N]", runRebuild},
		{"plan", "print today's plan (streams, estimated requests, budget) without sending a request", runPlan},
		{"status", "per stream watermark, last success, lag, rows, rejects; quota; last runs [--json]", runStatus},
		{"migrate", "apply or inspect warehouse migrations: migrate up|down|status", runMigrate},
		{"psql", "open psql on the warehouse (search_path on WAREHOUSE_SCHEMA): psql [psql arguments]", runPsql},
		{"config", "print the configuration reference; --effective: the values in force, secrets masked", runConfig},
		{"fleet", "many agencies on many workers (FLEET_FILE, one job queue): fleet serve | fleet status [--json]", runFleet},
		{"version", "print the version", runVersion},
	}
}

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "dev"

// app carries what every command shares.
type app struct {
	env Env
	cfg *config.Config
	log *zap.Logger
	// series, in a fleet, are the agency's series across its syncs (nil:
	// the command's engine makes its own, see newMetrics).
	series agencySeries
}

// Main runs agencysync with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, env Env) (code int) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(env.Stdout)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == args[0] {
			cmd = &c
		}
	}
	if cmd == nil {
		fmt.Fprintf(env.Stderr, "agencysync: unknown command %q (see agencysync --help)\n", args[0])
		return ExitUsage
	}
	a := &app{env: env}
	defer reportPanic(env.Stderr, func() *config.Config { return a.cfg }, &code)
	if cmd.name != "config" && cmd.name != "version" {
		cfg, err := config.LoadFrom(ctx, config.Environment{Lookup: env.Lookup, ReadFile: env.ReadFile}, Known())
		if err != nil {
			fmt.Fprintf(env.Stderr, "agencysync: bad configuration: %v\n", err)
			return ExitUsage
		}
		log, err := logging.New(env.Stderr, cfg.LogLevel, cfg.LogFormat, cfg.RedactionSecrets()...)
		if err != nil {
			fmt.Fprintf(env.Stderr, "agencysync: bad configuration: %v\n", err)
			return ExitUsage
		}
		defer func() { _ = log.Sync() }()
		a.cfg, a.log = cfg, log
	}
	err := cmd.run(ctx, a, args[1:])
	code = exitCode(err)
	if code == ExitFailure && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// A signal stopped the command before it got under way (opening
		// the warehouse, migrating, planning): nothing was half-done, and
		// the next run starts where this one would have.
		err = &exitError{code: ExitIncomplete, err: fmt.Errorf("stopped by a signal before it finished: %w", err)}
		code = ExitIncomplete
	}
	if code == ExitIncomplete && ctx.Err() == nil && a.cfg != nil {
		code = a.cfg.ExitIncomplete // SYNC_EXIT_INCOMPLETE; a signal keeps 75
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		err = nil
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		msg := redact(err.Error(), a.cfg)
		switch {
		case a.log != nil && exitCode(err) == ExitIncomplete:
			a.log.Warn(cmd.name+" incomplete; the next run continues where it stopped", zap.String("reason", msg), zap.Int("exit_code", code))
		case a.log != nil && code != ExitUsage:
			a.log.Error(cmd.name+" failed", zap.String("error", msg), zap.Int("exit_code", code))
		default:
			fmt.Fprintf(env.Stderr, "agencysync %s: %s\n", cmd.name, msg)
		}
	}
	return code
}

func exitCode(err error) int {
	var ue *usageError
	var ce *config.Error
	var ee *exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), errors.As(err, &ce), errors.Is(err, warehouse.ErrMigrationsPending):
		return ExitUsage
	default:
		return ExitFailure
	}
}

// redact removes every configured secret from a text, as a last line of
// defence: errors are built not to carry them in the first place.
func redact(s string, cfg *config.Config) string {
	if cfg == nil {
		return s
	}
	for _, secret := range cfg.Secrets() {
		if len(secret) >= logging.MinSecretLen {
			s = strings.ReplaceAll(s, secret, logging.Redacted)
		}
	}
	return logging.NewRedactor(cfg.RedactionSecrets()...).String(s)
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "agencysync keeps a PostgreSQL warehouse in sync with the Agency Data Service.")
	fmt.Fprintln(w, "\nUsage: agencysync <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nConfiguration comes from the environment; `agencysync config` lists every variable.")
	fmt.Fprintln(w, "Exit codes: 0 complete or skipped, 75 incomplete (resumes next run), 3 credentials rejected,")
	fmt.Fprintln(w, "2 bad configuration or usage, 1 any other failure.")
}

func newFlags(name string, a *app) *flag.FlagSet {
	fs := flag.NewFlagSet("agencysync "+name, flag.ContinueOnError)
	fs.SetOutput(a.env.Stderr)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	return nil
}

// parseNoArgs parses a command's flags like parseFlags and refuses
// arguments left after them: "<command> takes no arguments".
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s takes no arguments, got %q", strings.TrimPrefix(fs.Name(), "agencysync "), fs.Args())
	}
	return nil
}

// parseStreams reads a --streams flag: the streams it names (all when it is
// empty), or a usage error naming the flag.
func parseStreams(list string) ([]string, error) {
	sel, err := engine.ParseStreams(list)
	if err != nil {
		return nil, usagef("--streams: %v", err)
	}
	return sel, nil
}

// parseDay reads a YYYY-MM-DD flag value, or a usage error naming the flag.
func parseDay(name, value string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, value)
	if err != nil {
		return time.Time{}, usagef("%s %q: want YYYY-MM-DD", name, value)
	}
	return d, nil
}

// printJSON writes v to w as indented JSON (the commands' --json output).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// openWarehouse opens the configured warehouse (a private cluster when
// DATABASE_URL is unset).
func (a *app) openWarehouse(ctx context.Context) (*warehouse.Warehouse, error) {
	return a.open(ctx, false)
}

// openExisting opens the configured warehouse only if it exists, creating
// nothing (no schema, no private cluster's data folder).
func (a *app) openExisting(ctx context.Context) (*warehouse.Warehouse, error) {
	return a.open(ctx, true)
}

func (a *app) open(ctx context.Context, existing bool) (*warehouse.Warehouse, error) {
	if a.cfg.DatabaseURL.Value() == "" {
		if _, err := a.cfg.PrivateClusterDir(); err != nil {
			return nil, err
		}
	}
	return warehouse.Open(ctx, warehouse.Options{
		DSN: a.cfg.DatabaseURL.Value(), Schema: a.cfg.WarehouseSchema, LocalDataDir: a.cfg.LocalDataDir,
		BinDir: a.cfg.PGBinDir, StatementTimeout: a.cfg.DBStatementTimeout, Logger: a.log, Existing: existing,
	})
}

func runMigrate(ctx context.Context, a *app, args []string) error {
	fs := newFlags("migrate", a)
	fs.Usage = func() {
		fmt.Fprintln(a.env.Stderr, "usage: agencysync migrate up|status|down [--yes]")
		fs.PrintDefaults()
	}
	yes := fs.Bool("yes", false, "migrate down: really roll back the newest migration (it drops what that migration created)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("migrate needs one of up, down, status")
	}
	verb := fs.Arg(0)
	if err := parseFlags(fs, fs.Args()[1:]); err != nil { // flags after the verb
		return err
	}
	if fs.NArg() != 0 {
		return usagef("migrate %s takes no arguments, got %q", verb, fs.Args())
	}
	if verb != "up" && verb != "down" && verb != "status" {
		return usagef("migrate %q: want up, down or status", verb)
	}
	if *yes && verb != "down" {
		return usagef("--yes is for migrate down only")
	}
	w, err := a.openWarehouse(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	m, err := warehouse.NewMigrator(ctx, w.Pool, w.Schema, a.log)
	if err != nil {
		return err
	}
	defer m.Close()
	switch verb {
	case "up":
		return m.Up(ctx)
	case "down":
		if !*yes {
			return downRefusal(ctx, m, w.Schema)
		}
		return m.Down(ctx)
	default:
		st, err := m.Status(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.env.Stdout, "schema %s\n", w.Schema)
		for _, s := range st {
			state := "pending"
			if s.Applied {
				state = "applied " + s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(a.env.Stdout, "  %05d  %-28s %s\n", s.Version, s.File, state)
		}
		return nil
	}
}

func runConfigHelp(_ context.Context, a *app, _ []string) error {
	vars := config.Variables()
	for _, v := range vars {
		def := v.Default
		if def == "" {
			def = "(unset)"
		}
		secret := ""
		if v.Secret {
			secret = " [secret; also " + v.Name + "_FILE]"
		}
		fmt.Fprintf(a.env.Stdout, "%-26s default %-16s %s%s\n%-26s form: %s\n", v.Name, def, v.Desc, secret, "", v.Form)
	}
	return nil
}

func runVersion(_ context.Context, a *app, _ []string) error {
	fmt.Fprintln(a.env.Stdout, "agencysync", Version)
	return nil
}
