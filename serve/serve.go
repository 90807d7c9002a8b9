// Package serve runs agencysync as a service: syncs on cron schedules (one at
// a time) and an HTTP server with /healthz, /readyz, /metrics and the status
// page (/, with /status.js and /events, its live progress).
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/robfig/cron/v3"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/engine"
)

// Schedule is a cron expression and the streams it syncs.
type Schedule struct {
	Spec    string
	Streams []string
}

// Options configures Run.
type Options struct {
	Schedules []Schedule
	Location  *time.Location // zone of the cron expressions (default UTC)
	HTTPAddr  string         // /healthz, /readyz, /metrics
	Gatherer  prometheus.Gatherer
	Ready     func(ctx context.Context) error // database reachable, migrations current
	Logger    *zap.Logger
	// Refresh, when set, is called once at start (before the first
	// scheduled sync) to fill the metrics from the warehouse; its error is
	// logged, never fatal.
	Refresh func(ctx context.Context) error
	// NextRun, when set, gets each stream's next scheduled run at start and
	// after every scheduled run.
	NextRun *prometheus.GaugeVec
	// Now is the clock of NextRun (default time.Now).
	Now func() time.Time
	// StatusPage answers /, /status.js and /events (see NewStatusPage);
	// nil: none of them is served.
	StatusPage *StatusPage
}

// Run runs syncs on the schedules until ctx ends: a job never overlaps
// itself (a run still going makes the next tick skip), and a panicking job is
// recovered and logged. The advisory lock of each run also keeps other
// processes out. It serves /healthz, /readyz and /metrics meanwhile.
func Run(ctx context.Context, r engine.Runner, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	loc := opts.Location
	if loc == nil {
		loc = time.UTC
	}
	cl := cronLogger{log}
	c := cron.New(cron.WithLocation(loc), cron.WithLogger(cl),
		cron.WithChain(cron.Recover(cl), cron.SkipIfStillRunning(cl)))
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	var wg sync.WaitGroup
	// One mutex across schedules: two of this process's jobs never overlap.
	var running sync.Mutex
	for _, s := range opts.Schedules {
		if err := addSchedule(ctx, c, r, s, scheduling{opts: opts, loc: loc, now: now, log: log, wg: &wg, running: &running}); err != nil {
			return err
		}
	}

	if opts.Refresh != nil {
		if err := opts.Refresh(ctx); err != nil {
			log.Warn("metrics not read from the warehouse at start; they fill in after the first sync", zap.Error(err))
		}
	}
	srv, srvErr, err := serveHTTP(opts, log)
	if err != nil {
		return err
	}

	c.Start()
	reason, err := StopReason(ctx, srvErr)
	log.Info("serve stopping: waiting for a running sync to commit its page", zap.String("reason", reason))
	stopCtx := c.Stop() // no new jobs; wait for the running one (it sees ctx cancelled and commits its page)
	<-stopCtx.Done()
	wg.Wait()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve stopped", zap.String("reason", reason))
		return fmt.Errorf("serve http: %w", err)
	}
	log.Info("serve stopped", zap.String("reason", reason))
	return nil
}

// scheduling is what the scheduled jobs of one Run share.
type scheduling struct {
	opts    Options
	loc     *time.Location
	now     func() time.Time
	log     *zap.Logger
	wg      *sync.WaitGroup // the job running
	running *sync.Mutex     // held by the job running
}

// addSchedule adds the job of schedule s to c: a sync of its streams through
// r, skipped while another job of this process runs; each tick sets the
// streams' next run.
func addSchedule(ctx context.Context, c *cron.Cron, r engine.Runner, s Schedule, sc scheduling) error {
	streams, log := s.Streams, sc.log
	sched, err := cron.ParseStandard(s.Spec)
	if err != nil {
		return fmt.Errorf("schedule %q: %w", s.Spec, err)
	}
	setNext := func() {
		if sc.opts.NextRun != nil {
			next := sched.Next(sc.now().In(sc.loc))
			for _, st := range streams {
				sc.opts.NextRun.WithLabelValues(st).Set(float64(next.Unix()))
			}
		}
	}
	setNext()
	_, err = c.AddFunc(s.Spec, func() {
		setNext()
		if !sc.running.TryLock() {
			log.Info("scheduled sync skipped: another scheduled sync of this process is running", zap.Strings("streams", streams))
			return
		}
		defer sc.running.Unlock()
		sc.wg.Add(1)
		defer sc.wg.Done()
		res, err := r.Run(ctx, engine.Request{Trigger: engine.TriggerServe, Streams: streams})
		if err != nil {
			log.Error("scheduled sync failed", zap.Strings("streams", streams), zap.Error(err))
			return
		}
		log.Info("scheduled sync ended", zap.Strings("streams", streams), zap.String("status", string(res.Status)))
	})
	if err != nil {
		return fmt.Errorf("schedule %q: %w", s.Spec, err)
	}
	log.Info("sync scheduled", zap.String("cron", s.Spec), zap.Strings("streams", streams))
	return nil
}

// serveHTTP starts the HTTP server of opts on its address: its end (or
// error) arrives on the returned channel.
func serveHTTP(opts Options, log *zap.Logger) (*http.Server, <-chan error, error) {
	srv, addr, srvErr, err := ListenHTTP(opts.HTTPAddr, healthMux(opts), log)
	if err != nil {
		return nil, nil, err
	}
	if opts.StatusPage != nil {
		// Shutdown waits for handlers to return: the live views end.
		srv.RegisterOnShutdown(opts.StatusPage.Close)
	}
	log.Info("serving health and metrics", zap.String("addr", addr.String()))
	return srv, srvErr, nil
}

// ListenHTTP listens on addr and serves handler there; the server's end (or
// error) arrives on the returned channel. net/http reports a handler's
// panic (value and stack) and connection errors to the server's error log:
// log, whose sink is the redacted one.
func ListenHTTP(addr string, handler http.Handler, log *zap.Logger) (*http.Server, net.Addr, <-chan error, error) {
	errLog, err := zap.NewStdLogAt(log.With(zap.String("component", "http")), zap.ErrorLevel)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("build http error log: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ErrorLog: errLog}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	return srv, ln.Addr(), srvErr, nil
}

// StopReason waits until ctx ends or the HTTP server's Serve returns (on
// srvErr), and says which: the context's cause, or Serve's error (also
// returned).
func StopReason(ctx context.Context, srvErr <-chan error) (reason string, err error) {
	select {
	case <-ctx.Done():
		return context.Cause(ctx).Error(), nil
	case err = <-srvErr:
		return fmt.Sprintf("serve http: %v", err), err
	}
}

func healthMux(opts Options) *http.ServeMux {
	mux := HealthMux(opts.Ready, opts.Gatherer)
	if opts.StatusPage != nil {
		opts.StatusPage.Mount(mux)
	}
	return mux
}

// HealthMux serves /healthz (the process answers), /readyz (ready answers
// nil within 5 s; a nil ready is always ready) and /metrics (g; nil: the
// default registry).
func HealthMux(ready func(context.Context) error, g prometheus.Gatherer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain")
		if ready != nil {
			if err := ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if g == nil {
		g = prometheus.DefaultGatherer
	}
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return mux
}

// cronLogger adapts zap to cron's logger.
type cronLogger struct{ log *zap.Logger }

func (l cronLogger) Info(msg string, kv ...any) {
	l.log.Debug("cron: "+msg, zap.Any("details", kv))
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, zap.Error(err), zap.Any("details", kv))
}
