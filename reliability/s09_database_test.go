package reliability

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/warehouse"
)

// TestS09DatabaseTrouble: the worker's database sessions are terminated
// mid-run (pg_terminate_backend), or the server restarts mid-run. Each run
// fails or retries cleanly, leaves only whole pages, and the next run
// converges to the truth.
func TestS09DatabaseTrouble(t *testing.T) {
	sc := newScenario(t, 9, "Database trouble: sessions terminated, server restarted mid-run")
	sz := currentSizes()
	options := func() sandboxOptions {
		o := defaultSandbox()
		o.Emails, o.Latency = sz.dbEmails, sz.sandboxLatencyDB
		return o
	}

	// interrupt runs the worker through the proxy and, once the backfill
	// committed `target` pages, calls hit; then it checks what the run left.
	type outcome struct {
		code   int
		status string
		pages  int
	}
	interrupt := func(t *testing.T, env map[string]string, pool func() *pgxpool.Pool, schema string, ids []int64, bad []bool,
		target int, hit func()) (outcome, bool) {
		t.Helper()
		w := startWorker(t, env, "run")
		waitFor(t, "backfill progress", 10*time.Millisecond, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, err := readBackfill(ctx, pool(), schema)
			return (err == nil && (st.pages >= target || st.done)) || !w.running()
		})
		if !w.running() {
			return outcome{}, false
		}
		hit()
		res := w.wait()
		if res.code != 0 && res.code != 1 && res.code != 75 {
			t.Errorf("after the database trouble the worker exited %d: %s\n%s", res.code, res, tail([]byte(res.stderr), 20))
		}
		t.Logf("the interrupted run: %s; its errors:\n%s", res, errorLines(res.stderr))
		o := outcome{code: res.code, status: res.status()}
		if o.status == "" {
			o.status = "no summary: the run's end could not be recorded"
		}
		// The worker outlived the trouble: it must have recorded its run's end.
		if st := runStatuses(t, pool(), schema); st["running"] != 0 {
			t.Errorf("the interrupted run's row is left running: sync_runs %v", st)
		}
		o.pages = checkWholePages(t, pool(), schema, ids, bad)
		return o, true
	}

	t.Run("terminate", func(t *testing.T) {
		t.Parallel()
		sc := sc.in(t)
		r := newRig(t, sc, options())
		proxy := startDBProxy(t, hostPort(t, r.dsn))
		env := maps.Clone(r.env)
		env["DATABASE_URL"] = proxy.dsn(t, r.dsn)
		tr := r.sb.truth()
		ids, bad := tr.emailIDs()
		pages := oracle.Pages(len(ids), oracle.PageSize)
		lock := warehouse.SyncLockID(r.schema)
		terminated := 0
		for k := 1; k <= sz.dbTerminations; k++ {
			o, hit := interrupt(t, env, func() *pgxpool.Pool { return r.pool }, r.schema, ids, bad, k*pages/(sz.dbTerminations+1), func() {
				n := terminateWorker(t, r.pool, proxy)
				terminated += n
				t.Logf("round %d: terminated %d sessions of the worker", k, n)
			})
			if !hit {
				t.Logf("round %d: the run ended before the termination", k)
				break
			}
			sc.fig("terminate round %d: exit %d (%s), %d whole pages kept", k, o.code, o.status, o.pages)
			r.syncLockFree(lock)
		}
		if terminated == 0 {
			t.Fatal("no session of the worker was terminated")
		}
		mustSucceed(t, "the run after the terminations", runWorker(t, env, "run"))
		checks, rows := compareWithTruth(t, r.pool, r.schema, r.sb.truth())
		sc.fig("terminate: %d sessions ended in all; then %s", terminated, summarize(checks, rows))
		checkIntegrity(t, r.pool, r.schema)
	})

	t.Run("restart", func(t *testing.T) {
		// The server restarts: only a private cluster can do that without
		// disturbing the other tests, so this one gets its own, and the
		// proxy follows it to its new port.
		t.Parallel()
		sc := sc.in(t)
		cluster := startPrivateCluster(t)
		pool := cluster.connect()
		t.Cleanup(func() { pool.Close() })
		const schema = "reliability_restart"
		t.Cleanup(func() { auditRuns(t, pool, schema) })
		sb := startSandbox(t, options())
		proxy := startDBProxy(t, hostPort(t, cluster.DSN()))
		env := sb.workerEnv(proxy.dsn(t, cluster.DSN()), schema)
		tr := sb.truth()
		ids, bad := tr.emailIDs()
		pages := oracle.Pages(len(ids), oracle.PageSize)
		var down time.Duration
		o, hit := interrupt(t, env, func() *pgxpool.Pool { return pool }, schema, ids, bad, pages/2, func() {
			start := time.Now()
			pool.Close()
			if err := cluster.Stop(); err != nil {
				t.Fatalf("stop the server: %v", err)
			}
			cluster.start("start the server again")
			proxy.setTarget(hostPort(t, cluster.DSN()))
			pool = cluster.connect()
			down = time.Since(start)
		})
		if !hit {
			t.Fatal("the run ended before the restart")
		}
		sc.fig("restart (server down %s mid-backfill): exit %d (%s), %d whole pages kept", down.Round(10*time.Millisecond), o.code, o.status, o.pages)
		mustSucceed(t, "the run after the restart", runWorker(t, env, "run"))
		checks, rows := compareWithTruth(t, pool, schema, sb.truth())
		sc.fig("restart: then %s", summarize(checks, rows))
		checkIntegrity(t, pool, schema)
	})
}
