package oracle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// compared is a warehouse table as the comparison sees it: how many of its
// Columns are the key, which are numeric (compared with trailing zeros
// trimmed: 1250.5 and 1250.50 are one amount) and which warehouse rows are
// compared. The bookkeeping columns (_synced_at, _deleted_at) are never
// compared.
type compared struct {
	name  string
	nkey  int
	num   []string
	where string // filter of the warehouse side; {schema} is the quoted schema
}

// Filters of the warehouse side: soft-deleted rows are not in the truth, the
// children of a soft-deleted project stay (they have no _deleted_at), and
// snapshots are compared for the latest day, the one the truth describes.
const (
	liveRows        = "_deleted_at IS NULL"
	ofLiveProjects  = "project_id IN (SELECT project_id FROM {schema}.projects WHERE _deleted_at IS NULL)"
	latestSnapshots = "snapshot_date = (SELECT max(snapshot_date) FROM {schema}.brand_financial_snapshots) AND brand_id IN (SELECT brand_id FROM {schema}.brands WHERE _deleted_at IS NULL)"
)

// comparedTables lists every table Expected fills, in Compare's order.
var comparedTables = []compared{
	{"brands", 1, []string{"total_budget", "invoiced", "collected"}, liveRows},
	{"brand_financial_snapshots", 2, []string{"total_budget", "invoiced", "collected"}, latestSnapshots},
	{"brand_contacts", 2, nil, liveRows},
	{"projects", 1, []string{"budget_amount"}, liveRows},
	{"project_team_members", 2, nil, ofLiveProjects},
	{"project_deliverables", 2, nil, ofLiveProjects},
	{"project_history", 4, nil, ofLiveProjects},
	{"budgets", 1, []string{"amount"}, liveRows},
	{"invoices", 1, []string{"amount"}, liveRows},
	{"collections", 1, []string{"amount"}, liveRows},
	{"payments", 1, []string{"amount"}, liveRows},
	{"profitability", 3, []string{"revenue", "cost", "margin"}, liveRows},
	{"agency_finance_summary", 1, []string{"total_budget", "invoiced", "collected", "paid", "profit"}, liveRows},
	{"emails", 1, nil, ""},
	{"users", 1, nil, ""},
	{"email_recipients", 3, nil, ""},
	{"rejected_records", 2, nil, ""},
}

// Check is the comparison of one warehouse table with the truth.
type Check struct {
	Table string
	// Rows and Distinct count the warehouse's compared rows and their
	// distinct keys; Want counts the truth's rows.
	Rows, Distinct, Want int
	// Digest and WantDigest are content checksums of each side, computed by
	// the same SQL.
	Digest, WantDigest string
	// Missing, Unexpected and Differs count the keys only the truth has,
	// only the warehouse has, and both have with different values (filled
	// only when the digests differ).
	Missing, Unexpected, Differs int
	// Sample describes up to five differing keys.
	Sample []string
}

// OK reports a table that holds exactly the truth's rows.
func (c Check) OK() bool {
	return c.Rows == c.Want && c.Distinct == c.Rows && c.Digest == c.WantDigest
}

// Compare compares the warehouse in schema with the truth, table by table:
// row counts and a content checksum of each side computed by the same SQL,
// the expected side being Expected's rows (which share no code with the
// worker) copied into a scratch schema dropped afterwards. The snapshot day
// is the warehouse's latest. It returns one Check per table; an error means
// the comparison itself could not be made.
func Compare(ctx context.Context, pool *pgxpool.Pool, schema string, tr Truth) ([]Check, error) {
	w := pgx.Identifier{schema}.Sanitize()
	var day time.Time
	if err := pool.QueryRow(ctx, "SELECT coalesce(max(snapshot_date), current_date) FROM "+w+".brand_financial_snapshots").Scan(&day); err != nil {
		return nil, fmt.Errorf("read snapshot day: %w", err)
	}
	exp, err := Expected(tr, day)
	if err != nil {
		return nil, fmt.Errorf("build expected rows: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	expSchema := "expected_" + hex.EncodeToString(b[:])
	e := pgx.Identifier{expSchema}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+e); err != nil {
		return nil, fmt.Errorf("create expected schema: %w", err)
	}
	defer func() {
		// A fresh context: the comparison's may be the one that ended.
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = pool.Exec(dctx, "DROP SCHEMA "+e+" CASCADE")
	}()
	checks := make([]Check, 0, len(comparedTables))
	for _, ct := range comparedTables {
		cols := Columns[ct.name]
		if len(cols) == 0 {
			return nil, fmt.Errorf("compare %s: the oracle has no columns for it", ct.name)
		}
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = pgx.Identifier{c}.Sanitize()
		}
		if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE TABLE %s.%s AS SELECT %s FROM %s.%s WITH NO DATA",
			e, ct.name, strings.Join(names, ", "), w, ct.name)); err != nil {
			return nil, fmt.Errorf("create expected %s: %w", ct.name, err)
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{expSchema, ct.name}, cols, pgx.CopyFromRows(exp[ct.name])); err != nil {
			return nil, fmt.Errorf("copy expected %s: %w", ct.name, err)
		}
		c, err := checkTable(ctx, pool, ct, cols, w, e)
		if err != nil {
			return nil, err
		}
		checks = append(checks, c)
	}
	return checks, nil
}

// checkTable computes both sides' counts and checksums and, when they
// differ, what differs.
func checkTable(ctx context.Context, pool *pgxpool.Pool, ct compared, cols []string, w, e string) (Check, error) {
	var keys, vals []string
	for i, name := range cols {
		v := pgx.Identifier{name}.Sanitize()
		if slices.Contains(ct.num, name) {
			v = "trim_scale(" + v + ")"
		}
		if i < ct.nkey {
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
	c := Check{Table: ct.name}
	var wantDistinct int
	if err := pool.QueryRow(ctx, with+"SELECT "+digest("w")+", "+digest("e")).Scan(
		&c.Rows, &c.Distinct, &c.Digest, &c.Want, &wantDistinct, &c.WantDigest); err != nil {
		return c, fmt.Errorf("compare %s: %w", ct.name, err)
	}
	if c.OK() {
		return c, nil
	}
	diff := with + `, d AS (SELECT coalesce(w.k, e.k) AS k, w.r AS got, e.r AS want FROM w FULL JOIN e ON w.k = e.k WHERE w.r IS DISTINCT FROM e.r) `
	if err := pool.QueryRow(ctx, diff+`SELECT count(*) FILTER (WHERE got IS NULL), count(*) FILTER (WHERE want IS NULL),
		count(*) FILTER (WHERE got IS NOT NULL AND want IS NOT NULL) FROM d`).Scan(&c.Missing, &c.Unexpected, &c.Differs); err != nil {
		return c, fmt.Errorf("diff %s: %w", ct.name, err)
	}
	rows, err := pool.Query(ctx, diff+`SELECT k, coalesce(got, '(none)'), coalesce(want, '(none)') FROM d ORDER BY k COLLATE "C" LIMIT 5`)
	if err != nil {
		return c, fmt.Errorf("diff %s: %w", ct.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, got, want string
		if err := rows.Scan(&k, &got, &want); err != nil {
			return c, fmt.Errorf("read diff of %s: %w", ct.name, err)
		}
		c.Sample = append(c.Sample, fmt.Sprintf("key %s: warehouse %s, truth %s", k, clip(got), clip(want)))
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("read diff of %s: %w", ct.name, err)
	}
	return c, nil
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// Summary says in one line how the warehouse compared with the truth, and
// whether every table matched.
func Summary(checks []Check) (ok bool, text string) {
	var bad []string
	total := 0
	for _, c := range checks {
		total += c.Rows
		if !c.OK() {
			bad = append(bad, fmt.Sprintf("%s: %d rows, truth %d; %d missing, %d unexpected, %d differ",
				c.Table, c.Rows, c.Want, c.Missing, c.Unexpected, c.Differs))
		}
	}
	if len(bad) > 0 {
		return false, fmt.Sprintf("%d of %d tables differ from the truth (%s)", len(bad), len(checks), strings.Join(bad, "; "))
	}
	return true, fmt.Sprintf("%d tables = the truth (%d rows, counts and checksums against oracle.Expected)", len(checks), total)
}
