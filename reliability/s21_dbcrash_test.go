package reliability

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestS21DatabaseCrash: the database server crashes (immediate shutdown:
// every backend killed, shared memory and unwritten WAL buffers lost) while
// the worker waits on a request of the e-mail backfill. The private cluster
// commits asynchronously by default (synchronous_commit=off, as an operator
// tuning for speed might set it) and its WAL writer writes only every 10 s,
// so whatever is not flushed by a synchronous commit is lost. Afterwards: no
// e-mail lost, none twice, and no request uncounted — the quota ledger
// counts at least every request the service answered, across the crash.
func TestS21DatabaseCrash(t *testing.T) {
	sc := newScenario(t, 21, "Database crash (immediate shutdown) mid-backfill")
	ctx := context.Background()
	cluster := startPrivateCluster(t)
	pool := cluster.connect()
	t.Cleanup(func() { pool.Close() })
	// Unflushed WAL stays in shared memory for up to 10 s: a commit that
	// does not flush it itself is lost by the crash.
	for _, q := range []string{"ALTER SYSTEM SET synchronous_commit = off", "ALTER SYSTEM SET wal_writer_delay = '10s'",
		"ALTER SYSTEM SET wal_writer_flush_after = '64MB'", "SELECT pg_reload_conf()"} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	const schema = "reliability_dbcrash"
	t.Cleanup(func() { auditRuns(t, pool, schema) })
	o := defaultSandbox()
	o.Emails, o.Latency = 8000, 150*time.Millisecond // the worker spends most of its time waiting on a request
	sb := startSandbox(t, o)
	proxy := startDBProxy(t, hostPort(t, cluster.DSN()))
	env := sb.workerEnv(proxy.dsn(t, cluster.DSN()), schema)
	// One request in flight, as at the default limit: pages fetched ahead in
	// parallel would finish the backfill before the crash lands mid-way.
	env["SYNC_MAX_IN_FLIGHT"] = "1"

	ids, bad := sb.truth().emailIDs()
	// Round 1 crashes the server while the worker fetches brand and project
	// details (small pages: the count of the request in flight is the last
	// thing in the WAL), round 2 in the middle of the e-mail backfill.
	rounds := []struct {
		what string
		due  func(ctx context.Context) bool
	}{
		{"during the entity details", func(ctx context.Context) bool {
			var n int
			err := pool.QueryRow(ctx, "SELECT coalesce(sum(requests), 0) FROM "+
				pgx.Identifier{schema, "api_quota_usage"}.Sanitize()).Scan(&n)
			return err == nil && n >= 30
		}},
		{"mid-backfill", func(ctx context.Context) bool {
			st, err := readBackfill(ctx, pool, schema)
			return err == nil && st.pages >= 3
		}},
	}
	for _, round := range rounds {
		w := startWorker(t, env, "run")
		waitFor(t, "progress "+round.what, 5*time.Millisecond, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return round.due(ctx) || !w.running()
		})
		if !w.running() {
			t.Fatalf("the run ended before the crash %s", round.what)
		}
		// The request the worker waits on is the one whose count is at risk.
		time.Sleep(o.Latency / 2)
		pool.Close()
		crashPostgres(t, cluster.dir)
		if err := cluster.Stop(); err != nil {
			t.Logf("after the crash: %v", err)
		}
		cluster.start("start the server again (crash recovery)")
		proxy.setTarget(hostPort(t, cluster.DSN()))
		pool = cluster.connect()
		res := w.wait()
		if res.code != 0 && res.code != 1 && res.code != 75 {
			t.Errorf("after the crash the worker exited %d: %s\n%s", res.code, res, tail([]byte(res.stderr), 20))
		}
		t.Logf("the run through the crash %s: %s; its errors:\n%s", round.what, res, errorLines(res.stderr))
		served, counted := sb.stats().Keyed(), ledgerTotal(t, pool, schema) // the keyless clock probes count nowhere
		if int64(counted) < served {
			t.Errorf("crash %s: requests uncounted: the quota ledger holds %d, the service answered %d", round.what, counted, served)
		}
		pages := checkWholePages(t, pool, schema, ids, bad)
		sc.fig("crash %s: run exit %d (%s), %d whole e-mail pages kept, ledger %d ≥ %d requests answered",
			round.what, res.code, res.status(), pages, counted, served)
	}

	mustSucceed(t, "the run after the crash", runWorker(t, env, "run"))
	served, counted := sb.stats().Keyed(), ledgerTotal(t, pool, schema)
	if int64(counted) < served {
		t.Errorf("requests uncounted: the quota ledger holds %d, the service answered %d", counted, served)
	}
	var rows, distinct int
	if err := pool.QueryRow(ctx, fmt.Sprintf("SELECT count(*), count(DISTINCT record_id) FROM %s",
		pgx.Identifier{schema, "emails"}.Sanitize())).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != distinct {
		t.Errorf("%d e-mails stored twice", rows-distinct)
	}
	checks, total := compareWithTruth(t, pool, schema, sb.truth())
	sc.fig("then %s; ledger %d ≥ %d requests answered", summarize(checks, total), counted, served)
	checkIntegrity(t, pool, schema)
}

// crashPostgres stops the cluster in dir with an immediate shutdown
// (pg_ctl stop -m immediate: SIGQUIT, no checkpoint, unwritten WAL lost), as
// the data directory's owner (pg_ctl refuses to run as root).
func crashPostgres(t *testing.T, dir string) {
	t.Helper()
	pgCtl, err := findPgCtl()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pgCtl, "stop", "-m", "immediate", "-D", dir)
	if os.Geteuid() == 0 {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.Uid, Gid: st.Gid}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop -m immediate: %v\n%s", err, out)
	}
}

// findPgCtl looks for pg_ctl where warehouse.StartLocal looks for the
// server: PG_BINDIR, the newest /usr/lib/postgresql/*/bin, then PATH.
func findPgCtl() (string, error) {
	if dir := os.Getenv("PG_BINDIR"); dir != "" {
		return filepath.Join(dir, "pg_ctl"), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(dirs) > 0 {
		slices.Sort(dirs)
		return dirs[len(dirs)-1], nil
	}
	p, err := exec.LookPath("pg_ctl")
	if err != nil {
		return "", fmt.Errorf("find pg_ctl: %w", err)
	}
	return p, nil
}
