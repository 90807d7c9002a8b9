package reliability

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/transform"
)

// truthLine is one line of GET /_sandbox/truth.
type truthLine struct {
	Stream  string          `json:"stream"`
	Key     string          `json:"key"`
	BrandID string          `json:"brand_id"`
	Bad     bool            `json:"bad"`
	Record  json.RawMessage `json:"record"`
}

// truth is the sandbox's dataset at one moment, by stream.
type truth map[string][]truthLine

// truth fetches the sandbox's ground truth. The answer is read whole first
// (hundreds of megabytes at soak sizes), then split: each line's record is
// its last field, so only the small head of a line is decoded.
func (s *sandboxProc) truth() truth {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rc, err := s.p.Truth(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		s.t.Fatalf("fetch the truth: %v", err)
	}
	out := truth{}
	marker := []byte(`,"record":`)
	for line := range bytes.Lines(body) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		var l truthLine
		i := bytes.Index(line, marker)
		if i < 0 || !bytes.HasSuffix(line, []byte("}")) {
			s.t.Fatalf("truth line %.200q: no record", line)
		}
		if err := json.Unmarshal(append(bytes.Clone(line[:i]), '}'), &l); err != nil {
			s.t.Fatalf("truth line %.200q: %v", line, err)
		}
		l.Record = json.RawMessage(line[i+len(marker) : len(line)-1])
		if !json.Valid(l.Record) {
			s.t.Fatalf("truth line %.200q: the record is not JSON", line)
		}
		out[l.Stream] = append(out[l.Stream], l)
	}
	return out
}

// counts returns the good and bad records of a stream.
func (tr truth) counts(stream string) (good, bad int) {
	for _, l := range tr[stream] {
		if l.Bad {
			bad++
		} else {
			good++
		}
	}
	return good, bad
}

// bad counts the malformed records of every stream.
func (tr truth) bad() int {
	n := 0
	for s := range tr {
		_, b := tr.counts(s)
		n += b
	}
	return n
}

// emailIDs returns the record ids of the communications, ascending, with
// whether each is malformed.
func (tr truth) emailIDs() (ids []int64, bad []bool) {
	type e struct {
		id  int64
		bad bool
	}
	var es []e
	for _, l := range tr["communications"] {
		id, _ := strconv.ParseInt(l.Key, 10, 64)
		es = append(es, e{id, l.Bad})
	}
	slices.SortFunc(es, func(a, b e) int { return cmp.Compare(a.id, b.id) })
	for _, x := range es {
		ids = append(ids, x.id)
		bad = append(bad, x.bad)
	}
	return ids, bad
}

// minimumRequests is what a complete first sync of the truth costs at 1000
// rows a page: one request per list page (brands, projects, each finance
// list, profitability per level), per communications page, per brand detail
// and contacts list, and per project detail.
func (tr truth) minimumRequests() (total int, byEndpoint map[string]int) {
	pages := func(n int) int { return max(1, (n+999)/1000) }
	n := func(s string) int { return len(tr[s]) }
	levels := map[string]int{}
	for _, l := range tr["profitability"] {
		level, _, _ := strings.Cut(l.Key, ":")
		levels[level]++
	}
	contacts := 0
	for _, b := range tr["brands"] {
		c := 0
		for _, l := range tr["contacts"] {
			if l.BrandID == b.Key {
				c++
			}
		}
		contacts += pages(c)
	}
	byEndpoint = map[string]int{
		"brands": pages(n("brands")), "projects": pages(n("projects")),
		"budgets": pages(n("budgets")), "invoices": pages(n("invoices")), "collections": pages(n("collections")),
		"payments": pages(n("payments")), "profitability": pages(levels["project"]) + pages(levels["brand"]),
		"summary": pages(n("summary")), "communications": pages(n("communications")),
		"brand_detail": n("brands"), "contacts": contacts, "project_detail": n("projects"),
	}
	for _, v := range byEndpoint {
		total += v
	}
	return total, byEndpoint
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

// Value encoders for COPY: nil pointers are NULL.
func sv(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func iv(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func tv(p *time.Time) any {
	if p == nil {
		return nil
	}
	return *p
}

func jv(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return r
}

// numerics turns exact decimal text into pgtype.Numeric (the first error is kept).
type numerics struct{ err error }

func (n *numerics) of(p *string) any {
	if p == nil {
		return nil
	}
	var v pgtype.Numeric
	if err := v.ScanScientific(*p); err != nil {
		if n.err == nil {
			n.err = fmt.Errorf("decimal %q: %w", *p, err)
		}
		return nil
	}
	return v
}

// listBody wraps records into a canonical list answer for extract.DecodeList.
func listBody(records []json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"data":[`)
	for k, r := range records {
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(r)
	}
	fmt.Fprintf(&b, `],"total":%d,"per_page":%d,"current_page":1,"last_page":1}`, len(records), max(len(records), 1))
	return b.Bytes()
}

func records(lines []truthLine) []json.RawMessage {
	out := make([]json.RawMessage, len(lines))
	for k, l := range lines {
		out[k] = l.Record
	}
	return out
}

// expectedRows builds, from the truth, the rows every compared table should
// hold: the records go through the project's own decoders (package extract)
// and transforms (package transform), as the worker's pages do. day is the
// snapshot day of brand_financial_snapshots.
func expectedRows(t *testing.T, tr truth, day time.Time) map[string][][]any {
	t.Helper()
	var b transform.Batch
	// Brands: the list's rows, with general_info and metadata of the details.
	brandPage, err := extract.DecodeList[extract.Brand](listBody(records(tr["brands"])))
	if err != nil {
		t.Fatalf("decode the truth's brands: %v", err)
	}
	brands := transform.Brands(brandPage.Records, day)
	brands.Rejects = append(brands.Rejects, transform.RecordErrors(transform.StreamBrands, brandPage.Rejects)...)
	var details []extract.BrandDetail
	for _, l := range tr["brand_details"] {
		d, err := extract.DecodeBrandDetail(l.Record)
		if err != nil {
			t.Fatalf("decode the truth's brand detail %s: %v", l.Key, err)
		}
		details = append(details, *d)
	}
	detailRows := map[string]transform.Brand{}
	for _, r := range transform.BrandDetails(details, day).Brands {
		detailRows[r.BrandID] = r
	}
	for k := range brands.Brands {
		d := detailRows[brands.Brands[k].BrandID]
		brands.Brands[k].GeneralInfo, brands.Brands[k].Metadata = d.GeneralInfo, d.Metadata
	}
	b.Append(brands)

	// Contacts, per brand.
	byBrand := map[string][]json.RawMessage{}
	var brandOrder []string
	for _, l := range tr["contacts"] {
		if _, ok := byBrand[l.BrandID]; !ok {
			brandOrder = append(brandOrder, l.BrandID)
		}
		byBrand[l.BrandID] = append(byBrand[l.BrandID], l.Record)
	}
	for _, id := range brandOrder {
		p, err := extract.DecodeList[extract.Contact](listBody(byBrand[id]))
		if err != nil {
			t.Fatalf("decode the truth's contacts of brand %s: %v", id, err)
		}
		c := transform.Contacts(extract.ID(id), p.Records)
		c.Rejects = append(c.Rejects, transform.RecordErrors(transform.StreamBrandContacts, p.Rejects)...)
		b.Append(c)
	}

	// Projects: the truth holds their details.
	var projects []extract.Project
	for _, l := range tr["projects"] {
		p, err := extract.DecodeProject(l.Record)
		if err != nil {
			t.Fatalf("decode the truth's project %s: %v", l.Key, err)
		}
		projects = append(projects, *p)
	}
	b.Append(transform.ProjectDetails(projects))

	b.Append(decodeList(t, tr, "budgets", transform.StreamBudgets, transform.Budgets))
	b.Append(decodeList(t, tr, "invoices", transform.StreamInvoices, transform.Invoices))
	b.Append(decodeList(t, tr, "collections", transform.StreamCollections, transform.Collections))
	b.Append(decodeList(t, tr, "payments", transform.StreamPayments, transform.Payments))
	b.Append(decodeList(t, tr, "profitability", transform.StreamProfitability, transform.Profitabilities))
	b.Append(decodeList(t, tr, "summary", transform.StreamAgencySummary, transform.AgencySummaries))

	// Communications, in chunks of 2000 records in id order; a person seen in
	// several chunks keeps each attribute's last known value, as the
	// warehouse's users merge does.
	comms := tr["communications"]
	users := map[string]int{}
	for from := 0; from < len(comms); from += 2000 {
		chunk := comms[from:min(from+2000, len(comms))]
		var body bytes.Buffer
		body.WriteString(`{"data":{"rows":{`)
		for k, l := range chunk {
			if k > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, "%q:%s", l.Key, l.Record)
		}
		fmt.Fprintf(&body, `},"total":%d,"per_page":%d,"current_page":1,"last_page":1}}`, len(chunk), max(len(chunk), 1))
		page, err := extract.DecodeCommunications(body.Bytes())
		if err != nil {
			t.Fatalf("decode the truth's communications: %v", err)
		}
		cb := transform.Communications(page.Records)
		b.Emails = append(b.Emails, cb.Emails...)
		b.EmailRecipients = append(b.EmailRecipients, cb.EmailRecipients...)
		b.Rejects = append(b.Rejects, cb.Rejects...)
		b.Rejects = append(b.Rejects, transform.RecordErrors(transform.StreamCommunications, page.Rejects)...)
		for _, u := range cb.Users {
			if k, ok := users[u.UserKey]; ok {
				mergeUser(&b.Users[k], u)
				continue
			}
			users[u.UserKey] = len(b.Users)
			b.Users = append(b.Users, u)
		}
	}
	return encodeExpected(t, &b)
}

// decodeList decodes the truth's records of a list stream as one list answer
// and transforms them; records that do not decode are rejects of rejStream.
func decodeList[T any, P extract.Record[T]](t *testing.T, tr truth, stream, rejStream string, conv func([]T) transform.Batch) transform.Batch {
	t.Helper()
	p, err := extract.DecodeList[T, P](listBody(records(tr[stream])))
	if err != nil {
		t.Fatalf("decode the truth's %s: %v", stream, err)
	}
	b := conv(p.Records)
	b.Rejects = append(b.Rejects, transform.RecordErrors(rejStream, p.Rejects)...)
	return b
}

// mergeUser keeps each attribute's last known value.
func mergeUser(u *transform.User, later transform.User) {
	for _, f := range []struct{ dst, src **string }{{&u.FirstName, &later.FirstName}, {&u.LastName, &later.LastName},
		{&u.FullName, &later.FullName}, {&u.Email, &later.Email}, {&u.Phone, &later.Phone},
		{&u.AvatarURL, &later.AvatarURL}, {&u.Status, &later.Status}} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	if later.PlatformUserID != nil {
		u.PlatformUserID = later.PlatformUserID
	}
}

// encodeExpected lays out the batch's rows in the columns of compared.
func encodeExpected(t *testing.T, b *transform.Batch) map[string][][]any {
	t.Helper()
	var n numerics
	out := map[string][][]any{}
	add := func(table string, row ...any) { out[table] = append(out[table], row) }
	for _, r := range b.Brands {
		add("brands", r.BrandID, sv(r.Name), sv(r.Status), tv(r.DateCreated), sv(r.AccountManager), iv(r.ProjectsCount),
			n.of(r.TotalBudget), n.of(r.Invoiced), n.of(r.Collected), sv(r.Currency), jv(r.GeneralInfo), jv(r.Metadata))
	}
	for _, r := range b.BrandFinancialSnapshots {
		add("brand_financial_snapshots", r.BrandID, r.SnapshotDate, n.of(r.TotalBudget), n.of(r.Invoiced),
			n.of(r.Collected), sv(r.Currency))
	}
	for _, r := range b.BrandContacts {
		add("brand_contacts", r.BrandID, r.ContactID, sv(r.FirstName), sv(r.LastName), sv(r.FullName), sv(r.Email),
			sv(r.Phone), sv(r.Position), r.IsPrimary, jv(r.Raw))
	}
	for _, r := range b.Projects {
		add("projects", r.ProjectID, sv(r.BrandID), sv(r.Name), sv(r.Status), tv(r.StartDate), tv(r.Deadline),
			tv(r.ClosedAt), tv(r.UpdatedAt), n.of(r.BudgetAmount), sv(r.BudgetCurrency))
	}
	for _, r := range b.ProjectTeamMembers {
		add("project_team_members", r.ProjectID, r.UserID, iv(r.PlatformUserID), sv(r.FullName), sv(r.Role))
	}
	for _, r := range b.ProjectDeliverables {
		add("project_deliverables", r.ProjectID, r.DeliverableID, sv(r.Name), tv(r.DueDate), sv(r.Status), tv(r.DeliveredAt))
	}
	for _, r := range b.ProjectHistory {
		add("project_history", r.ProjectID, r.At, r.Field, r.Seq, sv(r.FromValue), sv(r.ToValue), sv(r.ByUserID))
	}
	for _, r := range b.Budgets {
		add("budgets", r.BudgetID, sv(r.ProjectID), sv(r.BrandID), n.of(r.Amount), sv(r.Currency), tv(r.PeriodStart),
			tv(r.PeriodEnd), tv(r.UpdatedAt), jv(r.Raw))
	}
	for _, r := range b.Invoices {
		add("invoices", r.InvoiceID, sv(r.Number), sv(r.ProjectID), sv(r.BrandID), tv(r.IssueDate), tv(r.DueDate),
			n.of(r.Amount), sv(r.Currency), sv(r.Status), tv(r.UpdatedAt), jv(r.Raw))
	}
	for _, r := range b.Collections {
		add("collections", r.CollectionID, sv(r.InvoiceID), tv(r.CollectedOn), n.of(r.Amount), sv(r.Currency),
			tv(r.UpdatedAt), jv(r.Raw))
	}
	for _, r := range b.Payments {
		add("payments", r.PaymentID, sv(r.ProjectID), sv(r.BrandID), sv(r.Payee), tv(r.PaidOn), n.of(r.Amount),
			sv(r.Currency), sv(r.Status), tv(r.UpdatedAt), jv(r.Raw))
	}
	for _, r := range b.Profitability {
		add("profitability", r.Level, r.EntityID, r.Period, n.of(r.Revenue), n.of(r.Cost), n.of(r.Margin),
			sv(r.Currency), jv(r.Raw))
	}
	for _, r := range b.AgencyFinanceSummary {
		add("agency_finance_summary", r.Period, n.of(r.TotalBudget), n.of(r.Invoiced), n.of(r.Collected),
			n.of(r.Paid), n.of(r.Profit), sv(r.Currency), jv(r.Raw))
	}
	for _, r := range b.Emails {
		add("emails", r.RecordID, iv(r.TypeID), sv(r.TypeName), sv(r.BrandID), sv(r.ProjectID), r.Subject, sv(r.Message),
			r.HasAttachments, iv(r.SizeBytes), sv(r.MailboxID), sv(r.MailboxThread), r.EmailAt, jv(r.Raw))
	}
	for _, r := range b.Users {
		add("users", r.UserKey, iv(r.PlatformUserID), sv(r.FirstName), sv(r.LastName), sv(r.FullName), sv(r.Email),
			sv(r.Phone), sv(r.AvatarURL), sv(r.Status))
	}
	for _, r := range b.EmailRecipients {
		add("email_recipients", r.RecordID, r.Role, r.UserKey)
	}
	for _, r := range b.Rejects {
		add("rejected_records", r.Stream, r.Key, jv(r.Payload))
	}
	if n.err != nil {
		t.Fatalf("encode the expected rows: %v", n.err)
	}
	return out
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
// SQL. The expected side is the truth's rows (expectedRows) copied into a
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
	exp := expectedRows(t, tr, day)
	// The expected side must agree with the sandbox on which records are bad:
	// otherwise the comparison below would hold the worker to a wrong standard.
	checkRejectsMatchTruth(t, tr, exp["rejected_records"])

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

// truthRejectStreams maps the truth's streams to rejected_records.stream.
var truthRejectStreams = map[string]string{
	"communications": transform.StreamCommunications, "budgets": transform.StreamBudgets,
	"invoices": transform.StreamInvoices, "collections": transform.StreamCollections, "payments": transform.StreamPayments,
}

// checkRejectsMatchTruth checks that the decoders and transforms reject
// exactly the records the sandbox made malformed.
func checkRejectsMatchTruth(t *testing.T, tr truth, rejects [][]any) {
	t.Helper()
	want := map[string]bool{}
	for stream, rs := range truthRejectStreams {
		for _, l := range tr[stream] {
			if l.Bad {
				want[rs+"/"+l.Key] = true
			}
		}
	}
	got := map[string]bool{}
	for _, r := range rejects {
		got[r[0].(string)+"/"+r[1].(string)] = true
	}
	for k := range want {
		if !got[k] {
			t.Errorf("the truth marks %s bad, but the decoders and transforms accept it", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("the decoders and transforms reject %s, which the truth does not mark bad", k)
		}
	}
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
