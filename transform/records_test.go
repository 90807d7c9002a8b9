package transform

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
)

func day(s string) *time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return &t
}

func instantOf(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func brandRec(id extract.ID) extract.Brand {
	return extract.Brand{
		ID: id, Name: "Cofetăria Dulce Tradiție", Status: "active", DateCreated: day("2021-03-15"),
		AccountManager: "Mădălina Georgescu ", ProjectsCount: ptr(int64(4)),
		FinancialSummary: &extract.FinancialSummary{TotalBudget: "125000.50", Invoiced: "80000", Collected: "79999.99", Currency: "RON"},
		Raw:              json.RawMessage(`{"id":"` + string(id) + `","name":"Cofetăria Dulce Tradiție"}`),
	}
}

func TestBrands(t *testing.T) {
	snapshot := time.Date(2024, 11, 5, 23, 30, 0, 0, time.FixedZone("EET", 2*3600))
	noSummary := brandRec("43")
	noSummary.FinancialSummary = nil
	noSummary.ProjectsCount = nil
	noSummary.DateCreated = nil
	badDecimal := brandRec("44")
	badDecimal.FinancialSummary.Invoiced = "12,5"
	negative := brandRec("45")
	negative.ProjectsCount = ptr(int64(-1))
	missing := brandRec("")
	newer := brandRec("42")
	newer.Name = "Cofetăria Dulce Tradiție SRL"

	out := Brands([]extract.Brand{brandRec("42"), noSummary, badDecimal, negative, missing, newer}, snapshot)

	if len(out.Brands) != 2 {
		t.Fatalf("brands = %+v", out.Brands)
	}
	b := out.Brands[0]
	if b.BrandID != "42" || *b.Name != "Cofetăria Dulce Tradiție SRL" || *b.Status != "active" ||
		*b.AccountManager != "Mădălina Georgescu" || *b.ProjectsCount != 4 || !b.DateCreated.Equal(*day("2021-03-15")) {
		t.Errorf("brand = %+v (the repeated brand's last version wins)", b)
	}
	if *b.TotalBudget != "125000.50" || *b.Invoiced != "80000" || *b.Collected != "79999.99" || *b.Currency != "RON" {
		t.Errorf("financial_summary not flattened exactly: %+v", b)
	}
	if b.GeneralInfo != nil || b.Metadata != nil {
		t.Errorf("a list brand must leave the detail fields nil (kept as stored)")
	}
	if out.Brands[1].TotalBudget != nil || out.Brands[1].ProjectsCount != nil || out.Brands[1].DateCreated != nil {
		t.Errorf("brand without summary = %+v", out.Brands[1])
	}

	if len(out.BrandFinancialSnapshots) != 1 {
		t.Fatalf("snapshots = %+v, want one (brand 42 only)", out.BrandFinancialSnapshots)
	}
	s := out.BrandFinancialSnapshots[0]
	if s.BrandID != "42" || s.SnapshotDate != time.Date(2024, 11, 5, 0, 0, 0, 0, time.UTC) || *s.Invoiced != "80000" {
		t.Errorf("snapshot = %+v, want the calendar day 2024-11-05 as given", s)
	}

	wantErr := map[string]string{"44": "not a decimal", "45": "negative projects_count"}
	if len(out.Rejects) != 3 {
		t.Fatalf("rejects = %+v", out.Rejects)
	}
	for _, r := range out.Rejects {
		if r.Stream != StreamBrands {
			t.Errorf("stream = %q", r.Stream)
		}
		want, ok := wantErr[r.Key]
		if ok && !strings.Contains(r.Error, want) {
			t.Errorf("reject %s: error %q, want %q", r.Key, r.Error, want)
		}
		if !ok && (!strings.HasPrefix(r.Key, "sha256:") || !strings.Contains(r.Error, "without id")) {
			t.Errorf("reject = %+v, want the brand without id keyed by hash", r)
		}
	}
}

func TestBrandDetails(t *testing.T) {
	d := extract.BrandDetail{
		Brand:       brandRec("42"),
		GeneralInfo: json.RawMessage(`{"website":"https://dulcetraditie.ro","cui":"RO123"}`),
		Metadata:    json.RawMessage(`{"tags":["retail"]}`),
		Raw:         json.RawMessage(`{"brand_info":{},"general_info":{},"metadata":{}}`),
	}
	out := BrandDetails([]extract.BrandDetail{d}, time.Date(2024, 11, 5, 0, 0, 0, 0, time.UTC))
	if len(out.Brands) != 1 || len(out.BrandFinancialSnapshots) != 1 {
		t.Fatalf("out = %+v", out)
	}
	b := out.Brands[0]
	if string(b.GeneralInfo) != string(d.GeneralInfo) || string(b.Metadata) != string(d.Metadata) ||
		b.Raw != nil || string(b.DetailRaw) != string(d.Raw) {
		t.Errorf("brand = %+v (the detail goes to DetailRaw, the list's raw is kept)", b)
	}
	if l := Brands([]extract.Brand{d.Brand}, time.Now()).Brands[0]; string(l.Raw) != string(d.Brand.Raw) || l.DetailRaw != nil {
		t.Errorf("list brand = %+v (raw from the list, detail kept)", l)
	}
}

func TestContacts(t *testing.T) {
	list := []extract.Contact{
		{ID: "c1", FirstName: "Ilinca", LastName: ptr("Vasilescu"), FullName: "Ilinca Vasilescu ", Email: ptr(" Ilinca@Dulce.ro"),
			Phone: ptr(""), Position: ptr("Director marketing"), IsPrimary: true, Raw: json.RawMessage(`{"id":"c1"}`)},
		{ID: "c2", FirstName: "Radu", LastName: nil, FullName: "Radu ", Phone: nil, Raw: json.RawMessage(`{"id":"c2"}`)},
		{ID: "", FirstName: "Fără", Raw: json.RawMessage(`{"first_name":"Fără"}`)},
	}
	out := Contacts("42", list)
	if len(out.BrandContacts) != 2 || len(out.Rejects) != 1 {
		t.Fatalf("out = %+v", out)
	}
	c := out.BrandContacts[0]
	if c.BrandID != "42" || c.ContactID != "c1" || *c.FullName != "Ilinca Vasilescu" || *c.Email != "Ilinca@Dulce.ro" ||
		c.Phone != nil || !c.IsPrimary || *c.Position != "Director marketing" {
		t.Errorf("contact = %+v", c)
	}
	if c2 := out.BrandContacts[1]; c2.LastName != nil || *c2.FullName != "Radu" || c2.Phone != nil || c2.Email != nil {
		t.Errorf("contact 2 = %+v", c2)
	}
	if r := out.Rejects[0]; r.Stream != StreamBrandContacts || !strings.HasPrefix(r.Key, "sha256:") {
		t.Errorf("reject = %+v", r)
	}

	none := Contacts("", list[:1])
	if len(none.BrandContacts) != 0 || len(none.Rejects) != 1 || !strings.Contains(none.Rejects[0].Error, "brand id") {
		t.Errorf("contacts without brand = %+v", none)
	}
}

func projectRec(id extract.ID) extract.Project {
	return extract.Project{
		ID: id, BrandID: "42", Name: "Campanie Crăciun 2024", Status: "in_progress",
		StartDate: day("2024-10-01"), Deadline: day("2024-12-20"), UpdatedAt: instantOf("2024-11-04T10:00:00.654321Z"),
		Budget: &extract.Money{Amount: "30000.00", Currency: "RON"},
		Team: []extract.TeamMember{
			{UserID: "12", FullName: "Ana-Maria Popescu", Role: "Account"},
			{UserID: "ext-3", FullName: "Studio Foto ", Role: "Freelancer"},
			{UserID: "12", FullName: "Ana-Maria Popescu", Role: "Lead"},
		},
		Deliverables: []extract.Deliverable{
			{ID: "d1", Name: "Concept", DueDate: day("2024-10-15"), Status: "delivered", DeliveredAt: instantOf("2024-10-14T16:00:00Z")},
			{ID: "d2", Name: "Spot TV", DueDate: day("2024-12-01"), Status: "open"},
		},
		History: []extract.HistoryEntry{
			{At: *instantOf("2024-10-01T09:00:00Z"), Field: "status", From: nil, To: ptr("planned"), ByUserID: "12"},
			{At: *instantOf("2024-10-01T09:00:00Z"), Field: "status", From: ptr("planned"), To: ptr("in_progress"), ByUserID: "12"},
			{At: *instantOf("2024-10-02T09:00:00Z"), Field: "deadline", From: ptr("2024-12-15"), To: ptr("2024-12-20")},
		},
		Raw: json.RawMessage(`{"id":"` + string(id) + `"}`),
	}
}

func TestProjects(t *testing.T) {
	list := Projects([]extract.Project{projectRec("7")})
	if len(list.Projects) != 1 || len(list.ProjectDetails) != 0 || len(list.ProjectTeamMembers) != 0 ||
		len(list.ProjectDeliverables) != 0 || len(list.ProjectHistory) != 0 {
		t.Fatalf("a list project must not touch children: %+v", list)
	}
	if p := list.Projects[0]; string(p.Raw) != `{"id":"7"}` || p.DetailRaw != nil {
		t.Errorf("list project raw = %s, detail_raw = %s", p.Raw, p.DetailRaw)
	}

	noTeamID := projectRec("8")
	noTeamID.Team = append(noTeamID.Team, extract.TeamMember{FullName: "Fără Id"})
	noDeliverableID := projectRec("9")
	noDeliverableID.Deliverables = append(noDeliverableID.Deliverables, extract.Deliverable{Name: "x"})
	noAt := projectRec("10")
	noAt.History = append(noAt.History, extract.HistoryEntry{Field: "status"})
	noField := projectRec("11")
	noField.History = append(noField.History, extract.HistoryEntry{At: time.Now()})
	badBudget := projectRec("12")
	badBudget.Budget.Amount = "abc"
	empty := projectRec("13")
	empty.Team, empty.Deliverables, empty.History = nil, nil, nil

	out := ProjectDetails([]extract.Project{projectRec("7"), noTeamID, noDeliverableID, noAt, noField, badBudget, projectRec(""), empty})

	if len(out.Projects) != 2 || strings.Join(out.ProjectDetails, ",") != "7,13" {
		t.Fatalf("projects = %+v, details = %v", out.Projects, out.ProjectDetails)
	}
	p := out.Projects[0]
	if p.Raw != nil || string(p.DetailRaw) != `{"id":"7"}` {
		t.Errorf("detail project raw = %s, detail_raw = %s", p.Raw, p.DetailRaw)
	}
	if *p.BrandID != "42" || *p.BudgetAmount != "30000.00" || *p.BudgetCurrency != "RON" ||
		!p.Deadline.Equal(*day("2024-12-20")) || p.ClosedAt != nil || p.UpdatedAt.Nanosecond() != 654321000 {
		t.Errorf("project = %+v", p)
	}

	if len(out.ProjectTeamMembers) != 2 {
		t.Fatalf("team = %+v", out.ProjectTeamMembers)
	}
	if m := out.ProjectTeamMembers[0]; m.UserID != "12" || *m.Role != "Lead" || m.PlatformUserID == nil || *m.PlatformUserID != 12 {
		t.Errorf("member = %+v (a repeated member's last entry wins; numeric ids become platform_user_id)", m)
	}
	if m := out.ProjectTeamMembers[1]; m.PlatformUserID != nil || *m.FullName != "Studio Foto" {
		t.Errorf("member = %+v", m)
	}
	if len(out.ProjectDeliverables) != 2 || out.ProjectDeliverables[1].DeliveredAt != nil || *out.ProjectDeliverables[0].Status != "delivered" {
		t.Errorf("deliverables = %+v", out.ProjectDeliverables)
	}

	if len(out.ProjectHistory) != 3 {
		t.Fatalf("history = %+v", out.ProjectHistory)
	}
	h := out.ProjectHistory
	if h[0].Seq != 1 || h[1].Seq != 2 || h[2].Seq != 1 || h[0].FromValue != nil || *h[1].ToValue != "in_progress" || h[2].ByUserID != nil {
		t.Errorf("history = %+v (same at and field: seq 1, 2)", h)
	}

	want := map[string]string{"8": "team member 3", "9": "deliverable 2", "10": "without at", "11": "without field", "12": "budget.amount"}
	if len(out.Rejects) != len(want)+1 {
		t.Fatalf("rejects = %+v", out.Rejects)
	}
	for _, r := range out.Rejects {
		if w, ok := want[r.Key]; ok {
			if !strings.Contains(r.Error, w) {
				t.Errorf("reject %s: %q, want %q", r.Key, r.Error, w)
			}
		} else if !strings.HasPrefix(r.Key, "sha256:") {
			t.Errorf("unexpected reject %+v", r)
		}
	}
}

func TestFinance(t *testing.T) {
	raw := json.RawMessage(`{"id":"x"}`)
	budgets := Budgets([]extract.Budget{
		{ID: "b0", ProjectID: extract.ID(strings.Repeat("7", 1001)), Amount: "1", Raw: raw},
		{ID: "b1", ProjectID: "7", BrandID: "42", Amount: "30000.00", Currency: "RON", PeriodStart: day("2024-10-01"), PeriodEnd: day("2024-12-31"), Raw: raw},
		{ID: "b2", Amount: "1e3", Raw: raw},
		{ID: "b3", Amount: "NaN", Raw: raw},
		{Amount: "1", Raw: raw},
	})
	if len(budgets.Budgets) != 2 || *budgets.Budgets[0].Amount != "30000.00" || *budgets.Budgets[1].Amount != "1e3" ||
		budgets.Budgets[1].ProjectID != nil || !budgets.Budgets[0].PeriodEnd.Equal(*day("2024-12-31")) {
		t.Errorf("budgets = %+v", budgets.Budgets)
	}
	if len(budgets.Rejects) != 3 || budgets.Rejects[0].Key != "b0" || !strings.Contains(budgets.Rejects[0].Error, "project_id is 1001 bytes") ||
		budgets.Rejects[1].Key != "b3" || budgets.Rejects[1].Stream != StreamBudgets || !strings.HasPrefix(budgets.Rejects[2].Key, "sha256:") {
		t.Errorf("budget rejects = %+v", budgets.Rejects)
	}

	inv := Invoices([]extract.Invoice{
		{ID: "i1", Number: "AG-2024-0113", ProjectID: "7", BrandID: "42", IssueDate: day("2024-11-01"), DueDate: day("2024-11-30"),
			Amount: "-150.25", Currency: "RON", Status: "issued", UpdatedAt: instantOf("2024-11-01T08:00:00.000001Z"), Raw: raw},
		{ID: "i1", Number: "AG-2024-0113", Amount: "-150.250", Status: "paid", Raw: raw}, // the last version wins
	})
	if len(inv.Invoices) != 1 || *inv.Invoices[0].Amount != "-150.250" || *inv.Invoices[0].Status != "paid" {
		t.Errorf("invoices = %+v", inv.Invoices)
	}

	col := Collections([]extract.Collection{{ID: "c1", InvoiceID: "i1", CollectedOn: day("2024-11-20"), Amount: "0.10", Currency: "RON", Raw: raw}})
	if len(col.Collections) != 1 || *col.Collections[0].InvoiceID != "i1" || *col.Collections[0].Amount != "0.10" {
		t.Errorf("collections = %+v", col.Collections)
	}

	pay := Payments([]extract.Payment{{ID: "p1", Payee: " Studio Foto SRL ", PaidOn: day("2024-11-21"), Amount: "2500", Currency: "EUR", Raw: raw},
		{ID: "p2", Amount: "1.2.3", Raw: raw}, {ID: "p3", Currency: "EUR", Raw: raw}})
	if len(pay.Payments) != 1 || *pay.Payments[0].Payee != "Studio Foto SRL" || len(pay.Rejects) != 2 || pay.Rejects[0].Stream != StreamPayments ||
		pay.Rejects[1].Key != "p3" || !strings.Contains(pay.Rejects[1].Error, "amount is missing") {
		t.Errorf("payments = %+v", pay)
	}

	prof := Profitabilities([]extract.Profitability{
		{Level: "project", EntityID: "7", Period: "2024-11", Revenue: "30000", Cost: "21000.5", Margin: "8999.5", Currency: "RON", Raw: raw},
		{Level: "brand", EntityID: "42", Period: "2024-11", Revenue: "1", Raw: raw},
		{Level: "team", EntityID: "7", Period: "2024-11", Raw: raw},
		{Level: "project", EntityID: "7", Period: "noiembrie", Raw: raw},
		{Level: "project", EntityID: "", Period: "2024-11", Raw: raw},
	})
	if len(prof.Profitability) != 2 || prof.Profitability[0].Period != time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC) || *prof.Profitability[0].Cost != "21000.5" {
		t.Errorf("profitability = %+v", prof.Profitability)
	}
	if len(prof.Rejects) != 3 || prof.Rejects[0].Key != "team/7/2024-11" || !strings.Contains(prof.Rejects[1].Error, "YYYY-MM") {
		t.Errorf("profitability rejects = %+v", prof.Rejects)
	}

	sum := AgencySummaries([]extract.AgencySummary{
		{Period: "2024-10", TotalBudget: "500000", Invoiced: "320000.75", Collected: "300000", Paid: "120000", Profit: "180000.75", Currency: "RON", Raw: raw},
		{Period: "2024-13", Raw: raw},
	})
	if len(sum.AgencyFinanceSummary) != 1 || *sum.AgencyFinanceSummary[0].Profit != "180000.75" || len(sum.Rejects) != 1 || sum.Rejects[0].Key != "2024-13" {
		t.Errorf("summary = %+v", sum)
	}
}

func TestRecordErrors(t *testing.T) {
	errs := []extract.RecordError{
		{Endpoint: "invoices", Page: 3, Key: "i9", Raw: json.RawMessage(`{"id":"i9","amount":{}}`), Err: errors.New("amount: object where a number belongs")},
		{Endpoint: "communications", Page: 1, Key: "", Raw: json.RawMessage(`{"email": tru`), Err: errors.New("syntax error")},
		{Endpoint: "invoices", Page: 3, Key: "#4", Raw: json.RawMessage(`[1]`), Err: errors.New("array where an object belongs")},
	}
	rs := RecordErrors(StreamInvoices, errs)
	if len(rs) != 3 {
		t.Fatalf("rejects = %+v", rs)
	}
	if !strings.HasPrefix(rs[2].Key, "sha256:") {
		t.Errorf("key = %q: a position on the page (#4) is not a key", rs[2].Key)
	}
	if rs[0].Key != "i9" || rs[0].Stream != StreamInvoices || string(rs[0].Payload) != string(errs[0].Raw) ||
		!strings.Contains(rs[0].Error, "decode invoices page 3") || !strings.Contains(rs[0].Error, "object where a number") {
		t.Errorf("reject = %+v", rs[0])
	}
	var s string
	if err := json.Unmarshal(rs[1].Payload, &s); err != nil || s != `{"email": tru` {
		t.Errorf("payload of non-JSON bytes = %s, want them as a JSON string", rs[1].Payload)
	}
	if !strings.HasPrefix(rs[1].Key, "sha256:") {
		t.Errorf("key = %q, want a payload hash", rs[1].Key)
	}
}

func TestRawJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"valid JSON unchanged", `{"b":1, "a":"Ș"}`, `{"b":1, "a":"Ș"}`},
		{"empty is null", ``, `null`},
		{"NUL escape replaced", `{"a":"x\u0000y"}`, `{"a":"x` + "\uFFFD" + `y"}`},
		{"lone surrogate replaced", `["\ud800"]`, `["` + "\uFFFD" + `"]`},
		{"surrogate pair kept", `["\ud83d\ude00"]`, `["😀"]`},
		{"big numbers exact", `{"n":12345678901234567890.123456789,"z":"\u0000"}`, `{"n":12345678901234567890.123456789,"z":"` + "\uFFFD" + `"}`},
		{"not JSON becomes a string", `<html>`, `"\u003chtml\u003e"`},
		{"invalid UTF-8 repaired", "\"a\xffb\"", `"a` + "\uFFFD" + `b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(CleanJSON(json.RawMessage(tt.in))); got != tt.want {
				t.Errorf("CleanJSON(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestBatchAppend(t *testing.T) {
	var b Batch
	b.Append(Budgets([]extract.Budget{{ID: "b1", Amount: "1", Raw: json.RawMessage(`{}`)}}))
	b.Append(Communications([]extract.Communication{comm(1, "s", "2024-01-01T00:00:00Z", []extract.Participant{ana(nil)}, nil, nil, nil)}))
	b.Append(Budgets([]extract.Budget{{Raw: json.RawMessage(`{}`)}}))
	if len(b.Budgets) != 1 || len(b.Emails) != 1 || len(b.Users) != 1 || len(b.EmailRecipients) != 1 || len(b.Rejects) != 1 {
		t.Errorf("batch = %+v", b)
	}
}
