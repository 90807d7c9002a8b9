package reliability

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// truth is the sandbox's dataset at one moment, by stream (oracle.Truth
// with the suite's helpers).
type truth map[string][]oracle.Line

// truth fetches the sandbox's ground truth. The answer is read whole first
// (hundreds of megabytes at soak sizes), then split by oracle.Parse.
func (s *sandboxProc) truth() truth {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rc, err := s.p.Truth(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rc.Close()
	tr, err := oracle.Read(rc)
	if err != nil {
		s.t.Fatalf("fetch the truth: %v", err)
	}
	return truth(tr)
}

// counts returns the good and bad records of a stream.
func (tr truth) counts(stream string) (good, bad int) { return oracle.Truth(tr).Counts(stream) }

// bad counts the malformed records of every stream.
func (tr truth) bad() int { return oracle.Truth(tr).Bad() }

// emailIDs returns the record ids of the communications, ascending, with
// whether each is malformed.
func (tr truth) emailIDs() (ids []int64, bad []bool) {
	ids, bad, err := oracle.Truth(tr).EmailIDs()
	if err != nil {
		panic(err) // the sandbox's keys are its ids
	}
	return ids, bad
}

// minimumRequests is what a complete first sync of the truth costs at best
// (oracle.MinimumRequests), in total and by endpoint.
func (tr truth) minimumRequests() (total int, byEndpoint map[string]int) {
	m := oracle.MinimumRequests(oracle.Truth(tr).FirstSync())
	return m.Total, m.ByEndpoint
}

// col is a compared column: its name and how its values are encoded.
type col struct {
	name string
	typ  string // text, date, timestamptz, bigint, integer, numeric, jsonb, boolean
}

// cmpTable is a warehouse table as the comparison sees it: the key, the
// compared columns (key first) and which warehouse rows are compared. The
// bookkeeping columns (_synced_at, _deleted_at) are never compared.
type cmpTable struct {
	name  string
	nkey  int // the first nkey columns are the key
	cols  []col
	where string // filter of the warehouse side; {schema} is the quoted schema
}

// Filters of the warehouse side. Soft-deleted rows are not in the truth;
// the children of a soft-deleted project stay (they have no _deleted_at);
// snapshots are compared for the latest day, the one the truth describes.
const (
	live            = "_deleted_at IS NULL"
	ofLiveProjects  = "project_id IN (SELECT project_id FROM {schema}.projects WHERE _deleted_at IS NULL)"
	latestSnapshots = "snapshot_date = (SELECT max(snapshot_date) FROM {schema}.brand_financial_snapshots) AND brand_id IN (SELECT brand_id FROM {schema}.brands WHERE _deleted_at IS NULL)"
)

func cols(spec ...string) []col {
	out := make([]col, len(spec))
	for i, s := range spec {
		name, typ, _ := strings.Cut(s, ":")
		if typ == "" {
			typ = "text"
		}
		out[i] = col{name, typ}
	}
	return out
}

// compared lists every table the suite compares with the truth. raw is
// compared where the warehouse keeps one version of the record; brands and
// projects are written from two records (the list element, wrapped in
// brand_info or without team, and the detail), so their raw depends on which
// was written last and is left out.
var compared = []cmpTable{
	{name: "brands", nkey: 1, where: live, cols: cols("brand_id", "name", "status", "date_created:date", "account_manager",
		"projects_count:bigint", "total_budget:numeric", "invoiced:numeric", "collected:numeric", "currency",
		"general_info:jsonb", "metadata:jsonb")},
	{name: "brand_financial_snapshots", nkey: 2, where: latestSnapshots, cols: cols("brand_id", "snapshot_date:date",
		"total_budget:numeric", "invoiced:numeric", "collected:numeric", "currency")},
	{name: "brand_contacts", nkey: 2, where: live, cols: cols("brand_id", "contact_id", "first_name", "last_name",
		"full_name", "email", "phone", "position", "is_primary:boolean", "raw:jsonb")},
	{name: "projects", nkey: 1, where: live, cols: cols("project_id", "brand_id", "name", "status", "start_date:date",
		"deadline:date", "closed_at:timestamptz", "updated_at:timestamptz", "budget_amount:numeric", "budget_currency")},
	{name: "project_team_members", nkey: 2, where: ofLiveProjects, cols: cols("project_id", "user_id",
		"platform_user_id:bigint", "full_name", "role")},
	{name: "project_deliverables", nkey: 2, where: ofLiveProjects, cols: cols("project_id", "deliverable_id", "name",
		"due_date:date", "status", "delivered_at:timestamptz")},
	{name: "project_history", nkey: 4, where: ofLiveProjects, cols: cols("project_id", "at:timestamptz", "field",
		"seq:integer", "from_value", "to_value", "by_user_id")},
	{name: "budgets", nkey: 1, where: live, cols: cols("budget_id", "project_id", "brand_id", "amount:numeric", "currency",
		"period_start:date", "period_end:date", "updated_at:timestamptz", "raw:jsonb")},
	{name: "invoices", nkey: 1, where: live, cols: cols("invoice_id", "number", "project_id", "brand_id", "issue_date:date",
		"due_date:date", "amount:numeric", "currency", "status", "updated_at:timestamptz", "raw:jsonb")},
	{name: "collections", nkey: 1, where: live, cols: cols("collection_id", "invoice_id", "collected_on:date",
		"amount:numeric", "currency", "updated_at:timestamptz", "raw:jsonb")},
	{name: "payments", nkey: 1, where: live, cols: cols("payment_id", "project_id", "brand_id", "payee", "paid_on:date",
		"amount:numeric", "currency", "status", "updated_at:timestamptz", "raw:jsonb")},
	{name: "profitability", nkey: 3, where: live, cols: cols("level", "entity_id", "period:date", "revenue:numeric",
		"cost:numeric", "margin:numeric", "currency", "raw:jsonb")},
	{name: "agency_finance_summary", nkey: 1, where: live, cols: cols("period:date", "total_budget:numeric",
		"invoiced:numeric", "collected:numeric", "paid:numeric", "profit:numeric", "currency", "raw:jsonb")},
	{name: "emails", nkey: 1, cols: cols("record_id:bigint", "type_id:bigint", "type_name", "brand_id", "project_id",
		"subject", "message", "has_attachments:boolean", "size_bytes:bigint", "mailbox_id", "mailbox_thread",
		"email_at:timestamptz", "raw:jsonb")},
	{name: "users", nkey: 1, cols: cols("user_key", "platform_user_id:bigint", "first_name", "last_name", "full_name",
		"email", "phone", "avatar_url", "status")},
	{name: "email_recipients", nkey: 3, cols: cols("record_id:bigint", "role", "user_key")},
	{name: "rejected_records", nkey: 2, cols: cols("stream", "record_key", "payload:jsonb")},
}

// tableCheck is the comparison of one table with the truth.
type tableCheck struct {
	table                        string
	rows, distinct, want         int
	digest, wantDigest           string
	missing, unexpected, differs int
	sample                       []string
}

func (c tableCheck) ok() bool {
	return c.rows == c.want && c.distinct == c.rows && c.digest == c.wantDigest
}

// compareWithTruth compares the warehouse in schema with the truth, table by
// table: the rows and a content checksum of each side, computed by the same
// SQL. The expected side is the truth's rows (oracle.Expected) copied into a
// scratch schema. Any difference fails the test, naming up to five keys.
// It returns the checks and the sum of the compared rows.
func compareWithTruth(t *testing.T, pool *pgxpool.Pool, schema string, tr truth) ([]tableCheck, int) {
	t.Helper()
	checks, total := diffWithTruth(t, pool, schema, tr)
	for _, c := range checks {
		if !c.ok() {
			t.Errorf("%s differs from the truth: %d rows (%d distinct keys), truth %d; checksum %s, truth %s; %d missing, %d unexpected, %d differ; e.g.\n  %s",
				c.table, c.rows, c.distinct, c.want, c.digest, c.wantDigest, c.missing, c.unexpected, c.differs, strings.Join(c.sample, "\n  "))
		}
	}
	return checks, total
}

// diffWithTruth is compareWithTruth without the verdict.
func diffWithTruth(t *testing.T, pool *pgxpool.Pool, schema string, tr truth) ([]tableCheck, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	w := pgx.Identifier{schema}.Sanitize()
	var day time.Time
	if err := pool.QueryRow(ctx, "SELECT coalesce(max(snapshot_date), current_date) FROM "+w+".brand_financial_snapshots").Scan(&day); err != nil {
		t.Fatalf("read the snapshot day: %v", err)
	}
	exp, err := oracle.Expected(oracle.Truth(tr), day)
	if err != nil {
		t.Fatalf("the truth's expected rows: %v", err)
	}

	expSchema := "expected_" + randomHex(6)
	e := pgx.Identifier{expSchema}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+e); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA "+e+" CASCADE"); err != nil {
			t.Errorf("drop the expected rows: %v", err)
		}
	}()
	var checks []tableCheck
	total := 0
	for _, ct := range compared {
		names := make([]string, len(ct.cols))
		for k, c := range ct.cols {
			names[k] = pgx.Identifier{c.name}.Sanitize()
		}
		if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE TABLE %s.%s AS SELECT %s FROM %s.%s WITH NO DATA",
			e, ct.name, strings.Join(names, ", "), w, ct.name)); err != nil {
			t.Fatalf("create the expected %s: %v", ct.name, err)
		}
		colNames := make([]string, len(ct.cols))
		for k, c := range ct.cols {
			colNames[k] = c.name
		}
		if !slices.Equal(colNames, oracle.Columns[ct.name]) {
			t.Fatalf("%s: compared columns %v, the oracle's rows have %v", ct.name, colNames, oracle.Columns[ct.name])
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{expSchema, ct.name}, colNames, pgx.CopyFromRows(exp[ct.name])); err != nil {
			t.Fatalf("copy the expected %s: %v", ct.name, err)
		}
		c := checkTable(ctx, t, pool, ct, w, e)
		checks = append(checks, c)
		total += c.rows
	}
	t.Logf("compared %d tables (%d rows) with the truth in %s", len(checks), total, time.Since(start).Round(time.Millisecond))
	return checks, total
}

// checkTable computes both sides' counts and checksums and, when they
// differ, what differs.
func checkTable(ctx context.Context, t *testing.T, pool *pgxpool.Pool, ct cmpTable, w, e string) tableCheck {
	t.Helper()
	var keys, vals []string
	for k, c := range ct.cols {
		v := pgx.Identifier{c.name}.Sanitize()
		if c.typ == "numeric" {
			v = "trim_scale(" + v + ")" // 1250.5 and 1250.50 are one amount
		}
		if k < ct.nkey {
			keys = append(keys, v)
		}
		vals = append(vals, v)
	}
	side := func(schema, where string) string {
		q := fmt.Sprintf("SELECT ROW(%s)::text AS k, ROW(%s)::text AS r FROM %s.%s", strings.Join(keys, ", "),
			strings.Join(vals, ", "), schema, ct.name)
		if where != "" {
			q += " WHERE " + strings.ReplaceAll(where, "{schema}", schema)
		}
		return q
	}
	with := fmt.Sprintf("WITH w AS (%s), e AS (%s) ", side(w, ct.where), side(e, ""))
	digest := func(s string) string {
		return fmt.Sprintf("(SELECT count(*) FROM %[1]s), (SELECT count(DISTINCT k) FROM %[1]s), "+
			"(SELECT coalesce(md5(string_agg(k || '=' || md5(r), ',' ORDER BY k COLLATE \"C\", r COLLATE \"C\")), '') FROM %[1]s)", s)
	}
	c := tableCheck{table: ct.name}
	var wantDistinct int
	if err := pool.QueryRow(ctx, with+"SELECT "+digest("w")+", "+digest("e")).Scan(
		&c.rows, &c.distinct, &c.digest, &c.want, &wantDistinct, &c.wantDigest); err != nil {
		t.Fatalf("compare %s: %v", ct.name, err)
	}
	if c.ok() {
		return c
	}
	diff := with + `, d AS (SELECT coalesce(w.k, e.k) AS k, w.r AS got, e.r AS want FROM w FULL JOIN e ON w.k = e.k WHERE w.r IS DISTINCT FROM e.r) `
	if err := pool.QueryRow(ctx, diff+`SELECT count(*) FILTER (WHERE got IS NULL), count(*) FILTER (WHERE want IS NULL),
		count(*) FILTER (WHERE got IS NOT NULL AND want IS NOT NULL) FROM d`).Scan(&c.missing, &c.unexpected, &c.differs); err != nil {
		t.Fatalf("diff %s: %v", ct.name, err)
	}
	rows, err := pool.Query(ctx, diff+`SELECT k, coalesce(got, '(none)'), coalesce(want, '(none)') FROM d ORDER BY k COLLATE "C" LIMIT 5`)
	if err != nil {
		t.Fatalf("diff %s: %v", ct.name, err)
	}
	for rows.Next() {
		var k, got, want string
		if err := rows.Scan(&k, &got, &want); err != nil {
			t.Fatal(err)
		}
		c.sample = append(c.sample, fmt.Sprintf("key %s: warehouse %s, truth %s", k, clip(got), clip(want)))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// summarize renders the checks for the results table: tables and rows compared.
func summarize(checks []tableCheck, total int) string {
	bad := 0
	for _, c := range checks {
		if !c.ok() {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Sprintf("%d of %d tables differ from the truth", bad, len(checks))
	}
	return fmt.Sprintf("%d tables = truth (%d rows, counts and checksums)", len(checks), total)
}
