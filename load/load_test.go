package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/internal/testkit/recordjson"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// The write path's column lists must match the migrated tables exactly.
func TestSpecsMatchSchema(t *testing.T) {
	t.Parallel()
	pool, schema := warehousetestSchema(t)
	rows, err := pool.Query(t.Context(), `SELECT c.table_name, c.column_name, format_type(a.atttypid, a.atttypmod)
FROM information_schema.columns c
JOIN pg_attribute a ON a.attrelid = format('%I.%I', c.table_schema, c.table_name)::regclass AND a.attname = c.column_name
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
WHERE c.table_schema = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for rows.Next() {
		var table, col, typ string
		if err := rows.Scan(&table, &col, &typ); err != nil {
			t.Fatal(err)
		}
		if got[table] == nil {
			got[table] = map[string]string{}
		}
		got[table][col] = typ
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Every table of the schema but the Store's own bookkeeping is a
	// declared table, written by the generic path.
	specs := specsOf(stream.All())
	bookkeeping := []string{"goose_db_version", "api_quota_usage", "delete_candidates", "detail_state", "paging_state", "rejected_records",
		"service_clock", "source_fields", "sync_runs", "sync_state", "table_mappings"}
	for table := range got {
		if !slices.Contains(bookkeeping, table) && !slices.ContainsFunc(specs, func(s *spec) bool { return s.name == table }) {
			t.Errorf("table %s of the schema is declared by no stream", table)
		}
	}
	for _, s := range specs {
		cols := got[s.name]
		if cols == nil {
			t.Errorf("spec %s: no such table", s.name)
			continue
		}
		want := map[string]string{"_synced_at": "timestamp with time zone"}
		if s.softDelete {
			want["_deleted_at"] = "timestamp with time zone"
		}
		aliases := map[string]string{"timestamptz": "timestamp with time zone", "integer": "integer"}
		for _, c := range s.columns() {
			typ := c.typ
			if a, ok := aliases[typ]; ok {
				typ = a
			}
			want[c.name] = typ
		}
		if !maps.Equal(cols, want) {
			t.Errorf("spec %s columns:\n got %v\nwant %v", s.name, cols, want)
		}
	}
}

func TestFirstLoadThenUnchangedReload(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	batch := fullBatch()
	if len(batch.Rejects) != 0 {
		t.Fatalf("fixture rejects: %+v", batch.Rejects)
	}

	first := commit(t, s, page{stream: "all", batch: batch})
	want := map[string]int64{"brands": 2, "brand_financial_snapshots": 1, "brand_contacts": 2, "projects": 1,
		"project_team_members": 2, "project_deliverables": 2, "project_history": 2, "budgets": 1, "invoices": 1,
		"collections": 1, "payments": 1, "profitability": 2, "agency_finance_summary": 1, "emails": 2,
		"email_recipients": 7, "users": 4}
	for table, n := range want {
		if got := first.Tables[table]; got.Inserted != n || got.Updated != 0 || got.Deleted != 0 {
			t.Errorf("first load %s: %+v, want %d inserted", table, got, n)
		}
		if got := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, table)); got != n {
			t.Errorf("%s holds %d rows, want %d", table, got, n)
		}
	}

	before := map[string]map[string]rowVersion{}
	for table := range want {
		before[table] = versions(t, pool, schema, table)
	}
	again := commit(t, s, page{stream: "all", batch: fullBatch()})
	if again.Written() != 0 || len(again.Tables) != 0 {
		t.Errorf("unchanged re-load wrote %+v, want nothing", again.Tables)
	}
	for table := range want {
		if after := versions(t, pool, schema, table); !maps.Equal(before[table], after) {
			t.Errorf("%s: unchanged re-load rewrote rows (xmin or _synced_at moved):\n%v\n%v", table, before[table], after)
		}
	}
}

func TestStoredValuesExact(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	commit(t, s, page{batch: fullBatch()})
	checks := []struct{ sql, want string }{
		{"SELECT amount::text FROM %s.invoices", "12345678901234567890.125"},
		{"SELECT total_budget::text || ' ' || collected::text || ' ' || currency FROM %s.brands WHERE brand_id = '42'", "125000.50 79999.99 RON"},
		{"SELECT amount::text FROM %s.collections", "0.10"},
		{"SELECT to_char(email_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') FROM %s.emails WHERE record_id = 2701", "2024-11-06 05:01:00.123456"},
		{"SELECT has_attachments::text || ' ' || size_bytes FROM %s.emails WHERE record_id = 2702", "true 3702"},
		{"SELECT coalesce(phone, 'NULL') || ' ' || full_name || '|' || coalesce(platform_user_id::text, 'NULL') FROM %s.users WHERE user_key = 'stefan.ionescu@agentie.ro'", "NULL Ștefan Ionescu|17"},
		{"SELECT full_name || '|' || coalesce(last_name, 'NULL') FROM %s.users WHERE user_key = 'ioana@client-brand.ro'", "Ioana|NULL"},
		{"SELECT platform_user_id::text FROM %s.users WHERE user_key = 'ana.popescu@agentie.ro'", "12"},
		{"SELECT coalesce(email, 'NULL') || ' ' || platform_user_id FROM %s.users WHERE user_key = 'id:88'", "NULL 88"},
		{"SELECT string_agg(role || ':' || user_key, ',' ORDER BY role, user_key) FROM %s.email_recipients WHERE record_id = 2702",
			"bcc:stefan.ionescu@agentie.ro,cc:id:88,from:ioana@client-brand.ro,to:ana.popescu@agentie.ro,to:stefan.ionescu@agentie.ro"},
		{"SELECT period::text || ' ' || profit FROM %s.agency_finance_summary", "2024-11-01 180000.75"},
		{"SELECT general_info->>'website' FROM %s.brands WHERE brand_id = '42'", "https://dulcetraditie.ro"},
		{"SELECT raw->>'id' FROM %s.projects", "7"},
		{"SELECT string_agg(seq || coalesce(from_value, '-') || '>' || to_value, ',' ORDER BY seq) FROM %s.project_history", "1->planned,2planned>in_progress"},
		// the views
		{"SELECT sender_key || ' ' || to_count || ' ' || cc_count || ' ' || bcc_count || ' ' || recipient_count || ' ' || brand_name FROM %s.email_activity WHERE record_id = 2702",
			"ioana@client-brand.ro 2 1 1 4 Cofetăria Dulce Tradiție"},
		{"SELECT name || ' ' || outstanding || ' ' || summary_date || ' ' || margin FROM %s.brand_finance WHERE brand_id = '42'",
			"Cofetăria Dulce Tradiție 0.01 2024-11-05 30000"},
		{"SELECT deliverables || ' ' || open_deliverables || ' ' || team_size || ' ' || brand_name FROM %s.project_status", "2 1 2 Cofetăria Dulce Tradiție"},
	}
	for _, c := range checks {
		assertText(t, pool, c.want, fmt.Sprintf(c.sql, pgx.Identifier{schema}.Sanitize()))
	}
}

func TestChangedRowsUpdate(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	commit(t, s, page{batch: fullBatch()})
	beforeEmails := versions(t, pool, schema, "emails")
	beforeUsers := versions(t, pool, schema, "users")
	beforeInvoices := versions(t, pool, schema, "invoices")

	// One e-mail's subject, one user's phone and one invoice's status change;
	// a new invoice arrives beside them.
	b := recordjson.Communications([]fixture.Communication{
		communication(2701, "Ofertă campanie Crăciun (v2)", []fixture.Participant{ana(nil)}, []fixture.Participant{stefan(ptr(int64(17)))}, nil, nil),
	})
	b.Append(recordjson.Invoices([]fixture.Invoice{
		{ID: "i1", Number: "AG-2024-0113", ProjectID: "7", BrandID: "42", IssueDate: day(2024, 11, 1), Amount: "12345678901234567890.125", Currency: "RON", Status: "paid", Raw: json.RawMessage(`{"id":"i1"}`)},
		{ID: "i2", Number: "AG-2024-0114", Amount: "10", Currency: "RON", Raw: json.RawMessage(`{"id":"i2"}`)},
	}))
	setValue(t, &b, "users", 0, "phone", "0744 000 111") // ana
	time.Sleep(2 * time.Millisecond)                     // let now() differ from the first load's
	c := commit(t, s, page{batch: b})

	want := map[string]TableCounts{"emails": {Updated: 1}, "users": {Updated: 1}, "invoices": {Inserted: 1, Updated: 1}}
	if !maps.Equal(c.Tables, want) {
		t.Errorf("counts = %+v, want %+v", c.Tables, want)
	}
	afterEmails := versions(t, pool, schema, "emails")
	if afterEmails["2701"] == beforeEmails["2701"] || !afterEmails["2701"].syncedAt.After(beforeEmails["2701"].syncedAt) {
		t.Errorf("changed e-mail kept its version: %v → %v", beforeEmails["2701"], afterEmails["2701"])
	}
	if afterEmails["2702"] != beforeEmails["2702"] {
		t.Errorf("e-mail not in the page was rewritten")
	}
	afterUsers := versions(t, pool, schema, "users")
	for k, v := range beforeUsers {
		if changed := afterUsers[k] != v; changed != (k == "ana.popescu@agentie.ro") {
			t.Errorf("user %s changed = %v", k, changed)
		}
	}
	if afterInv := versions(t, pool, schema, "invoices"); afterInv["i1"] == beforeInvoices["i1"] {
		t.Errorf("changed invoice kept its version")
	}
	assertText(t, pool, "Ofertă campanie Crăciun (v2)", "SELECT subject FROM "+qualified(schema, "emails")+" WHERE record_id = 2701")
	assertText(t, pool, "0744 000 111", "SELECT phone FROM "+qualified(schema, "users")+" WHERE user_key = 'ana.popescu@agentie.ro'")
}

func TestChildrenReplacedExactly(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	commit(t, s, page{batch: fullBatch()})
	before := versions(t, pool, schema, "email_recipients")

	// 2702 loses its cc and bcc and gains ana in cc; the rest is unchanged.
	b := recordjson.Communications([]fixture.Communication{
		communication(2702, "Re: Ofertă", []fixture.Participant{ioana()}, []fixture.Participant{ana(ptr(int64(12))), stefan(ptr(int64(17)))},
			[]fixture.Participant{ana(ptr(int64(12)))}, nil),
	})
	// Project 7's detail: Ștefan left the team, every deliverable is gone
	// (an empty list: a detail without the key would say nothing of them),
	// one history entry remains (history is a log: nothing is deleted from
	// it).
	b.Append(recordjson.ProjectDetails([]fixture.Project{{
		ID: "7", BrandID: "42", Name: "Campanie Crăciun 2024", Status: "in_progress", StartDate: day(2024, 10, 1), Deadline: day(2024, 12, 20),
		Budget:       &fixture.Money{Amount: "30000.00", Currency: "RON"},
		Team:         []fixture.TeamMember{{UserID: "12", FullName: "Ana-Maria Popescu", Role: "Account"}},
		Deliverables: []fixture.Deliverable{},
		History:      []fixture.HistoryEntry{{At: time.Date(2024, 10, 1, 9, 0, 0, 0, time.UTC), Field: "status", To: ptr("planned"), ByUserID: "12"}},
		Raw:          json.RawMessage(`{"id":"7","v":2}`),
	}}))
	c := commit(t, s, page{batch: b})

	// The e-mail's raw record changed with its recipients, so its row is
	// updated too.
	want := map[string]TableCounts{
		"emails":               {Updated: 1},
		"email_recipients":     {Inserted: 1, Deleted: 2},
		"projects":             {Updated: 1},
		"project_team_members": {Deleted: 1},
		"project_deliverables": {Deleted: 2},
	}
	if !maps.Equal(c.Tables, want) {
		t.Errorf("counts = %+v, want %+v", c.Tables, want)
	}
	after := versions(t, pool, schema, "email_recipients")
	wantKeys := []string{"2701|from|ana.popescu@agentie.ro", "2701|to|stefan.ionescu@agentie.ro", "2702|cc|ana.popescu@agentie.ro",
		"2702|from|ioana@client-brand.ro", "2702|to|ana.popescu@agentie.ro", "2702|to|stefan.ionescu@agentie.ro"}
	if got := slices.Sorted(maps.Keys(after)); !slices.Equal(got, wantKeys) {
		t.Errorf("recipients = %v, want %v", got, wantKeys)
	}
	for k, v := range after {
		if old, ok := before[k]; ok && old != v {
			t.Errorf("unchanged recipient %s was rewritten", k)
		}
	}
	assertText(t, pool, "12", "SELECT string_agg(user_id, ',') FROM "+qualified(schema, "project_team_members"))
	// History rows are kept as a log.
	assertCount(t, pool, 2, "SELECT count(*) FROM "+qualified(schema, "project_history"))

	// Child rows whose parent the batch does not name are merged, and the
	// parent's other children stay.
	loose := rowsBatch(t, "project_team_members",
		[]any{"7", "12", int64(12), "Ana-Maria Popescu", "Lead"},
		[]any{"7", "23", nil, "Irina Munteanu", "Copy"})
	c = commit(t, s, page{batch: loose})
	if c.Tables["project_team_members"] != (TableCounts{Inserted: 1, Updated: 1}) {
		t.Errorf("loose children: %+v", c.Tables)
	}
	assertText(t, pool, "12:Lead,23:Copy", "SELECT string_agg(user_id || ':' || role, ',' ORDER BY user_id) FROM "+qualified(schema, "project_team_members"))

	// A list-only project load leaves the children alone.
	c = commit(t, s, page{batch: recordjson.Projects([]fixture.Project{{ID: "7", BrandID: "42", Name: "Campanie Crăciun 2024", Raw: json.RawMessage(`{"id":"7"}`)}})})
	if c.Tables["project_team_members"].Written() != 0 {
		t.Errorf("list load touched the team: %+v", c.Tables)
	}
	assertCount(t, pool, 2, "SELECT count(*) FROM "+qualified(schema, "project_team_members"))
}

func TestSoftDeleteAndUndelete(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	s.massShare = 1 // a tiny table whose listing drops a third or more: no mass delete here
	ctx := context.Background()
	deleted := func() string {
		return queryText(t, pool, "SELECT coalesce(string_agg(budget_id, ',' ORDER BY budget_id), '') FROM "+qualified(schema, "budgets")+" WHERE _deleted_at IS NOT NULL")
	}

	// A complete listing over two pages.
	l, err := s.NewListing("budgets", nil)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, page{stream: "finance", batch: recordjson.Budgets([]fixture.Budget{budget("b1"), budget("b2")}), sees: l})
	commit(t, s, page{stream: "finance", batch: recordjson.Budgets([]fixture.Budget{budget("b3")}), ends: []*Listing{l}})
	if d := deleted(); d != "" {
		t.Fatalf("deleted after the first listing: %s", d)
	}

	// The next listing no longer has b2; b3 fails validation but has a key,
	// so it is not taken for deleted.
	l, _ = s.NewListing("budgets", nil)
	bad := budget("b3")
	bad.Amount = "n/a"
	pg := recordjson.Budgets([]fixture.Budget{budget("b1"), bad})
	if len(pg.Rejects) != 1 {
		t.Fatalf("rejects = %+v", pg.Rejects)
	}
	c := commit(t, s, page{stream: "finance", batch: pg, ends: []*Listing{l}})
	if d := deleted(); d != "b2" {
		t.Errorf("deleted = %q, want b2", d)
	}
	if c.Tables["budgets"].Deleted != 1 {
		t.Errorf("counts = %+v", c.Tables)
	}
	b2Deleted := versions(t, pool, schema, "budgets")["b2"]

	// Another listing without b2 leaves its deletion time alone.
	l, _ = s.NewListing("budgets", nil)
	c = commit(t, s, page{stream: "finance", batch: recordjson.Budgets([]fixture.Budget{budget("b1"), budget("b3")}), ends: []*Listing{l}})
	if v := versions(t, pool, schema, "budgets")["b2"]; v != b2Deleted || c.Written() != 0 {
		t.Errorf("second deletion rewrote b2 (%v → %v) or wrote %+v", b2Deleted, v, c.Tables)
	}

	// b2 comes back: undeleted, never removed in between.
	c = commit(t, s, page{stream: "finance", batch: recordjson.Budgets([]fixture.Budget{budget("b2")})})
	if d := deleted(); d != "" || c.Tables["budgets"].Updated != 1 {
		t.Errorf("after b2 came back: deleted = %q, counts %+v", d, c.Tables)
	}

	// A reject without a key makes the listing unable to tell: no deletions.
	l, _ = s.NewListing("budgets", nil)
	pg = recordjson.Budgets([]fixture.Budget{budget("b1")})
	pg.Rejects = append(pg.Rejects, transform.RecordErrors(stream.RejectBudgets, []extract.RecordError{{Endpoint: "budgets", Raw: json.RawMessage(`{}`), Err: errors.New("bad")}})...)
	c = commit(t, s, page{stream: "finance", batch: pg, ends: []*Listing{l}})
	if d := deleted(); d != "" || len(c.SkippedDeletions) != 1 {
		t.Errorf("unkeyed reject: deleted = %q, skipped = %v", d, c.SkippedDeletions)
	}
	if _, _, err := s.MarkDeleted(ctx, nil, l); !errors.Is(err, ErrIncompleteListing) {
		t.Errorf("MarkDeleted = %v, want ErrIncompleteListing", err)
	}

	// A scoped listing: brand 42's contacts only.
	contact := func(id string) fixture.Contact {
		return fixture.Contact{ID: extract.ID(id), FirstName: id, FullName: id, Raw: json.RawMessage(`{}`)}
	}
	var both transform.Batch
	both.Append(recordjson.Contacts("42", []fixture.Contact{contact("c1"), contact("c2")}))
	both.Append(recordjson.Contacts("43", []fixture.Contact{contact("c9")}))
	commit(t, s, page{batch: both})
	l, err = s.NewListing("brand_contacts", map[string]any{"brand_id": "42"})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, page{batch: recordjson.Contacts("42", []fixture.Contact{contact("c1")}), ends: []*Listing{l}})
	// Only 42/c2 is deleted.
	assertText(t, pool, "42/c2", "SELECT string_agg(brand_id || '/' || contact_id, ',') FROM "+qualified(schema, "brand_contacts")+" WHERE _deleted_at IS NOT NULL")
	if _, err := s.NewListing("email_recipients", nil); err == nil {
		t.Error("NewListing accepted a table without soft deletes")
	}
}

// TestShortListingDeletesNothing: a listing that saw fewer distinct rows
// than the service announced (Expect) soft-deletes nothing, even when asked
// to end; MarkDeleted refuses with ErrShortListing.
func TestShortListingDeletesNothing(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	l, _ := s.NewListing("budgets", nil)
	commit(t, s, page{stream: "finance", batch: recordjson.Budgets([]fixture.Budget{budget("b1"), budget("b2"), budget("b3")}), ends: []*Listing{l}})

	l, _ = s.NewListing("budgets", nil)
	l.expect(3)
	l.expect(2) // the largest total counts
	c := commit(t, s, page{stream: "finance", batch: recordjson.Budgets([]fixture.Budget{budget("b1"), budget("b2"), budget("b1")}), ends: []*Listing{l}})
	if n := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "budgets")+" WHERE _deleted_at IS NOT NULL"); n != 0 || len(c.SkippedDeletions) != 1 {
		t.Fatalf("short listing: %d deleted, skipped %v", n, c.SkippedDeletions)
	}
	if !l.Short() || l.Seen() != 2 || l.Expected() != 3 {
		t.Fatalf("Short %v Seen %d Expected %d", l.Short(), l.Seen(), l.Expected())
	}
	if _, _, err := s.MarkDeleted(context.Background(), nil, l); !errors.Is(err, ErrShortListing) || !errors.Is(err, ErrIncompleteListing) {
		t.Fatalf("MarkDeleted = %v, want ErrShortListing", err)
	}
}

func TestRejectsUpserted(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	runID, err := s.StartRun(context.Background(), Run{Trigger: "test", Streams: []string{"communications"}})
	if err != nil {
		t.Fatal(err)
	}
	bad := communication(9, "x", nil, nil, nil, nil) // no sender
	pg := recordjson.Communications([]fixture.Communication{bad, bad, communication(10, "ok", []fixture.Participant{ana(nil)}, nil, nil, nil)})
	c := commit(t, s, page{stream: "communications", runID: runID, batch: pg})
	if c.Rejected != 2 || c.Tables["emails"].Inserted != 1 {
		t.Errorf("counts = %+v", c)
	}
	rr := qualified(schema, "rejected_records")
	assertText(t, pool, "communications 9 2 true x", "SELECT stream || ' ' || record_key || ' ' || occurrences || ' ' || (last_run_id = $1::uuid) || ' ' || (payload->'email'->>'subject') FROM "+rr, runID)
	first := queryText(t, pool, "SELECT last_seen_at::text FROM "+rr+" WHERE record_key = '9'")

	// Rejects made by hand are stored whatever their payload.
	c = commit(t, s, page{stream: "communications", batch: transform.Batch{Rejects: []transform.Reject{
		{Stream: "communications", Key: "page-7", Payload: json.RawMessage(`<html>502</html>`), Error: "not JSON"},
		transform.NewReject("communications", "", json.RawMessage(`{"s":"a\u0000b"}`), errors.New("NUL")),
	}}})
	if c.Rejected != 2 {
		t.Errorf("rejected = %d", c.Rejected)
	}
	// The payload is kept as the bytes, a JSON string.
	assertText(t, pool, "<html>502</html>", "SELECT payload #>> '{}' FROM "+rr+" WHERE record_key = 'page-7'")
	time.Sleep(2 * time.Millisecond)
	commit(t, s, page{stream: "communications", batch: recordjson.Communications([]fixture.Communication{bad})})
	// After the second rejection.
	assertText(t, pool, "3 true true true", "SELECT occurrences || ' ' || (last_seen_at > $1::timestamptz) || ' ' || (first_seen_at < last_seen_at) || ' ' || (last_run_id = $2::uuid) FROM "+rr+" WHERE record_key = '9'", first, runID)
}

func TestFailedPageLeavesNothing(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	batch := fullBatch()
	batch.Rejects = append(batch.Rejects, transform.Reject{Stream: "communications", Key: "1", Payload: json.RawMessage(`{}`), Error: "x"})
	boom := errors.New("injected failure after the rows")
	_, err := s.commitPage(ctx, page{
		stream: "communications", batch: batch,
		state: &Checkpoint{Watermark: ptr(time.Now()), Cursor: json.RawMessage(`{"page":2}`)},
		then: func(ctx context.Context, tx pgx.Tx) error {
			// The rows are there inside the transaction…
			var n int64
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+qualified(schema, "emails")).Scan(&n); err != nil || n != 2 {
				t.Errorf("inside the page: %d e-mails, %v", n, err)
			}
			return boom
		},
	})
	if !errors.Is(err, boom) {
		t.Fatalf("commit = %v, want the injected failure", err)
	}
	// …and gone after the failure.
	for _, table := range append(s.Tables(), "rejected_records", "sync_state") {
		assertCount(t, pool, 0, "SELECT count(*) FROM "+qualified(schema, table))
	}
	if _, err := s.GetState(ctx, "communications", ""); !errors.Is(err, ErrNoState) {
		t.Errorf("GetState = %v, want ErrNoState", err)
	}
	// The same connection and staging tables work for the retry.
	c := commit(t, s, page{stream: "communications", batch: fullBatch()})
	if c.Tables["emails"].Inserted != 2 {
		t.Errorf("retry counts = %+v", c.Tables)
	}
}

func TestUsersPlatformIDMerge(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	users := qualified(schema, "users")
	// Page 1: ana only sends (from lists carry no ids).
	commit(t, s, page{batch: recordjson.Communications([]fixture.Communication{
		communication(1, "a", []fixture.Participant{ana(nil)}, []fixture.Participant{ioana()}, nil, nil)})})
	if got := queryText(t, pool, "SELECT platform_user_id::text FROM "+users+" WHERE user_key = 'ana.popescu@agentie.ro'"); got != "<NULL>" {
		t.Fatalf("platform_user_id = %s", got)
	}
	// Page 2: ana receives, keyed 12; her phone is unknown in that appearance.
	noPhone := ana(ptr(int64(12)))
	noPhone.Phone = nil
	c := commit(t, s, page{batch: recordjson.Communications([]fixture.Communication{
		communication(2, "b", []fixture.Participant{ioana()}, []fixture.Participant{noPhone}, nil, nil)})})
	if c.Tables["users"] != (TableCounts{Updated: 1}) {
		t.Errorf("page 2 users = %+v, want ana updated once", c.Tables["users"])
	}
	// The id must be learned and the phone kept.
	assertText(t, pool, "12 0722 123 456", "SELECT platform_user_id || ' ' || phone FROM "+users+" WHERE user_key = 'ana.popescu@agentie.ro'")
	before := versions(t, pool, schema, "users")
	// Page 3: ana sends again, without id: nothing to change, nothing written.
	c = commit(t, s, page{batch: recordjson.Communications([]fixture.Communication{
		communication(3, "c", []fixture.Participant{ana(nil)}, []fixture.Participant{ioana()}, nil, nil)})})
	if c.Tables["users"].Written() != 0 || !maps.Equal(before, versions(t, pool, schema, "users")) {
		t.Errorf("page 3 churned users: %+v", c.Tables["users"])
	}
	// The platform user id is not lost.
	assertText(t, pool, "12", "SELECT platform_user_id::text FROM "+users+" WHERE user_key = 'ana.popescu@agentie.ro'")
}

func TestBatchDuplicatesCollapse(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	// Two transforms appended into one batch mention the same e-mail and user:
	// the write path keeps the last e-mail and merges the user.
	var b transform.Batch
	b.Append(recordjson.Communications([]fixture.Communication{communication(1, "v1", []fixture.Participant{ana(ptr(int64(12)))}, nil, nil, nil)}))
	noID := ana(nil)
	noID.Phone = nil
	b.Append(recordjson.Communications([]fixture.Communication{communication(1, "v2", []fixture.Participant{noID}, nil, nil, nil)}))
	commit(t, s, page{batch: b})
	assertText(t, pool, "v2", "SELECT subject FROM "+qualified(schema, "emails"))
	assertText(t, pool, "12 0722 123 456", "SELECT platform_user_id || ' ' || phone FROM "+qualified(schema, "users"))
	// The same through the merge path (the rows exist now).
	commit(t, s, page{batch: b})
	assertCount(t, pool, 1, "SELECT count(*) FROM "+qualified(schema, "email_recipients"))
}

func TestStateCheckpoint(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	runID, err := s.StartRun(ctx, Run{Trigger: "test", Streams: []string{"communications"}, RequestsPlanned: 10})
	if err != nil {
		t.Fatal(err)
	}
	wm := time.Date(2024, 11, 4, 9, 0, 0, 123456000, time.UTC)
	cp := Checkpoint{Partition: "backfill", Watermark: &wm, Cursor: json.RawMessage(`{"page": 3}`)}
	c := commit(t, s, page{stream: "communications", runID: runID, batch: fullBatch(), state: &cp})
	st, err := s.GetState(ctx, "communications", "backfill")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Watermark.Equal(wm) || string(st.Cursor) != `{"page": 3}` || st.LastRunID != runID || st.RowsTotal != c.Written() || st.LastSuccessAt != nil {
		t.Errorf("state = %+v", st)
	}
	// The same checkpoint with nothing written leaves the row alone.
	before := queryInt(t, pool, "SELECT xmin::text::bigint FROM "+qualified(schema, "sync_state"))
	commit(t, s, page{stream: "communications", runID: runID, batch: fullBatch(), state: &cp})
	if after := queryInt(t, pool, "SELECT xmin::text::bigint FROM "+qualified(schema, "sync_state")); after != before {
		t.Errorf("unchanged checkpoint rewrote sync_state")
	}
	// Completion: a nil watermark keeps the stored one.
	commit(t, s, page{stream: "communications", runID: runID, state: &Checkpoint{Partition: "backfill", Succeeded: true}})
	st, _ = s.GetState(ctx, "communications", "backfill")
	if !st.Watermark.Equal(wm) || string(st.Cursor) != `{}` || st.LastSuccessAt == nil {
		t.Errorf("state after success = %+v", st)
	}
	if err := s.SetState(ctx, "communications", "", Checkpoint{Cursor: json.RawMessage(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	all, err := s.States(ctx, "communications")
	if err != nil || len(all) != 2 || all[0].Partition != "" || all[1].Partition != "backfill" {
		t.Errorf("States = %+v, %v", all, err)
	}

	// Runs, and the freshness view over them.
	total := Counts{}
	total.Add(c)
	if err := s.FinishRun(ctx, runID, RunResult{Status: RunSucceeded, RequestsUsed: 4, Retries: 1, RowsByTable: total.RowsByTable(), Rejected: total.Rejected}); err != nil {
		t.Fatal(err)
	}
	runs := qualified(schema, "sync_runs")
	assertText(t, pool, "succeeded 4 2 true", "SELECT status || ' ' || requests_used || ' ' || (rows_by_table->>'emails') || ' ' || (finished_at IS NOT NULL) FROM "+runs+" WHERE run_id = $1::uuid", runID)
	if err := s.FinishRun(ctx, "00000000-0000-0000-0000-000000000000", RunResult{Status: RunFailed}); err == nil {
		t.Error("FinishRun of an unknown run succeeded")
	}
	if err := s.FinishRun(ctx, runID, RunResult{Status: "done"}); err == nil {
		t.Error("FinishRun accepted an unknown status")
	}
	skipped, err := s.RecordSkipped(ctx, Run{Trigger: "serve", Streams: []string{"brands"}}, "another sync holds the lock")
	if err != nil {
		t.Fatal(err)
	}
	assertText(t, pool, "skipped another sync holds the lock", "SELECT status || ' ' || error FROM "+runs+" WHERE run_id = $1::uuid", skipped)
	ledger, err := NewLedger(pool, schema, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.CountRequest(ctx); err != nil {
		t.Fatal(err)
	}
	assertText(t, pool, fmt.Sprintf("communications 2 %d succeeded 1 true", c.Written()), "SELECT stream || ' ' || partitions || ' ' || rows_total || ' ' || last_run_status || ' ' || quota_requests || ' ' || (lag IS NULL) FROM "+qualified(schema, "sync_freshness"))
}

func TestLedger(t *testing.T) {
	t.Parallel()
	_, pool, schema := newStore(t)
	ctx := context.Background()
	bucharest, err := time.LoadLocation("Europe/Bucharest")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	now := time.Date(2024, 11, 4, 21, 59, 0, 0, time.UTC) // 23:59 in Bucharest
	clock := func() time.Time { return now }
	l, err := NewLedger(pool, schema, bucharest, clock)
	if err != nil {
		t.Fatal(err)
	}
	var counter extract.QuotaCounter = l
	for range 3 {
		if err := counter.CountRequest(ctx); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Minute) // 00:01 of the next quota day in Bucharest, still the 4th in UTC
	if err := l.CountRequest(ctx); err != nil {
		t.Fatal(err)
	}
	if d := l.Today(); d != time.Date(2024, 11, 5, 0, 0, 0, 0, time.UTC) {
		t.Errorf("Today = %v", d)
	}

	// A new ledger (a restarted process) reads the same counts.
	l2, _ := NewLedger(pool, schema, bucharest, clock)
	for _, c := range []struct {
		day  time.Time
		want int
	}{{time.Date(2024, 11, 4, 0, 0, 0, 0, time.UTC), 3}, {time.Date(2024, 11, 5, 0, 0, 0, 0, bucharest), 1}, {time.Date(2024, 11, 6, 0, 0, 0, 0, time.UTC), 0}} {
		got, err := l2.Spent(ctx, c.day)
		if err != nil || got != c.want {
			t.Errorf("Spent(%s) = %d, %v; want %d", c.day.Format("2006-01-02"), got, err, c.want)
		}
	}

	// Counting is durable at once, outside any page transaction.
	if err := l2.CountRequest(ctx); err != nil {
		t.Fatal(err)
	}
	assertCount(t, pool, 2, "SELECT requests FROM "+qualified(schema, "api_quota_usage")+" WHERE day = '2024-11-05'")
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, Config{Schema: "x"}); err == nil {
		t.Error("New accepted a nil pool")
	}
	_, pool, _ := newStore(t)
	if _, err := New(pool, Config{}); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("New without schema = %v", err)
	}
	if _, err := New(pool, Config{Schema: "x", StatementTimeout: -time.Second}); err == nil {
		t.Error("New accepted a negative timeout")
	}
}

func TestPageSessionSettings(t *testing.T) {
	t.Parallel()
	pool, schema := warehousetestSchema(t)
	// SyncCommit leaves the server's synchronous_commit as configured.
	serverSync := queryText(t, pool, "SELECT current_setting('synchronous_commit')")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Schema: schema, StatementTimeout: 1500 * time.Millisecond}, "UTC 1500ms off force_custom_plan"},
		{Config{Schema: schema, SyncCommit: true}, "UTC 0 " + serverSync + " force_custom_plan"},
	} {
		s, err := New(pool, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		commit(t, s, page{then: func(ctx context.Context, tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT current_setting('TimeZone') || ' ' || current_setting('statement_timeout') || ' ' ||
				current_setting('synchronous_commit') || ' ' || current_setting('plan_cache_mode')`).Scan(&got)
		}})
		if got != c.want {
			t.Errorf("settings in a page = %q, want %q", got, c.want)
		}
	}
}

// A fast-path copy that collides with a row another transaction commits
// meanwhile is retried through the merge instead of failing the page.
func TestConcurrentWriterCollision(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := other.Exec(ctx, "INSERT INTO "+qualified(schema, "emails")+
		" (record_id, subject, email_at, raw) VALUES (2701, 'from elsewhere', now(), '{}')"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // the page's COPY is waiting on the row by now
		done <- other.Commit(ctx)
	}()
	c := commit(t, s, page{batch: fullBatch()})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := c.Tables["emails"]; got != (TableCounts{Inserted: 1, Updated: 1}) {
		t.Errorf("emails = %+v, want 2702 inserted and 2701 updated by the retry", got)
	}
	assertText(t, pool, "Ofertă campanie Crăciun", "SELECT subject FROM "+qualified(schema, "emails")+" WHERE record_id = 2701")
}

// TestFastPathMergesRowsOfParentsNotNamed: a child table's batch that names
// one parent (with no children stored) but also holds a row of another
// parent, stored already, must not be copied straight in: the write merges
// it in the page's first attempt — the new child inserted, the stored one
// updated — and replaces only the named parent's children.
func TestFastPathMergesRowsOfParentsNotNamed(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	first := rowsBatch(t, "project_team_members", []any{"7", "12", int64(12), "Ana-Maria Popescu", "Account"})
	first.Tables["project_team_members"].Parents = []any{"7"}
	commit(t, s, page{batch: first})

	next := rowsBatch(t, "project_team_members",
		[]any{"8", "13", int64(13), "Ștefan Ionescu", "Creative"},
		[]any{"7", "12", int64(12), "Ana-Maria Popescu", "Lead"})
	next.Tables["project_team_members"].Parents = []any{"8"}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	stages := &stageSet{known: conn.Conn().PgConn().CustomData()}
	var got Counts
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var werr error
		got, werr = s.commit(ctx, tx, &page{batch: next}, stages, true)
		return werr
	})
	if err != nil {
		t.Fatalf("fast-path write of a batch with a stored row of another parent: %v", err)
	}
	if c := got.Tables["project_team_members"]; c != (TableCounts{Inserted: 1, Updated: 1}) {
		t.Errorf("project_team_members = %+v, want 1 inserted and 1 updated", c)
	}
	assertText(t, pool, "7/12/Lead 8/13/Creative", "SELECT string_agg(project_id || '/' || user_id || '/' || role, ' ' ORDER BY project_id) FROM "+
		qualified(schema, "project_team_members"))
}

// The engine loads the projects list every run and a project's detail when
// it changed; the two records must not overwrite each other's raw, or every
// run after a detail fetch would rewrite the row.
func TestListAndDetailDoNotChurn(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	listed := fixture.Project{ID: "7", BrandID: "42", Name: "Campanie Crăciun 2024", Status: "in_progress",
		Deadline: day(2024, 12, 20), Raw: json.RawMessage(`{"id":"7","name":"Campanie Crăciun 2024"}`)}
	detailed := listed
	detailed.Team = []fixture.TeamMember{{UserID: "12", FullName: "Ana-Maria Popescu", Role: "Account"}}
	detailed.Raw = json.RawMessage(`{"id":"7","name":"Campanie Crăciun 2024","team":[{"user_id":12}]}`)
	brand := fixture.Brand{ID: "42", Name: "Cofetăria Dulce Tradiție", Raw: json.RawMessage(`{"brand_info":{"id":42}}`)}
	brandDetail := fixture.BrandDetail{Brand: fixture.Brand{ID: "42", Name: "Cofetăria Dulce Tradiție", Raw: json.RawMessage(`{"id":42}`)},
		GeneralInfo: json.RawMessage(`{"cui":"RO1"}`), Raw: json.RawMessage(`{"brand_info":{"id":42},"general_info":{"cui":"RO1"}}`)}
	snapshot := time.Date(2024, 11, 5, 0, 0, 0, 0, time.UTC)

	// A detail first (never listed): raw falls back to the detail.
	var b transform.Batch
	b.Append(recordjson.ProjectDetails([]fixture.Project{detailed}))
	b.Append(recordjson.BrandDetails([]fixture.BrandDetail{brandDetail}, snapshot))
	commit(t, s, page{batch: b})
	// A project never listed: raw = detail_raw.
	assertText(t, pool, "true", "SELECT (raw::text = detail_raw::text)::text FROM "+qualified(schema, "projects"))

	list := func() transform.Batch {
		var b transform.Batch
		b.Append(recordjson.Projects([]fixture.Project{listed}))
		b.Append(recordjson.Brands([]fixture.Brand{brand}, snapshot))
		return b
	}
	commit(t, s, page{batch: list()}) // raw becomes the list's record
	b = recordjson.ProjectDetails([]fixture.Project{detailed})
	b.Append(recordjson.BrandDetails([]fixture.BrandDetail{brandDetail}, snapshot))
	if c := commit(t, s, page{batch: b}); c.Written() != 0 {
		t.Errorf("an unchanged detail after the list wrote %+v", c.Tables)
	}
	projects, brands := versions(t, pool, schema, "projects"), versions(t, pool, schema, "brands")
	if c := commit(t, s, page{batch: list()}); c.Written() != 0 {
		t.Errorf("the next unchanged list wrote %+v", c.Tables)
	}
	if !maps.Equal(projects, versions(t, pool, schema, "projects")) || !maps.Equal(brands, versions(t, pool, schema, "brands")) {
		t.Error("list and detail rewrite each other's rows")
	}
	for _, table := range []string{"projects", "brands"} {
		got := queryText(t, pool, "SELECT (raw ? 'team' OR raw ? 'general_info')::text || ' ' || (detail_raw IS NOT NULL) FROM "+qualified(schema, table))
		if got != "false true" {
			t.Errorf("%s: raw holds a detail or detail_raw is lost: %s", table, got)
		}
	}
	assertCount(t, pool, 1, "SELECT count(*) FROM "+qualified(schema, "project_team_members"))
}

// budget is a budget record with key id, as a listing page carries it.
func budget(id string) fixture.Budget {
	return fixture.Budget{ID: extract.ID(id), Amount: "100", Currency: "RON", Raw: json.RawMessage(`{"id":"` + id + `"}`)}
}
