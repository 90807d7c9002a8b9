package reliability

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/internal/testkit/webhook"
	"github.com/agencysync/agencysync/logging"
)

// fleetKey is a random key of letters a hexadecimal text (run ids, hashes)
// never holds, so that any PartialLen of its characters found anywhere is a
// leak, not a coincidence.
func fleetKey() string {
	const letters = "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 28)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(letters))))
		b[i] = letters[n.Int64()]
	}
	return "K" + string(b)
}

// fleetAgency is one agency of the fleet scenario: its sandbox, its keys
// and its warehouse schema.
type fleetAgency struct {
	name     string
	emails   int
	opts     sandboxOptions
	sb       *sandboxProc
	schema   string
	apiKey   string
	commsKey string
	refused  bool // its key file holds a key the sandbox refuses
	quota    bool // its daily quota runs out mid-sync
}

// fleetRig is the scenario's fleet: agencies, FLEET_FILE and key files,
// the queue's schema, and the workers.
type fleetRig struct {
	t        *testing.T
	pool     *pgxpool.Pool
	dsn      string
	dir      string
	queue    string // FLEET_SCHEMA
	agencies []*fleetAgency
	notify   *webhook.Receiver // SYNC_NOTIFY_URL of the refused agency
	workers  map[string]*workerProc
	outputs  []string // the exited workers' outputs, audited for keys
}

// startFleetSandboxes starts every agency's sandbox at once, at the real
// limits (10 requests a second, the daily quota), each with its own keys.
func startFleetSandboxes(t *testing.T, agencies []*fleetAgency) {
	t.Helper()
	var wg sync.WaitGroup
	for _, a := range agencies {
		a.apiKey, a.commsKey = fleetKey(), fleetKey()
		o := defaultSandbox()
		o.NoLimits = false
		o.Brands, o.ProjectsPerBrand = a.opts.Brands, a.opts.ProjectsPerBrand
		o.Emails, o.Seed, o.Users = a.emails, a.opts.Seed, 50
		o.APIKey, o.CommsKey, o.ForeignKey, o.RevokedKey = a.apiKey, a.commsKey, fleetKey(), fleetKey()
		if a.quota {
			o.DailyQuota = a.opts.DailyQuota
			o.Start = time.Now().UTC().Truncate(24 * time.Hour).Add(-10 * time.Minute)
		}
		a.opts = o
		wg.Go(func() { a.sb = startSandbox(t, o) })
	}
	wg.Wait()
	for _, a := range agencies {
		if a.sb == nil {
			t.FailNow()
		}
	}
}

// agencyYAML is the agency's FLEET_FILE entry: its variables, keys only
// as files.
func (r *fleetRig) agencyYAML(a *fleetAgency) string {
	env := a.sb.p.WorkerEnv("", a.schema)
	vars := map[string]string{
		"AGENCY_BASE_URL": env["AGENCY_BASE_URL"], "AGENCY_COMMS_URL": env["AGENCY_COMMS_URL"],
		"AGENCY_COMMS_DOMAIN_ID": env["AGENCY_COMMS_DOMAIN_ID"], "AGENCY_COMMS_USER_IDS": env["AGENCY_COMMS_USER_IDS"],
		"AGENCY_COMMS_START_DATE": env["AGENCY_COMMS_START_DATE"],
		"AGENCY_API_KEY_FILE":     "keys/" + a.name + "_api", "AGENCY_COMMS_KEY_FILE": "keys/" + a.name + "_comms",
		// Once a year: the syncs of the scenario are the catch-ups of
		// agencies never synced; one request in flight, as at 10/s.
		"SYNC_SCHEDULE": "0 0 1 1 *", "SYNC_MAX_IN_FLIGHT": "1",
	}
	if a.quota {
		vars["AGENCY_DAILY_QUOTA"] = fmt.Sprint(a.opts.DailyQuota)
		vars["AGENCY_QUOTA_RESERVE"] = "0%"
	}
	if a.refused {
		vars["SYNC_NOTIFY_URL_FILE"] = "keys/" + a.name + "_notify"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    schema: %s\n    env:\n", a.name, a.schema)
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		fmt.Fprintf(&b, "      %s: %q\n", k, vars[k])
	}
	return b.String()
}

// writeFleetFile writes FLEET_FILE with the first n agencies, atomically (a
// worker reading it sees the old file or the new one).
func (r *fleetRig) writeFleetFile(n int) {
	r.t.Helper()
	var b strings.Builder
	b.WriteString("agencies:\n")
	for _, a := range r.agencies[:n] {
		b.WriteString(r.agencyYAML(a))
	}
	r.writeFile("fleet.yaml", b.String())
}

func (r *fleetRig) writeFile(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.WriteFile(p+".tmp", []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		r.t.Fatal(err)
	}
}

// writeKeys writes the agency's key files: the sandbox's keys, or for the
// refused agency a key the sandbox refuses (unless good).
func (r *fleetRig) writeKeys(a *fleetAgency, good bool) {
	api := a.apiKey
	if a.refused && !good {
		api = a.opts.RevokedKey
	}
	r.writeFile("keys/"+a.name+"_api", api)
	r.writeFile("keys/"+a.name+"_comms", a.commsKey)
	if a.refused {
		r.writeFile("keys/"+a.name+"_notify", r.notify.URL(""))
	}
}

// workerEnv is a fleet worker's environment.
func (r *fleetRig) workerEnv(id string) map[string]string {
	return map[string]string{
		"DATABASE_URL": r.dsn, "FLEET_FILE": filepath.Join(r.dir, "fleet.yaml"), "FLEET_SCHEMA": r.queue,
		"FLEET_WORKER_ID": id, "FLEET_CONCURRENCY": "2", "FLEET_JOB_TIMEOUT": "15s", "FLEET_RESCUE_AFTER": "25s",
		"FLEET_QUOTA_RECHECK": "2s", "FLEET_WATCH_INTERVAL": "1s", "HTTP_ADDR": "127.0.0.1:0", "LOG_FORMAT": "json",
	}
}

func (r *fleetRig) startWorker(id string) {
	r.workers[id] = startWorker(r.t, r.workerEnv(id), "fleet", "serve")
}

// fleetJob is a row of the queue (River's river_job), as the test reads it.
type fleetJob struct {
	id       int64
	agency   string
	state    string
	by       []string
	hold     string
	attempts int
}

// jobs reads the queue's jobs.
func (r *fleetRig) jobs() []fleetJob {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(r.t))
	defer cancel()
	rows, err := r.pool.Query(ctx, "SELECT id, args->>'agency', state::text, coalesce(attempted_by, '{}'), coalesce(metadata->'output'->>'hold', ''), attempt FROM "+
		pgx.Identifier{r.queue, "river_job"}.Sanitize()+" ORDER BY id")
	if err != nil {
		return nil // the queue's tables may not exist yet
	}
	defer rows.Close()
	var out []fleetJob
	for rows.Next() {
		var j fleetJob
		if err := rows.Scan(&j.id, &j.agency, &j.state, &j.by, &j.hold, &j.attempts); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// holder is the worker syncing the agency now ("" when none).
func (r *fleetRig) holder(agency string) string {
	for _, j := range r.jobs() {
		if j.agency == agency && j.state == "running" && len(j.by) > 0 {
			return j.by[len(j.by)-1]
		}
	}
	return ""
}

// jobWaits reports whether the agency's job waits for reason.
func (r *fleetRig) jobWaits(agency, reason string) bool {
	for _, j := range r.jobs() {
		if j.agency == agency && j.hold == reason && (j.state == "scheduled" || j.state == "available") {
			return true
		}
	}
	return false
}

// settled reports whether the agency has a succeeded run and no job waiting
// or running.
func (r *fleetRig) settled(a *fleetAgency) bool {
	for _, j := range r.jobs() {
		if j.agency == a.name && j.state != "completed" && j.state != "cancelled" && j.state != "discarded" {
			return false
		}
	}
	return r.runCount(a, "succeeded") > 0
}

func (r *fleetRig) runCount(a *fleetAgency, status string) int {
	var n int
	err := r.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{a.schema, "sync_runs"}.Sanitize()+
		" WHERE status = $1", status).Scan(&n)
	if err != nil {
		return 0
	}
	return n
}

// fleetRun is a row of an agency's sync_runs.
type fleetRun struct {
	status    string
	started   time.Time
	finished  *time.Time
	errorText string
}

func (r *fleetRig) runs(a *fleetAgency) []fleetRun {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), "SELECT status, started_at, finished_at, coalesce(error, '') FROM "+
		pgx.Identifier{a.schema, "sync_runs"}.Sanitize()+" ORDER BY started_at")
	if err != nil {
		r.t.Fatalf("read %s's runs: %v", a.name, err)
	}
	defer rows.Close()
	var out []fleetRun
	for rows.Next() {
		var x fleetRun
		if err := rows.Scan(&x.status, &x.started, &x.finished, &x.errorText); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

// overlaps returns the pairs of the agency's syncs (skipped runs aside)
// that overlap; a killed run, which records no end, ends at the kill.
func overlaps(runs []fleetRun, killedAt time.Time) []string {
	var out []string
	var prevEnd time.Time
	var prevStart time.Time
	for i, x := range runs {
		if x.status == "skipped" {
			continue
		}
		if i > 0 && !prevEnd.IsZero() && x.started.Before(prevEnd) {
			out = append(out, fmt.Sprintf("a run started %s, before the run of %s ended (%s)", x.started.Format(time.StampMicro),
				prevStart.Format(time.StampMicro), prevEnd.Format(time.StampMicro)))
		}
		prevStart = x.started
		switch {
		case x.finished != nil:
			prevEnd = *x.finished
		case !killedAt.IsZero():
			prevEnd = killedAt
		default:
			prevEnd = time.Now() // still running: no later run may have started
		}
	}
	return out
}

// interruptions counts the runs that lost what was in flight: killed (closed
// as failed by the next run) or stopped (partial, interrupted).
func interruptions(runs []fleetRun) int {
	n := 0
	for _, x := range runs {
		if (x.status == "failed" && strings.Contains(x.errorText, "killed")) || (x.status == "partial" && strings.Contains(x.errorText, "interrupted")) {
			n++
		}
	}
	return n
}

// leaksIn returns each key whose characters (any logging.PartialLen of them
// in a row) appear in text.
func leaksIn(text string, keys []string) []string {
	var out []string
	for _, k := range keys {
		for i := 0; i+logging.PartialLen <= len(k); i++ {
			if strings.Contains(text, k[i:i+logging.PartialLen]) {
				out = append(out, k[:4]+"…")
				break
			}
		}
	}
	return out
}

// databaseText is every row of the queue's tables and of the agencies'
// bookkeeping tables, as JSON text: what must hold no key.
func (r *fleetRig) databaseText() string {
	r.t.Helper()
	ctx := context.Background()
	var tables []string
	rows, err := r.pool.Query(ctx, "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables WHERE table_schema = $1", r.queue)
	if err != nil {
		r.t.Fatal(err)
	}
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		r.t.Fatal(err)
	}
	for _, a := range r.agencies {
		for _, tb := range []string{"sync_runs", "sync_state", "rejected_records", "source_fields", "api_quota_usage"} {
			tables = append(tables, pgx.Identifier{a.schema, tb}.Sanitize())
		}
	}
	var b strings.Builder
	for _, tb := range tables {
		rows, err := r.pool.Query(ctx, "SELECT row_to_json(x)::text FROM "+tb+" AS x")
		if err != nil {
			continue // a table an agency never made
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			r.t.Fatal(err)
		}
		for _, s := range texts {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// workerAddr is the HTTP address a running worker logged.
func workerAddr(w *workerProc) string {
	m := regexp.MustCompile(`"msg":"serving health, metrics and the fleet view"[^\n]*"addr":"([^"]+)"`).FindSubmatch(w.p.StderrSoFar())
	if m == nil {
		return ""
	}
	return string(m[1])
}

// fleetStatus runs `agencysync fleet status --json`.
func (r *fleetRig) fleetStatus() map[string]map[string]any {
	r.t.Helper()
	res := runWorker(r.t, r.workerEnv("status"), "fleet", "status", "--json")
	r.outputs = append(r.outputs, res.stdout, res.stderr)
	if res.code != 0 {
		r.t.Fatalf("fleet status: %s\n%s", res, tail([]byte(res.stderr), 20))
	}
	var rep struct {
		Agencies []map[string]any `json:"agencies"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		r.t.Fatalf("fleet status --json: %v", err)
	}
	out := map[string]map[string]any{}
	for _, a := range rep.Agencies {
		out[fmt.Sprint(a["agency"])] = a
	}
	return out
}

// newFleetRig starts the agencies' sandboxes and writes their key files.
func newFleetRig(t *testing.T, agencies []*fleetAgency) *fleetRig {
	t.Helper()
	r := &fleetRig{t: t, pool: warehousetest.Pool(t), dsn: warehousetest.DSN(t), dir: t.TempDir(),
		queue: warehousetest.NewSchemaName(t), agencies: agencies, notify: webhook.Start(t), workers: map[string]*workerProc{}}
	if err := os.MkdirAll(filepath.Join(r.dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	startFleetSandboxes(t, agencies)
	for _, a := range agencies {
		a.schema = warehousetest.NewSchemaName(t)
		t.Cleanup(func() { auditRuns(t, r.pool, a.schema) })
		r.writeKeys(a, false)
	}
	return r
}
