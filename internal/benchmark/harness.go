package benchmark

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/warehouse"
)

// Config says how to run the benchmarks.
type Config struct {
	// Quick uses the smaller sizes of QuickSizes (make bench-quick).
	Quick bool
	// Runs is how many times each scenario runs (at least 3).
	Runs int
	// BinDir holds prebuilt agencysync and agencysandbox binaries; empty
	// builds them into a temporary folder (CGO_ENABLED=0 -trimpath, as make
	// build does).
	BinDir string
	// ModuleDir is the module's root, where binaries are built and the
	// micro-benchmarks run.
	ModuleDir string
	// DatabaseURL is the warehouse server; empty starts a private cluster.
	DatabaseURL string
	// PGBinDir holds the private cluster's server binaries (PG_BINDIR);
	// empty: searched for.
	PGBinDir string
	// Figures selects figures by number ("1".."11"); empty runs them all.
	Figures []string
	// LargeDays, when positive, is the number of simulated days of figure
	// 8's large agency instead of the mode's (14, quick 3): the 14 days at
	// the quick mode's size, say.
	LargeDays int
	// LogDir, when set, keeps the log (stderr) of every agencysync process
	// there, one file per process, for diagnosis.
	LogDir string
	// WorkerLogLevel is the workers' LOG_LEVEL (default info; debug logs
	// every request with its timing).
	WorkerLogLevel string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Sizes are the workloads of one mode.
type Sizes struct {
	// Name is "full" (make bench) or "quick" (make bench-quick).
	Name string
	// Agency shapes the agencies of the first syncs and of the steady state
	// (brands, projects a brand, users; zero values keep the sandbox's
	// defaults: 40 brands, 15 projects each, 300 users).
	Agency childproc.SandboxOptions
	// BackfillSmall and BackfillLarge are the e-mails of the two first
	// syncs (request efficiency is reported for the large one, memory for
	// both).
	BackfillSmall, BackfillLarge int
	// PipelineEmails are the e-mails of the pipeline scenario.
	PipelineEmails int
	// StorageEmails are the e-mails of the storage figure's first syncs
	// (the sandbox's default agency otherwise).
	StorageEmails int
	// SteadyEmails are the steady-state agency's e-mails (0: the sandbox's
	// default, 20 000) and SteadyAppend the e-mails of its day of changes.
	SteadyEmails, SteadyAppend int
	// Pace is the agency of the pace scenario (its sandbox adds 10/s and
	// 50 ms latency).
	Pace childproc.SandboxOptions
	// DecodeBenchtime and LoadBenchEmails size the micro-benchmarks.
	DecodeBenchtime string
	LoadBenchEmails int
	// Large sizes figure 8: the large agency, its first sync,
	// a day of changes and SimDays simulated days.
	Large LargeSizes
	// Fleet sizes figure 10: agencies synced per hour per worker.
	Fleet FleetSizes
}

// FullSizes are the sizes of make bench.
var FullSizes = Sizes{Name: "full", BackfillSmall: 100_000, BackfillLarge: 1_000_000, PipelineEmails: 100_000, StorageEmails: 100_000,
	SteadyAppend:    5000,
	Pace:            childproc.SandboxOptions{Brands: 10, ProjectsPerBrand: 10, Emails: 100_000},
	DecodeBenchtime: "1s", LoadBenchEmails: 20_000,
	Large: LargeSizes{
		Agency:    childproc.SandboxOptions{Brands: 200, ProjectsPerBrand: 20, Emails: 1_000_000},
		DayAppend: 5000, HourlyAppend: 200, Days: 14,
		Huge: childproc.SandboxOptions{Brands: 1000, ProjectsPerBrand: 20}, HugeQuota: dailyQuota,
	},
	Fleet: FleetSizes{Agencies: 12, Agency: childproc.SandboxOptions{Brands: 5, ProjectsPerBrand: 3, Users: 50, Emails: 3000}, Concurrency: 4}}

// QuickSizes are the sizes of make bench-quick: the same table, smaller
// (a quarter of the steady-state agency, a tenth of the e-mails).
var QuickSizes = Sizes{Name: "quick", Agency: childproc.SandboxOptions{Brands: 10, ProjectsPerBrand: 15},
	BackfillSmall: 10_000, BackfillLarge: 100_000, PipelineEmails: 20_000, StorageEmails: 20_000,
	SteadyEmails: 5000, SteadyAppend: 1250,
	Pace:            childproc.SandboxOptions{Brands: 2, ProjectsPerBrand: 6, Emails: 10_000},
	DecodeBenchtime: "30x", LoadBenchEmails: 3000,
	Large: LargeSizes{
		Agency:    childproc.SandboxOptions{Brands: 50, ProjectsPerBrand: 20, Emails: 100_000},
		DayAppend: 1250, HourlyAppend: 50, Days: 3,
		Huge: childproc.SandboxOptions{Brands: 100, ProjectsPerBrand: 20, Emails: 5000}, HugeQuota: 1000,
	},
	Fleet: FleetSizes{Agencies: 6, Agency: childproc.SandboxOptions{Brands: 3, ProjectsPerBrand: 2, Users: 20, Emails: 1000}, Concurrency: 2}}

// agency returns the options of an agency of the mode with emails e-mails
// (0: the sandbox's default), limits off.
func (s Sizes) agency(emails int) childproc.SandboxOptions {
	o := s.Agency
	o.Emails, o.NoLimits = emails, true
	return o
}

// describe says what an agency holds, e.g. "40 brands × 15 projects, 20 000 e-mails".
func describe(o childproc.SandboxOptions) string {
	d := sandbox.DefaultOptions()
	b, p, e := d.Brands, d.ProjectsPerBrand, d.Emails
	if o.Brands > 0 {
		b = o.Brands
	}
	if o.ProjectsPerBrand > 0 {
		p = o.ProjectsPerBrand
	}
	if o.Emails > 0 {
		e = o.Emails
	}
	return fmt.Sprintf("%d brands × %d projects, %s e-mails", b, p, Int(int64(e)))
}

// harness is one benchmark session: binaries, warehouse, sizes.
type harness struct {
	cfg        Config
	sizes      Sizes
	agencysync string
	sandboxBin string
	dsn        string
	private    bool
	pool       *pgxpool.Pool
	log        func(format string, args ...any)
	processes  int // agencysync processes started, to name their logs
	pgRoot     int // the private cluster's postmaster, for its CPU time (0: none)
}

// runWorker runs agencysync (see childproc.RunWorker) with the configured
// log level and keeps its log in LogDir when set, named after label.
func (h *harness) runWorker(ctx context.Context, label string, env map[string]string, args ...string) (*childproc.Result, error) {
	if h.cfg.WorkerLogLevel != "" && env["LOG_LEVEL"] != "debug" { // a scenario that reads the debug log keeps it
		env = maps.Clone(env)
		env["LOG_LEVEL"] = h.cfg.WorkerLogLevel
	}
	res, err := childproc.RunWorker(ctx, h.agencysync, workerTimeout, env, args...)
	h.processes++
	if h.cfg.LogDir != "" && res != nil {
		name := filepath.Join(h.cfg.LogDir, fmt.Sprintf("%03d-%s.log", h.processes, label))
		if werr := os.WriteFile(name, res.Stderr, 0o644); werr != nil {
			h.log("keep log: %v", werr)
		}
	}
	return res, err
}

// runSucceeded runs agencysync as runWorker does and fails unless it exited
// 0 with a succeeded run (childproc.Result.Err, naming what it was).
func (h *harness) runSucceeded(ctx context.Context, label, what string, env map[string]string, args ...string) (*childproc.Result, error) {
	res, err := h.runWorker(ctx, label, env, args...)
	if err != nil {
		return nil, err
	}
	if err := res.Err(what); err != nil {
		return nil, err
	}
	return res, nil
}

func (h *harness) want(fig string) bool {
	if len(h.cfg.Figures) == 0 {
		return true
	}
	for _, f := range h.cfg.Figures {
		if f == fig {
			return true
		}
	}
	return false
}

// build builds both binaries into dir as make build does.
func build(ctx context.Context, moduleDir, dir string) error {
	for _, name := range []string{"agencysync", "agencysandbox"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, name), "./cmd/"+name)
		cmd.Dir = moduleDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w: %s", name, err, lastLines(out, 10))
		}
	}
	return nil
}

// newSchema returns a fresh schema name; the caller drops it with dropSchema.
func newSchema() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "bench_" + hex.EncodeToString(b[:])
}

func (h *harness) dropSchema(schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := h.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		h.log("drop schema %s: %v", schema, err)
	}
}

// lastRefresh reads the requests the newest sync_runs row of a schema
// spent on the rolling re-read of the e-mail history (its
// communications-refresh task; 0 when it had none).
func (h *harness) lastRefresh(ctx context.Context, schema string) (int64, error) {
	var n int64
	err := h.pool.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce((streams_detail->'communications-refresh'->>'requests')::bigint, 0)
FROM %s ORDER BY started_at DESC LIMIT 1`, pgx.Identifier{schema, "sync_runs"}.Sanitize())).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read sync_runs: %w", err)
	}
	return n, nil
}

// lastRun reads the newest sync_runs row of a schema.
func (h *harness) lastRun(ctx context.Context, schema string) (requestsUsed int64, rowsWritten int64, err error) {
	var rows map[string]int64
	var raw []byte
	err = h.pool.QueryRow(ctx, fmt.Sprintf("SELECT requests_used, rows_by_table FROM %s ORDER BY started_at DESC LIMIT 1",
		pgx.Identifier{schema, "sync_runs"}.Sanitize())).Scan(&requestsUsed, &raw)
	if err != nil {
		return 0, 0, fmt.Errorf("read sync_runs: %w", err)
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return 0, 0, fmt.Errorf("decode rows_by_table: %w", err)
	}
	for _, n := range rows {
		rowsWritten += n
	}
	return requestsUsed, rowsWritten, nil
}

// workerGone waits (at most ten seconds) until no agencysync session is
// connected any more: a worker's backends end shortly after the worker.
func (h *harness) workerGone(ctx context.Context) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var n int
		if err := h.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'agencysync'").Scan(&n); err != nil || n == 0 {
			return
		}
	}
}

// walLSN is the server's current WAL insert position.
func (h *harness) walLSN(ctx context.Context) (string, error) {
	var lsn string
	if err := h.pool.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		return "", fmt.Errorf("read WAL position: %w", err)
	}
	return lsn, nil
}

func (h *harness) walSince(ctx context.Context, lsn string) (int64, error) {
	var n int64
	if err := h.pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", lsn).Scan(&n); err != nil {
		return 0, fmt.Errorf("measure WAL: %w", err)
	}
	return n, nil
}

// openWarehouse connects to DatabaseURL or starts a private cluster; the
// returned function stops what it started.
func openWarehouse(ctx context.Context, dsn, binDir string) (pool *pgxpool.Pool, usedDSN string, private bool, stop func(), err error) {
	stop = func() {}
	if dsn == "" {
		c, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{BinDir: binDir})
		if err != nil {
			return nil, "", false, stop, fmt.Errorf("start private cluster: %w", err)
		}
		dsn, private = c.DSN(), true
		stop = func() { _ = c.Stop() }
	}
	pool, err = warehouse.Connect(ctx, dsn, warehouse.PoolOptions{MaxConns: 4, ApplicationName: "agencybench"})
	if err != nil {
		stop()
		return nil, "", false, func() {}, fmt.Errorf("connect warehouse: %w", err)
	}
	inner := stop
	return pool, dsn, private, func() { pool.Close(); inner() }, nil
}

// walBreakdown describes the WAL between two positions with pg_walinspect:
// records, full-page images and the bytes by relation with their most
// frequent record type, largest first (at most six). It returns "" when
// the extension is not available: it is created in a private cluster only.
func (h *harness) walBreakdown(ctx context.Context, from, to string) string {
	if h.private { // a server given by DATABASE_URL is used as it is, without creating anything in it
		if _, err := h.pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
			h.log("no WAL breakdown: %v", err)
			return ""
		}
	} else if err := h.pool.QueryRow(ctx, "SELECT 1 FROM pg_extension WHERE extname = 'pg_walinspect'").Scan(new(int)); err != nil {
		return ""
	}
	// pg_walinspect reads flushed WAL only: wait until the server flushed
	// up to "to" (the walwriter does within a fraction of a second).
	for deadline := time.Now().Add(10 * time.Second); ; {
		var flushed bool
		if err := h.pool.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn", to).Scan(&flushed); err != nil || flushed {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	rows, err := h.pool.Query(ctx, `WITH r AS (
	SELECT record_length + fpi_length AS bytes, fpi_length, resource_manager, record_type,
	       substring(block_ref from 'rel \d+/\d+/(\d+)')::oid AS node
	FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn))
SELECT coalesce(regexp_replace(pg_filenode_relation(0, r.node)::text, '^.*\.', ''),
                CASE WHEN r.node IS NULL THEN '' ELSE 'dropped ' END || r.resource_manager || ' records'),
       count(*), sum(r.bytes), sum(r.fpi_length), mode() WITHIN GROUP (ORDER BY r.record_type)
FROM r GROUP BY 1 ORDER BY 3 DESC`, from, to)
	if err != nil {
		h.log("no WAL breakdown: %v", err)
		return ""
	}
	type rel struct {
		name, kind          string // relation, most frequent record type
		records, bytes, fpi int64
	}
	var all []rel
	var records, fpi int64
	for rows.Next() {
		var r rel
		if err := rows.Scan(&r.name, &r.records, &r.bytes, &r.fpi, &r.kind); err != nil {
			h.log("no WAL breakdown: %v", err)
			return ""
		}
		records += r.records
		fpi += r.fpi
		all = append(all, r)
	}
	if err := rows.Err(); err != nil {
		h.log("no WAL breakdown: %v", err)
		return ""
	}
	var parts []string
	for i, r := range all {
		if i == 6 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s (%d records, mostly %s)", r.name, Bytes(float64(r.bytes)), r.records, r.kind))
	}
	return fmt.Sprintf("%d WAL records, %s of them full-page images; by relation: %s", records, Bytes(float64(fpi)), strings.Join(parts, ", "))
}
