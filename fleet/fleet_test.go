package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/metrics"
	"github.com/agencysync/agencysync/serve"
	"github.com/agencysync/agencysync/warehouse"
)

func TestMain(m *testing.M) { warehousetest.Main(m) }

// outcome is what a fake sync returns; block makes it wait for its
// context's end first (a sync the job's timeout or the worker's stop ends).
type outcome struct {
	res   *engine.Result
	err   error
	block bool
}

// fakeAgencies stands for the single-agency path: each agency's syncs
// return the outcomes scripted for it (then success), in order.
type fakeAgencies struct {
	mu      sync.Mutex
	list    []Agency
	script  map[string][]outcome
	syncs   map[string]int
	quota   map[string]Quota
	quotas  map[string]int
	lastRun map[string]time.Time
	loadErr error
	loads   int
	changed chan struct{} // a sync, a quota read or a load happened
}

func newFake(list ...Agency) *fakeAgencies {
	return &fakeAgencies{list: list, script: map[string][]outcome{}, syncs: map[string]int{}, quota: map[string]Quota{},
		quotas: map[string]int{}, lastRun: map[string]time.Time{}, changed: make(chan struct{}, 1)}
}

func (f *fakeAgencies) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fakeAgencies) Load(context.Context) ([]Agency, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads++
	defer f.poke()
	if f.loadErr != nil {
		return nil, f.loadErr
	}
	return append([]Agency(nil), f.list...), nil
}

func (f *fakeAgencies) Sync(ctx context.Context, name string, m *metrics.Metrics) (*engine.Result, error) {
	f.mu.Lock()
	f.syncs[name]++
	o := outcome{res: &engine.Result{RunID: fmt.Sprintf("run-%s-%d", name, f.syncs[name]), Status: engine.StatusSucceeded}}
	if s := f.script[name]; len(s) > 0 {
		o, f.script[name] = s[0], s[1:]
	}
	f.lastRun[name] = time.Now()
	f.mu.Unlock()
	defer f.poke()
	if m == nil {
		return nil, errors.New("no series given")
	}
	m.Runs.WithLabelValues("succeeded").Inc()
	if o.block {
		<-ctx.Done()
	}
	return o.res, o.err
}

func (f *fakeAgencies) Quota(_ context.Context, name string) (Quota, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.quotas[name]++
	defer f.poke()
	return f.quota[name], nil
}

func (f *fakeAgencies) LastRun(_ context.Context, name string) (time.Time, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.lastRun[name]
	return t, ok, nil
}

func (f *fakeAgencies) Status(context.Context, string, int) (*engine.StatusReport, error) {
	return &engine.StatusReport{QuotaDay: "2026-01-02", QuotaSpent: 3, QuotaLeft: 7}, nil
}

func (f *fakeAgencies) StatusPage(context.Context, string) (serve.StatusSource, func(), error) {
	return nil, nil, errors.New("no warehouse in this test")
}

func (f *fakeAgencies) count(m map[string]int, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return m[name]
}

func (f *fakeAgencies) loadCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loads
}

func (f *fakeAgencies) setList(list ...Agency) {
	f.mu.Lock()
	f.list = list
	f.mu.Unlock()
}

// until waits for cond, checking it at each change of the fake and at
// least every 50 ms; the test fails if it still does not hold as the test's
// deadline draws near.
func (f *fakeAgencies) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := patience.After(t)
	for !cond() {
		select {
		case <-f.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: not before the test's deadline", what)
		}
	}
}

// rig is a fleet worker of a test, in its own queue schema.
type rig struct {
	t      *testing.T
	pool   *pgxpool.Pool
	schema string
	fake   *fakeAgencies
	set    *config.FleetSettings
	addr   string
	stop   func()
}

func agency(name string) Agency {
	return Agency{Name: name, Schema: "s_" + name, Schedule: "0 2 * * *", Location: time.UTC}
}

// newRig migrates a fresh queue schema; start runs a worker on it.
func newRig(t *testing.T, fake *fakeAgencies) *rig {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), warehousetest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	schema := warehousetest.NewSchemaName(t)
	if _, err := warehouse.MigrateFleet(context.Background(), pool, schema, nil); err != nil {
		t.Fatal(err)
	}
	set := &config.FleetSettings{File: "unused", Schema: schema, Concurrency: 2, JobTimeout: time.Minute, RescueAfter: 2 * time.Minute,
		QuotaRecheck: time.Second, WatchInterval: time.Second, WorkerID: "w-" + schema}
	return &rig{t: t, pool: pool, schema: schema, fake: fake, set: set}
}

func (r *rig) start() {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Settings: r.set, Agencies: r.fake, Pool: r.pool, HTTPAddr: "127.0.0.1:0",
			Registry: prometheus.NewRegistry(), Logger: zaptest.NewLogger(r.t, zaptest.Level(testLogLevel())),
			Ready: func(a string) { ready <- a }})
	}()
	select {
	case r.addr = <-ready:
	case err := <-done:
		r.t.Fatalf("serve: %v", err)
	}
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			r.t.Errorf("serve: %v", err)
		}
	}
	r.t.Cleanup(func() {
		if r.stop != nil {
			r.stop()
		}
	})
}

// job reads the agency's newest job.
func (r *rig) job(name string) *rivertype.JobRow {
	r.t.Helper()
	var id int64
	err := r.pool.QueryRow(context.Background(), "SELECT id FROM "+pgx.Identifier{r.schema, "river_job"}.Sanitize()+
		" WHERE args->>'agency' = $1 ORDER BY id DESC LIMIT 1", name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	c, err := NewReporter(r.pool, r.schema, r.fake)
	if err != nil {
		r.t.Fatal(err)
	}
	j, err := c.client.JobGet(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

func (r *rig) jobCount(name string) int {
	r.t.Helper()
	var n int
	if err := r.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{r.schema, "river_job"}.Sanitize()+
		" WHERE args->>'agency' = $1", name).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// jobIn waits until the agency's newest job is in state.
func (r *rig) jobIn(name string, state rivertype.JobState) *rivertype.JobRow {
	r.t.Helper()
	var j *rivertype.JobRow
	r.fake.until(r.t, name+"'s job "+string(state), func() bool {
		j = r.job(name)
		return j != nil && j.State == state
	})
	return j
}

// jobHeld waits until the agency's newest job waits for reason: snoozed
// (scheduled, or available at a later moment for a short snooze) with that
// reason recorded.
func (r *rig) jobHeld(name, reason string) *rivertype.JobRow {
	r.t.Helper()
	var j *rivertype.JobRow
	r.fake.until(r.t, name+"'s job waiting for "+reason, func() bool {
		j = r.job(name)
		return j != nil && (j.State == rivertype.JobStateScheduled || j.State == rivertype.JobStateAvailable) && holdOf(j).Reason == reason
	})
	return j
}

// TestOverdueAgenciesSyncOnceAcrossWorkers: two workers start on one queue;
// each never-synced agency is synced once (the job is unique), its job
// completes, and the job's arguments are the agency's name alone.
func TestOverdueAgenciesSyncOnceAcrossWorkers(t *testing.T) {
	fake := newFake(agency("a"), agency("b"))
	r := newRig(t, fake)
	r.start()
	second := *r
	second.set = &config.FleetSettings{}
	*second.set = *r.set
	second.set.WorkerID += "-2"
	second.stop = nil
	second.start()
	for _, n := range []string{"a", "b"} {
		j := r.jobIn(n, rivertype.JobStateCompleted)
		var args map[string]any
		if err := json.Unmarshal(j.EncodedArgs, &args); err != nil || len(args) != 1 || args["agency"] != n {
			t.Errorf("job args %s: want the agency's name alone", j.EncodedArgs)
		}
	}
	if fake.count(fake.syncs, "a") != 1 || fake.count(fake.syncs, "b") != 1 || r.jobCount("a") != 1 {
		t.Errorf("syncs %v, %d jobs of a: want one sync and one job per agency", fake.syncs, r.jobCount("a"))
	}
}

// TestQuotaSnoozesUntilTheNextQuotaDay: a sync stopped by the budget waits
// for the next quota day without a failed attempt; while the day has not
// turned the job does not sync (only the quota is read); then it completes.
func TestQuotaSnoozesUntilTheNextQuotaDay(t *testing.T) {
	fake := newFake(agency("q"))
	fake.script["q"] = []outcome{{res: &engine.Result{Status: engine.StatusPartial,
		Err: fmt.Errorf("today's request budget is spent: %w", extract.ErrBudgetExhausted)}}}
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	fake.quota["q"] = Quota{Day: day, Left: 0, NextDay: time.Now().Add(time.Hour)}
	r := newRig(t, fake)
	r.start()
	j := r.jobHeld("q", holdQuota)
	if h := holdOf(j); h.Reason != holdQuota || h.Day != "2026-01-02" {
		t.Errorf("hold %+v, want quota of 2026-01-02", h)
	}
	if j.Attempt > 1 || len(j.Errors) != 0 {
		t.Errorf("attempt %d, errors %v: a quota stop is no failure", j.Attempt, j.Errors)
	}
	// FLEET_QUOTA_RECHECK (1 s here) caps the wait: the quota is read again,
	// the day has not turned, and no sync starts.
	fake.until(t, "quota read again", func() bool { return fake.count(fake.quotas, "q") >= 3 })
	if n := fake.count(fake.syncs, "q"); n != 1 {
		t.Fatalf("%d syncs while the quota day had not turned", n)
	}
	fake.mu.Lock()
	fake.quota["q"] = Quota{Day: day.AddDate(0, 0, 1), Left: 9500, NextDay: time.Now().Add(24 * time.Hour)}
	fake.mu.Unlock()
	j = r.jobIn("q", rivertype.JobStateCompleted)
	if fake.count(fake.syncs, "q") != 2 || len(j.Errors) != 0 {
		t.Errorf("%d syncs, errors %v: want the second sync on the new day, no failure", fake.count(fake.syncs, "q"), j.Errors)
	}
}

// TestRefusedKeyWaitsForItsKeyFile: a 401 parks the agency's job; watches
// of the key files and further schedules start nothing; a new key file
// content resumes it.
func TestRefusedKeyWaitsForItsKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "api_key")
	if err := os.WriteFile(key, []byte("refused-key-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := agency("k")
	a.KeyFiles = []string{key}
	fake := newFake(a)
	fake.script["k"] = []outcome{{res: &engine.Result{Status: engine.StatusFailed, Err: fmt.Errorf("brands: %w", extract.ErrUnauthorized)}}}
	r := newRig(t, fake)
	r.start()
	j := r.jobHeld("k", holdCredentials)
	h := holdOf(j)
	if h.Reason != holdCredentials || h.Stamp != keyStamp("k", a.KeyFiles) || time.Until(j.ScheduledAt) < 24*time.Hour {
		t.Fatalf("hold %+v, scheduled %s: want the job parked with the key files' stamp", h, j.ScheduledAt)
	}
	if strings.Contains(string(j.Metadata), "refused-key") || strings.Contains(string(j.EncodedArgs), "refused-key") {
		t.Fatalf("the key is in the job: %s %s", j.EncodedArgs, j.Metadata)
	}
	// A schedule or a catch-up cannot queue a second job: it is unique.
	if _, err := r.insert("k"); err != nil {
		t.Fatal(err)
	}
	loads := fake.loadCount()
	fake.until(t, "three watches of the key files", func() bool { return fake.loadCount() >= loads+3 })
	if n := fake.count(fake.syncs, "k"); n != 1 || r.jobCount("k") != 1 {
		t.Fatalf("%d syncs and %d jobs while the key file was unchanged: want 1 and 1", n, r.jobCount("k"))
	}
	if err := os.WriteFile(key, []byte("new-key-9876543210"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.jobIn("k", rivertype.JobStateCompleted)
	if n := fake.count(fake.syncs, "k"); n != 2 {
		t.Errorf("%d syncs, want 2 (the refused one, then one with the new key)", n)
	}
}

func (r *rig) insert(name string) (*rivertype.JobInsertResult, error) {
	c, err := NewReporter(r.pool, r.schema, r.fake)
	if err != nil {
		return nil, err
	}
	res, err := c.client.Insert(context.Background(), SyncArgs{Agency: name}, nil)
	if err == nil && !res.UniqueSkippedAsDuplicate {
		r.t.Errorf("a second job of %s was queued beside the waiting one", name)
	}
	return res, err
}

// TestJobTimeoutHandsTheAgencyBack: a sync still going at FLEET_JOB_TIMEOUT
// ends interrupted and its job resumes at once, without a failed attempt.
func TestJobTimeoutHandsTheAgencyBack(t *testing.T) {
	fake := newFake(agency("t"))
	fake.script["t"] = []outcome{{block: true, res: &engine.Result{Status: engine.StatusPartial,
		Err: fmt.Errorf("sync %w: %w", engine.ErrInterrupted, context.DeadlineExceeded)}}}
	r := newRig(t, fake)
	r.set.JobTimeout, r.set.RescueAfter = 2*time.Second, 30*time.Second
	r.start()
	j := r.jobIn("t", rivertype.JobStateCompleted)
	if fake.count(fake.syncs, "t") != 2 || len(j.Errors) != 0 {
		t.Errorf("%d syncs, errors %v: want the interrupted sync resumed once, no failure", fake.count(fake.syncs, "t"), j.Errors)
	}
}

// TestSkippedWaitsForTheLock and a failed sync's retry.
func TestSkippedAndFailedOutcomes(t *testing.T) {
	fake := newFake(agency("l"), agency("f"))
	fake.script["l"] = []outcome{{res: &engine.Result{Status: engine.StatusSkipped}}}
	fake.script["f"] = []outcome{{err: errors.New("open warehouse: connection refused")}}
	r := newRig(t, fake)
	r.start()
	j := r.jobHeld("l", holdLocked)
	if h := holdOf(j); h.Reason != holdLocked || time.Until(j.ScheduledAt) < 30*time.Second {
		t.Errorf("a skipped sync: hold %+v, scheduled in %s: want to wait about a minute for the lock", h, time.Until(j.ScheduledAt))
	}
	j = r.jobIn("f", rivertype.JobStateCompleted)
	if fake.count(fake.syncs, "f") != 2 || len(j.Errors) != 1 || !strings.Contains(j.Errors[0].Error, "connection refused") {
		t.Errorf("a failed sync: %d syncs, errors %v: want one retry after the recorded failure", fake.count(fake.syncs, "f"), j.Errors)
	}
}

// TestRescueOfAJobWhoseWorkerDied: a job left running by a worker that died
// long ago is rescued by the leader's rescuer and resumed here.
func TestRescueOfAJobWhoseWorkerDied(t *testing.T) {
	fake := newFake(agency("d"))
	fake.lastRun["d"] = time.Now()
	r := newRig(t, fake)
	c, err := NewReporter(r.pool, r.schema, fake)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.client.Insert(context.Background(), SyncArgs{Agency: "d"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.pool.Exec(context.Background(), "UPDATE "+pgx.Identifier{r.schema, "river_job"}.Sanitize()+
		" SET state = 'running', attempt = 1, attempted_at = now() - interval '1 hour', attempted_by = '{dead-worker}' WHERE id = $1", res.Job.ID); err != nil {
		t.Fatal(err)
	}
	r.start()
	j := r.jobIn("d", rivertype.JobStateCompleted)
	if j.ID != res.Job.ID || fake.count(fake.syncs, "d") != 1 || j.Attempt != 2 {
		t.Errorf("job %d attempt %d, %d syncs: want the dead worker's job resumed once", j.ID, j.Attempt, fake.count(fake.syncs, "d"))
	}
}

// TestFleetFileChanges: an agency added is synced at once (it is overdue);
// one removed stops being scheduled and its waiting job is cancelled; a job
// of an agency no file names is cancelled.
func TestFleetFileChanges(t *testing.T) {
	fake := newFake(agency("x"))
	fake.script["x"] = []outcome{{res: &engine.Result{Status: engine.StatusSkipped}}} // waits a minute
	r := newRig(t, fake)
	r.start()
	r.jobHeld("x", holdLocked)
	fake.setList(agency("y"))
	r.jobIn("y", rivertype.JobStateCompleted)
	r.jobIn("x", rivertype.JobStateCancelled)
	fake.until(t, "x gone from the fleet view", func() bool { return !r.shows(t, "x") })
	// While FLEET_FILE does not read, a job of an agency this worker does
	// not know waits: it may be in the file the worker cannot read.
	fake.mu.Lock()
	fake.loadErr = errors.New("FLEET_FILE: yaml: line 3: did not find expected key")
	fake.mu.Unlock()
	if _, err := r.insertAny("z"); err != nil {
		t.Fatal(err)
	}
	r.jobHeld("z", holdFile)
	fake.mu.Lock()
	fake.loadErr, fake.list = nil, []Agency{agency("y"), agency("z")}
	fake.mu.Unlock()
	r.jobIn("z", rivertype.JobStateCompleted)
	if _, err := r.insertAny("ghost"); err != nil {
		t.Fatal(err)
	}
	j := r.jobIn("ghost", rivertype.JobStateCancelled)
	if len(j.Errors) == 0 || !strings.Contains(j.Errors[0].Error, "not in FLEET_FILE") {
		t.Errorf("ghost's job errors %v", j.Errors)
	}
}

func (r *rig) insertAny(name string) (*rivertype.JobInsertResult, error) {
	c, err := NewReporter(r.pool, r.schema, r.fake)
	if err != nil {
		return nil, err
	}
	return c.client.Insert(context.Background(), SyncArgs{Agency: name}, nil)
}

// shows reports whether the fleet view lists the agency, as an operator
// would see it.
func (r *rig) shows(t *testing.T, name string) bool {
	t.Helper()
	resp, err := http.Get("http://" + r.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(b), `data-agency="`+name+`"`)
}

// TestMetricsLabelledByAgency: /metrics shows each agency's engine series
// with its agency label, beside the worker's own.
func TestMetricsLabelledByAgency(t *testing.T) {
	fake := newFake(agency("m1"), agency("m2"))
	r := newRig(t, fake)
	r.start()
	r.jobIn("m1", rivertype.JobStateCompleted)
	r.jobIn("m2", rivertype.JobStateCompleted)
	resp, err := http.Get("http://" + r.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	text := string(b)
	for _, want := range []string{
		`agencysync_runs_total{agency="m1",status="succeeded"} 1`,
		`agencysync_runs_total{agency="m2",status="succeeded"} 1`,
		`agencysync_fleet_jobs_total{agency="m1",outcome="succeeded"} 1`,
		`agencysync_next_run_timestamp_seconds{agency="m2",stream="communications"}`,
		`agencysync_fleet_agencies 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "agencysync_runs_total") && !strings.Contains(line, "agency=") {
			t.Errorf("a series without its agency: %s", line)
		}
	}
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/": `data-state="idle"`} {
		resp, err := http.Get("http://" + r.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %q, want %q", path, resp.StatusCode, b, want)
		}
	}
}

func testLogLevel() zapcore.Level {
	if os.Getenv("FLEET_TEST_DEBUG") != "" {
		return zap.DebugLevel
	}
	return zap.WarnLevel
}
