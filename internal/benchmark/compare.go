package benchmark

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// truthCol is a compared column: its name and whether it is numeric
// (compared with trailing zeros trimmed: 1250.5 and 1250.50 are one amount).
type truthCol struct {
	name    string
	numeric bool
}

// truthTable is a warehouse table as the comparison with the truth sees it:
// the key (the first nkey columns), the compared columns in
// oracle.Columns's order and which warehouse rows are compared. The
// bookkeeping columns (_synced_at, _deleted_at) are never compared; nor is
// the raw of brands and projects, which is written from either of two
// records (the list entry and the detail).
type truthTable struct {
	name  string
	nkey  int
	num   []string // numeric columns
	where string   // filter of the warehouse side; {schema} is the quoted schema
}

// Filters of the warehouse side: soft-deleted rows are not in the truth,
// the children of a soft-deleted project stay, and snapshots are compared
// for the latest day, the one the truth describes.
const (
	liveRows        = "_deleted_at IS NULL"
	ofLiveProjects  = "project_id IN (SELECT project_id FROM {schema}.projects WHERE _deleted_at IS NULL)"
	latestSnapshots = "snapshot_date = (SELECT max(snapshot_date) FROM {schema}.brand_financial_snapshots) AND brand_id IN (SELECT brand_id FROM {schema}.brands WHERE _deleted_at IS NULL)"
)

// truthTables lists every table oracle.Expected fills.
var truthTables = []truthTable{
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

// TruthCheck is the comparison of one warehouse table with the truth.
type TruthCheck struct {
	Table                     string
	Rows, Distinct, Want      int
	Digest, WantDigest        string
	Missing, Unexpected, Diff int
}

// OK reports a table that holds exactly the truth's rows.
func (c TruthCheck) OK() bool {
	return c.Rows == c.Want && c.Distinct == c.Rows && c.Digest == c.WantDigest
}

// compareWithTruth compares the warehouse in schema with the sandbox's
// whole truth, table by table: row counts and a content checksum of each
// side computed by the same SQL, the expected side being the oracle's rows
// (oracle.Expected, which shares no code with the worker) copied into a
// scratch schema dropped afterwards.
func (h *harness) compareWithTruth(ctx context.Context, sb *Sandbox, schema string) ([]TruthCheck, error) {
	body, err := sb.Truth(ctx)
	if err != nil {
		return nil, err
	}
	tr, err := oracle.Read(body)
	body.Close()
	if err != nil {
		return nil, fmt.Errorf("read truth: %w", err)
	}
	w := pgx.Identifier{schema}.Sanitize()
	var day time.Time
	if err := h.pool.QueryRow(ctx, "SELECT coalesce(max(snapshot_date), current_date) FROM "+w+".brand_financial_snapshots").Scan(&day); err != nil {
		return nil, fmt.Errorf("read snapshot day: %w", err)
	}
	exp, err := oracle.Expected(tr, day)
	if err != nil {
		return nil, fmt.Errorf("build expected rows: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	expSchema := "expected_" + hex.EncodeToString(b[:])
	e := pgx.Identifier{expSchema}.Sanitize()
	if _, err := h.pool.Exec(ctx, "CREATE SCHEMA "+e); err != nil {
		return nil, fmt.Errorf("create expected schema: %w", err)
	}
	defer h.dropSchema(expSchema)
	var checks []TruthCheck
	for _, tt := range truthTables {
		cols := oracle.Columns[tt.name]
		if len(cols) == 0 {
			return nil, fmt.Errorf("compare %s: the oracle has no columns for it", tt.name)
		}
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = pgx.Identifier{c}.Sanitize()
		}
		if _, err := h.pool.Exec(ctx, fmt.Sprintf("CREATE TABLE %s.%s AS SELECT %s FROM %s.%s WITH NO DATA",
			e, tt.name, strings.Join(names, ", "), w, tt.name)); err != nil {
			return nil, fmt.Errorf("create expected %s: %w", tt.name, err)
		}
		if _, err := h.pool.CopyFrom(ctx, pgx.Identifier{expSchema, tt.name}, cols, pgx.CopyFromRows(exp[tt.name])); err != nil {
			return nil, fmt.Errorf("copy expected %s: %w", tt.name, err)
		}
		c, err := h.checkTable(ctx, tt, cols, w, e)
		if err != nil {
			return nil, err
		}
		checks = append(checks, c)
	}
	return checks, nil
}

func (h *harness) checkTable(ctx context.Context, tt truthTable, cols []string, w, e string) (TruthCheck, error) {
	var keys, vals []string
	for i, name := range cols {
		v := pgx.Identifier{name}.Sanitize()
		if slices.Contains(tt.num, name) {
			v = "trim_scale(" + v + ")"
		}
		if i < tt.nkey {
			keys = append(keys, v)
		}
		vals = append(vals, v)
	}
	side := func(schema, where string) string {
		q := fmt.Sprintf("SELECT ROW(%s)::text AS k, ROW(%s)::text AS r FROM %s.%s", strings.Join(keys, ", "),
			strings.Join(vals, ", "), schema, tt.name)
		if where != "" {
			q += " WHERE " + strings.ReplaceAll(where, "{schema}", schema)
		}
		return q
	}
	with := fmt.Sprintf("WITH w AS (%s), e AS (%s) ", side(w, tt.where), side(e, ""))
	digest := func(s string) string {
		return fmt.Sprintf("(SELECT count(*) FROM %[1]s), (SELECT count(DISTINCT k) FROM %[1]s), "+
			"(SELECT coalesce(md5(string_agg(k || '=' || md5(r), ',' ORDER BY k COLLATE \"C\", r COLLATE \"C\")), '') FROM %[1]s)", s)
	}
	c := TruthCheck{Table: tt.name}
	var wantDistinct int
	if err := h.pool.QueryRow(ctx, with+"SELECT "+digest("w")+", "+digest("e")).Scan(
		&c.Rows, &c.Distinct, &c.Digest, &c.Want, &wantDistinct, &c.WantDigest); err != nil {
		return c, fmt.Errorf("compare %s: %w", tt.name, err)
	}
	if c.OK() {
		return c, nil
	}
	diff := with + `, d AS (SELECT w.r AS got, e.r AS want FROM w FULL JOIN e ON w.k = e.k WHERE w.r IS DISTINCT FROM e.r) `
	if err := h.pool.QueryRow(ctx, diff+`SELECT count(*) FILTER (WHERE got IS NULL), count(*) FILTER (WHERE want IS NULL),
		count(*) FILTER (WHERE got IS NOT NULL AND want IS NOT NULL) FROM d`).Scan(&c.Missing, &c.Unexpected, &c.Diff); err != nil {
		return c, fmt.Errorf("diff %s: %w", tt.name, err)
	}
	return c, nil
}

// truthSummary says how the warehouse compared with the truth.
func truthSummary(checks []TruthCheck) (ok bool, text string) {
	var bad []string
	total := 0
	for _, c := range checks {
		total += c.Rows
		if !c.OK() {
			bad = append(bad, fmt.Sprintf("%s: %d rows, truth %d; %d missing, %d unexpected, %d differ",
				c.Table, c.Rows, c.Want, c.Missing, c.Unexpected, c.Diff))
		}
	}
	if len(bad) > 0 {
		return false, fmt.Sprintf("%d of %d tables differ from the truth (%s)", len(bad), len(checks), strings.Join(bad, "; "))
	}
	return true, fmt.Sprintf("%d tables = the truth (%s rows, counts and checksums against oracle.Expected)", len(checks), Int(int64(total)))
}
