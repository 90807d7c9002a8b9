package transform

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
)

// The generic transform, driven by the stream declarations and the records'
// raw JSON, gives the rows the typed transform gives: the same tables, rows,
// values, replaced parents and rejects, on sandbox-rendered pages in the
// canonical shape and in every tolerated variant, with bad records mixed in.
func TestGenericMatchesTyped(t *testing.T) {
	sets := [][]string{nil}
	for _, v := range sandbox.Variants() {
		sets = append(sets, []string{v.Name})
	}
	for _, vs := range sets {
		name := strings.Join(vs, "+")
		if name == "" {
			name = "canonical"
		}
		t.Run(name, func(t *testing.T) {
			for _, bad := range []float64{0, 0.15} {
				compareOnSandbox(t, vs, bad)
			}
		})
	}
}

func compareOnSandbox(t *testing.T, variants []string, badRate float64) {
	t.Helper()
	o := sandbox.DefaultOptions()
	o.Seed = 11
	o.Brands, o.ProjectsPerBrand, o.Users, o.Emails, o.HistoryDays = 3, 3, 12, 300, 60
	o.NoLimits = true
	o.Variants = variants
	o.BadRecordRate = badRate
	sb, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	cl, err := extract.New(extract.Options{BaseURL: sb.APIURL(), APIKey: o.APIKey, CommsURL: sb.CommsURL(),
		CommsKey: o.CommsKey, RateLimit: 1000, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	snapshot := time.Date(2026, 11, 5, 23, 30, 0, 0, time.FixedZone("EET", 2*3600))
	s := func(name string) *stream.Stream {
		st, _ := stream.Lookup(name)
		return st
	}
	pages := 0
	counts := map[string]int{}
	check := func(what string, typed Batch, generic RowBatch) {
		t.Helper()
		pages++
		counts["rejects"] += len(typed.Rejects)
		want := typedRows(t, &typed)
		for k, v := range want {
			counts[k] += len(v)
		}
		got := genericRows(&generic)
		for _, tb := range stream.Tables() {
			w, g := want[tb.Name], got[tb.Name]
			if len(w) != len(g) {
				t.Errorf("%s: table %s: %d rows, typed had %d\n got %v\nwant %v", what, tb.Name, len(g), len(w), g, w)
				continue
			}
			for i := range w {
				if !reflect.DeepEqual(w[i], g[i]) {
					t.Errorf("%s: table %s row %d:\n got %v\nwant %v", what, tb.Name, i, g[i], w[i])
				}
			}
		}
		if w, g := typedParents(&typed), genericParents(&generic); !reflect.DeepEqual(w, g) {
			t.Errorf("%s: parents %v, typed %v", what, g, w)
		}
		if w, g := rejectKeys(typed.Rejects), rejectKeys(generic.Rejects); !reflect.DeepEqual(w, g) {
			t.Errorf("%s: rejects %v, typed %v", what, g, w)
		}
	}

	var brandIDs []extract.ID
	for p, err := range cl.Brands(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		var recs []stream.Record
		for _, b := range p.Records {
			brandIDs = append(brandIDs, b.ID)
			recs = append(recs, stream.Record{Key: string(b.ID), Raw: b.Raw})
		}
		check("brands", Brands(p.Records, snapshot),
			Records(Input{Stream: s("brands"), Endpoint: stream.EndpointBrands, Snapshot: snapshot}, recs))
	}
	for _, id := range brandIDs {
		bd, err := cl.Brand(ctx, id)
		if err != nil {
			t.Logf("brand %s: %v", id, err)
		} else {
			check("brand "+string(id), BrandDetails([]extract.BrandDetail{*bd}, snapshot),
				Records(Input{Stream: s("brands"), Endpoint: stream.EndpointBrand, Snapshot: snapshot},
					[]stream.Record{{Key: string(bd.Brand.ID), Raw: bd.Raw}}))
		}
		for p, err := range cl.BrandContacts(ctx, id) {
			if err != nil {
				t.Fatal(err)
			}
			check("contacts "+string(id), Contacts(id, p.Records),
				Records(Input{Stream: s("brands"), Endpoint: stream.EndpointBrandContacts,
					Params: map[string]string{"brand_id": string(id)}}, contactRecords(p.Records)))
		}
	}
	var projectIDs []extract.ID
	for p, err := range cl.Projects(ctx, extract.ProjectQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		var recs []stream.Record
		for _, r := range p.Records {
			projectIDs = append(projectIDs, r.ID)
			recs = append(recs, stream.Record{Key: string(r.ID), Raw: r.Raw})
		}
		check("projects", Projects(p.Records), Records(Input{Stream: s("projects"), Endpoint: stream.EndpointProjects}, recs))
	}
	for _, id := range projectIDs {
		pr, err := cl.Project(ctx, id)
		if err != nil {
			t.Logf("project %s: %v", id, err)
			continue
		}
		check("project "+string(id), ProjectDetails([]extract.Project{*pr}),
			Records(Input{Stream: s("projects"), Endpoint: stream.EndpointProject}, []stream.Record{{Key: string(pr.ID), Raw: pr.Raw}}))
	}
	fin := s("finance")
	for p, err := range cl.Budgets(ctx, extract.FinanceQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		check("budgets", Budgets(p.Records), Records(Input{Stream: fin, Endpoint: stream.EndpointBudgets}, keyed(p.Records, func(r extract.Budget) (string, json.RawMessage) { return string(r.ID), r.Raw })))
	}
	for p, err := range cl.Invoices(ctx, extract.FinanceQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		check("invoices", Invoices(p.Records), Records(Input{Stream: fin, Endpoint: stream.EndpointInvoices}, keyed(p.Records, func(r extract.Invoice) (string, json.RawMessage) { return string(r.ID), r.Raw })))
	}
	for p, err := range cl.Collections(ctx, extract.FinanceQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		check("collections", Collections(p.Records), Records(Input{Stream: fin, Endpoint: stream.EndpointCollections}, keyed(p.Records, func(r extract.Collection) (string, json.RawMessage) { return string(r.ID), r.Raw })))
	}
	for p, err := range cl.Payments(ctx, extract.FinanceQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		check("payments", Payments(p.Records), Records(Input{Stream: fin, Endpoint: stream.EndpointPayments}, keyed(p.Records, func(r extract.Payment) (string, json.RawMessage) { return string(r.ID), r.Raw })))
	}
	for _, level := range []string{LevelProject, LevelBrand} {
		for p, err := range cl.Profitability(ctx, level) {
			if err != nil {
				t.Fatal(err)
			}
			check("profitability "+level, Profitabilities(p.Records), Records(Input{Stream: fin, Endpoint: stream.EndpointProfitability,
				Params: map[string]string{"level": level}}, keyed(p.Records, func(r extract.Profitability) (string, json.RawMessage) { return "", r.Raw })))
		}
	}
	for p, err := range cl.AgencySummary(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		check("summary", AgencySummaries(p.Records), Records(Input{Stream: fin, Endpoint: stream.EndpointAgencySummary}, keyed(p.Records, func(r extract.AgencySummary) (string, json.RawMessage) { return r.Period, r.Raw })))
	}
	users := make([]int64, o.Users)
	for i := range users {
		users[i] = int64(i + 1)
	}
	q := extract.CommsQuery{DomainID: o.DomainID, UserIDs: users, DateStart: o.Start.AddDate(0, 0, -o.HistoryDays-1),
		DateEnd: o.Start.AddDate(0, 0, 1), PerPage: 100}
	emails := 0
	for p, err := range cl.Communications(ctx, q) {
		if err != nil {
			t.Fatal(err)
		}
		emails += len(p.Records)
		check("communications", Communications(p.Records), Records(Input{Stream: s("communications"), Endpoint: stream.EndpointCommunications},
			keyed(p.Records, func(r extract.Communication) (string, json.RawMessage) { return strconv.FormatInt(r.RecordID, 10), r.Raw })))
	}
	t.Logf("bad rate %v: %d pages compared, rows: %v", badRate, pages, counts)
	if emails == 0 || pages < 10 {
		t.Fatalf("compared %d pages, %d e-mails: the sandbox served too little", pages, emails)
	}
}

func keyed[T any](list []T, f func(T) (string, json.RawMessage)) []stream.Record {
	out := make([]stream.Record, len(list))
	for i, r := range list {
		out[i].Key, out[i].Raw = f(r)
	}
	return out
}

func contactRecords(list []extract.Contact) []stream.Record {
	return keyed(list, func(c extract.Contact) (string, json.RawMessage) { return string(c.ID), c.Raw })
}

// typedRows renders a typed batch as rows per table in the declared column
// order, with the values the generic transform uses.
func typedRows(t *testing.T, b *Batch) map[string][][]any {
	t.Helper()
	out := map[string][][]any{}
	add := func(table string, vals ...any) {
		for i, v := range vals {
			vals[i] = norm(v)
		}
		out[table] = append(out[table], vals)
	}
	for _, r := range b.Brands {
		add("brands", r.BrandID, r.Name, r.Status, r.DateCreated, r.AccountManager, r.ProjectsCount, r.TotalBudget,
			r.Invoiced, r.Collected, r.Currency, r.GeneralInfo, r.Metadata, r.Raw, r.DetailRaw)
	}
	for _, r := range b.BrandFinancialSnapshots {
		add("brand_financial_snapshots", r.BrandID, r.SnapshotDate, r.TotalBudget, r.Invoiced, r.Collected, r.Currency)
	}
	for _, r := range b.BrandContacts {
		add("brand_contacts", r.BrandID, r.ContactID, r.FirstName, r.LastName, r.FullName, r.Email, r.Phone, r.Position, r.IsPrimary, r.Raw)
	}
	for _, r := range b.Projects {
		add("projects", r.ProjectID, r.BrandID, r.Name, r.Status, r.StartDate, r.Deadline, r.ClosedAt, r.UpdatedAt,
			r.BudgetAmount, r.BudgetCurrency, r.Raw, r.DetailRaw)
	}
	for _, r := range b.ProjectTeamMembers {
		add("project_team_members", r.ProjectID, r.UserID, r.PlatformUserID, r.FullName, r.Role)
	}
	for _, r := range b.ProjectDeliverables {
		add("project_deliverables", r.ProjectID, r.DeliverableID, r.Name, r.DueDate, r.Status, r.DeliveredAt)
	}
	for _, r := range b.ProjectHistory {
		add("project_history", r.ProjectID, r.At, r.Field, r.Seq, r.FromValue, r.ToValue, r.ByUserID)
	}
	for _, r := range b.Budgets {
		add("budgets", r.BudgetID, r.ProjectID, r.BrandID, r.Amount, r.Currency, r.PeriodStart, r.PeriodEnd, r.UpdatedAt, r.Raw)
	}
	for _, r := range b.Invoices {
		add("invoices", r.InvoiceID, r.Number, r.ProjectID, r.BrandID, r.IssueDate, r.DueDate, r.Amount, r.Currency, r.Status, r.UpdatedAt, r.Raw)
	}
	for _, r := range b.Collections {
		add("collections", r.CollectionID, r.InvoiceID, r.CollectedOn, r.Amount, r.Currency, r.UpdatedAt, r.Raw)
	}
	for _, r := range b.Payments {
		add("payments", r.PaymentID, r.ProjectID, r.BrandID, r.Payee, r.PaidOn, r.Amount, r.Currency, r.Status, r.UpdatedAt, r.Raw)
	}
	for _, r := range b.Profitability {
		add("profitability", r.Level, r.EntityID, r.Period, r.Revenue, r.Cost, r.Margin, r.Currency, r.Raw)
	}
	for _, r := range b.AgencyFinanceSummary {
		add("agency_finance_summary", r.Period, r.TotalBudget, r.Invoiced, r.Collected, r.Paid, r.Profit, r.Currency, r.Raw)
	}
	for _, r := range b.Users {
		add("users", r.UserKey, r.PlatformUserID, r.FirstName, r.LastName, r.FullName, r.Email, r.Phone, r.AvatarURL, r.Status)
	}
	for _, r := range b.Emails {
		add("emails", r.RecordID, r.TypeID, r.TypeName, r.BrandID, r.ProjectID, r.Subject, r.Message, r.HasAttachments,
			r.SizeBytes, r.MailboxID, r.MailboxThread, r.EmailAt, r.Raw)
	}
	for _, r := range b.EmailRecipients {
		add("email_recipients", r.RecordID, r.Role, r.UserKey)
	}
	return out
}

// norm turns typed values into the generic transform's: pointers
// dereferenced (nil is NULL), instants as their UTC text, JSON as text.
func norm(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		v = rv.Elem().Interface()
	}
	switch x := v.(type) {
	case json.RawMessage:
		if x == nil {
			return nil
		}
		return "json:" + string(x)
	case time.Time:
		return "time:" + x.UTC().Format(time.RFC3339Nano) + x.Location().String()
	}
	return v
}

func genericRows(b *RowBatch) map[string][][]any {
	out := map[string][][]any{}
	for name, tr := range b.Tables {
		for _, r := range tr.Rows {
			vals := make([]any, len(r))
			for i, v := range r {
				vals[i] = norm(v)
			}
			out[name] = append(out[name], vals)
		}
	}
	return out
}

func typedParents(b *Batch) map[string][]string {
	out := map[string][]string{}
	if b.ProjectDetails != nil {
		out["project_team_members"] = append([]string(nil), b.ProjectDetails...)
		out["project_deliverables"] = append([]string(nil), b.ProjectDetails...)
	}
	for _, e := range b.Emails {
		out["email_recipients"] = append(out["email_recipients"], strconv.FormatInt(e.RecordID, 10))
	}
	return out
}

func genericParents(b *RowBatch) map[string][]string {
	out := map[string][]string{}
	for name, tr := range b.Tables {
		for _, p := range tr.Parents {
			out[name] = append(out[name], fmt.Sprint(p))
		}
	}
	return out
}

func rejectKeys(rs []Reject) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Stream+" "+r.Key)
	}
	sort.Strings(out)
	return out
}
