package load

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/internal/testkit/recordjson"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
	"github.com/agencysync/agencysync/warehouse"
)

func TestMain(m *testing.M) { warehousetest.Main(m) }

func ptr[T any](v T) *T { return &v }

// warehousetestSchema returns a fresh, migrated schema on a pool whose
// sessions have no statement timeout of their own.
func warehousetestSchema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	_, schema := warehousetest.Schema(t)
	pool, err := warehouse.Connect(context.Background(), warehousetest.DSN(t), warehouse.PoolOptions{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, schema
}

// newStore returns a Store on a fresh, migrated schema.
func newStore(t testing.TB) (*Store, *pgxpool.Pool, string) {
	t.Helper()
	pool, schema := warehousetest.Schema(t)
	s, err := New(pool, Config{Schema: schema, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return s, pool, schema
}

func commit(t testing.TB, s *Store, p page) Counts {
	t.Helper()
	c, err := s.commitPage(context.Background(), p)
	if err != nil {
		t.Fatalf("commit page: %v", err)
	}
	return c
}

// rowVersion is what a row's stored version shows: a rewritten row gets a
// new xmin, a row locked by a later transaction (ON CONFLICT DO UPDATE takes
// the lock even when its WHERE refuses the update) gets an xmax.
type rowVersion struct {
	xmin, xmax uint32
	syncedAt   time.Time
}

// versions maps each row of table, by its key rendered as text, to its version.
func versions(t testing.TB, pool *pgxpool.Pool, schema, table string) map[string]rowVersion {
	t.Helper()
	sp := specByName(t, table)
	key := "concat_ws('|'"
	for _, c := range sp.key {
		key += ", " + pgx.Identifier{c.name}.Sanitize() + "::text"
	}
	key += ")"
	rows, err := pool.Query(context.Background(), fmt.Sprintf("SELECT %s, xmin::text::bigint, xmax::text::bigint, _synced_at FROM %s",
		key, pgx.Identifier{schema, table}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rowVersion{}
	for rows.Next() {
		var k string
		var xmin, xmax int64
		var v rowVersion
		if err := rows.Scan(&k, &xmin, &xmax, &v.syncedAt); err != nil {
			t.Fatal(err)
		}
		v.xmin, v.xmax = uint32(xmin), uint32(xmax)
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func specByName(t testing.TB, name string) *spec {
	for _, s := range specsOf(stream.All()) {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no spec %s", name)
	return nil
}

// execSQL runs one statement of a test's own set-up on pool, failing the
// test when it fails.
func execSQL(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryInt(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func queryText(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	var s *string
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if s == nil {
		return "<NULL>"
	}
	return *s
}

// assertCount reports when the number sql reads (see queryInt) is not want.
func assertCount(t testing.TB, pool *pgxpool.Pool, want int64, sql string, args ...any) {
	t.Helper()
	if got := queryInt(t, pool, sql, args...); got != want {
		t.Errorf("%s\n got %d\nwant %d", sql, got, want)
	}
}

// assertText reports when the text sql reads (see queryText) is not want.
func assertText(t testing.TB, pool *pgxpool.Pool, want, sql string, args ...any) {
	t.Helper()
	if got := queryText(t, pool, sql, args...); got != want {
		t.Errorf("%s\n got %q\nwant %q", sql, got, want)
	}
}

func qualified(schema, table string) string { return pgx.Identifier{schema, table}.Sanitize() }

// Fixtures shaped like the spec's records.

func participant(email string, id *int64, first string, last *string, phone *string) fixture.Participant {
	full := first + " "
	if last != nil {
		full = first + " " + *last
	}
	return fixture.Participant{PlatformUserID: id, FirstName: first, LastName: last, FullName: full,
		Email: email, Phone: phone, Avatar: "https://platform.example/img/blank.png", Status: "Activ"}
}

var (
	ana = func(id *int64) fixture.Participant {
		return participant("ana.popescu@agentie.ro", id, "Ana-Maria", ptr("Popescu"), ptr("0722 123 456"))
	}
	stefan = func(id *int64) fixture.Participant {
		return participant("Stefan.Ionescu@agentie.ro", id, "Ștefan", ptr("Ionescu"), ptr(""))
	}
	ioana = func() fixture.Participant { return participant("ioana@client-brand.ro", nil, "Ioana", nil, nil) }
	mihai = func() fixture.Participant { return participant("", ptr(int64(88)), "Mihai", ptr("Stan"), nil) }
)

func communication(id int64, subject string, from []fixture.Participant, to, cc, bcc []fixture.Participant) fixture.Communication {
	at := time.Date(2024, 11, 4, 8, 0, 0, 0, time.UTC).Add(time.Duration(id)*time.Minute + 123456*time.Microsecond)
	raw, _ := json.Marshal(map[string]any{"email": map[string]any{"subject": subject, "email_at": at.Format(time.RFC3339Nano)},
		"users": map[string]any{"from": len(from), "to": len(to)}})
	return fixture.Communication{
		RecordID: id,
		Email: fixture.EmailFields{TypeID: ptr(int64(1)), TypeName: ptr("Email"), BrandID: "42", Subject: &subject,
			HasAttachments: id%2 == 0, Size: ptr(1000 + id), MailboxID: "m" + strconv.FormatInt(id, 10), MailboxThread: "t1", EmailAt: at},
		Users: fixture.Participants{From: from, To: to, CC: cc, BCC: bcc},
		Raw:   raw,
	}
}

func day(y int, m time.Month, d int) *time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return &t
}

// fullBatch holds rows of every table of the model.
func fullBatch() transform.Batch {
	var b transform.Batch
	raw := func(id string) json.RawMessage { return json.RawMessage(`{"id":"` + id + `"}`) }
	snapshot := time.Date(2024, 11, 5, 0, 0, 0, 0, time.UTC)
	b.Append(recordjson.BrandDetails([]fixture.BrandDetail{{
		Brand: fixture.Brand{ID: "42", Name: "Cofetăria Dulce Tradiție", Status: "active", DateCreated: day(2021, 3, 15),
			AccountManager: "Mădălina Georgescu", ProjectsCount: ptr(int64(2)),
			FinancialSummary: &fixture.FinancialSummary{TotalBudget: "125000.50", Invoiced: "80000", Collected: "79999.99", Currency: "RON"},
			Raw:              raw("42")},
		GeneralInfo: json.RawMessage(`{"website":"https://dulcetraditie.ro"}`), Metadata: json.RawMessage(`{"tags":["retail"]}`),
	}}, snapshot))
	b.Append(recordjson.Brands([]fixture.Brand{{ID: "43", Name: "Vinăria Dealul Mare", Raw: raw("43")}}, snapshot))
	b.Append(recordjson.Contacts("42", []fixture.Contact{
		{ID: "c1", FirstName: "Ilinca", LastName: ptr("Vasilescu"), FullName: "Ilinca Vasilescu", Email: ptr("ilinca@dulce.ro"), Phone: ptr(""), IsPrimary: true, Raw: raw("c1")},
		{ID: "c2", FirstName: "Radu", FullName: "Radu ", Raw: raw("c2")},
	}))
	b.Append(recordjson.ProjectDetails([]fixture.Project{{
		ID: "7", BrandID: "42", Name: "Campanie Crăciun 2024", Status: "in_progress", StartDate: day(2024, 10, 1), Deadline: day(2024, 12, 20),
		Budget: &fixture.Money{Amount: "30000.00", Currency: "RON"},
		Team:   []fixture.TeamMember{{UserID: "12", FullName: "Ana-Maria Popescu", Role: "Account"}, {UserID: "17", FullName: "Ștefan Ionescu", Role: "Creative"}},
		Deliverables: []fixture.Deliverable{{ID: "d1", Name: "Concept", DueDate: day(2024, 10, 15), Status: "delivered", DeliveredAt: ptr(time.Date(2024, 10, 14, 16, 0, 0, 0, time.UTC))},
			{ID: "d2", Name: "Spot TV", DueDate: day(2024, 12, 1), Status: "open"}},
		History: []fixture.HistoryEntry{{At: time.Date(2024, 10, 1, 9, 0, 0, 0, time.UTC), Field: "status", To: ptr("planned"), ByUserID: "12"},
			{At: time.Date(2024, 10, 1, 9, 0, 0, 0, time.UTC), Field: "status", From: ptr("planned"), To: ptr("in_progress"), ByUserID: "12"}},
		Raw: raw("7"),
	}}))
	b.Append(recordjson.Budgets([]fixture.Budget{{ID: "b1", ProjectID: "7", BrandID: "42", Amount: "30000.00", Currency: "RON", PeriodStart: day(2024, 10, 1), PeriodEnd: day(2024, 12, 31), Raw: raw("b1")}}))
	b.Append(recordjson.Invoices([]fixture.Invoice{{ID: "i1", Number: "AG-2024-0113", ProjectID: "7", BrandID: "42", IssueDate: day(2024, 11, 1), Amount: "12345678901234567890.125", Currency: "RON", Status: "issued", Raw: raw("i1")}}))
	b.Append(recordjson.Collections([]fixture.Collection{{ID: "k1", InvoiceID: "i1", CollectedOn: day(2024, 11, 20), Amount: "0.10", Currency: "RON", Raw: raw("k1")}}))
	b.Append(recordjson.Payments([]fixture.Payment{{ID: "p1", ProjectID: "7", Payee: "Studio Foto SRL", PaidOn: day(2024, 11, 21), Amount: "2500", Currency: "EUR", Raw: raw("p1")}}))
	b.Append(recordjson.Profitabilities([]fixture.Profitability{
		{Level: "project", EntityID: "7", Period: "2024-11", Revenue: "30000", Cost: "21000.5", Margin: "8999.5", Currency: "RON", Raw: raw("7")},
		{Level: "brand", EntityID: "42", Period: "2024-11", Revenue: "90000", Cost: "60000", Margin: "30000", Currency: "RON", Raw: raw("42")},
	}))
	b.Append(recordjson.AgencySummaries([]fixture.AgencySummary{{Period: "2024-11", TotalBudget: "500000", Invoiced: "320000.75", Collected: "300000", Paid: "120000", Profit: "180000.75", Currency: "RON", Raw: raw("s")}}))
	b.Append(recordjson.Communications([]fixture.Communication{
		communication(2701, "Ofertă campanie Crăciun", []fixture.Participant{ana(nil)}, []fixture.Participant{stefan(ptr(int64(17)))}, nil, nil),
		communication(2702, "Re: Ofertă", []fixture.Participant{ioana()}, []fixture.Participant{ana(ptr(int64(12))), stefan(ptr(int64(17)))},
			[]fixture.Participant{mihai()}, []fixture.Participant{stefan(ptr(int64(17)))}),
	}))
	return b
}

// setValue changes one value of a batch's row, as a later version of the
// record would.
func setValue(t testing.TB, b *transform.Batch, table string, row int, col string, v any) {
	t.Helper()
	tr := b.Rows(table)
	if tr == nil || row >= len(tr.Rows) {
		t.Fatalf("batch has no row %d of %s", row, table)
	}
	i := slices.Index(tr.Table.ColumnNames(), col)
	if i < 0 {
		t.Fatalf("%s has no column %s", table, col)
	}
	tr.Rows[row][i] = v
}

// rowsBatch is a batch of table's rows, values in the declared order.
func rowsBatch(t testing.TB, table string, rows ...[]any) transform.Batch {
	t.Helper()
	tb, _, ok := stream.LookupTable(table)
	if !ok {
		t.Fatalf("no table %s", table)
	}
	return transform.Batch{Tables: map[string]*transform.TableRows{table: {Table: tb, Rows: rows}}}
}

// endsIf is the listings a page ends: l when last, else none.
func endsIf(l *Listing, last bool) []*Listing {
	if last {
		return []*Listing{l}
	}
	return nil
}
