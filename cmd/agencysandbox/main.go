// Command agencysandbox serves a deterministic, misbehaving-on-demand sandbox
// of the Agency Data Service: the main interface (with the /_sandbox/ admin
// API) on one address and the communications endpoint on another. See
// sandbox/README.md for the flags, the admin API and the variants.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "time/tzdata" // --quota-tz works without system zone data

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

// run parses args, serves until ctx ends or SIGINT/SIGTERM arrives, and
// returns the exit code: 0 on a clean stop, 2 for bad flags or options, 1 when
// the sandbox cannot listen.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	opts := sandbox.DefaultOptions()
	cl := cmdline{start: opts.Start.Format(time.RFC3339)}
	fs := flag.NewFlagSet("agencysandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cl.define(fs, &opts)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		return fail(stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err := cl.complete(&opts); err != nil {
		return fail(stderr, "%v", err)
	}
	logger, err := newLogger(cl.logFormat, cl.logLevel, stderr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer func() { _ = logger.Sync() }()
	opts.Logger = logger
	return serve(ctx, opts, cl, stderr)
}

// fail prints a usage error and returns its exit code, 2.
func fail(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "agencysandbox: "+format+"\n", a...)
	return 2
}

// cmdline holds the flags that are not options of the sandbox as they are
// written: the listen addresses, what complete parses into the options, and
// the logger's settings.
type cmdline struct {
	apiAddr, commsAddr  string
	start, quotaTZ      string
	logFormat, logLevel string
}

// define defines every flag of fs: the sandbox's options into opts, the rest
// into cl, and the usage text that lists the variants.
func (cl *cmdline) define(fs *flag.FlagSet, opts *sandbox.Options) {
	fs.StringVar(&cl.apiAddr, "api-addr", "127.0.0.1:8081", "listen address of the main interface ({base_url}) and the /_sandbox/ admin API")
	fs.StringVar(&cl.commsAddr, "comms-addr", "127.0.0.1:8082", "listen address of the communications endpoint ({communications_url})")
	fs.StringVar(&cl.start, "start", cl.start, "initial sandbox clock (RFC 3339); it moves only through the admin API")
	fs.StringVar(&cl.quotaTZ, "quota-tz", "UTC", "time zone whose midnight (on the sandbox clock) resets the daily quota")
	fs.StringVar(&cl.logFormat, "log-format", "console", "log format: console or json")
	fs.StringVar(&cl.logLevel, "log-level", "info", "log level: debug (one line per request), info, warn or error")
	dataFlags(fs, opts)
	accessFlags(fs, opts)
	faultFlags(fs, opts)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: agencysandbox [flags]\n\nServes a deterministic sandbox of the Agency Data Service.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(out, "\nVariants (--variant NAME, repeatable):\n")
		for _, v := range sandbox.Variants() {
			fmt.Fprintf(out, "  %-26s %s\n", v.Name, v.Description)
		}
	}
}

// dataFlags are the flags of the generated data and the shapes it is served in.
func dataFlags(fs *flag.FlagSet, opts *sandbox.Options) {
	fs.Int64Var(&opts.Seed, "seed", opts.Seed, "seed of the generated data; the same flags give byte-identical responses")
	fs.IntVar(&opts.Brands, "brands", opts.Brands, "number of brands")
	fs.IntVar(&opts.ProjectsPerBrand, "projects-per-brand", opts.ProjectsPerBrand, "number of projects of each brand")
	fs.IntVar(&opts.Users, "users", opts.Users, "number of platform users (ids 1..N); outsiders come on top")
	fs.IntVar(&opts.Emails, "emails", opts.Emails, "number of e-mails at start (the total all users together match)")
	fs.IntVar(&opts.HistoryDays, "history-days", opts.HistoryDays, "days of generated history, ending at --start")
	fs.Int64Var(&opts.DomainID, "domain-id", opts.DomainID, "domain_id the e-mails belong to")
	fs.DurationVar(&opts.CommsDayOffset, "comms-day-offset", 0, "where the communications endpoint cuts its days: date_start/date_end are days of UTC+offset (-14h..14h)")
	fs.Func("variant", "serve a tolerated response variant (repeatable; names below)", func(v string) error {
		opts.Variants = append(opts.Variants, v)
		return nil
	})
	fs.IntVar(&opts.MaxPerPage, "max-per-page", opts.MaxPerPage, "largest per_page answered (a larger ask is answered with this)")
}

// accessFlags are the flags of the keys, the admin API and the limits.
func accessFlags(fs *flag.FlagSet, opts *sandbox.Options) {
	fs.StringVar(&opts.APIKey, "api-key", opts.APIKey, "this agency's key on the main interface (Authorization header)")
	fs.StringVar(&opts.CommsKey, "comms-key", opts.CommsKey, "key of the communications endpoint (X-Workflow-Key header)")
	fs.StringVar(&opts.ForeignKey, "foreign-key", opts.ForeignKey, "another agency's key: 403 on this agency's data (empty disables)")
	fs.StringVar(&opts.RevokedKey, "revoked-key", opts.RevokedKey, "a regenerated-away key: 401 (empty disables)")
	fs.StringVar(&opts.AdminToken, "admin-token", "", "X-Admin-Token of the /_sandbox/ admin API (empty disables the admin API)")
	fs.Float64Var(&opts.Rate, "rate", opts.Rate, "requests accepted in any sliding one-second window")
	fs.IntVar(&opts.DailyQuota, "daily-quota", opts.DailyQuota, "requests accepted per quota day")
	fs.StringVar(&opts.LimitsScope, "limits-scope", opts.LimitsScope, "shared: the communications endpoint counts against the main rate and quota; separate: it has its own")
	fs.BoolVar(&opts.NoLimits, "no-limits", false, "disable the rate limit and the daily quota (for benchmarks)")
}

// faultFlags are the flags of the faults, delays and bad records served.
func faultFlags(fs *flag.FlagSet, opts *sandbox.Options) {
	fs.Float64Var(&opts.Faults.Err500, "fault-500", 0, "rate (0..1) of 500 answers with the spec's body")
	fs.Float64Var(&opts.Faults.HTML502, "fault-502-html", 0, "rate of 502 answers with an HTML page")
	fs.Float64Var(&opts.Faults.Err503, "fault-503", 0, "rate of 503 answers")
	fs.Float64Var(&opts.Faults.Truncate, "fault-truncate", 0, "rate of 200 answers whose body is cut mid-JSON")
	fs.Float64Var(&opts.Faults.Slow, "fault-slow", 0, "rate of answers delayed by --slow-delay")
	fs.DurationVar(&opts.SlowDelay, "slow-delay", opts.SlowDelay, "delay of a slow answer")
	fs.Float64Var(&opts.Faults.Drop, "fault-drop", 0, "rate of connections closed without an answer")
	fs.Float64Var(&opts.Faults.Spurious429, "fault-429", 0, "rate of spurious 429 \"Rate limit exceeded\" answers")
	fs.DurationVar(&opts.Latency, "latency", 0, "latency added to every answer")
	fs.DurationVar(&opts.Jitter, "jitter", 0, "random extra latency in [0, jitter) added to every answer")
	fs.Float64Var(&opts.BadRecordRate, "bad-record-rate", 0, "share (0..1) of records that are valid JSON but wrong")
}

// complete parses into opts what the command line gives as text: the start
// of the clock and the quota's time zone.
func (cl *cmdline) complete(opts *sandbox.Options) error {
	var err error
	if opts.Start, err = time.Parse(time.RFC3339Nano, cl.start); err != nil {
		return fmt.Errorf("--start must be an RFC 3339 time: %w", err)
	}
	if opts.QuotaTZ, err = time.LoadLocation(cl.quotaTZ); err != nil {
		return fmt.Errorf("--quota-tz: %w", err)
	}
	return nil
}

// serve starts the sandbox on cl's addresses and serves until ctx ends or
// SIGINT/SIGTERM arrives.
func serve(ctx context.Context, opts sandbox.Options, cl cmdline, stderr io.Writer) int {
	logger := opts.Logger
	// Signals are caught before anything is announced, so a SIGTERM sent
	// right after the "listening" line shuts down cleanly.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := sandbox.New(opts)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if err := srv.Start(cl.apiAddr, cl.commsAddr); err != nil {
		logger.Error("cannot start the sandbox", zap.Error(err))
		return 1
	}
	logger.Info("agencysandbox listening",
		zap.String("api_url", srv.APIURL()), zap.String("base_url", srv.APIURL()+"/v1"),
		zap.String("communications_url", srv.CommsURL()+sandbox.CommsPath))

	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	logger.Info("agencysandbox stopped")
	return 0
}

func newLogger(format, level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("parse --log-level: %w", err)
	}
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	switch format {
	case "json":
		encoder = zapcore.NewJSONEncoder(cfg)
	case "console":
		encoder = zapcore.NewConsoleEncoder(cfg)
	default:
		return nil, fmt.Errorf("parse --log-format: want console or json, got %q", format)
	}
	return zap.New(zapcore.NewCore(encoder, zapcore.AddSync(w), lvl)), nil
}
