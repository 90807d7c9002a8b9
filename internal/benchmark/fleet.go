package benchmark

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
)

// FleetSizes size figure 10: a fleet of Agencies agencies, each its own
// sandbox at the service's real limits (10 requests/s, the daily quota).
type FleetSizes struct {
	Agencies int
	Agency   childproc.SandboxOptions
	// Concurrency is each worker's FLEET_CONCURRENCY.
	Concurrency int
}

// fleetWorkers are the fleets figure 10 compares.
var fleetWorkers = []int{1, 3}

// fleet runs figure 10: the agencies a fleet of 1 and of 3 workers syncs
// per hour per worker, first syncs of the same agencies, each run on fresh
// schemas (the agencies' and the queue's).
func (h *harness) fleet(ctx context.Context) []Row {
	z := h.sizes.Fleet
	figure := fmt.Sprintf("Fleet: agencies synced per hour per worker, 1 and 3 workers (FLEET_CONCURRENCY %d), sandboxes at 10/s", z.Concurrency)
	sbs, err := h.fleetSandboxes(ctx, z)
	defer func() {
		for _, sb := range sbs {
			if sb != nil {
				sb.Stop()
			}
		}
	}()
	if err != nil {
		return []Row{fail("10", figure, err)}
	}
	rates := map[int][]float64{}
	walls := map[int][]float64{}
	for run := range h.cfg.Runs {
		for _, w := range fleetWorkers {
			wall, err := h.fleetOnce(ctx, sbs, w, z.Concurrency)
			if err != nil {
				return []Row{fail("10", figure, err)}
			}
			rate := float64(len(sbs)) / wall.Hours() / float64(w)
			rates[w], walls[w] = append(rates[w], rate), append(walls[w], wall.Seconds())
			h.log("fleet, run %d/%d: %d worker(s) synced %d agencies in %s: %.0f agencies/hour/worker",
				run+1, h.cfg.Runs, w, len(sbs), wall.Round(time.Millisecond), rate)
		}
	}
	one, three := Median(rates[1]), Median(rates[3])
	scaling := make([]float64, len(rates[1]))
	for i := range scaling {
		scaling[i] = Ratio(rates[3][i], rates[1][i])
	}
	return []Row{{ID: "10", Figure: figure,
		Result:  fmt.Sprintf("%s (1 worker), %s (3 workers); ratio %s", Float(one, 0), Float(three, 0), Float(Median(scaling), 2)),
		Verdict: Info,
		Detail: fmt.Sprintf("%d agencies of %s, each its own sandbox at 10/s; first syncs from the first worker's start to the last agency's succeeded run, workers started together; wall seconds per run: 1 worker %s, 3 workers %s; agencies/hour/worker per run: 1 worker %s, 3 workers %s; 3 ÷ 1 per run %s",
			len(sbs), describe(z.Agency), List(walls[1], func(x float64) string { return Float(x, 1) }),
			List(walls[3], func(x float64) string { return Float(x, 1) }), List(rates[1], func(x float64) string { return Float(x, 0) }),
			List(rates[3], func(x float64) string { return Float(x, 0) }), List(scaling, func(x float64) string { return Float(x, 2) }))}}
}

// fleetSandboxes starts the fleet's sandboxes, each with its own seed.
func (h *harness) fleetSandboxes(ctx context.Context, z FleetSizes) ([]*Sandbox, error) {
	sbs := make([]*Sandbox, z.Agencies)
	errs := make([]error, z.Agencies)
	var wg sync.WaitGroup
	for i := range sbs {
		o := z.Agency
		o.Seed, o.NoLimits, o.Rate = int64(1000+i), false, 10
		wg.Go(func() { sbs[i], errs[i] = startSandbox(ctx, h.sandboxBin, o) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return sbs, err
		}
	}
	return sbs, nil
}

// fleetOnce syncs every sandbox's agency with a fleet of workers and
// returns the time from their start to the last agency's first success.
func (h *harness) fleetOnce(ctx context.Context, sbs []*Sandbox, workers, concurrency int) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "agencybench-fleet-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	queue := newSchema()
	defer h.dropSchema(queue)
	schemas, err := h.writeFleet(dir, sbs)
	for _, s := range schemas {
		defer h.dropSchema(s)
	}
	if err != nil {
		return 0, err
	}
	env := map[string]string{"DATABASE_URL": h.dsn, "FLEET_FILE": filepath.Join(dir, "fleet.yaml"), "FLEET_SCHEMA": queue,
		"FLEET_CONCURRENCY": fmt.Sprint(concurrency), "HTTP_ADDR": "127.0.0.1:0", "LOG_FORMAT": "json", "LOG_LEVEL": "warn"}
	start := time.Now()
	var procs []*childproc.Worker
	defer func() {
		for _, p := range procs {
			_ = p.Signal(syscall.SIGTERM)
			if _, err := p.Wait(ctx, time.Minute); err != nil {
				h.log("fleet worker: %v", err)
			}
		}
	}()
	for i := range workers {
		env["FLEET_WORKER_ID"] = fmt.Sprintf("bench-%d", i+1)
		p, err := childproc.StartWorker(h.agencysync, env, "fleet", "serve")
		if err != nil {
			return 0, err
		}
		procs = append(procs, p)
	}
	for {
		done, err := h.fleetDone(ctx, schemas)
		if err != nil {
			return 0, err
		}
		if done {
			return time.Since(start), nil
		}
		for _, p := range procs {
			if !p.Running() {
				r, _ := p.Wait(ctx, 0)
				lines := strings.Split(strings.TrimSpace(string(r.Stderr)), "\n")
				return 0, fmt.Errorf("fleet worker exited %d: %s", r.Code, strings.Join(lines[max(len(lines)-5, 0):], " | "))
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > workerTimeout {
			return 0, fmt.Errorf("the fleet did not sync %d agencies within %s", len(schemas), workerTimeout)
		}
	}
}

// writeFleet writes FLEET_FILE and the key files of the sandboxes' agencies.
func (h *harness) writeFleet(dir string, sbs []*Sandbox) ([]string, error) {
	var b strings.Builder
	b.WriteString("agencies:\n")
	var schemas []string
	for _, f := range []struct{ name, key string }{{"api", apiKey}, {"comms", commsKey}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.key), 0o600); err != nil {
			return nil, err
		}
	}
	for i, sb := range sbs {
		schema := newSchema()
		schemas = append(schemas, schema)
		env := sb.WorkerEnv("", schema)
		fmt.Fprintf(&b, "  - name: agency%d\n    schema: %s\n    env:\n", i+1, schema)
		for _, k := range []string{"AGENCY_BASE_URL", "AGENCY_COMMS_URL", "AGENCY_COMMS_DOMAIN_ID", "AGENCY_COMMS_USER_IDS", "AGENCY_COMMS_START_DATE"} {
			fmt.Fprintf(&b, "      %s: %q\n", k, env[k])
		}
		b.WriteString("      AGENCY_API_KEY_FILE: api\n      AGENCY_COMMS_KEY_FILE: comms\n      SYNC_SCHEDULE: \"0 0 1 1 *\"\n")
	}
	return schemas, os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(b.String()), 0o600)
}

// fleetDone reports whether every schema has a succeeded run.
func (h *harness) fleetDone(ctx context.Context, schemas []string) (bool, error) {
	for _, s := range schemas {
		var n int
		err := h.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{s, "sync_runs"}.Sanitize()+" WHERE status = 'succeeded'").Scan(&n)
		if err != nil || n == 0 {
			return false, nil //nolint:nilerr // the tables appear with the agency's first sync
		}
	}
	return true, nil
}

// fleetNote is figure 10's paragraph of "How each figure is measured".
func (r *Report) fleetNote() string {
	z := r.Sizes.Fleet
	return fmt.Sprintf(`
10. **Fleet** — %d agencies of %s, each its own sandbox at the service's real limits (10
   requests/s, the daily quota), in one `+"`FLEET_FILE`"+`; 1 and then 3 `+"`agencysync fleet serve`"+` workers
   (`+"`FLEET_CONCURRENCY=%d`"+` each) started together on fresh schemas (the agencies' and the job queue's). The
   wall time runs from the first worker's start to the last agency's first succeeded run; the figure is the
   agencies ÷ that time ÷ the workers, per hour, and 3 workers' over 1 worker's, pair by pair.
`, z.Agencies, describe(z.Agency), z.Concurrency)
}
