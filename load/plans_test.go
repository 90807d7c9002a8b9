package load

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/internal/testkit/recordjson"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
	"github.com/agencysync/agencysync/warehouse"
)

// stmtRecorder is a pgx tracer that keeps the statements a Store sends (not
// BEGIN/SET, COPY or the test's own EXPLAINs; ANALYZE is kept), with their arguments.
type stmtRecorder struct {
	mu    sync.Mutex
	stmts []recordedStmt
}

type recordedStmt struct {
	sql  string
	args []any
}

func (r *stmtRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	head := strings.ToUpper(strings.TrimSpace(d.SQL))
	for _, p := range []string{"INSERT", "UPDATE", "DELETE", "SELECT", "WITH", "ANALYZE"} {
		if strings.HasPrefix(head, p) {
			r.mu.Lock()
			r.stmts = append(r.stmts, recordedStmt{sql: d.SQL, args: d.Args})
			r.mu.Unlock()
			break
		}
	}
	return ctx
}

func (r *stmtRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *stmtRecorder) take() []recordedStmt {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.stmts
	r.stmts = nil
	return out
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType     string     `json:"Node Type"`
	Relationship string     `json:"Parent Relationship"`
	SubplanName  string     `json:"Subplan Name"`
	Relation     string     `json:"Relation Name"`
	Function     string     `json:"Function Name"`
	Plans        []planNode `json:"Plans"`
}

// rescannedFullScan returns a description of the first node of n's subtree
// that reads a whole input (a table, an unnest, a materialised result)
// rather than looking rows up by key, or "".
func rescannedFullScan(n planNode) string {
	switch n.NodeType {
	case "Seq Scan", "Function Scan", "Materialize", "CTE Scan", "Values Scan", "Hash", "Sort":
		return strings.TrimSpace(n.NodeType + " " + n.Relation + n.Function)
	}
	for _, c := range n.Plans {
		if d := rescannedFullScan(c); d != "" {
			return d
		}
	}
	return ""
}

// quadratic returns the parts of a plan whose cost grows with the product of
// two inputs' sizes: a nested loop whose inner side reads a whole input for
// every outer row, or a correlated (not hashed) subplan that does.
func quadratic(n planNode) []string {
	var out []string
	if n.NodeType == "Nested Loop" {
		for _, c := range n.Plans {
			if c.Relationship == "Inner" {
				if d := rescannedFullScan(c); d != "" {
					out = append(out, "nested loop re-reading "+d+" per outer row")
				}
			}
		}
	}
	if n.Relationship == "SubPlan" && !strings.HasPrefix(n.SubplanName, "hashed") {
		if d := rescannedFullScan(n); d != "" {
			out = append(out, n.SubplanName+" re-reading "+d+" per row")
		}
	}
	for _, c := range n.Plans {
		out = append(out, quadratic(c)...)
	}
	return out
}

// explainAll EXPLAINs stmts in tx and reports each whose plan is quadratic.
func explainAll(t *testing.T, ctx context.Context, tx pgx.Tx, what string, stmts []recordedStmt) error {
	t.Helper()
	for _, st := range stmts {
		var doc []byte
		if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+st.sql, st.args...).Scan(&doc); err != nil {
			return fmt.Errorf("explain %q: %w", firstLine(st.sql), err)
		}
		var plans []struct{ Plan planNode }
		if err := json.Unmarshal(doc, &plans); err != nil || len(plans) != 1 {
			return fmt.Errorf("parse plan of %q: %v", firstLine(st.sql), err)
		}
		if strings.HasPrefix(st.sql, "ANALYZE") {
			continue
		}
		if bad := quadratic(plans[0].Plan); len(bad) > 0 {
			var text strings.Builder
			rows, err := tx.Query(ctx, "EXPLAIN "+st.sql, st.args...)
			if err == nil {
				for rows.Next() {
					var line string
					_ = rows.Scan(&line)
					text.WriteString(line + "\n")
				}
				rows.Close()
			}
			t.Errorf("%s: a plan without statistics is quadratic (%s):\n%s\n%s", what, strings.Join(bad, "; "), st.sql, text.String())
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// planPool returns a fresh migrated schema and a pool on it that records the
// statements its connections send.
func planPool(t *testing.T) (*pgxpool.Pool, string, *stmtRecorder) {
	t.Helper()
	_, schema := warehousetest.Schema(t)
	cfg, err := warehouse.ParseConfig(warehousetest.DSN(t), warehouse.PoolOptions{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	rec := &stmtRecorder{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, schema, rec
}

// profitRows returns the profitability records of n project entities over
// five months; version changes every amount.
func profitRows(n, version int) []fixture.Profitability {
	var out []fixture.Profitability
	for e := range n {
		for m := 1; m <= 5; m++ {
			rev := strconv.Itoa(1000*e + m + version)
			out = append(out, fixture.Profitability{Level: "project", EntityID: extract.ID(strconv.Itoa(e + 1)),
				Period: fmt.Sprintf("2026-%02d", m), Revenue: fixture.Decimal(rev), Cost: "100.5",
				Margin: fixture.Decimal(rev), Currency: "RON", Raw: json.RawMessage(`{"v":` + strconv.Itoa(version) + `}`)})
		}
	}
	return out
}

// bigProjectDetails returns n projects' details, each with perProject
// deliverables, team members and history entries; drop leaves out each
// project's first deliverable and team member.
func bigProjectDetails(n, perProject int, drop bool) []fixture.Project {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]fixture.Project, n)
	for p := range out {
		id := strconv.Itoa(p + 1)
		pr := fixture.Project{ID: extract.ID(id), BrandID: extract.ID(strconv.Itoa(p%200 + 1)), Name: "Proiect " + id,
			Status: "in_progress", Raw: json.RawMessage(`{"id":"` + id + `"}`)}
		first := 0
		if drop {
			first = 1
		}
		for i := first; i < perProject; i++ {
			pr.Deliverables = append(pr.Deliverables, fixture.Deliverable{ID: extract.ID(fmt.Sprintf("d%d-%d", p, i)),
				Name: "Livrabil", Status: "open"})
			pr.Team = append(pr.Team, fixture.TeamMember{UserID: extract.ID(strconv.Itoa(i + 1)), FullName: "Membru", Role: "Creative"})
			pr.History = append(pr.History, fixture.HistoryEntry{At: at.Add(time.Duration(i) * time.Hour), Field: "status",
				To: ptr("in_progress"), ByUserID: "1"})
		}
		out[p] = pr
	}
	return out
}

// TestStatementsPlanWithoutStatistics loads ~20 000 rows into tables that
// have never been analysed (autovacuum is off on the test machine, and a
// first sync fills tables seconds before it reads them), then EXPLAINs,
// inside each page's transaction, every statement the Store sent for the
// page: fast-path probes, merges, child replacement and the soft-delete
// marking of a listing of all but a few rows. None may be planned as a
// nested loop (or correlated subplan) that re-reads a whole input per row,
// the shape that made MarkDeleted take 90 s at 20 000 rows.
func TestStatementsPlanWithoutStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema, rec := planPool(t)
	s, err := New(pool, Config{Schema: schema, StatementTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s.analyzeMinRows = -1 // this test is about plans without statistics
	explained := 0
	kinds := map[string]int{} // statements explained, by their first line
	commitAs := func(what string, p page) Counts {
		t.Helper()
		rec.take()
		p.then = func(ctx context.Context, tx pgx.Tx) error {
			stmts := rec.take()
			explained += len(stmts)
			for _, st := range stmts {
				kinds[strings.Join(strings.Fields(firstLine(st.sql)), " ")]++
			}
			return explainAll(t, ctx, tx, what, stmts)
		}
		c, err := s.commitPage(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return c
	}
	list := func() *Listing {
		l, err := s.NewListing("profitability", map[string]any{"level": "project"})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	const entities, perPage = 4000, 500 // 20 000 profitability rows

	// First sync: pages of new rows (fast path), one listing over them.
	rows := profitRows(entities, 0)
	l := list()
	for i := 0; i < len(rows); i += perPage {
		end := min(i+perPage, len(rows))
		commitAs(fmt.Sprintf("profitability first page %d", i/perPage), page{stream: "profitability",
			batch: recordjson.Profitabilities(rows[i:end]), sees: l, ends: endsIf(l, end == len(rows))})
	}
	if n := queryInt(t, pool, "SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass",
		qualified(schema, "profitability")); n >= 0 {
		t.Fatalf("profitability has statistics (reltuples %d): the test needs a table never analysed", n)
	}

	// Next sync: every amount changed (merge path), and the last entity is
	// gone: its 5 rows are marked deleted by the listing's last page.
	rows = profitRows(entities-1, 1)
	l = list()
	var marked int64
	for i := 0; i < len(rows); i += perPage {
		end := min(i+perPage, len(rows))
		c := commitAs(fmt.Sprintf("profitability changed page %d", i/perPage), page{stream: "profitability",
			batch: recordjson.Profitabilities(rows[i:end]), sees: l, ends: endsIf(l, end == len(rows))})
		marked += c.Tables["profitability"].Deleted
	}
	if marked != 5 {
		t.Errorf("marked %d profitability rows deleted, want 5", marked)
	}
	assertCount(t, pool, 5, fmt.Sprintf("SELECT count(*) FROM %s WHERE _deleted_at IS NOT NULL", qualified(schema, "profitability")))

	// Child tables: 400 projects × 50 deliverables, team members and history
	// entries (20 000 each), then the same projects with one of each gone.
	const projects, children = 400, 50
	commitAs("project details first", page{batch: recordjson.ProjectDetails(bigProjectDetails(projects, children, false))})
	c := commitAs("project details changed", page{batch: recordjson.ProjectDetails(bigProjectDetails(projects, children, true))})
	if got := c.Tables["project_deliverables"].Deleted; got != projects {
		t.Errorf("deleted %d deliverables, want %d", got, projects)
	}

	// E-mails: 20 pages of 1 000 (fast path), then a page re-sent (merge and
	// recipients replaced against 20 000 e-mails).
	g := newCommsGenerator()
	for n := range 20 {
		commitAs(fmt.Sprintf("emails page %d", n), page{stream: "communications", batch: g.page(n)})
	}
	resent := g.page(7)
	resent.Rejects = append(resent.Rejects, transform.Reject{Stream: stream.RejectCommunications, Key: "7001",
		Payload: json.RawMessage(`{"id":7001}`), Error: "bad"})
	commitAs("emails page re-sent", page{stream: "communications", batch: resent,
		state: &Checkpoint{Cursor: json.RawMessage(`{"page":8}`)}})
	t.Logf("explained %d statements", explained)
	for k, n := range kinds {
		t.Logf("%4d × %.110s", n, k)
	}
	for _, want := range []string{"UPDATE", "INSERT INTO", "DELETE FROM", "SELECT EXISTS", "WITH w AS"} {
		found := false
		for k := range kinds {
			found = found || strings.HasPrefix(k, want)
		}
		if !found {
			t.Errorf("no %s statement was explained", want)
		}
	}
	if explained < 100 {
		t.Errorf("explained only %d statements: the recorder missed the Store's statements", explained)
	}
}

// TestBulkLoadAnalysed: a first sync leaves its tables with statistics
// (autovacuum is off on the test machine), analysed a handful of times as
// they quadrupled rather than after every page, and a small change to a large
// table does not analyse it again.
func TestBulkLoadAnalysed(t *testing.T) {
	t.Parallel()
	pool, schema, rec := planPool(t)
	s, err := New(pool, Config{Schema: schema, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	g := newCommsGenerator()
	const pages = 20
	analyses := 0
	for n := range pages {
		commit(t, s, page{stream: "communications", batch: g.page(n)})
		for _, st := range rec.take() {
			if strings.HasPrefix(st.sql, "ANALYZE") {
				analyses++
			}
		}
	}
	reltuples := func(table string) int64 {
		return queryInt(t, pool, "SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass", qualified(schema, table))
	}
	// Analysed at 1 000, 4 000 and 16 000 rows.
	if n := reltuples("emails"); n < 16*benchPageSize {
		t.Errorf("emails: reltuples %d after %d rows, want the statistics taken at 16 000 rows (≥ %d)", n, pages*benchPageSize, 16*benchPageSize)
	}
	if n := reltuples("email_recipients"); n <= 0 {
		t.Errorf("email_recipients: reltuples %d, want statistics", n)
	}
	if n := reltuples("users"); n < 0 {
		t.Errorf("users: never analysed")
	}
	before := reltuples("emails")
	commit(t, s, page{stream: "communications", batch: g.page(pages)}) // +5 %
	if n := reltuples("emails"); n != before {
		t.Errorf("emails analysed again after growing by 5 %% (reltuples %d → %d)", before, n)
	}
	// Three tables, each analysed when it quadrupled: about log4(20) + 1 times.
	if analyses == 0 || analyses >= pages {
		t.Errorf("%d ANALYZE statements over %d pages, want a few (each table when it quadrupled)", analyses, pages)
	}
	t.Logf("%d ANALYZE statements over %d pages", analyses, pages)
}

// BenchmarkCountRequest measures the ledger's durable count of one request.
func BenchmarkCountRequest(b *testing.B) {
	_, pool, schema := newStore(b)
	l, err := NewLedger(pool, schema, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if err := l.CountRequest(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
