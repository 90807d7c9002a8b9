package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/warehouse"
)

// renamedMap maps the columns whose source fields the renamed-fields
// sandbox names differently.
const renamedMap = "projects.name=title,projects.status=state,projects.deadline=due_date,projects.budget_amount=budget_total," +
	"invoices.amount=total,invoices.number=invoice_no,invoices.issue_date=issued_on,invoices.due_date=payment_due"

// rebuildEnv is the environment of a rebuild: the warehouse and the field
// map, no address or key of the service.
func rebuildEnv(vars map[string]string, fieldMap string) map[string]string {
	out := map[string]string{"DATABASE_URL": vars["DATABASE_URL"], "WAREHOUSE_SCHEMA": vars["WAREHOUSE_SCHEMA"], "LOG_FORMAT": "json"}
	if fieldMap != "" {
		out["AGENCY_FIELD_MAP"] = fieldMap
	}
	return out
}

func openPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func queryInt(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// syncedAt returns _synced_at of every row of table, by its key as text.
func syncedAt(t *testing.T, pool *pgxpool.Pool, schema, table, key string) map[string]time.Time {
	t.Helper()
	rows, err := pool.Query(context.Background(), fmt.Sprintf("SELECT (%s)::text, _synced_at FROM %s", key, pgx.Identifier{schema, table}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for rows.Next() {
		var k string
		var at time.Time
		if err := rows.Scan(&k, &at); err != nil {
			t.Fatal(err)
		}
		out[k] = at
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// moved counts the rows of after whose _synced_at differs from before.
func moved(before, after map[string]time.Time) int {
	n := 0
	for k, at := range after {
		if b, ok := before[k]; !ok || !b.Equal(at) {
			n++
		}
	}
	return n
}

// TestRebuildRemapsWithoutRequests: against a service whose project fields are
// renamed, `run` leaves the columns NULL; with AGENCY_FIELD_MAP set,
// `rebuild --streams projects` fills them with 0 requests and no API key,
// moving _synced_at only on the rows it changed; a second rebuild changes
// nothing; the next run keeps them filled. Invoices, rejected by the run for
// want of their amount, land from rejected_records when finance is rebuilt
// under the map.
func TestRebuildRemapsWithoutRequests(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, func(o *sandbox.Options) {
		o.Variants = []string{sandbox.VariantRenamedFields}
		o.Emails = 300
	})
	vars := syncEnv(t, sb, o, nil)
	runStart := time.Now()
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("run exit %d:\n%s", code, errs)
	}
	runTook := time.Since(runStart)
	pool := openPool(t, vars["DATABASE_URL"])
	schema := vars["WAREHOUSE_SCHEMA"]
	q := func(format string) string {
		return strings.ReplaceAll(format, "S.", pgx.Identifier{schema}.Sanitize()+".")
	}
	filled := q(`SELECT count(*) FROM S.projects WHERE name IS NOT NULL AND status IS NOT NULL AND deadline IS NOT NULL AND budget_amount IS NOT NULL`)
	projects := queryInt(t, pool, q(`SELECT count(*) FROM S.projects`))
	if projects == 0 || queryInt(t, pool, q(`SELECT count(*) FROM S.projects WHERE name IS NOT NULL OR status IS NOT NULL OR deadline IS NOT NULL OR budget_amount IS NOT NULL`)) != 0 {
		t.Fatalf("after the run: %d projects, want some, every one without name, status, deadline and budget", projects)
	}
	rejectedInvoices := queryInt(t, pool, q(`SELECT count(*) FROM S.rejected_records WHERE stream = 'finance.invoices'`))
	if rejectedInvoices == 0 || queryInt(t, pool, q(`SELECT count(*) FROM S.invoices`)) != 0 {
		t.Fatalf("after the run: %d invoices rejected, want all of them (their amount is renamed)", rejectedInvoices)
	}
	projectsBefore := syncedAt(t, pool, schema, "projects", "project_id")
	teamBefore := syncedAt(t, pool, schema, "project_team_members", "project_id, user_id")
	historyBefore := syncedAt(t, pool, schema, "project_history", "project_id, at, field, seq")
	brandsBefore := syncedAt(t, pool, schema, "brands", "brand_id")
	requests := sb.Stats().Requests

	rvars := rebuildEnv(vars, renamedMap)
	rebuildStart := time.Now()
	code, out, errs := mainWith(rvars, "rebuild", "--streams", "projects")
	rebuildTook := time.Since(rebuildStart)
	if code != ExitOK {
		t.Fatalf("rebuild exit %d:\n%s\n%s", code, out, errs)
	}
	if sent := sb.Stats().Requests - requests; sent != 0 {
		t.Fatalf("rebuild sent %d requests, want 0", sent)
	}
	if n := queryInt(t, pool, filled); n != projects {
		t.Fatalf("after the rebuild %d of %d projects have name, status, deadline and budget:\n%s", n, projects, errs)
	}
	// The values are the renamed fields', coerced as the canonical ones.
	if n := queryInt(t, pool, q(`SELECT count(*) FROM S.projects p, LATERAL (SELECT coalesce(p.detail_raw, p.raw) AS r) x
WHERE p.name = x.r->>'title' AND p.status = x.r->>'state' AND p.deadline = (x.r->>'due_date')::date
AND p.budget_amount = (x.r->>'budget_total')::numeric`)); n != projects {
		t.Errorf("%d of %d projects hold their renamed fields' values", n, projects)
	}
	if n := moved(projectsBefore, syncedAt(t, pool, schema, "projects", "project_id")); n != projects {
		t.Errorf("_synced_at moved on %d of %d changed projects", n, projects)
	}
	for name, before := range map[string]map[string]time.Time{"project_team_members": teamBefore, "project_history": historyBefore, "brands": brandsBefore} {
		key := map[string]string{"project_team_members": "project_id, user_id", "project_history": "project_id, at, field, seq", "brands": "brand_id"}[name]
		after := syncedAt(t, pool, schema, name, key)
		if n := moved(before, after); n != 0 || len(after) != len(before) || len(before) == 0 {
			t.Errorf("%s: _synced_at moved on %d unchanged rows (%d rows before, %d after)", name, n, len(before), len(after))
		}
	}
	if n := queryInt(t, pool, q(`SELECT count(*) FROM S.rejected_records WHERE stream = 'finance.invoices'`)); n != rejectedInvoices {
		t.Errorf("a rebuild of projects touched the invoices' rejects: %d left of %d", n, rejectedInvoices)
	}
	var trigger, status string
	var used int
	var byTable []byte
	if err := pool.QueryRow(context.Background(), q(`SELECT trigger, status, requests_used, rows_by_table FROM S.sync_runs ORDER BY started_at DESC LIMIT 1`)).
		Scan(&trigger, &status, &used, &byTable); err != nil {
		t.Fatal(err)
	}
	if trigger != "rebuild" || status != "succeeded" || used != 0 || !strings.Contains(string(byTable), fmt.Sprintf(`"projects": %d`, projects)) {
		t.Errorf("sync_runs of the rebuild: %s %s %d requests, rows %s", trigger, status, used, byTable)
	}
	if !strings.Contains(errs, `"msg":"rebuild progress"`) || !strings.Contains(errs, `"msg":"rebuild summary"`) {
		t.Errorf("no progress or summary logged:\n%s", errs)
	}
	if n := queryInt(t, pool, q(`SELECT count(*) FROM S.sync_state WHERE stream = 'rebuild'`)); n != 0 {
		t.Errorf("a finished rebuild left %d cursors", n)
	}

	// A second rebuild changes nothing.
	projectsAfter := syncedAt(t, pool, schema, "projects", "project_id")
	again := time.Now()
	if code, _, errs := mainWith(rvars, "rebuild", "--streams", "projects"); code != ExitOK {
		t.Fatalf("second rebuild exit %d:\n%s", code, errs)
	}
	againTook := time.Since(again)
	if n := moved(projectsAfter, syncedAt(t, pool, schema, "projects", "project_id")); n != 0 {
		t.Errorf("the second rebuild moved _synced_at on %d projects", n)
	}
	if err := pool.QueryRow(context.Background(), q(`SELECT rows_by_table FROM S.sync_runs ORDER BY started_at DESC LIMIT 1`)).Scan(&byTable); err != nil {
		t.Fatal(err)
	}
	var rowsByTable map[string]int
	if err := json.Unmarshal(byTable, &rowsByTable); err != nil || len(rowsByTable) != 0 {
		t.Errorf("the second rebuild wrote %s (%v), want {}", byTable, err)
	}

	// The invoices the run rejected land from rejected_records.
	if code, _, errs := mainWith(rvars, "rebuild", "--streams", "finance"); code != ExitOK {
		t.Fatalf("rebuild of finance exit %d:\n%s", code, errs)
	}
	if n := queryInt(t, pool, q(`SELECT count(*) FROM S.invoices WHERE amount IS NOT NULL AND number IS NOT NULL AND issue_date IS NOT NULL`)); n != rejectedInvoices {
		t.Errorf("%d invoices landed from %d rejects", n, rejectedInvoices)
	}
	if n := queryInt(t, pool, q(`SELECT count(*) FROM S.rejected_records WHERE stream = 'finance.invoices'`)); n != 0 {
		t.Errorf("%d invoices still in rejected_records", n)
	}
	if sent := sb.Stats().Requests - requests; sent != 0 {
		t.Fatalf("the rebuilds sent %d requests, want 0", sent)
	}

	// The next run, under the map, keeps them filled.
	vars["AGENCY_FIELD_MAP"] = renamedMap
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("run after the rebuild exit %d:\n%s", code, errs)
	}
	if n := queryInt(t, pool, filled); n != projects {
		t.Errorf("after the next run %d of %d projects are filled", n, projects)
	}
	t.Logf("run %s, rebuild of %d projects %s (%.2f of the run), second rebuild %s (%.2f of the first)",
		runTook.Round(time.Millisecond), projects, rebuildTook.Round(time.Millisecond), rebuildTook.Seconds()/runTook.Seconds(),
		againTook.Round(time.Millisecond), againTook.Seconds()/rebuildTook.Seconds())
}

// TestRebuildUsageAndLock: an unknown stream is a usage error naming it; a
// rebuild that finds the sync lock held skips as a run does (exit 0, the
// same message) and records a skipped run.
func TestRebuildUsageAndLock(t *testing.T) {
	t.Parallel()
	vars := warehouseOnly(t)
	code, _, errs := mainWith(vars, "rebuild", "--streams", "projects,emails")
	if code != ExitUsage || !strings.Contains(errs, `"emails"`) {
		t.Fatalf("unknown stream: exit %d, %s; want %d naming it", code, errs, ExitUsage)
	}
	if code, _, errs := mainWith(vars, "rebuild", "extra"); code != ExitUsage {
		t.Fatalf("an argument: exit %d, %s", code, errs)
	}
	// Nothing stored yet: a rebuild of every stream has nothing to do.
	if code, _, errs := mainWith(vars, "rebuild"); code != ExitOK {
		t.Fatalf("rebuild of an empty warehouse: exit %d\n%s", code, errs)
	}
	pool := openPool(t, vars["DATABASE_URL"])
	schema := vars["WAREHOUSE_SCHEMA"]
	store, err := load.New(pool, load.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	lock, ok, err := store.TryLock(context.Background(), warehouse.SyncLockID(schema))
	if err != nil || !ok {
		t.Fatalf("take the lock: %v %v", ok, err)
	}
	defer lock.Release()
	code, _, errs = mainWith(vars, "rebuild", "--streams", "projects")
	if code != ExitOK || !strings.Contains(errs, "another sync holds the lock of this warehouse schema; skipping") {
		t.Fatalf("rebuild while locked: exit %d\n%s", code, errs)
	}
	q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE trigger = 'rebuild' AND status = 'skipped'`, pgx.Identifier{schema, "sync_runs"}.Sanitize())
	if n := queryInt(t, pool, q); n != 1 {
		t.Errorf("%d skipped rebuilds recorded, want 1", n)
	}
}
