// Package engine is agencysync's sync engine: it plans each run within the
// day's request quota, runs the declared streams (package stream)
// incrementally from their watermarks, commits every page with
// its checkpoint so that a crash resumes where it stopped, holds one advisory
// lock per warehouse schema so that two syncs never overlap, and records each
// run in sync_runs.
//
// The engine only orchestrates: it holds no SQL (load runs every statement,
// pages carry their bookkeeping as data), and serving (serve), metrics
// (metrics), progress display (progress), the disk spool (spool), status
// tables (report) and run notifications (notify) live in their own
// packages. See cmd/agencysync's package documentation for the import graph.
package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/metrics"
	"github.com/agencysync/agencysync/progress"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/warehouse"
)

// Trigger says what started a run (sync_runs.trigger).
type Trigger string

// Triggers of a run.
const (
	TriggerRun      Trigger = "run"
	TriggerServe    Trigger = "serve"
	TriggerBackfill Trigger = "backfill"
	TriggerVerify   Trigger = "verify" // agencysync verify
	TriggerTest     Trigger = "test"
)

// Status is how a run ended (sync_runs.status).
type Status string

// Run statuses.
const (
	StatusSucceeded Status = load.RunSucceeded // everything asked was synced, and every record fit
	StatusWarning   Status = load.RunWarning   // everything asked was synced, with warnings, notes or open rejects (Result.WarningKinds)
	StatusPartial   Status = load.RunPartial   // budget, daily quota or a signal stopped it; the next run resumes
	StatusFailed    Status = load.RunFailed    // an error stopped a stream
	StatusSkipped   Status = load.RunSkipped   // another sync held the lock
)

// ErrNoClient means Run was called on an engine built without a client
// (Deps.Client), which only reads the warehouse.
var ErrNoClient = errors.New("engine built without a client")

// ErrInterrupted means the run stopped because its context ended (a signal):
// the page in hand was committed and the next run resumes.
var ErrInterrupted = errors.New("interrupted")

// Settings are the engine's knobs, from the configuration.
type Settings struct {
	// Schema is the warehouse schema; it keys the advisory lock.
	Schema string
	// Mail are the settings of the mail hooks (mail.go).
	Mail MailSettings
	// DailyQuota and QuotaReserve (a share, 0..1) bound each day's requests.
	DailyQuota   int
	QuotaReserve float64
	// Priorities order the tasks (default: the declarations' order,
	// DefaultPriorities for stream.All()); tasks it leaves out follow in
	// their default order.
	Priorities []Task
	// NoPrefetch turns off fetching the next page while the current one
	// loads. Prefetching keeps the API's pace the only bottleneck; with the
	// spool (SpoolDir) a crash loses at most the request in flight either
	// way, without it the page in hand and the one being fetched.
	NoPrefetch bool
	// MaxInFlight bounds the requests kept in flight at once by detail
	// fetches and the mail hooks' pages fetched ahead (0: what the client's
	// pace and the answer times call for, extract.Client.InFlight — 1 at
	// 10/s with answers under 100 ms, 9 at 100/s with 50 ms answers).
	// Requests still leave paced; a crash loses at most those in flight
	// (fetched items wait in the spool). Ignored with NoPrefetch, and 1
	// without a SpoolDir.
	MaxInFlight int
	// SpoolDir is a private folder where each page of the mail hooks and
	// each fetched detail waits from its answer to its commit, so that a
	// crash loses at most the requests in flight (see pageSpool); "" keeps
	// them in memory only.
	SpoolDir string
	// DetailMaxAge is the maximum age of an entity's detail and child lists
	// whose list entry did not change; the refreshes are staggered over its
	// days (see load.DetailState; default 90 days, 0 keeps the default).
	DetailMaxAge time.Duration
	// IncrementalFullEvery (SYNC_FINANCE_FULL_EVERY) lists an incremental
	// listing (stream.List.Incremental) without updated_since at least
	// this often, so deletions are seen (default 7 days); never less often
	// than Mail.RefreshAge, so that a record whose updated_at did not move
	// is read again within it too.
	IncrementalFullEvery time.Duration
	// Now is the clock (default time.Now); the quota day comes from the ledger.
	Now func() time.Time
	// Streams are the stream declarations the engine runs, in their
	// default order: stream.Apply's copies under AGENCY_FIELD_MAP (default
	// stream.All()). Every task, partition, estimate and name of a sync
	// follows from them; New refuses declarations that would not run.
	Streams []*stream.Stream
}

// Deps are the engine's collaborators.
type Deps struct {
	Pool   *pgxpool.Pool
	Store  *load.Store
	Ledger *load.Ledger
	// Client talks to the service; nil builds an engine that only reads
	// the warehouse (Plan, Status), whose Run returns ErrNoClient.
	Client *extract.Client
	// Clock, when set, is the service's clock the client learns from its
	// answers; each run keeps its offset in the warehouse for the next
	// process (see extract.ServiceClock). Settings.Now should read it.
	Clock   *extract.ServiceClock
	Metrics *metrics.Metrics // nil: metrics not recorded
	// Progress makes the progress display of a run from the run's logger
	// (which carries run_id); nil shows no progress.
	Progress func(runLog *zap.Logger) progress.Display
	// Live, when set, receives the progress of each run as it goes (serve's
	// status page reads it); nil keeps none.
	Live   *progress.Live
	Logger *zap.Logger
}

// warehouseStore is what the engine needs of *load.Store (tests wrap it to
// simulate a crash between a page's fetch and its commit).
type warehouseStore interface {
	RecordSkipped(ctx context.Context, r load.Run, reason string) (string, error)
	StartRun(ctx context.Context, r load.Run) (string, error)
	FinishRun(ctx context.Context, runID string, r load.RunResult) error
	GetState(ctx context.Context, stream, partition string) (load.State, error)
	States(ctx context.Context, stream string) ([]load.State, error)
	SetState(ctx context.Context, stream, runID string, cp load.Checkpoint) error
	DeclarePartitions(ctx context.Context, stream string, partitions []string) error
	NewListing(table string, scope map[string]any) (*load.Listing, error)
	Unseen(ctx context.Context, l *load.Listing) (int, error)
	Commit(ctx context.Context, runID string, c load.Commit) (load.Counts, error)
	SetStreamsDetail(ctx context.Context, runID string, detail map[string]load.TaskDetail) error
	Freshness(ctx context.Context) ([]load.StreamFreshness, error)
	ResetStream(ctx context.Context, stream string) error
	CloseDeadRuns(ctx context.Context) error
	TryLock(ctx context.Context, key int64) (*load.SessionLock, bool, error)
	LiveRows(ctx context.Context, table string, scope map[string]any) (int, error)
	UnfinishedRunStarts(ctx context.Context) ([]time.Time, error)
	PartitionsSucceededSince(ctx context.Context, stream string, partitions []string, since time.Time) ([]string, error)
	StreamInProgress(ctx context.Context, stream string) (bool, error)
	RejectedCount(ctx context.Context, stream string) (int64, error)
	RecentRuns(ctx context.Context, n int) ([]load.RunSummary, error)
	SourceFields(ctx context.Context, streams ...string) ([]inventory.Field, error)
	MergeSourceFields(ctx context.Context, seenAt time.Time, fields []inventory.Field) error
	SetRunWarnings(ctx context.Context, runID string, ws []inventory.Warning) error
	LastRunWarnings(ctx context.Context) (string, []inventory.Warning, error)
	PagingFacts(ctx context.Context) (map[string]load.PagingFact, error)
	SavePagingFacts(ctx context.Context, facts map[string]load.PagingFact) error
	TableMappings(ctx context.Context) (map[string]load.TableMapping, error)
	SetTableMappings(ctx context.Context, ms []load.TableMapping) error
}

// Engine runs syncs. It is safe for concurrent use; the advisory lock lets
// one run at a time proceed per warehouse schema.
type Engine struct {
	pool     *pgxpool.Pool
	store    warehouseStore
	ledger   *load.Ledger
	client   *extract.Client
	clock    *extract.ServiceClock
	metrics  *metrics.Metrics
	progress func(runLog *zap.Logger) progress.Display
	live     *progress.Live // nil: no live progress
	log      *zap.Logger
	set      Settings
	book     *bookkeeping
	spool    *pageSpool // nil without Settings.SpoolDir
	mail     mailState  // the mail hooks' collaborators (mail.go)

	retries atomic.Int64 // retries of the current run (the client's hook counts them)
	bodies  bodyWatch    // the current run's response bodies: charsets, invalid UTF-8 (bodies.go)

	// inventorySampling, when set, is the field inventory's sampling
	// (first, every; see inventory.Observer.SetSampling): tests observe
	// every record to compare source_fields with what the sandbox served.
	inventorySampling *[2]int
}

// New checks the settings and returns an engine.
func New(d Deps, s Settings) (*Engine, error) {
	switch {
	case d.Pool == nil || d.Store == nil || d.Ledger == nil:
		return nil, errors.New("create engine: pool, store and ledger are required")
	case s.Schema == "":
		return nil, errors.New("create engine: empty schema")
	case s.DailyQuota <= 0:
		return nil, errors.New("create engine: daily quota must be positive")
	case s.QuotaReserve < 0 || s.QuotaReserve > 1:
		return nil, errors.New("create engine: quota reserve must be within 0..1")
	case s.MaxInFlight < 0:
		return nil, errors.New("create engine: max in flight must not be negative")
	}
	if s.DetailMaxAge <= 0 {
		s.DetailMaxAge = 90 * 24 * time.Hour
	}
	if s.IncrementalFullEvery <= 0 {
		s.IncrementalFullEvery = 7 * 24 * time.Hour
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	s.Mail = s.Mail.withDefaults()
	if s.Streams == nil {
		s.Streams = stream.All()
	}
	if err := checkStreams(s.Streams); err != nil {
		return nil, fmt.Errorf("create engine: %w", err)
	}
	s.Priorities = completePriorities(s.Priorities, s.Streams)
	if d.Logger == nil {
		d.Logger = zap.NewNop()
	}
	if d.Progress == nil {
		d.Progress = func(*zap.Logger) progress.Display { return progress.Nop{} }
	}
	book, err := newBookkeeping(s.Schema)
	if err != nil {
		return nil, fmt.Errorf("create engine: %w", err)
	}
	e := &Engine{pool: d.Pool, store: d.Store, ledger: d.Ledger, client: d.Client, clock: d.Clock, metrics: d.Metrics,
		progress: d.Progress, live: d.Live, log: d.Logger, set: s, book: book}
	e.spool = openSpool(s.SpoolDir, s.Schema, e.log)
	for _, st := range s.Streams {
		if h := hooksNamed(st.Hooks); h != nil {
			if err := h.open(e, st); err != nil {
				return nil, fmt.Errorf("create engine: %w", err)
			}
		}
	}
	return e, nil
}

// ObserveRequest is the client's per-request hook: metrics and retry counts.
// Wire it as extract.Options.Hook.
func (e *Engine) ObserveRequest(info extract.RequestInfo) {
	if info.Unsent {
		return // it never left the machine: not a request
	}
	if info.Attempt > 1 {
		e.retries.Add(1)
	}
	e.retries.Add(int64(info.Resends))
	_, ep, _ := e.endpointOf(info.Endpoint)
	e.bodies.observe(info, e.inventoryName(info.Endpoint), ep.Kind() == stream.KindWindow)
	if e.metrics == nil {
		return
	}
	e.metrics.Requests.WithLabelValues(info.Endpoint, fmt.Sprint(info.Status)).Inc()
	e.metrics.RequestDuration.WithLabelValues(info.Endpoint).Observe(info.Duration.Seconds())
	if info.Attempt > 1 {
		e.metrics.Retries.Inc()
	}
}

// Runner performs one sync; *Engine implements it.
type Runner interface {
	Run(ctx context.Context, req Request) (*Result, error)
}

// Range is an inclusive range of calendar dates.
type Range struct {
	From, To time.Time
}

// Request is what one run should do.
type Request struct {
	Trigger Trigger
	// Streams selects the streams (default all).
	Streams []string
	// FullRefresh names streams whose state is reset before the run, so they
	// are synced from scratch.
	FullRefresh []string
	// Mail, when set, asks the mail hooks for a run of their own instead
	// of the normal tasks (mail.go).
	Mail MailRequest
}

// Result is how a run ended.
type Result struct {
	RunID        string
	Status       Status
	Plan         Plan
	RequestsUsed int
	Retries      int
	Counts       load.Counts
	// StreamErrors holds the error of each task that failed.
	StreamErrors map[Task]error
	// Err is why the run did not succeed (nil when it did or was skipped).
	Err error
	// Notes are warnings worth keeping (e.g. a total shortfall).
	Notes []string
	// Verify is what the run's verification (agencysync verify, or the
	// scheduled verify task) found and did; nil when none ran.
	Verify *VerifyReport
	// Tasks is what each task that ran did, by task name (also stored in
	// sync_runs.streams_detail).
	Tasks map[string]load.TaskDetail
	// Warnings are the run's coverage warnings (also logged, stored in
	// sync_runs.warnings and counted by agencysync_source_field_warnings).
	Warnings []inventory.Warning
	// OpenRejects counts the rejected records of the run's streams still
	// open when it ended (sync_runs.open_rejects holds their sum), by
	// stream: a stream counts the rejects of its lists and details too
	// (reject streams named "<stream>.<list>").
	OpenRejects map[string]int64
	// RejectsResolved counts the earlier rejects the run resolved
	// (sync_runs.rejects_resolved).
	RejectsResolved int64
}

// run is the state of one run in progress.
type run struct {
	e        *Engine
	id       string
	client   *extract.Client
	budget   *extract.RequestBudget
	log      *zap.Logger
	today    time.Time // UTC date of the run's start (snapshot date)
	progress progress.Display
	spool    *pageSpool
	// listsDone are the lists ("stream/partition") an unfinished run
	// completed today: not listed again.
	listsDone map[string]bool
	mu        sync.Mutex
	counts    load.Counts
	notes     []string
	stopErr   error           // budget, quota or interruption: stops every task
	down      map[bool]downed // per interface (comms): the task whose error ended it (iface.go)
	gaps      []string        // what the run did not land whole (outcome.go): it ends partial
	mail      mailRun         // the mail hooks' state in this run (mail.go)
	stats     runStats        // per task: requests, records, duration, ranges (runstats.go)
	fields    *fieldWatch     // the field inventory and column coverage of the run's records (runstats.go)
	dups      dupWatch        // records dropped for a later one of the same id and page (bodies.go)
	memo      *extract.PagingMemo
	live      *liveRun // the run's live progress (nil: none kept)
}

// Run performs one sync: lock, plan, tasks in priority order, record.
func (e *Engine) Run(ctx context.Context, req Request) (*Result, error) {
	if e.client == nil {
		return nil, fmt.Errorf("run sync: %w", ErrNoClient)
	}
	streams, err := e.normaliseStreams(req)
	if err != nil {
		return nil, err
	}
	if req.Trigger == "" {
		req.Trigger = TriggerRun
	}
	lock, skipped, err := e.syncLock(ctx, "run", load.Run{Trigger: string(req.Trigger), Streams: streams})
	if err != nil {
		return nil, err
	}
	if lock == nil {
		return &Result{RunID: skipped, Status: StatusSkipped}, nil
	}
	defer lock.Release()
	return e.runLocked(ctx, req, streams)
}

// syncLock takes the sync lock of the engine's warehouse schema for run r
// (op names it in errors). When another sync holds the lock it records r as
// a skipped run, logs and counts it, and returns a nil lock and the skipped
// run's id.
func (e *Engine) syncLock(ctx context.Context, op string, r load.Run) (*load.SessionLock, string, error) {
	lock, ok, err := e.store.TryLock(ctx, warehouse.SyncLockID(e.set.Schema))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", op, err)
	}
	if ok {
		return lock, "", nil
	}
	id, err := e.store.RecordSkipped(ctx, r, "another sync of this warehouse schema holds the lock")
	if err != nil {
		return nil, "", err
	}
	e.log.Info("another sync holds the lock of this warehouse schema; skipping", zap.String("run_id", id), zap.String("schema", e.set.Schema))
	if e.metrics != nil {
		e.metrics.Runs.WithLabelValues(string(StatusSkipped)).Inc()
	}
	return nil, id, nil
}

// normaliseStreams returns the streams req runs: those it names (all by
// default), or the one whose hooks take req as a run of their own.
func (e *Engine) normaliseStreams(req Request) ([]string, error) {
	streams := req.Streams
	if len(streams) == 0 {
		streams = e.streamNames()
	}
	names := e.streamNames()
	for _, s := range append(slices.Clone(streams), req.FullRefresh...) {
		if !slices.Contains(names, s) {
			return nil, fmt.Errorf("run: unknown stream %q (want %s)", s, strings.Join(names, ","))
		}
	}
	name, h, err := e.requestHooks(req)
	if err != nil {
		return nil, err
	}
	if h != nil {
		streams = []string{name}
	}
	return streams, nil
}

func (e *Engine) runLocked(ctx context.Context, req Request, streams []string) (*Result, error) {
	clockNote := e.readClock(ctx)
	started := e.set.Now()
	// The run's duration is the process's own (monotonic) time: the
	// service clock that dates the run moves when its first answer shows
	// the service's offset, which would make "took" days long or negative.
	wallStart := time.Now()
	for _, s := range req.FullRefresh {
		if err := e.store.ResetStream(ctx, s); err != nil {
			return nil, err
		}
		e.log.Info("stream state reset for a full refresh", zap.String("stream", s))
	}
	if err := e.store.CloseDeadRuns(ctx); err != nil {
		return nil, err
	}
	rederived, err := e.rederive(ctx, streams)
	if err != nil {
		return nil, err
	}
	listsDone, err := e.listsDoneByUnfinishedRun(ctx, req)
	if err != nil {
		return nil, err
	}
	done := e.tasksDone(listsDone)
	plan, err := e.makePlan(ctx, streams, req, done)
	if err != nil {
		return nil, err
	}
	memo, err := e.loadPagingMemo(ctx)
	if err != nil {
		return nil, err
	}
	runID, err := e.store.StartRun(ctx, load.Run{Trigger: string(req.Trigger), Streams: streams, RequestsPlanned: plan.Allotted()})
	if err != nil {
		return nil, err
	}
	e.retries.Store(0)
	e.bodies.reset()
	budget := extract.NewBudget(plan.Budget)
	runLog := e.log.With(zap.String("run_id", runID))
	r := &run{e: e, id: runID, budget: budget, spool: e.spool.prepare(), listsDone: listsDone,
		client: e.client.WithBudget(budget).WithExecutionID(runID).WithLogger(runLog).WithPagingMemo(memo),
		log:    runLog, today: utcDate(started), fields: newFieldWatch(e.set.Streams, e.inventorySampling), memo: memo}
	r.progress = e.progress(r.log)
	if e.live != nil {
		r.progress = progress.Tee(r.progress, e.live)
	}
	if clockNote != "" {
		r.note(clockNote)
	}
	for _, n := range rederived {
		r.note(n)
	}
	defer r.spool.tidy()
	r.live = e.liveRun(runID, req.Trigger, streams, plan.Budget)
	defer r.live.end()
	r.log.Info("sync started", zap.Strings("streams", streams), zap.String("trigger", string(req.Trigger)),
		zap.Int("budget", plan.Budget), zap.Int("spent_today", plan.Spent), zap.Int("estimated", plan.Estimated()))
	if e.metrics != nil {
		e.metrics.QuotaSpent.Set(float64(plan.Spent))
		e.metrics.QuotaLeft.Set(float64(plan.Budget))
	}

	res := &Result{RunID: runID, Plan: plan, StreamErrors: map[Task]error{}}
	r.runTasks(ctx, req, plan, done, res)
	r.progress.Finish()
	return e.finishRun(ctx, r, res, streams, wallStart)
}

// runTasks runs the plan's tasks in order until one stops the run; the
// tasks an unfinished run completed today (done) are skipped. A task's
// error is kept in res.StreamErrors; an incomplete task leaves a gap.
func (r *run) runTasks(ctx context.Context, req Request, plan Plan, done map[Task]bool, res *Result) {
	base := r.client
	for _, item := range plan.Items {
		if r.stopped() != nil {
			break
		}
		if done[item.Task] {
			r.log.Info("task skipped: the unfinished run before this one completed it today", zap.String("task", string(item.Task)))
			continue
		}
		if err := r.interfaceDown(item.Task); err != nil {
			res.StreamErrors[item.Task] = err
			r.log.Warn("task not run", zap.String("task", string(item.Task)), zap.Error(err))
			continue
		}
		tlog := r.log.With(zap.String("task", string(item.Task)))
		if item.Task != TaskDetails { // details name their stream themselves
			tlog = tlog.With(zap.String("stream", item.Stream))
		}
		r.client = base.WithLogger(tlog) // the client's lines carry run_id and stream too
		r.stats.begin(item.Task, item.Stream, r.budget.Spent(), time.Now())
		err := r.runOne(ctx, item.Task, req, tlog)
		r.savePaging(ctx)
		r.stats.end(r.budget.Spent(), time.Now())
		r.live.spent(r.budget.Spent())
		if err == nil {
			continue
		}
		if stop := classifyStop(ctx, err); stop != nil {
			r.stop(stop)
			tlog.Warn("task stopped", zap.Error(err))
			break
		}
		if endsInterface(err) != nil {
			r.endInterface(item.Task, err)
			res.StreamErrors[item.Task] = err
			tlog.Error("task failed; the other tasks of the "+r.e.interfaceName(item.Task)+" are not run, the other interface's still are", zap.Error(err))
			continue
		}
		if errors.Is(err, ErrIncomplete) {
			r.gap(fmt.Sprintf("%s: %v", item.Task, err))
			tlog.Warn("task incomplete; the next run fetches the rest", zap.Error(err))
			continue
		}
		res.StreamErrors[item.Task] = err
		tlog.Error("task failed", zap.Error(err))
	}
}

// classifyStop returns the error that must stop the whole run (budget,
// daily quota, interruption), or nil for a failure of the task or of its
// interface (endsInterface).
func classifyStop(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, extract.ErrBudgetExhausted):
		return fmt.Errorf("today's request budget is spent; the next run continues: %w", err)
	case errors.Is(err, extract.ErrDailyQuota):
		return fmt.Errorf("the service refused: daily quota exceeded; the next run continues: %w", err)
	case ctx.Err() != nil:
		return fmt.Errorf("sync %w: %w", ErrInterrupted, ctx.Err())
	}
	return nil
}

// outcome is how a run ends: failed when a task failed (a refused key or an
// unreachable host fails the tasks of its interface), partial when it was
// stopped or left gaps (ranges it did not land whole: never succeeded then),
// else succeeded. The failed tasks are named in order.
func outcome(stop error, taskErrs map[Task]error, gaps []string, order []Task) (Status, error) {
	switch {
	case len(taskErrs) > 0:
		var msgs []string
		for _, t := range order {
			if err, ok := taskErrs[t]; ok {
				msgs = append(msgs, fmt.Sprintf("%s: %v", t, err))
			}
		}
		return StatusFailed, &taskErrors{msg: strings.Join(msgs, "; "), errs: taskErrs, stop: stop}
	case stop != nil:
		return StatusPartial, stop
	case len(gaps) > 0:
		return StatusPartial, gapError(gaps)
	}
	return StatusSucceeded, nil
}

// taskErrors is the error of a run in which tasks failed.
type taskErrors struct {
	msg  string
	errs map[Task]error
	stop error
}

func (e *taskErrors) Error() string {
	if e.stop != nil {
		return e.msg + "; then stopped: " + e.stop.Error()
	}
	return e.msg
}

func (e *taskErrors) Unwrap() []error {
	out := make([]error, 0, len(e.errs)+1)
	for _, err := range e.errs {
		out = append(out, err)
	}
	if e.stop != nil {
		out = append(out, e.stop)
	}
	return out
}

func (r *run) stop(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopErr == nil {
		r.stopErr = err
	}
}

func (r *run) stopped() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopErr
}

func (r *run) note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, msg)
}

// commit writes a page and adds its counts to the run. It uses a context
// that survives cancellation for a short while, so that a signal still lets
// the page in hand commit.
func (r *run) commit(ctx context.Context, p load.Commit) (load.Counts, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 8*time.Second)
	defer cancel()
	c, err := r.e.store.Commit(cctx, r.id, p)
	if err != nil {
		return c, err
	}
	r.mu.Lock()
	r.counts.Add(c)
	r.mu.Unlock()
	b := p.Rows()
	r.stats.read(b)
	r.stats.changed(c)
	_, detail := p.(*load.DetailPage)
	r.fields.count(b, detail)
	r.live.committed(p.StreamName(), pageRecords(b), c.Written(), c.Rejected, r.budget.Spent())
	r.dups.count(b)
	if m := r.e.metrics; m != nil {
		for table, n := range c.RowsByTable() {
			m.RowsWritten.WithLabelValues(table).Add(float64(n))
		}
		if c.Rejected > 0 {
			m.Rejected.WithLabelValues(p.StreamName()).Add(float64(c.Rejected))
		}
	}
	return c, nil
}

// runOne runs task t and ends it: a task of a stream's hooks is theirs to
// run and end (the field inventory counts once the records a task re-reads
// in its run), the details task fetches the due entities, and a list task
// runs its stream's listings.
func (r *run) runOne(ctx context.Context, t Task, req Request, log *zap.Logger) error {
	s, h := r.e.hooksOfTask(t)
	if h == nil {
		r.fields.task(false, nil)
		if t == TaskDetails {
			return r.details(ctx, req, log)
		}
		if s := r.e.declared(string(t)); s != nil && len(s.Lists) > 0 {
			return r.lists(ctx, s, log)
		}
		return fmt.Errorf("run task: unknown task %q", t)
	}
	r.fields.task(h.rereads(t), inventoryNames(s))
	err := h.run(ctx, r, t, req, log)
	r.fields.rereads(true) // afterTask re-reads what the task closed
	err = h.afterTask(ctx, r, t, req, log, err)
	r.fields.rereads(false)
	return err
}

// inventoryNames are the names of the records of s's endpoints in the
// field inventory.
func inventoryNames(s *stream.Stream) []string {
	out := make([]string, len(s.Endpoints))
	for i, ep := range s.Endpoints {
		out[i] = ep.InventoryName()
	}
	return out
}

func utcDate(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// serviceTime converts an instant of the worker's (and the database's)
// clock, such as sync_runs.started_at, to the service's clock.
func (e *Engine) serviceTime(t time.Time) time.Time {
	if e.clock == nil {
		return t
	}
	off, _ := e.clock.Offset()
	return t.Add(off)
}

// readClock reads the service's clock at the start of every run, before
// anything is planned or dated, with one request that carries no key (a
// 401, no quota; see extract.Client.ProbeClock). The offset this process
// last saw, or the one a previous process kept, is stale once the service's
// clock has moved since (a sandbox's virtual clock that jumped, a corrected
// server): a run planned on it takes the wrong quota day and the wrong
// "today", so the lookback's once-a-day re-read lands on the previous day
// and the next run re-reads again.
//
// When the clock cannot be read (the network), the run plans on the offset
// it has and says so: the returned note, "" when the clock was read, when
// the service sends no Date header (the worker's clock is then the quota
// day's, as documented) or when the run is being stopped anyway.
func (e *Engine) readClock(ctx context.Context) string {
	if e.clock == nil {
		return ""
	}
	err := e.client.ProbeClock(ctx)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, extract.ErrNoServiceClock):
		e.log.Info("the service's answer carries no Date header; planning on the clock as known", zap.Error(err))
		return ""
	case ctx.Err() != nil:
		return ""
	}
	kept := "the worker's clock (no offset kept)"
	if off, known := e.clock.Offset(); known {
		kept = fmt.Sprintf("the offset kept (%s)", off.Round(time.Second))
	}
	e.log.Warn("could not read the service's clock before planning; planning on "+kept+
		"; the run's first answer corrects it", zap.Error(err))
	return fmt.Sprintf("could not read the service's clock before planning (%v); planned on %s", err, kept)
}

// saveClock keeps the service clock's offset for the next process, which
// plans its quota day before its first answer. A failure costs only that
// head start, so it is logged, not returned.
func (e *Engine) saveClock(ctx context.Context) {
	if e.clock == nil {
		return
	}
	off, known := e.clock.Offset()
	if !known {
		return
	}
	if err := e.ledger.SaveClockOffset(ctx, off); err != nil {
		e.log.Warn("could not keep the service clock's offset", zap.Error(err))
	}
}

// serviceDay is the service's current date (UTC), read when a snapshot is
// dated: after the run's first answers, the service clock knows the
// service's day even when the run started without its offset.
func (r *run) serviceDay() time.Time { return utcDate(r.e.set.Now()) }

// finishFields ends the run's field inventory: the fields known before the
// run (source_fields), the coverage warnings of what the run received, the
// run's fields merged into source_fields, the warnings stored in
// sync_runs.warnings, logged one per line and set on the metric. A failure
// here costs the inventory of one run, not the run: it is logged.
func (r *run) finishFields(ctx context.Context) []inventory.Warning {
	w := r.fields
	seen, runs, streams := w.result()
	received := append(r.e.bodies.report(r.log), r.dups.warnings(r.e.tableInventory)...) // what the run received (bodies.go)
	if len(streams) == 0 && len(seen) == 0 && len(received) == 0 {
		return nil
	}
	start := time.Now()
	known, err := r.e.store.SourceFields(ctx) // every stream: a few hundred rows
	if err != nil {
		r.log.Warn("field inventory: known fields not read; no warnings this run", zap.Error(err))
		return nil
	}
	ws := append(inventory.Coverage(inventory.Input{Streams: runs, Seen: seen, Known: inventory.KnownOf(known)}), received...)
	if err := r.e.store.MergeSourceFields(ctx, r.e.set.Now(), seen); err != nil {
		r.log.Warn("field inventory: source_fields not updated", zap.Error(err))
	}
	if err := r.e.store.SetRunWarnings(ctx, r.id, ws); err != nil {
		r.log.Warn("field inventory: warnings not stored in sync_runs", zap.Error(err))
	}
	inventory.LogWarnings(r.log, ws)
	if m := r.e.metrics; m != nil && m.SourceFieldWarnings != nil {
		inventory.SetWarnings(m.SourceFieldWarnings, streams, ws)
	}
	w.mu.Lock()
	observing := w.took
	w.mu.Unlock()
	r.log.Info("field inventory", zap.Strings("streams", streams), zap.Int("fields", len(seen)),
		zap.Int("warnings", len(ws)), zap.Duration("observing", observing),
		zap.Duration("recording", time.Since(start)))
	return ws
}

// runErrorText is what sync_runs.error holds for a run: its error and its
// notes, each said once (a gap is a note that the error already carries),
// redacted. The client's errors are redacted where they are made; this
// covers every other origin (a recovered panic's value, a note).
func runErrorText(err error, notes []string, redact func(string) string) string {
	text := ""
	if err != nil {
		text = err.Error()
	}
	var rest []string
	for _, n := range notes {
		if !strings.Contains(text, n) {
			rest = append(rest, n)
		}
	}
	if len(rest) > 0 {
		text = strings.TrimSpace(text + "; notes: " + strings.Join(rest, "; "))
		text = strings.TrimPrefix(text, "; ")
	}
	return redact(text)
}
