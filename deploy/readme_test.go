package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/cli"
	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// --- reading the README ----------------------------------------------------------

// readme returns the documentation: README.md, then every docs/*.md in
// name order (the README links each of them), as one text.
func readme(t *testing.T) string {
	t.Helper()
	docs, err := filepath.Glob(repo + "/docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(docs)
	parts := []string{readFile(t, repo+"/README.md")}
	for _, d := range docs {
		parts = append(parts, readFile(t, d))
	}
	return strings.Join(parts, "\n")
}

// section returns a "## title" section of the documentation, up to the
// next "## ".
func section(t *testing.T, text, title string) string {
	t.Helper()
	start := strings.Index(text, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("the documentation (README.md and docs/) has no section %q", title)
	}
	rest := text[start+1:]
	if end := strings.Index(rest[3:], "\n## "); end >= 0 {
		rest = rest[:end+4]
	}
	return rest
}

// codeBlock is a fenced block with the heading it stands under.
type codeBlock struct {
	Lang, Body, Heading string
}

func codeBlocks(text string) []codeBlock {
	var out []codeBlock
	heading := ""
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "#!") {
			heading = strings.TrimSpace(strings.TrimLeft(l, "#"))
			continue
		}
		if !strings.HasPrefix(l, "```") {
			continue
		}
		b := codeBlock{Lang: strings.TrimPrefix(l, "```"), Heading: heading}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		b.Body = strings.Join(body, "\n")
		out = append(out, b)
	}
	return out
}

// inSchema points a README query at a test schema.
func inSchema(sql, schema string) string {
	return regexp.MustCompile(`\bagency\.`).ReplaceAllString(sql, pgx.Identifier{schema}.Sanitize()+".")
}

// --- a warehouse synced from the sandbox -------------------------------------

type synced struct {
	cancelled string // number of an overdue invoice the test cancelled
	sb        *sandbox.Server
	opts      sandbox.Options
	vars      map[string]string
	pool      *pgxpool.Pool
	schema    string
}

func newSynced(t *testing.T, tune func(*sandbox.Options)) *synced {
	t.Helper()
	o := sandbox.DefaultOptions()
	o.Brands, o.ProjectsPerBrand, o.Users, o.Emails, o.HistoryDays = 3, 2, 10, 1500, 30
	o.NoLimits = true
	if tune != nil {
		tune(&o)
	}
	sb := sandbox.StartT(t, o)
	s := &synced{sb: sb, opts: o, pool: warehousetest.Pool(t), schema: warehousetest.NewSchemaName(t)}
	s.vars = map[string]string{
		"DATABASE_URL":            warehousetest.DSN(t),
		"WAREHOUSE_SCHEMA":        s.schema,
		"AGENCY_BASE_URL":         sb.APIURL(),
		"AGENCY_COMMS_URL":        sb.CommsURL(),
		"AGENCY_API_KEY":          o.APIKey,
		"AGENCY_COMMS_KEY":        o.CommsKey,
		"AGENCY_COMMS_DOMAIN_ID":  strconv.FormatInt(o.DomainID, 10),
		"AGENCY_COMMS_USER_IDS":   fmt.Sprintf("1-%d", o.Users),
		"AGENCY_COMMS_START_DATE": o.Start.AddDate(0, 0, -o.HistoryDays-1).Format("2006-01-02"),
		"AGENCY_RATE_LIMIT":       "200",
		"HTTP_ADDR":               "127.0.0.1:0",
		"LOG_FORMAT":              "json",
	}
	return s
}

// main runs agencysync in-process with the warehouse's environment plus
// extra variables.
func (s *synced) main(ctx context.Context, extra map[string]string, stdout, stderr io.Writer, args ...string) int {
	env := cli.Env{Stdout: stdout, Stderr: stderr, ReadFile: func(string) ([]byte, error) { return nil, fmt.Errorf("no files here") },
		Lookup: func(k string) (string, bool) {
			if v, ok := extra[k]; ok {
				return v, true
			}
			v, ok := s.vars[k]
			return v, ok
		}}
	return cli.Main(ctx, args, env)
}

func (s *synced) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb strings.Builder
	if code := s.main(contextWithTimeout(t, 3*time.Minute), nil, &out, &errb, args...); code != cli.ExitOK {
		t.Fatalf("agencysync %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// query runs sql and returns its rows as column → value maps.
func (s *synced) query(t *testing.T, sql string, args ...any) []map[string]any {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		row := map[string]any{}
		for i, fd := range rows.FieldDescriptions() {
			row[fd.Name] = vals[i]
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	return out
}

// num reads a numeric, integer or NULL (as 0) value exactly.
func num(t *testing.T, v any) *big.Rat {
	t.Helper()
	switch x := v.(type) {
	case nil:
		return new(big.Rat)
	case int64:
		return new(big.Rat).SetInt64(x)
	case int32:
		return new(big.Rat).SetInt64(int64(x))
	case pgtype.Numeric:
		if !x.Valid {
			return new(big.Rat)
		}
		r := new(big.Rat).SetInt(x.Int)
		exp := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(x.Exp))), nil))
		if x.Exp >= 0 {
			return r.Mul(r, exp)
		}
		return r.Quo(r, exp)
	}
	t.Fatalf("not a number: %T %v", v, v)
	return nil
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "none"
	}
	return r.FloatString(2)
}

func abs(n int32) int32 {
	if n < 0 {
		return -n
	}
	return n
}

func day(t *testing.T, v any) time.Time {
	t.Helper()
	d, ok := v.(time.Time)
	if !ok {
		t.Fatalf("not a date: %T %v", v, v)
	}
	return d
}

func text(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// --- the cookbook ------------------------------------------------------------------

// cookbookChecks says what "sensible rows" means for each query of the
// cookbook, by its heading. Each check recomputes the answer another way
// (from the base tables, or from the sandbox's own aggregates).
var cookbookChecks = map[string]func(t *testing.T, s *synced, rows []map[string]any){
	"E-mails per brand per week": func(t *testing.T, s *synced, rows []map[string]any) {
		total := new(big.Rat)
		weeks := map[time.Time]bool{}
		for _, r := range rows {
			w := day(t, r["week"])
			weeks[w] = true
			if w.Weekday() != time.Monday || text(r["brand_name"]) == "" || num(t, r["emails"]).Sign() <= 0 {
				t.Errorf("row %v: want a Monday, a brand name and e-mails", r)
			}
			if num(t, r["threads"]).Cmp(num(t, r["emails"])) > 0 || num(t, r["with_attachments"]).Cmp(num(t, r["emails"])) > 0 {
				t.Errorf("row %v: more threads or attachments than e-mails", r)
			}
			total.Add(total, num(t, r["emails"]))
		}
		if len(weeks) < 2 || len(weeks) > 12 {
			t.Errorf("%d weeks, want 2 to 12", len(weeks))
		}
		want := s.query(t, inSchema(`SELECT count(*) AS n FROM agency.emails
WHERE brand_id IS NOT NULL AND email_at >= date_trunc('week', now()) - interval '11 weeks'`, s.schema))[0]["n"]
		if total.Cmp(num(t, want)) != 0 {
			t.Errorf("the weeks add up to %s e-mails, the emails table has %v", total.FloatString(0), want)
		}
	},
	"Activity per user": func(t *testing.T, s *synced, rows []map[string]any) {
		sent := new(big.Rat)
		for _, r := range rows {
			if r["platform_user_id"] == nil || text(r["full_name"]) == "" {
				t.Errorf("row %v: want the agency's own people only", r)
			}
			sent.Add(sent, num(t, r["sent"]))
		}
		want := s.query(t, inSchema(`SELECT count(*) AS n FROM agency.email_activity
WHERE sender_platform_user_id IS NOT NULL AND email_at >= now() - interval '30 days'`, s.schema))[0]["n"]
		if sent.Cmp(num(t, want)) != 0 || sent.Sign() == 0 {
			t.Errorf("users sent %s e-mails, email_activity says %v", sent.FloatString(0), want)
		}
	},
	"Invoiced vs collected per brand and month": func(t *testing.T, s *synced, rows []map[string]any) {
		revenue := map[string]*big.Rat{}
		for _, r := range s.query(t, inSchema(`SELECT entity_id, period, revenue FROM agency.profitability WHERE level = 'brand'`, s.schema)) {
			revenue[text(r["entity_id"])+" "+day(t, r["period"]).Format("2006-01")] = num(t, r["revenue"])
		}
		invoiced, collected := map[string]*big.Rat{}, map[string]*big.Rat{}
		for _, r := range rows {
			brand := text(r["brand_id"])
			key := brand + " " + day(t, r["month"]).Format("2006-01")
			inv := num(t, r["invoiced"])
			// The sandbox's profitability counts the same invoices by the same month.
			if want, ok := revenue[key]; (ok && want.Cmp(inv) != 0) || (!ok && inv.Sign() != 0) {
				t.Errorf("%s: invoiced %s, brand profitability revenue %s", key, inv.FloatString(2), ratString(want))
			}
			if invoiced[brand] == nil {
				invoiced[brand], collected[brand] = new(big.Rat), new(big.Rat)
			}
			invoiced[brand].Add(invoiced[brand], inv)
			collected[brand].Add(collected[brand], num(t, r["collected"]))
		}
		// And the months add up to the brand's financial summary.
		for _, b := range s.query(t, inSchema(`SELECT brand_id, invoiced, collected FROM agency.brands WHERE _deleted_at IS NULL`, s.schema)) {
			id := text(b["brand_id"])
			if invoiced[id] == nil {
				t.Errorf("brand %s is missing", id)
				continue
			}
			if invoiced[id].Cmp(num(t, b["invoiced"])) != 0 || collected[id].Cmp(num(t, b["collected"])) != 0 {
				t.Errorf("brand %s: months add up to %s invoiced and %s collected, its summary says %s and %s",
					id, invoiced[id].FloatString(2), collected[id].FloatString(2), num(t, b["invoiced"]).FloatString(2), num(t, b["collected"]).FloatString(2))
			}
		}
	},
	"Overdue invoices": func(t *testing.T, s *synced, rows []map[string]any) {
		got := keysOfPositiveRows(t, rows, "number", "not overdue", "outstanding", "days_overdue")
		if got[s.cancelled] {
			t.Errorf("cancelled invoice %s is listed as overdue", s.cancelled)
		}
		want := map[string]bool{}
		today := day(t, s.query(t, `SELECT current_date AS d`)[0]["d"])
		collected := map[string]*big.Rat{}
		for _, c := range s.query(t, inSchema(`SELECT invoice_id, amount FROM agency.collections WHERE _deleted_at IS NULL`, s.schema)) {
			id := text(c["invoice_id"])
			if collected[id] == nil {
				collected[id] = new(big.Rat)
			}
			collected[id].Add(collected[id], num(t, c["amount"]))
		}
		for _, i := range s.query(t, inSchema(`SELECT invoice_id, number, status, due_date, amount FROM agency.invoices WHERE _deleted_at IS NULL`, s.schema)) {
			c := collected[text(i["invoice_id"])]
			if c == nil {
				c = new(big.Rat)
			}
			if text(i["status"]) != "anulată" && day(t, i["due_date"]).Before(today) && num(t, i["amount"]).Cmp(c) > 0 {
				want[text(i["number"])] = true
			}
		}
		if len(want) == 0 {
			t.Fatal("the sandbox has no overdue invoice left to find")
		}
		if !mapsEqual(got, want) {
			t.Errorf("overdue invoices %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	},
	"Projects past deadline with open deliverables": func(t *testing.T, s *synced, rows []map[string]any) {
		got := keysOfPositiveRows(t, rows, "project_id", "not late, or nothing open", "days_late", "open_deliverables")
		want := map[string]bool{}
		for _, r := range s.query(t, inSchema(`SELECT p.project_id FROM agency.projects p
WHERE p._deleted_at IS NULL AND p.closed_at IS NULL AND p.deadline < current_date
  AND EXISTS (SELECT 1 FROM agency.project_deliverables d WHERE d.project_id = p.project_id AND d.delivered_at IS NULL)`, s.schema)) {
			want[text(r["project_id"])] = true
		}
		if !mapsEqual(got, want) || len(got) == 0 {
			t.Errorf("late projects %v, want %v (and at least the one made late)", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	},
	"Brand finances": func(t *testing.T, s *synced, rows []map[string]any) {
		brands := s.query(t, inSchema(`SELECT count(*) AS n FROM agency.brands WHERE _deleted_at IS NULL`, s.schema))[0]["n"]
		if num(t, brands).Cmp(new(big.Rat).SetInt64(int64(len(rows)))) != 0 {
			t.Errorf("%d rows for %v brands", len(rows), brands)
		}
		for _, r := range rows {
			inv, col := num(t, r["invoiced"]), num(t, r["collected"])
			if out := new(big.Rat).Sub(inv, col); out.Cmp(num(t, r["outstanding"])) != 0 {
				t.Errorf("%v: outstanding is not invoiced minus collected", r["name"])
			}
			if inv.Sign() > 0 {
				pct, _ := new(big.Rat).Quo(new(big.Rat).Mul(col, big.NewRat(100, 1)), inv).Float64()
				got, _ := num(t, r["collected_pct"]).Float64()
				if d := pct - got; d > 0.051 || d < -0.051 {
					t.Errorf("%v: collected_pct %v, want %.1f", r["name"], got, pct)
				}
			}
			if r["profitability_period"] == nil {
				t.Errorf("%v: no profitability month", r["name"])
			}
		}
	},
	"Agency month by month": func(t *testing.T, s *synced, rows []map[string]any) {
		if len(rows) < 2 {
			t.Fatalf("%d months", len(rows))
		}
		now := time.Now()
		for i, r := range rows {
			m := day(t, r["month"])
			if m.Day() != 1 || m.After(now) || text(r["currency"]) != "RON" {
				t.Errorf("row %v: want the first day of a past or current month, in RON", r)
			}
			if p := new(big.Rat).Sub(num(t, r["invoiced"]), num(t, r["paid"])); p.Cmp(num(t, r["profit"])) != 0 {
				t.Errorf("%s: profit is not invoiced minus paid", m.Format("2006-01"))
			}
			if i > 0 && !m.Before(day(t, rows[i-1]["month"])) {
				t.Errorf("months are not newest first")
			}
		}
	},
	"Data freshness": func(t *testing.T, s *synced, rows []map[string]any) {
		var streams []string
		for _, r := range rows {
			streams = append(streams, text(r["stream"]))
			if text(r["last_run_status"]) != "succeeded" || r["stale"] != false || r["last_success_at"] == nil {
				t.Errorf("row %v: want a fresh stream whose last run succeeded", r)
			}
		}
		want := slices.Clone(engine.AllStreams)
		sort.Strings(want)
		if !slices.Equal(streams, want) {
			t.Errorf("streams %v, want %v", streams, want)
		}
	},
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// keysOfPositiveRows returns the set of the rows' key column, and reports
// (as problem) each row in which one of cols is not positive.
func keysOfPositiveRows(t *testing.T, rows []map[string]any, key, problem string, cols ...string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, r := range rows {
		got[text(r[key])] = true
		if slices.ContainsFunc(cols, func(c string) bool { return num(t, r[c]).Sign() <= 0 }) {
			t.Errorf("row %v: %s", r, problem)
		}
	}
	return got
}

// TestReadmeCookbook runs every SQL block of the README against a warehouse
// synced from the sandbox (its clock at today, so "the last 12 weeks" has
// data): the cookbook's queries must return the rows their checks
// recompute; the other blocks (troubleshooting) must run.
func TestReadmeCookbook(t *testing.T) {
	t.Parallel()
	s := newSynced(t, func(o *sandbox.Options) {
		o.Start = time.Now().UTC().Truncate(time.Second)
		o.Brands, o.ProjectsPerBrand, o.Users, o.Emails, o.HistoryDays = 4, 3, 20, 3000, 120
	})
	s.mustRun(t, "run")
	// Make one open project with open deliverables late, as happens.
	open := s.query(t, inSchema(`SELECT p.project_id FROM agency.projects p
WHERE p.closed_at IS NULL AND EXISTS (SELECT 1 FROM agency.project_deliverables d WHERE d.project_id = p.project_id AND d.delivered_at IS NULL)
ORDER BY p.project_id LIMIT 1`, s.schema))
	if len(open) != 1 {
		t.Fatal("the sandbox has no open project with open deliverables")
	}
	id, _ := strconv.ParseInt(text(open[0]["project_id"]), 10, 64)
	late := time.Now().AddDate(0, 0, -10).Format("2006-01-02")
	if err := s.sb.EditProject(id, sandbox.ProjectEdit{Deadline: &late}); err != nil {
		t.Fatal(err)
	}
	// And cancel an overdue invoice: the queries must leave it out.
	overdue := s.query(t, inSchema(`SELECT invoice_id, number FROM agency.invoices WHERE status = 'restantă' ORDER BY invoice_id LIMIT 1`, s.schema))
	if len(overdue) != 1 {
		t.Fatal("the sandbox has no overdue invoice")
	}
	invoice, _ := strconv.ParseInt(text(overdue[0]["invoice_id"]), 10, 64)
	cancelled := "anulată"
	if err := s.sb.EditFinance("invoices", invoice, sandbox.FinanceEdit{Status: &cancelled}); err != nil {
		t.Fatal(err)
	}
	s.cancelled = text(overdue[0]["number"])
	s.mustRun(t, "run")
	if got := s.query(t, inSchema(`SELECT deadline::text AS d FROM agency.projects WHERE project_id = $1`, s.schema), strconv.FormatInt(id, 10)); len(got) != 1 || text(got[0]["d"]) != late {
		t.Fatalf("project %d's new deadline did not sync: %v", id, got)
	}
	if got := s.query(t, inSchema(`SELECT status FROM agency.invoices WHERE number = $1`, s.schema), s.cancelled); len(got) != 1 || text(got[0]["status"]) != cancelled {
		t.Fatalf("invoice %s's cancellation did not sync: %v", s.cancelled, got)
	}

	md := readme(t)
	cookbook := section(t, md, "Analysts' SQL cookbook")
	checked := map[string]bool{}
	for _, b := range codeBlocks(cookbook) {
		if b.Lang != "sql" {
			t.Errorf("cookbook block under %q is %q, want sql", b.Heading, b.Lang)
			continue
		}
		check, ok := cookbookChecks[b.Heading]
		if !ok {
			t.Errorf("cookbook query %q has no check in readme_test.go", b.Heading)
			continue
		}
		if checked[b.Heading] {
			t.Errorf("two queries under %q", b.Heading)
		}
		checked[b.Heading] = true
		t.Run(b.Heading, func(t *testing.T) {
			rows := s.query(t, inSchema(b.Body, s.schema))
			if len(rows) == 0 {
				t.Fatal("no rows")
			}
			check(t, s, rows)
		})
	}
	for h := range cookbookChecks {
		if !checked[h] {
			t.Errorf("the cookbook has no query %q", h)
		}
	}
	if len(checked) < 6 {
		t.Errorf("the cookbook has %d queries, want at least 6", len(checked))
	}
	others := 0
	for _, b := range codeBlocks(strings.Replace(md, cookbook, "", 1)) {
		if b.Lang == "sql" {
			others++
			if rows := s.query(t, inSchema(b.Body, s.schema)); b.Heading == "Troubleshooting" && len(rows) == 0 && strings.Contains(b.Body, "sync_runs") {
				t.Errorf("the runs query under %q returned nothing", b.Heading)
			}
		}
	}
	if others == 0 {
		t.Error("no SQL outside the cookbook: the troubleshooting queries are missing")
	}
}

// --- the commands ------------------------------------------------------------------

var (
	inlineCmdRE = regexp.MustCompile("`(agencysync [^`]+)`")
	placeholder = regexp.MustCompile(`^[A-Z]+$`)
)

// readmeCommands returns every agencysync command line of the README: lines
// of sh blocks, and inline code spans. Synopses (with [optional] parts,
// alternatives or PLACEHOLDERS) are returned apart.
func readmeCommands(t *testing.T) (lines, synopses []string) {
	t.Helper()
	text := readme(t)
	seen := map[string]bool{}
	add := func(cmd string) {
		cmd = strings.TrimSpace(strings.ReplaceAll(cmd, `\|`, "|"))
		if seen[cmd] {
			return
		}
		seen[cmd] = true
		words, err := shellWords(cmd)
		if err != nil {
			t.Fatalf("README command %q: %v", cmd, err)
		}
		synopsis := strings.ContainsAny(cmd, "[|…")
		for _, w := range words {
			if placeholder.MatchString(w) || w == "a,b" {
				synopsis = true
			}
		}
		if synopsis {
			synopses = append(synopses, cmd)
		} else {
			lines = append(lines, cmd)
		}
	}
	for _, b := range codeBlocks(text) {
		if b.Lang != "sh" && b.Lang != "bash" && b.Lang != "console" {
			continue
		}
		for _, l := range strings.Split(b.Body, "\n") {
			l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "$ "))
			if c, _, ok := strings.Cut(l, " #"); ok {
				l = strings.TrimSpace(c)
			}
			if strings.HasPrefix(l, "agencysync ") || strings.Contains(l, " agencysync ") {
				if strings.ContainsAny(l, ";&|<>$`") {
					t.Errorf("README command %q uses shell syntax the test cannot run", l)
					continue
				}
				add(l)
			}
		}
	}
	for _, m := range inlineCmdRE.FindAllStringSubmatch(text, -1) {
		add(m[1])
	}
	return lines, synopses
}

// TestReadmeCommandLines runs every agencysync command line the README shows
// (its sh blocks in order, then its inline code) against a warehouse synced
// from the sandbox; serve is started, probed and stopped.
func TestReadmeCommandLines(t *testing.T) {
	t.Parallel()
	lines, _ := readmeCommands(t)
	if len(lines) < 8 {
		t.Fatalf("found only %d command lines in README.md: %v", len(lines), lines)
	}
	s := newSynced(t, nil)
	ran := map[string]bool{}
	for _, line := range lines {
		words, _ := shellWords(line)
		extra := map[string]string{}
		for len(words) > 0 && strings.Contains(words[0], "=") {
			k, v, _ := strings.Cut(words[0], "=")
			if !configVariables().known[k] {
				t.Errorf("%q sets %s, which is not a configuration variable", line, k)
			}
			extra[k] = v
			words = words[1:]
		}
		if len(words) < 2 || words[0] != "agencysync" {
			t.Errorf("%q is not an agencysync command", line)
			continue
		}
		args := words[1:]
		if args[0] == "fleet" {
			// A fleet needs its FLEET_FILE of agencies: cli's fleet tests
			// and reliability's fleet scenario run these commands.
			continue
		}
		ran[args[0]] = true
		t.Run(line, func(t *testing.T) {
			if args[0] == "serve" {
				runServe(t, s, extra, args)
				return
			}
			var out, errb strings.Builder
			code := s.main(contextWithTimeout(t, 3*time.Minute), extra, &out, &errb, args...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d\n%s", code, errb.String())
			}
			checkOutput(t, args, out.String())
		})
	}
	for _, c := range []string{"run", "plan", "status", "backfill", "migrate", "serve"} {
		if !ran[c] {
			t.Errorf("the README shows no %q command line", c)
		}
	}
	// The commands left the warehouse synced.
	var rep engine.StatusReport
	if err := json.Unmarshal([]byte(s.mustRun(t, "status", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	for _, st := range rep.Streams {
		if st.LastSuccess == nil {
			t.Errorf("stream %s never synced", st.Stream)
		}
	}
}

func checkOutput(t *testing.T, args []string, out string) {
	t.Helper()
	switch {
	case args[0] == "plan":
		if !strings.HasPrefix(out, "quota day ") || !strings.Contains(out, "TASK") {
			t.Errorf("plan printed:\n%s", out)
		}
	case args[0] == "status" && slices.Contains(args, "--json"):
		var rep engine.StatusReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Streams) != len(engine.AllStreams) {
			t.Errorf("status --json: %v\n%s", err, out)
		}
	case args[0] == "status":
		if !strings.Contains(out, "STREAM") || !strings.Contains(out, "RUN") {
			t.Errorf("status printed:\n%s", out)
		}
	case args[0] == "migrate" && len(args) > 1 && args[1] == "status":
		if !strings.Contains(out, "00001") {
			t.Errorf("migrate status printed:\n%s", out)
		}
	case args[0] == "config":
		for _, v := range config.Variables() {
			if !strings.Contains(out, v.Name) {
				t.Errorf("config does not list %s", v.Name)
			}
		}
	case args[0] == "check":
		if !strings.Contains(out, "ENDPOINT") || !strings.Contains(out, "everything maps") {
			t.Errorf("check printed:\n%s", out)
		}
	case args[0] == "version":
		if !strings.HasPrefix(out, "agencysync ") {
			t.Errorf("version printed %q", out)
		}
	}
}

// runServe starts `agencysync serve`, fetches /healthz, /readyz and /metrics
// and stops it as SIGTERM would (its context ends): it must exit 0.
func runServe(t *testing.T, s *synced, extra map[string]string, args []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb childproc.Buffer
	done := make(chan int, 1)
	go func() { done <- s.main(ctx, extra, io.Discard, &errb, args...) }()
	addr := ""
	for deadline := time.Now().Add(time.Minute); addr == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		sc := bufio.NewScanner(strings.NewReader(errb.String()))
		for sc.Scan() {
			var l struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "serving health and metrics" {
				addr = l.Addr
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before serving\n%s", code, errb.String())
		default:
		}
	}
	if addr == "" {
		t.Fatalf("serve did not log its address\n%s", errb.String())
	}
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "agencysync_quota_left_requests"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %.200s", path, resp.StatusCode, body)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != cli.ExitOK {
			t.Errorf("serve exit %d after its context ended\n%s", code, errb.String())
		}
	case <-patience.After(t):
		t.Fatal("serve did not stop before the test's deadline")
	}
}

// TestReadmeCommandSynopses: each synopsis of the README names a real
// command and only flags it has, and the exit code table is the CLI's.
func TestReadmeCommandSynopses(t *testing.T) {
	t.Parallel()
	_, synopses := readmeCommands(t)
	if len(synopses) < 5 {
		t.Fatalf("found only %d synopses: %v", len(synopses), synopses)
	}
	empty := func(string) (string, bool) { return "", false }
	for _, syn := range synopses {
		words, _ := shellWords(syn)
		cmd := words[1]
		var out, errb strings.Builder
		env := cli.Env{Stdout: &out, Stderr: &errb, Lookup: empty}
		code := cli.Main(context.Background(), []string{cmd, "-h"}, env)
		if code != cli.ExitOK {
			t.Errorf("%q: %s -h exit %d: %s", syn, cmd, code, errb.String())
			continue
		}
		for _, f := range regexp.MustCompile(`--([a-z][a-z-]*)`).FindAllStringSubmatch(syn, -1) {
			if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(f[1]) + `\b`).MatchString(errb.String()) {
				t.Errorf("%q: %s has no flag --%s:\n%s", syn, cmd, f[1], errb.String())
			}
		}
	}
	commands := section(t, readme(t), "Commands")
	codes := map[int]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\d+)` \\|").FindAllStringSubmatch(commands, -1) {
		n, _ := strconv.Atoi(m[1])
		codes[n] = true
	}
	want := map[int]bool{cli.ExitOK: true, cli.ExitFailure: true, cli.ExitUsage: true, cli.ExitCredential: true, cli.ExitIncomplete: true}
	if len(codes) != len(want) {
		t.Errorf("the README's exit codes %v, the CLI's %v", codes, want)
	}
	for c := range want {
		if !codes[c] {
			t.Errorf("the README does not document exit code %d", c)
		}
	}
}

// TestReadmeWarehouse: the erDiagram shows every table of a migrated
// warehouse and the Warehouse section gives each view a sentence.
func TestReadmeWarehouse(t *testing.T) {
	t.Parallel()
	pool, schema := warehousetest.Schema(t)
	rows, err := pool.Query(context.Background(), `SELECT table_name::text, table_type::text FROM information_schema.tables
WHERE table_schema = $1 AND table_name NOT LIKE 'goose%'`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, views := map[string]bool{}, map[string]bool{}
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			t.Fatal(err)
		}
		if kind == "VIEW" {
			views[name] = true
		} else {
			tables[name] = true
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	wh := section(t, readme(t), "Warehouse")
	var er string
	for _, b := range codeBlocks(wh) {
		if b.Lang == "mermaid" && strings.HasPrefix(strings.TrimSpace(b.Body), "erDiagram") {
			er = b.Body
		}
	}
	if er == "" {
		t.Fatal("the Warehouse section has no mermaid erDiagram")
	}
	entities := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+([a-z_]+)\s*\{`).FindAllStringSubmatch(er, -1) {
		entities[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+([a-z_]+)\s+[|}o]\S*--\S*[|{o]\s+([a-z_]+)\s*:`).FindAllStringSubmatch(er, -1) {
		for _, e := range m[1:] {
			if !entities[e] {
				t.Errorf("the erDiagram relates %s without describing it", e)
			}
		}
	}
	for name := range tables {
		if !entities[name] {
			t.Errorf("the erDiagram lacks table %s", name)
		}
	}
	for name := range entities {
		if !tables[name] {
			t.Errorf("the erDiagram shows %s, which is not a table of the warehouse", name)
		}
	}
	for name := range views {
		if !regexp.MustCompile("(?m)^- `" + name + "` — \\S").MatchString(wh) {
			t.Errorf("the Warehouse section has no sentence for view %s", name)
		}
	}
	flow := section(t, readme(t), "How a sync works")
	found := false
	for _, b := range codeBlocks(flow) {
		if b.Lang == "mermaid" && strings.HasPrefix(strings.TrimSpace(b.Body), "flowchart") {
			found = true
			for _, word := range []string{"planner", "extract", "transform", "load", "scheduler"} {
				if !strings.Contains(b.Body, word) {
					t.Errorf("the flowchart does not show the %s", word)
				}
			}
		}
	}
	if !found {
		t.Error("How a sync works has no mermaid flowchart")
	}
}
