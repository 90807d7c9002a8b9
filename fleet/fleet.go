package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/metrics"
	"github.com/agencysync/agencysync/serve"
)

// Agency is one agency of FLEET_FILE as the fleet schedules it.
type Agency struct {
	Name, Schema string
	// Schedule is its SYNC_SCHEDULE, in Location (its AGENCY_QUOTA_TZ).
	Schedule string
	Location *time.Location
	// KeyFiles are its secret files (*_FILE of its keys): a refused key
	// waits for their contents to change.
	KeyFiles []string
}

// Quota is an agency's quota day as the service's clock tells it.
type Quota struct {
	// Day is the current quota day (a UTC midnight naming the date).
	Day time.Time
	// Left is what the day still allows after the reserve.
	Left int
	// NextDay is when the next quota day starts, on this worker's clock.
	NextDay time.Time
}

// Agencies is the single-agency path the fleet runs each agency through;
// cli implements it (configuration → warehouse → engine, as `agencysync
// run` does). Every method takes the agency's name and reads its
// configuration anew, so a rotated key is used from the next call.
type Agencies interface {
	// Load reads FLEET_FILE and checks every agency's configuration.
	Load(ctx context.Context) ([]Agency, error)
	// Sync runs one sync of the agency, its series recorded in m.
	Sync(ctx context.Context, name string, m *metrics.Metrics) (*engine.Result, error)
	// Quota reads the service's clock (one request that carries no key) and
	// the agency's quota day.
	Quota(ctx context.Context, name string) (Quota, error)
	// LastRun is when the agency's newest run that was not skipped started
	// (false: it never ran).
	LastRun(ctx context.Context, name string) (time.Time, bool, error)
	// Status is the agency's `agencysync status` report with its last runs.
	Status(ctx context.Context, name string, runs int) (*engine.StatusReport, error)
	// StatusPage opens what the agency's status page reads; done releases it.
	StatusPage(ctx context.Context, name string) (src serve.StatusSource, done func(), err error)
}

// Options configures Serve.
type Options struct {
	Settings *config.FleetSettings
	Agencies Agencies
	// Pool reaches the database of the job queue (FLEET_SCHEMA), migrated
	// (warehouse.MigrateFleet).
	Pool *pgxpool.Pool
	// HTTPAddr serves /healthz, /readyz, /metrics, the fleet view (/) and
	// each agency's status page (/agencies/NAME).
	HTTPAddr string
	// Registry holds the worker's own series (Go, process); the fleet adds
	// its own and each agency's, labelled agency.
	Registry *prometheus.Registry
	Logger   *zap.Logger
	// Reload asks for FLEET_FILE to be read at once (SIGHUP).
	Reload <-chan os.Signal
	// Ready, when set, reports the HTTP server's address once it listens.
	Ready func(addr string)
}

// worker is a running fleet worker: its River client and the agencies it
// knows. mu guards the maps; the watch loop is their one writer, the jobs
// and the HTTP handlers read them.
type worker struct {
	opts   Options
	set    *config.FleetSettings
	log    *zap.Logger
	client *river.Client[pgx.Tx]
	met    *fleetMetrics

	reloading sync.Mutex // one reading of FLEET_FILE at a time

	mu       sync.Mutex
	agencies map[string]Agency
	scheds   map[string]*schedule
	inst     map[string]*instruments
	fileErr  string // the last error reading FLEET_FILE ("" when the last read was good)
}

// Serve runs a fleet worker until ctx ends: it reads FLEET_FILE (a bad file
// at start is an error), starts the River client, keeps the periodic jobs
// in step with the file, and serves HTTP. At the end it stops the client,
// cancelling the syncs under way: each commits the page in hand and its job
// is snoozed for no time, so another worker resumes it at once.
func Serve(ctx context.Context, opts Options) error {
	w, err := newWorker(ctx, opts)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	if err := w.client.Start(runCtx); err != nil {
		return fmt.Errorf("start job queue client: %w", err)
	}
	w.log.Info("fleet worker started", zap.String("schema", w.set.Schema),
		zap.Int("concurrency", w.set.Concurrency), zap.Duration("job_timeout", w.set.JobTimeout),
		zap.Duration("rescue_after", w.set.RescueAfter), zap.Int("agencies", len(w.agencies)))
	srv, srvErr, err := w.listen()
	if err != nil {
		w.stop()
		return err
	}
	var wg sync.WaitGroup
	watchCtx, stopWatch := context.WithCancel(ctx)
	wg.Go(func() { w.watch(watchCtx) })
	reason, err := serve.StopReason(ctx, srvErr)
	stopWatch()
	wg.Wait()
	w.log.Info("fleet worker stopping: syncs under way commit their page and go back to the queue", zap.String("reason", reason))
	w.stop()
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer shutCancel()
	_ = srv.Shutdown(shutCtx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	w.log.Info("fleet worker stopped", zap.String("reason", reason))
	return nil
}

// newWorker reads FLEET_FILE and builds the River client with a periodic
// job per agency.
func newWorker(ctx context.Context, opts Options) (*worker, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	w := &worker{opts: opts, set: opts.Settings, log: log, agencies: map[string]Agency{},
		scheds: map[string]*schedule{}, inst: map[string]*instruments{}}
	w.met = newFleetMetrics(opts.Registry)
	agencies, err := opts.Agencies.Load(ctx)
	if err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &syncWorker{w: w}); err != nil {
		return nil, fmt.Errorf("register sync worker: %w", err)
	}
	w.client, err = river.NewClient(riverpgxv5.New(opts.Pool), &river.Config{
		ID:                   w.set.WorkerID,
		Schema:               w.set.Schema,
		Logger:               newSlog(log),
		Queues:               map[string]river.QueueConfig{queueName: {MaxWorkers: w.set.Concurrency}},
		Workers:              workers,
		JobTimeout:           w.set.JobTimeout,
		RescueStuckJobsAfter: w.set.RescueAfter,
		MaxAttempts:          maxAttempts,
		ErrorHandler:         &errorHandler{log: log},
	})
	if err != nil {
		return nil, fmt.Errorf("create job queue client: %w", err)
	}
	if _, err := w.apply(ctx, agencies, false); err != nil {
		return nil, err
	}
	return w, nil
}

// stop stops the River client, cancelling the syncs under way and waiting
// for them to record their end.
func (w *worker) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.client.StopAndCancel(ctx); err != nil {
		w.log.Warn("job queue client not stopped cleanly", zap.Error(err))
	}
}

// listen starts the HTTP server; its error comes on the channel.
func (w *worker) listen() (*http.Server, <-chan error, error) {
	srv, addr, errc, err := serve.ListenHTTP(w.opts.HTTPAddr, w.mux(), w.log)
	if err != nil {
		return nil, nil, err
	}
	w.log.Info("serving health, metrics and the fleet view", zap.String("addr", addr.String()))
	if w.opts.Ready != nil {
		w.opts.Ready(addr.String())
	}
	return srv, errc, nil
}

// names returns the agencies' names.
func (w *worker) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.agencies))
	for n := range w.agencies {
		out = append(out, n)
	}
	return out
}

// agency returns the agency named name as this worker knows it.
func (w *worker) agency(name string) (Agency, *schedule, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.agencies[name]
	return a, w.scheds[name], ok
}

// fileError is the last problem reading FLEET_FILE ("" when the last
// reading was good).
func (w *worker) fileError() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fileErr
}

// errorHandler logs what River reports of a job: an error a sync returned
// (it is retried) or a panic (recovered).
type errorHandler struct{ log *zap.Logger }

func (h *errorHandler) HandleError(_ context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	h.log.Warn("sync job failed; River retries it", zap.String("agency", agencyOf(job)), zap.Int64("job_id", job.ID),
		zap.Int("attempt", job.Attempt), zap.Int("max_attempts", job.MaxAttempts), zap.Error(err))
	return nil
}

func (h *errorHandler) HandlePanic(_ context.Context, job *rivertype.JobRow, v any, trace string) *river.ErrorHandlerResult {
	h.log.Error("sync job panicked", zap.String("agency", agencyOf(job)), zap.Int64("job_id", job.ID),
		zap.String("panic", fmt.Sprint(v)), zap.String("stack", trace))
	return nil
}
