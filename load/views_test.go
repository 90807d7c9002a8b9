package load

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/transform"
	"github.com/agencysync/agencysync/warehouse"
)

// viewQuery is an analyst's question asked through a view, and the same
// question asked of the base tables (the oracle for speed and results).
type viewQuery struct {
	name string
	view string // through a view (README cookbook or a typical slice)
	base string // the same rows from the base tables
	// unused are relations the view's plan must not touch: the query does
	// not select what they provide.
	unused []string
	// volatile: the answer moves between two statements (a lag from now()),
	// so the rows are not compared.
	volatile bool
}

// cookbookSQL returns the cookbook's SQL block under heading (the
// warehouse reference, docs/warehouse.md).
func cookbookSQL(t testing.TB, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/warehouse.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n### "+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/warehouse.md has no cookbook entry %q", heading)
	}
	rest := text[i:]
	start := strings.Index(rest, "```sql\n")
	end := strings.Index(rest[start+7:], "```")
	if start < 0 || end < 0 {
		t.Fatalf("cookbook entry %q has no SQL block", heading)
	}
	return strings.TrimSuffix(strings.TrimSpace(rest[start+7:start+7+end]), ";")
}

// viewQueries are the documented dashboard queries through the four views,
// and typical slices of email_activity, each with its base-table twin.
func viewQueries(t testing.TB) []viewQuery {
	return []viewQuery{
		{name: "cookbook: e-mails per brand per week (email_activity)", view: cookbookSQL(t, "E-mails per brand per week"),
			base: `SELECT date_trunc('week', e.email_at)::date AS week, e.brand_id, b.name AS brand_name,
       count(*) AS emails, count(DISTINCT e.mailbox_thread) AS threads, count(*) FILTER (WHERE e.has_attachments) AS with_attachments
FROM agency.emails e LEFT JOIN agency.brands b ON b.brand_id = e.brand_id
WHERE e._deleted_at IS NULL AND e.brand_id IS NOT NULL
  AND e.email_at >= date_trunc('week', now()) - interval '11 weeks'
GROUP BY 1, 2, 3 ORDER BY week DESC, emails DESC`,
			unused: []string{"email_recipients", "users", "projects"}},
		{name: "e-mails per brand per month (email_activity)",
			view: `SELECT brand_id, brand_name, date_trunc('month', email_at) AS month, count(*) AS emails
FROM agency.email_activity GROUP BY 1, 2, 3 ORDER BY 1, 3`,
			base: `SELECT e.brand_id, b.name AS brand_name, date_trunc('month', e.email_at) AS month, count(*) AS emails
FROM agency.emails e LEFT JOIN agency.brands b ON b.brand_id = e.brand_id
WHERE e._deleted_at IS NULL GROUP BY 1, 2, 3 ORDER BY 1, 3`,
			unused: []string{"email_recipients", "users", "projects"}},
		{name: "one brand's e-mails per project and month (email_activity)",
			view: `SELECT project_id, project_name, date_trunc('month', email_at) AS month, count(*) AS emails
FROM agency.email_activity WHERE brand_id = '7' GROUP BY 1, 2, 3 ORDER BY 1, 3`,
			base: `SELECT e.project_id, p.name AS project_name, date_trunc('month', e.email_at) AS month, count(*) AS emails
FROM agency.emails e LEFT JOIN agency.projects p ON p.project_id = e.project_id
WHERE e._deleted_at IS NULL AND e.brand_id = '7' GROUP BY 1, 2, 3 ORDER BY 1, 3`,
			unused: []string{"email_recipients", "users", "brands"}},
		{name: "one month's e-mails per sender (email_activity)",
			view: `SELECT sender_key, sender_name, count(*) AS emails, sum(recipient_count) AS recipients
FROM agency.email_activity WHERE email_at >= '2023-03-01' AND email_at < '2023-04-01' GROUP BY 1, 2 ORDER BY 3 DESC, 1`,
			base: `SELECT s.user_key AS sender_key, u.full_name AS sender_name, count(*) AS emails, sum(coalesce(rc.n, 0)) AS recipients
FROM agency.emails e
LEFT JOIN (SELECT record_id, min(user_key) AS user_key FROM agency.email_recipients WHERE role = 'from' GROUP BY record_id) s ON s.record_id = e.record_id
LEFT JOIN agency.users u ON u.user_key = s.user_key
LEFT JOIN (SELECT record_id, count(*) AS n FROM agency.email_recipients WHERE role <> 'from' GROUP BY record_id) rc ON rc.record_id = e.record_id
WHERE e._deleted_at IS NULL AND e.email_at >= '2023-03-01' AND e.email_at < '2023-04-01' GROUP BY 1, 2 ORDER BY 3 DESC, 1`,
			unused: []string{"brands", "projects"}},
		{name: "cookbook: projects past deadline (project_status)", view: cookbookSQL(t, "Projects past deadline with open deliverables"),
			base: `WITH d AS (
    SELECT project_id, count(*) FILTER (WHERE delivered_at IS NULL) AS open_deliverables,
           count(*) FILTER (WHERE delivered_at IS NULL AND due_date < CURRENT_DATE) AS overdue_deliverables,
           min(due_date) FILTER (WHERE delivered_at IS NULL) AS next_due_date
    FROM agency.project_deliverables GROUP BY project_id
), tm AS (SELECT project_id, count(*) AS team_size FROM agency.project_team_members GROUP BY project_id)
SELECT p.project_id, p.name, b.name AS brand_name, p.status, p.deadline, CURRENT_DATE - p.deadline AS days_late,
       d.open_deliverables, d.overdue_deliverables, d.next_due_date, coalesce(tm.team_size, 0) AS team_size
FROM agency.projects p
JOIN d ON d.project_id = p.project_id
LEFT JOIN tm ON tm.project_id = p.project_id
LEFT JOIN agency.brands b ON b.brand_id = p.brand_id
WHERE p._deleted_at IS NULL AND p.closed_at IS NULL AND p.deadline < CURRENT_DATE AND d.open_deliverables > 0
ORDER BY days_late DESC, open_deliverables DESC`},
		{name: "open projects per brand (project_status)",
			view: `SELECT brand_name, count(*) AS projects, count(*) FILTER (WHERE overdue) AS overdue
FROM agency.project_status WHERE closed_at IS NULL GROUP BY 1 ORDER BY 1`,
			base: `SELECT b.name AS brand_name, count(*) AS projects, count(*) FILTER (WHERE p.deadline < CURRENT_DATE) AS overdue
FROM agency.projects p LEFT JOIN agency.brands b ON b.brand_id = p.brand_id
WHERE p._deleted_at IS NULL AND p.closed_at IS NULL GROUP BY 1 ORDER BY 1`,
			unused: []string{"project_deliverables", "project_team_members"}},
		{name: "cookbook: brand finances (brand_finance)", view: cookbookSQL(t, "Brand finances"),
			base: `SELECT DISTINCT ON (b.invoiced - b.collected, b.brand_id) b.brand_id, b.name, b.account_manager, b.currency, b.total_budget, b.invoiced, b.collected,
       b.invoiced - b.collected AS outstanding, round(100 * b.collected / nullif(b.invoiced, 0), 1) AS collected_pct,
       p.period AS profitability_period, p.margin
FROM agency.brands b
LEFT JOIN agency.profitability p ON p.level = 'brand' AND p.entity_id = b.brand_id AND p._deleted_at IS NULL
WHERE b._deleted_at IS NULL
ORDER BY b.invoiced - b.collected DESC NULLS LAST, b.brand_id, p.period DESC`},
		{name: "cookbook: data freshness (sync_freshness)", view: cookbookSQL(t, "Data freshness"),
			base: `SELECT s.stream, s.last_success_at, date_trunc('second', now() - s.last_success_at) AS lag, s.watermark, s.rows_total, s.rejected_total,
       lr.status AS last_run_status, now() - s.last_success_at > interval '26 hours' AS stale
FROM (SELECT stream, CASE WHEN bool_and(last_success_at IS NOT NULL) FILTER (WHERE partition NOT IN ('details', 'backfill', 'verify'))
                THEN min(last_success_at) FILTER (WHERE partition NOT IN ('details', 'backfill', 'verify')) END AS last_success_at,
             max(watermark) AS watermark, sum(rows_total)::bigint AS rows_total, sum(rejected_total)::bigint AS rejected_total
      FROM agency.sync_state GROUP BY stream) s
LEFT JOIN LATERAL (SELECT r.status FROM agency.sync_runs r WHERE s.stream = ANY (r.streams) ORDER BY r.started_at DESC LIMIT 1) lr ON true
ORDER BY s.stream`, volatile: true},
	}
}

// inTestSchema points a query at schema.
func inTestSchema(sql, schema string) string {
	return regexp.MustCompile(`\bagency\.`).ReplaceAllString(sql, pgx.Identifier{schema}.Sanitize()+".")
}

// planRelations returns the relations a plan reads and the names of its
// correlated subplans (run per row).
func planRelations(n planNode, rels map[string]bool, subplans *[]string) {
	if n.Relation != "" {
		rels[n.Relation] = true
	}
	if n.Relationship == "SubPlan" {
		*subplans = append(*subplans, n.SubplanName)
	}
	for _, c := range n.Plans {
		planRelations(c, rels, subplans)
	}
}

// seedViews writes e-mails (the load benchmark's generator), brands,
// projects with deliverables and team, profitability and sync state, then
// analyses the schema.
func seedViews(t testing.TB, s *Store, pool *pgxpool.Pool, schema string, emails int, bodies bool) {
	t.Helper()
	ctx := context.Background()
	gen := newCommsGenerator()
	var loading time.Duration
	for n := range (emails + benchPageSize - 1) / benchPageSize {
		b := gen.page(n)
		if bodies {
			withBodies(t, &b, n)
		}
		st := time.Now()
		if _, err := s.commitPage(ctx, page{stream: "communications", batch: b}); err != nil {
			t.Fatal(err)
		}
		loading += time.Since(st)
	}
	t.Logf("CommitPage: %.0f e-mails/s", float64(emails)/loading.Seconds())
	q := func(table string) string { return qualified(schema, table) }
	for _, stmt := range []string{
		`INSERT INTO ` + q("brands") + ` (brand_id, name, status, account_manager, total_budget, invoiced, collected, currency, raw)
SELECT g::text, 'Brand ' || g, 'activ', 'AM ' || g % 5, 100000 + g, 50000 + g * 10, 40000 + g * 7, 'RON', jsonb_build_object('id', g) FROM generate_series(1, 40) g`,
		`INSERT INTO ` + q("projects") + ` (project_id, brand_id, name, status, deadline, raw)
SELECT g::text, (g % 40 + 1)::text, 'Project ' || g, 'în lucru', DATE '2023-01-01' + g, jsonb_build_object('id', g) FROM generate_series(1, 200) g`,
		`INSERT INTO ` + q("project_deliverables") + ` (project_id, deliverable_id, name, due_date, delivered_at)
SELECT (g % 200 + 1)::text, g::text, 'D' || g, DATE '2023-01-01' + g % 300, CASE WHEN g % 3 = 0 THEN now() END FROM generate_series(1, 1000) g`,
		`INSERT INTO ` + q("project_team_members") + ` (project_id, user_id, full_name, role)
SELECT (g % 200 + 1)::text, g::text, 'P' || g, 'dev' FROM generate_series(1, 800) g`,
		`INSERT INTO ` + q("profitability") + ` (level, entity_id, period, revenue, cost, margin, currency, raw)
SELECT 'brand', b::text, DATE '2023-01-01' + make_interval(months => m), 1000 * b, 700 * m, 0.3, 'RON', '{}' FROM generate_series(1, 40) b, generate_series(0, 11) m`,
		`INSERT INTO ` + q("sync_state") + ` (stream, partition, watermark, last_success_at, rows_total) VALUES
('communications', '', now(), now(), 1), ('brands', 'list', NULL, now(), 40), ('brands', 'details', NULL, now(), 40), ('finance', 'invoices', now(), now(), 3)`,
		`ANALYZE ` + q("emails") + `, ` + q("email_recipients") + `, ` + q("users") + `, ` + q("brands") + `, ` + q("projects") + `, ` +
			q("project_deliverables") + `, ` + q("project_team_members") + `, ` + q("profitability") + `, ` + q("sync_state"),
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("seed: %v\n%s", err, stmt)
		}
	}
}

// TestViewPlans holds the views' plans: no query of the documented ones
// runs a correlated subplan per row, and a query of email_activity that does
// not select the sender or recipient counts does not read the recipients,
// users or names it does not use (the planner drops those joins). Each view
// query also returns what its base-table twin returns.
func TestViewPlans(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	seedViews(t, s, pool, schema, 3000, false)
	for _, vq := range viewQueries(t) {
		sql := inTestSchema(vq.view, schema)
		var doc []byte
		if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql).Scan(&doc); err != nil {
			t.Fatalf("%s: %v", vq.name, err)
		}
		var plans []struct{ Plan planNode }
		if err := json.Unmarshal(doc, &plans); err != nil || len(plans) != 1 {
			t.Fatalf("%s: plan %s: %v", vq.name, doc, err)
		}
		rels := map[string]bool{}
		var subplans []string
		planRelations(plans[0].Plan, rels, &subplans)
		if len(subplans) > 0 {
			t.Errorf("%s: correlated subplans per row: %v", vq.name, subplans)
		}
		for _, r := range vq.unused {
			if rels[r] {
				t.Errorf("%s: the plan reads %s, which the query does not use", vq.name, r)
			}
		}
		if t.Failed() {
			t.Logf("%s plan:\n%s", vq.name, explainText(t, pool, sql))
		}
		if got, want := queryRows(t, pool, sql), queryRows(t, pool, inTestSchema(vq.base, schema)); !vq.volatile && !slices.Equal(got, want) {
			t.Errorf("%s: the view answers %d rows, the base tables %d (first: %v vs %v)", vq.name, len(got), len(want), head(got), head(want))
		}
	}
}

// withBodies gives each e-mail of page n a body of 1 to 4 kB of words, in
// the row and in raw, as AGENCY_COMMS_WITH_MESSAGE=1 stores them.
func withBodies(t testing.TB, b *transform.Batch, n int) {
	words := strings.Fields("bună ziua vă trimitem oferta revizuită pentru campania de toamnă conform discuției " +
		"telefonice atașat găsiți bugetul estimat termenul de livrare este luni vă rugăm să confirmați " +
		"materialele grafice raportul lunar factura proforma contractul semnat mulțumim frumos cu stimă " +
		"echipa agenției clientul a cerut modificări la textul bannerului și la programarea postărilor")
	emails := b.Rows("emails")
	if emails == nil {
		t.Fatal("no e-mails in the page")
	}
	names := emails.Table.ColumnNames()
	msgAt, rawAt := slices.Index(names, "message"), slices.Index(names, "raw")
	for i, row := range emails.Rows {
		rng := uint64(n*benchPageSize+i)*2654435761 + 1
		var body strings.Builder
		size := 1000 + int(rng%3000)
		for body.Len() < size {
			rng = rng*6364136223846793005 + 1442695040888963407
			body.WriteString(words[(rng>>33)%uint64(len(words))])
			if (rng>>20)%11 == 0 {
				body.WriteString(".\n")
			} else {
				body.WriteString(" ")
			}
		}
		msg := body.String()
		row[msgAt] = msg
		var rec map[string]any
		if err := json.Unmarshal(row[rawAt].(json.RawMessage), &rec); err != nil {
			t.Fatal(err)
		}
		rec["email"].(map[string]any)["message"] = msg
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		row[rawAt] = json.RawMessage(raw)
	}
}

func head(s []string) []string { return s[:min(3, len(s))] }

func explainText(t testing.TB, pool *pgxpool.Pool, sql string) string {
	rows, err := pool.Query(context.Background(), "EXPLAIN "+sql)
	if err != nil {
		return err.Error()
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err.Error()
	}
	return strings.Join(lines, "\n")
}

// queryRows returns a query's rows, each as its text form.
func queryRows(t testing.TB, pool *pgxpool.Pool, sql string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT q::text FROM ("+sql+") q")
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestViewsAtScale measures each view query against its base-table twin at
// AGENCYSYNC_VIEWS_EMAILS e-mails (skipped without; BENCHMARKS.md used
// 1 000 000), with the server's JIT settings as they are, and the bytes an
// e-mail takes. It logs the figures; it asserts nothing about time.
// AGENCYSYNC_VIEWS_BODIES=1 gives the e-mails bodies and AGENCYSYNC_VIEWS_LZ4=1
// compresses raw with lz4 (both measure storage only);
// AGENCYSYNC_VIEWS_SCHEMA=name keeps the seeded schema for the next run.
func TestViewsAtScale(t *testing.T) {
	var emails int
	if _, err := fmt.Sscan(os.Getenv("AGENCYSYNC_VIEWS_EMAILS"), &emails); err != nil || emails <= 0 {
		t.Skip("set AGENCYSYNC_VIEWS_EMAILS to measure the views at that many e-mails")
	}
	ctx := context.Background()
	var s *Store
	var pool *pgxpool.Pool
	var schema string
	reuse := false
	if schema = os.Getenv("AGENCYSYNC_VIEWS_SCHEMA"); schema != "" {
		// A schema kept between measurements (drop it by hand afterwards).
		pool = warehousetest.Pool(t)
		if err := warehouse.Migrate(ctx, pool, schema, nil); err != nil {
			t.Fatal(err)
		}
		var err error
		if s, err = New(pool, Config{Schema: schema}); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+qualified(schema, "emails")).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if reuse = n == emails; !reuse && n > 0 {
			t.Fatalf("schema %s holds %d e-mails, not %d", schema, n, emails)
		}
	} else {
		s, pool, schema = newStore(t)
	}
	if os.Getenv("AGENCYSYNC_VIEWS_LZ4") != "" { // raw compressed with lz4 instead of the default pglz
		if _, err := pool.Exec(ctx, `ALTER TABLE `+qualified(schema, "emails")+` ALTER COLUMN raw SET COMPRESSION lz4`); err != nil {
			t.Fatal(err)
		}
	}
	if !reuse {
		start := time.Now()
		seedViews(t, s, pool, schema, emails, os.Getenv("AGENCYSYNC_VIEWS_BODIES") != "")
		t.Logf("seeded %d e-mails in %s", emails, time.Since(start).Round(time.Second))
	}
	var total, heap, raw, rawText float64
	if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass), pg_relation_size($1::regclass), avg(pg_column_size(raw)), avg(octet_length(raw::text)) FROM `+qualified(schema, "emails"),
		qualified(schema, "emails")).Scan(&total, &heap, &raw, &rawText); err != nil {
		t.Fatal(err)
	}
	t.Logf("bytes per e-mail: emails table with indexes and TOAST %.0f, heap %.0f, raw stored %.0f (as text %.0f)", total/float64(emails), heap/float64(emails), raw, rawText)
	if os.Getenv("AGENCYSYNC_VIEWS_LZ4") != "" || os.Getenv("AGENCYSYNC_VIEWS_BODIES") != "" {
		return
	}
	var jit string
	if err := pool.QueryRow(ctx, "SHOW jit").Scan(&jit); err != nil {
		t.Fatal(err)
	}
	for _, vq := range viewQueries(t) {
		// The generated mail is dated 2023: "now" is mid-July 2023.
		fix := func(sql string) string {
			return strings.NewReplacer("now()", "TIMESTAMPTZ '2023-07-17 12:00+00'").Replace(inTestSchema(sql, schema))
		}
		view, base := fix(vq.view), fix(vq.base)
		var tv, tb []time.Duration
		for range 9 {
			for _, x := range []struct {
				sql string
				out *[]time.Duration
			}{{view, &tv}, {base, &tb}} {
				st := time.Now()
				rows, err := pool.Query(ctx, x.sql)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				*x.out = append(*x.out, time.Since(st))
			}
		}
		mv, mb := median(tv), median(tb)
		ratios := make([]float64, len(tv))
		for i := range tv {
			ratios[i] = float64(tv[i]) / float64(tb[i])
		}
		sort.Float64s(ratios)
		t.Logf("jit=%s %s: view %s, base tables %s, ratio of medians %.2f, median of paired ratios %.2f; plan cost view %.0f (JIT %v) base %.0f (JIT %v); runs view %v base %v",
			jit, vq.name, mv.Round(10*time.Microsecond), mb.Round(10*time.Microsecond), float64(mv)/float64(mb), ratios[len(ratios)/2],
			planCost(t, pool, view), planJIT(t, pool, view), planCost(t, pool, base), planJIT(t, pool, base), roundAll(tv), roundAll(tb))
	}
}

// planCost is the planner's total cost of sql.
func planCost(t testing.TB, pool *pgxpool.Pool, sql string) float64 {
	var doc []byte
	if err := pool.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql).Scan(&doc); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan struct {
			TotalCost float64 `json:"Total Cost"`
		}
	}
	if err := json.Unmarshal(doc, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", doc, err)
	}
	return plans[0].Plan.TotalCost
}

// planJIT says whether the server would compile sql with JIT.
func planJIT(t testing.TB, pool *pgxpool.Pool, sql string) bool {
	var doc []byte
	if err := pool.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql).Scan(&doc); err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(doc), `"JIT"`)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func roundAll(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, x := range d {
		out[i] = x.Round(10 * time.Microsecond)
	}
	return out
}
