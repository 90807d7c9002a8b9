package extract

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func mustPage[T any, P decodable[T]](t *testing.T, body string) *Page[T] {
	t.Helper()
	p, err := DecodeList[T, P]([]byte(body))
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func TestDecodeIDVariants(t *testing.T) {
	cases := []struct {
		in   string
		want ID
		bad  string // substring of the expected record error
	}{
		{`"42"`, "42", ""},
		{`42`, "42", ""},
		{`" 42 "`, "42", ""},
		{`-7`, "-7", ""},
		{`"b-12"`, "b-12", ""},
		{`99999999999999999999999`, "99999999999999999999999", ""}, // larger than int64: still a valid text id
		{`null`, "", ""},
		{`""`, "", ""},
		{`4.2`, "", "id must be a string or an integer, got the number 4.2"},
		{`1e3`, "", "got the number 1e3"},
		{`true`, "", "got boolean"},
		{`{"id":1}`, "", "got object"},
		{`[1]`, "", "got array"},
	}
	for _, c := range cases {
		p := mustPage[Brand](t, `[{"id":`+c.in+`,"name":"x"}]`)
		if c.bad != "" {
			if len(p.Rejects) != 1 || !strings.Contains(p.Rejects[0].Err.Error(), c.bad) {
				t.Errorf("id %s: want reject %q, got records %v rejects %v", c.in, c.bad, p.Records, p.Rejects)
				continue
			}
			if !errors.Is(&p.Rejects[0], ErrInvalidRecord) {
				t.Errorf("id %s: reject does not match ErrInvalidRecord", c.in)
			}
			if string(p.Rejects[0].Raw) != `{"id":`+c.in+`,"name":"x"}` {
				t.Errorf("id %s: raw %s", c.in, p.Rejects[0].Raw)
			}
			continue
		}
		if len(p.Records) != 1 || p.Records[0].ID != c.want {
			t.Errorf("id %s: got %+v rejects %v, want %q", c.in, p.Records, p.Rejects, c.want)
		}
	}
}

func TestDecodeDecimal(t *testing.T) {
	cases := []struct{ in, want string }{
		{`1250.50`, "1250.50"},
		{`"1250.50"`, "1250.50"},
		{`-3`, "-3"},
		{`"+3.10"`, "3.10"},
		{`" 007.5 "`, "7.5"},
		{`".5"`, "0.5"},
		{`"5."`, "5"},
		{`1.5e3`, "1500"},
		{`1.50E1`, "15.0"},
		{`1e-2`, "0.01"},
		{`-0`, "0"},
		{`-0.00`, "0.00"},
		{`"-0.0"`, "0.0"},
		{`123456789012345678901234567890.123456789`, "123456789012345678901234567890.123456789"},
		{`0.1`, "0.1"}, // not 0.1000000000000000055511151231257827
		{`null`, ""},
		{`""`, ""},
	}
	for _, c := range cases {
		p := mustPage[Budget](t, `[{"id":1,"amount":`+c.in+`}]`)
		if len(p.Records) != 1 || string(p.Records[0].Amount) != c.want {
			t.Errorf("amount %s: got %+v %v, want %q", c.in, p.Records, p.Rejects, c.want)
		}
	}
	for _, bad := range []string{`"1,250.50"`, `"abc"`, `"NaN"`, `"1e99999"`, `true`, `{}`, `"1.2.3"`, `"--1"`, `"e5"`} {
		p := mustPage[Budget](t, `[{"id":1,"amount":`+bad+`}]`)
		if len(p.Rejects) != 1 || len(p.Records) != 0 {
			t.Errorf("amount %s: want a reject, got %+v", bad, p.Records)
		}
	}
}

func TestDecodeDatesAndInstants(t *testing.T) {
	p := mustPage[Project](t, `{"data":[{"id":"1","start_date":"2024-02-29","deadline":"0000-00-00","closed_at":"2024-03-01T10:15:30.123456Z","updated_at":"2024-03-01T12:15:30.5+02:00"}]}`)
	r := p.Records[0]
	if !r.StartDate.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) || r.StartDate.Location() != time.UTC {
		t.Errorf("start_date %v", r.StartDate)
	}
	if r.Deadline != nil {
		t.Errorf("zero date should be absent, got %v", r.Deadline)
	}
	if !r.ClosedAt.Equal(time.Date(2024, 3, 1, 10, 15, 30, 123456000, time.UTC)) || r.ClosedAt.Location() != time.UTC {
		t.Errorf("closed_at %v", r.ClosedAt)
	}
	if !r.UpdatedAt.Equal(time.Date(2024, 3, 1, 10, 15, 30, 500000000, time.UTC)) || r.UpdatedAt.Location() != time.UTC {
		t.Errorf("updated_at %v", r.UpdatedAt)
	}
	for _, bad := range []string{`"2024-02-30"`, `"2023-02-29"`, `"2024-13-01"`, `"01/03/2024"`, `20240301`} {
		p := mustPage[Project](t, `[{"id":"1","start_date":`+bad+`}]`)
		if len(p.Rejects) != 1 {
			t.Errorf("start_date %s: want a reject", bad)
		}
	}
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"2024-03-01T10:15:30Z", time.Date(2024, 3, 1, 10, 15, 30, 0, time.UTC)},
		{"2024-03-01 10:15:30", time.Date(2024, 3, 1, 10, 15, 30, 0, time.UTC)},
		{"2024-03-01T10:15:30.000001Z", time.Date(2024, 3, 1, 10, 15, 30, 1000, time.UTC)},
		{"2024-03-01T00:30:00-0100", time.Date(2024, 3, 1, 1, 30, 0, 0, time.UTC)},
		{"2024-03-01", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
	} {
		got, ok := parseInstant([]byte(c.in))
		if !ok || !got.Equal(c.want) || got.Location() != time.UTC {
			t.Errorf("parseInstant(%q) = %v %v, want %v", c.in, got, ok, c.want)
		}
	}
	for _, bad := range []string{"2024-03-01T25:00:00Z", "2024-03-01T10:15:30.Z", "2024-03-01T10:15:30+2", "2024-03-01X10:15:30Z", "2024-03-01T10:15:30Zjunk"} {
		if _, ok := parseInstant([]byte(bad)); ok {
			t.Errorf("parseInstant(%q) accepted", bad)
		}
	}
}

const commsCanonical = `{"data":{"rows":{
 "101":{"email":{"type_id":1,"type_name":"Email","brand_id":"12","project_id":null,"subject":"Hello","message":null,"has_attachments":1,"size":2048,"mailbox_id":"m1","mailbox_thread":"t1","email_at":"2024-03-01T10:15:30.123456Z"},
        "users":{"from":[{"first_name":"Ana","last_name":null,"full_name":"Ana ","email":"Ana@Ext.example","phone":"","avatar":"https://x/blank.png","status":"Activ"}],
                 "to":{"7":{"first_name":"Dan","last_name":"Pop","full_name":"Dan Pop","email":"dan@a.example","phone":null,"avatar":"https://x/blank.png","status":"Activ"}},
                 "cc":[],"bcc":[]}},
 "102":{"email":{"type_id":null,"type_name":null,"brand_id":13,"project_id":"9","subject":"Re","message":"body","has_attachments":null,"size":10,"mailbox_id":"m2","mailbox_thread":"t1","email_at":"2024-03-02T00:00:00.000000Z"},
        "users":{"from":{"first_name":"Dan","last_name":"Pop","full_name":"Dan Pop","email":"dan@a.example","phone":null,"avatar":"a","status":"Activ"},
                 "to":[{"first_name":"Ana","last_name":null,"full_name":"Ana ","email":"ana@ext.example","phone":"","avatar":"a","status":"Activ"}],
                 "cc":{"8":{"first_name":"Eve","last_name":"X","full_name":"Eve X","email":"eve@a.example","phone":"123","avatar":"a","status":"Activ"},"9":{"first_name":"Ion","last_name":"Y","full_name":"Ion Y","email":"ion@a.example","phone":null,"avatar":"a","status":"Activ"}},
                 "bcc":{}}}
},"total":2,"per_page":20,"current_page":1,"last_page":1}}`

func TestDecodeCommunicationsCanonical(t *testing.T) {
	p, err := DecodeCommunications([]byte(commsCanonical))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 2 || len(p.Rejects) != 0 {
		t.Fatalf("records %d rejects %v", len(p.Records), p.Rejects)
	}
	if !p.Paged || p.Total != 2 || p.PerPage != 20 || p.Number != 1 || p.LastPage != 1 {
		t.Errorf("paging %+v", p)
	}
	a, b := p.Records[0], p.Records[1]
	if a.RecordID != 101 || b.RecordID != 102 {
		t.Errorf("ids %d %d (key order must be kept)", a.RecordID, b.RecordID)
	}
	e := a.Email
	if *e.TypeID != 1 || *e.TypeName != "Email" || e.BrandID != "12" || e.ProjectID != "" || *e.Subject != "Hello" ||
		e.Message != nil || !e.HasAttachments || *e.Size != 2048 || e.MailboxID != "m1" || e.MailboxThread != "t1" ||
		!e.EmailAt.Equal(time.Date(2024, 3, 1, 10, 15, 30, 123456000, time.UTC)) {
		t.Errorf("email a %+v", e)
	}
	if b.Email.TypeID != nil || b.Email.TypeName != nil || b.Email.BrandID != "13" || *b.Email.Message != "body" || b.Email.HasAttachments {
		t.Errorf("email b %+v", b.Email)
	}
	from := a.Users.From
	if len(from) != 1 || from[0].PlatformUserID != nil || from[0].LastName != nil || from[0].FullName != "Ana " || *from[0].Phone != "" {
		t.Errorf("from a %+v", from)
	}
	if len(a.Users.To) != 1 || *a.Users.To[0].PlatformUserID != 7 || a.Users.To[0].Phone != nil || a.Users.CC != nil || a.Users.BCC != nil {
		t.Errorf("to a %+v cc %v bcc %v", a.Users.To, a.Users.CC, a.Users.BCC)
	}
	// from as an object (a single user), to as an array, cc keyed, bcc {}.
	if len(b.Users.From) != 1 || b.Users.From[0].Email != "dan@a.example" || b.Users.From[0].PlatformUserID != nil {
		t.Errorf("from b %+v", b.Users.From)
	}
	if len(b.Users.To) != 1 || b.Users.To[0].PlatformUserID != nil || b.Users.To[0].FirstName != "Ana" {
		t.Errorf("to b %+v", b.Users.To)
	}
	if len(b.Users.CC) != 2 || *b.Users.CC[0].PlatformUserID != 8 || *b.Users.CC[1].PlatformUserID != 9 || b.Users.BCC != nil {
		t.Errorf("cc b %+v", b.Users.CC)
	}
	var m map[string]any
	if err := json.Unmarshal(a.Raw, &m); err != nil || m["email"] == nil || m["users"] == nil {
		t.Errorf("raw a is not the record: %s", a.Raw)
	}
	if !strings.HasPrefix(string(b.Raw), `{"email":{"type_id":null`) || !strings.HasSuffix(string(b.Raw), `"bcc":{}}}`) {
		t.Errorf("raw b %s", b.Raw)
	}
}

func TestDecodeCommunicationsVariants(t *testing.T) {
	rec := func(extra string) string {
		return `{"email":{"subject":"s","has_attachments":HA,"email_at":"2024-03-01T10:15:30.000001Z"` + extra + `},"users":{"from":[],"to":[],"cc":[],"bcc":[]}}`
	}
	cases := []struct {
		name    string
		body    string
		ids     []int64
		rejects int
	}{
		{"rows []", `{"data":{"rows":[],"total":0,"per_page":20,"current_page":1,"last_page":0}}`, nil, 0},
		{"rows {}", `{"data":{"rows":{},"total":0,"per_page":20,"current_page":1,"last_page":0}}`, nil, 0},
		{"data []", `{"data":[]}`, nil, 0},
		{"data {}", `{"data":{}}`, nil, 0},
		{"rows array with ids", `{"data":{"rows":[` + strings.ReplaceAll(rec(`,"id":5`), "HA", "1") + `,` + strings.ReplaceAll(rec(`,"record_id":"6"`), "HA", "0") + `]}}`, []int64{5, 6}, 0},
		{"rows array without id", `{"data":{"rows":[` + strings.ReplaceAll(rec(``), "HA", "true") + `]}}`, nil, 1},
		{"has_attachments false", `{"data":{"rows":{"1":` + strings.ReplaceAll(rec(``), "HA", "false") + `}}}`, []int64{1}, 0},
		{"has_attachments string", `{"data":{"rows":{"1":` + strings.ReplaceAll(rec(``), "HA", `"1"`) + `}}}`, []int64{1}, 0},
		{"has_attachments bad", `{"data":{"rows":{"1":` + strings.ReplaceAll(rec(``), "HA", `"maybe"`) + `,"2":` + strings.ReplaceAll(rec(``), "HA", `null`) + `}}}`, []int64{2}, 1},
		{"record id > int64", `{"data":{"rows":{"9223372036854775808":` + strings.ReplaceAll(rec(``), "HA", "1") + `,"3":` + strings.ReplaceAll(rec(``), "HA", "1") + `}}}`, []int64{3}, 1},
		{"record id not a number", `{"data":{"rows":{"abc":` + strings.ReplaceAll(rec(``), "HA", "1") + `}}}`, nil, 1},
		{"record is null", `{"data":{"rows":{"4":null}}}`, nil, 1},
		{"record is a string", `{"data":{"rows":{"4":"x"}}}`, nil, 1},
		{"text/plain body with BOM", "\xEF\xBB\xBF" + `{"data":{"rows":{"1":` + strings.ReplaceAll(rec(``), "HA", "1") + `}}}`, []int64{1}, 0},
		{"bare array", `[` + strings.ReplaceAll(rec(`,"id":77`), "HA", "1") + `]`, []int64{77}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := DecodeCommunications([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range p.Records {
				ids = append(ids, r.RecordID)
			}
			if len(ids) != len(c.ids) || len(p.Rejects) != c.rejects {
				t.Fatalf("ids %v (want %v) rejects %v (want %d)", ids, c.ids, p.Rejects, c.rejects)
			}
			for i := range ids {
				if ids[i] != c.ids[i] {
					t.Fatalf("ids %v, want %v", ids, c.ids)
				}
			}
			for _, r := range p.Rejects {
				if len(r.Raw) == 0 || !json.Valid(r.Raw) {
					t.Errorf("reject raw %q", r.Raw)
				}
			}
		})
	}
}

func TestDecodeCommunicationsHasAttachments(t *testing.T) {
	for in, want := range map[string]bool{`1`: true, `0`: false, `null`: false, `true`: true, `false`: false, `"0"`: false, `""`: false} {
		body := `{"data":{"rows":{"1":{"email":{"has_attachments":` + in + `},"users":{}}}}}`
		p, err := DecodeCommunications([]byte(body))
		if err != nil || len(p.Records) != 1 || p.Records[0].Email.HasAttachments != want {
			t.Errorf("has_attachments %s: %v %+v", in, err, p)
		}
	}
}

func TestDecodePlatformUserIDOverflow(t *testing.T) {
	body := `{"data":{"rows":{"1":{"email":{},"users":{"to":{"99999999999999999999":{"email":"a@b"}}}},"2":{"email":{},"users":{}}}}}`
	p, err := DecodeCommunications([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 1 || len(p.Rejects) != 1 {
		t.Fatalf("records %d rejects %d", len(p.Records), len(p.Rejects))
	}
	rej := &p.Rejects[0]
	if !errors.Is(rej, ErrIDOutOfRange) || !errors.Is(rej, ErrInvalidRecord) || rej.Key != "1" {
		t.Errorf("reject %v (key %q)", rej, rej.Key)
	}
	if !strings.Contains(rej.Error(), "99999999999999999999") {
		t.Errorf("error does not name the id: %v", rej)
	}
}

func TestDecodeListVariants(t *testing.T) {
	brand := `{"id":"1","name":"Acme","status":"active","date_created":"2023-01-05","account_manager":"Ana","projects_count":3,"financial_summary":{"total_budget":"1000.00","invoiced":250.5,"collected":0,"currency":"EUR"}}`
	brand2 := `{"id":2,"name":"Beta","financial_summary":[]}`
	wrapped := `{"brand_info":` + brand + `}`
	wrapped2 := `{"brand_info":` + brand2 + `}`
	cases := []struct {
		name                     string
		body                     string
		paged                    bool
		total, per, number, last int
	}{
		{"canonical", `{"data":[` + wrapped + `,` + wrapped2 + `],"total":2,"per_page":1000,"current_page":1,"last_page":1}`, true, 2, 1000, 1, 1},
		{"bare array", `[` + brand + `,` + brand2 + `]`, false, 0, 0, 1, 0},
		{"bare array wrapped", `[` + wrapped + `,` + wrapped2 + `]`, false, 0, 0, 1, 0},
		{"data without paging", `{"data":[` + brand + `,` + brand2 + `]}`, false, 0, 0, 1, 0},
		{"paging under meta", `{"data":[` + brand + `,` + brand2 + `],"meta":{"total":2,"per_page":50,"current_page":1,"last_page":1}}`, true, 2, 50, 1, 1},
		{"paging under pagination", `{"data":[` + brand + `,` + brand2 + `],"pagination":{"total":"2","per_page":"50","current_page":"1","last_page":"1"}}`, true, 2, 50, 1, 1},
		{"paging under meta.pagination", `{"data":[` + brand + `,` + brand2 + `],"meta":{"pagination":{"total":2,"per_page":50,"current_page":1}}}`, true, 2, 50, 1, 1},
		{"comms-like rows array", `{"data":{"rows":[` + brand + `,` + brand2 + `],"total":2,"per_page":50,"current_page":1,"last_page":1}}`, true, 2, 50, 1, 1},
		{"comms-like rows keyed", `{"data":{"rows":{"1":` + brand + `,"2":{"name":"Beta","financial_summary":[]}},"total":2,"per_page":50,"current_page":1,"last_page":1}}`, true, 2, 50, 1, 1},
		{"data keyed by id", `{"data":{"1":` + wrapped + `,"2":` + wrapped2 + `}}`, false, 0, 0, 1, 0},
		{"other wrapper name", `[{"company_info":` + brand + `},{"company_info":` + brand2 + `}]`, false, 0, 0, 1, 0},
		{"whitespace", "\n [ " + brand + " ,\n\t" + brand2 + " ] \n", false, 0, 0, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustPage[Brand](t, c.body)
			if len(p.Records) != 2 || len(p.Rejects) != 0 {
				t.Fatalf("records %+v rejects %v", p.Records, p.Rejects)
			}
			a, b := p.Records[0], p.Records[1]
			if a.ID != "1" || a.Name != "Acme" || a.Status != "active" || a.AccountManager != "Ana" || *a.ProjectsCount != 3 ||
				!a.DateCreated.Equal(time.Date(2023, 1, 5, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("a %+v", a)
			}
			if fs := a.FinancialSummary; fs == nil || fs.TotalBudget != "1000.00" || fs.Invoiced != "250.5" || fs.Collected != "0" || fs.Currency != "EUR" {
				t.Errorf("financial summary %+v", a.FinancialSummary)
			}
			if b.ID != "2" || b.Name != "Beta" || b.FinancialSummary != nil {
				t.Errorf("b %+v", b)
			}
			if !json.Valid(a.Raw) || !json.Valid(b.Raw) || !strings.Contains(string(a.Raw), `"account_manager":"Ana"`) {
				t.Errorf("raw %s / %s", a.Raw, b.Raw)
			}
			if p.Paged != c.paged || p.Total != c.total || p.PerPage != c.per || p.Number != c.number || p.LastPage != c.last {
				t.Errorf("paging %+v", *p)
			}
		})
	}
	for _, empty := range []string{`[]`, `{}`, `{"data":[]}`, `{"data":{}}`, `{"data":null}`, `{"data":{"rows":[]}}`, `{"data":[],"total":0,"per_page":1000,"current_page":1,"last_page":0}`} {
		p := mustPage[Brand](t, empty)
		if len(p.Records)+len(p.Rejects) != 0 {
			t.Errorf("%s: %+v", empty, p)
		}
	}
}

func TestDecodeProjectDetail(t *testing.T) {
	body := `{"data":{"project_info":{"id":77,"brand_id":"1","name":"Site","status":"open","start_date":"2024-01-01","deadline":"2024-06-30","closed_at":null,"updated_at":"2024-03-01T10:00:00Z","budget":{"amount":"5000.00","currency":"EUR"},
	"team":[{"user_id":5,"full_name":"Ana Pop","role":"lead"}],
	"deliverables":{"d1":{"name":"Design","due_date":"2024-02-01","status":"done","delivered_at":"2024-01-30T09:00:00.5Z"}},
	"history":[{"at":"2024-01-02T08:00:00Z","field":"status","from":null,"to":"open","by_user_id":"5"},{"at":"2024-01-03T08:00:00Z","field":"budget","from":4000,"to":5000.5,"by_user_id":5}]}}}`
	p, err := DecodeProject([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "77" || p.BrandID != "1" || p.Budget.Amount != "5000.00" || p.Budget.Currency != "EUR" || p.ClosedAt != nil {
		t.Errorf("project %+v", p)
	}
	if len(p.Team) != 1 || p.Team[0].UserID != "5" || p.Team[0].Role != "lead" {
		t.Errorf("team %+v", p.Team)
	}
	if len(p.Deliverables) != 1 || p.Deliverables[0].ID != "d1" || p.Deliverables[0].DeliveredAt.Nanosecond() != 500000000 {
		t.Errorf("deliverables %+v", p.Deliverables)
	}
	h := p.History
	if len(h) != 2 || h[0].From != nil || *h[0].To != "open" || *h[1].From != "4000" || *h[1].To != "5000.5" || h[1].ByUserID != "5" {
		t.Errorf("history %+v", h)
	}
	if !json.Valid(p.Raw) || !strings.HasPrefix(string(p.Raw), `{"project_info"`) {
		t.Errorf("raw %s", p.Raw)
	}
}

func TestDecodeBrandDetail(t *testing.T) {
	for _, body := range []string{
		`{"brand_info":{"id":"3","name":"Acme"},"general_info":{"site":"x"},"metadata":{"k":[1,2]}}`,
		`{"data":{"brand_info":{"id":3,"name":"Acme"},"general_info":{"site":"x"},"metadata":{"k":[1,2]}}}`,
	} {
		bd, err := DecodeBrandDetail([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if bd.Brand.ID != "3" || bd.Brand.Name != "Acme" || string(bd.GeneralInfo) != `{"site":"x"}` || string(bd.Metadata) != `{"k":[1,2]}` {
			t.Errorf("%s: %+v", body, bd)
		}
		if !strings.HasPrefix(string(bd.Brand.Raw), `{"id":`) || !json.Valid(bd.Raw) {
			t.Errorf("raw %s / %s", bd.Brand.Raw, bd.Raw)
		}
	}
	bd, err := DecodeBrandDetail([]byte(`{"id":"4","name":"Bare"}`))
	if err != nil || bd.Brand.ID != "4" || bd.Brand.Name != "Bare" {
		t.Errorf("bare brand: %v %+v", err, bd)
	}
	if _, err := DecodeBrandDetail([]byte(`{}`)); !errors.Is(err, ErrUnexpectedShape) {
		t.Errorf("empty object: %v", err)
	}
}

func TestDecodeBadBodies(t *testing.T) {
	cases := []struct {
		name string
		body string
		kind error
		text string
	}{
		{"empty", ``, ErrMalformedResponse, "empty body"},
		{"whitespace", " \n", ErrMalformedResponse, "empty body"},
		{"html", "<!DOCTYPE html><html><body>502 Bad Gateway</body></html>", ErrMalformedResponse, "HTML page where JSON was expected"},
		{"garbage", "Service Unavailable", ErrMalformedResponse, "not JSON"},
		{"truncated", `{"data":{"rows":{"1":{"email":{"subject":"Hel`, ErrMalformedResponse, "truncated JSON"},
		{"truncated array", `[{"id":1},`, ErrMalformedResponse, "truncated JSON"},
		{"trailing comma", `[{"id":1},]`, ErrMalformedResponse, "invalid JSON"},
		{"trailing data", `[] []`, ErrMalformedResponse, "after the top-level value"},
		{"control char", "[{\"name\":\"a\x01b\"}]", ErrMalformedResponse, "control character"},
		{"rows wrong type", `{"data":{"rows":"none"}}`, ErrUnexpectedShape, "rows: want an object or an array, got string"},
		{"data wrong type", `{"data":42}`, ErrUnexpectedShape, "data: want an object or an array, got number"},
		{"scalar", `"hello"`, ErrUnexpectedShape, "response is a JSON string"},
		{"no data", `{"items":[1,2]}`, ErrUnexpectedShape, `no data or rows (keys "items")`},
		{"data without rows", `{"data":{"items":[1]}}`, ErrUnexpectedShape, "data object has no rows"},
		{"deep nesting unterminated", `[` + strings.Repeat(`[`, 100000), ErrMalformedResponse, "truncated JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeList[Brand]([]byte(c.body))
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("err = %v, want %v containing %q", err, c.kind, c.text)
			}
			_, err = DecodeCommunications([]byte(c.body))
			if err == nil {
				t.Errorf("communications accepted %q", c.body)
			}
		})
	}
}

func TestDecodeErrorObjectIn200(t *testing.T) {
	cases := []struct {
		body string
		kind error
	}{
		{`{"error":{"message":"Daily quota exceeded","details":["You have exceeded the allowed daily requests"]}}`, ErrDailyQuota},
		{`{"error":{"message":"Rate limit exceeded","details":["x"]}}`, ErrRateLimited},
		{`{"error":{"message":"Invalid authentication","details":["The API key provided is invalid"]}}`, ErrUnauthorized},
		{`{"error":{"message":"Something odd","details":"one string"}}`, ErrErrorResponse},
		{`{"error":"plain text"}`, ErrErrorResponse},
	}
	for _, c := range cases {
		_, err := DecodeCommunications([]byte(c.body))
		var ae *APIError
		if !errors.Is(err, c.kind) || !errors.As(err, &ae) || ae.Status != 200 {
			t.Errorf("%s: %v", c.body, err)
		}
	}
	// "error": null next to data is a success.
	p, err := DecodeList[Brand]([]byte(`{"error":null,"data":[{"id":1}]}`))
	if err != nil || len(p.Records) != 1 {
		t.Errorf("error null: %v", err)
	}
}

func TestDecodeRecordErrorsKeepPageGoing(t *testing.T) {
	body := `{"data":[{"id":1,"amount":"12.5"},{"id":2,"amount":"twelve"},{"id":3,"period_start":"soon"},null,{"id":5,"amount":7}]}`
	p := mustPage[Budget](t, body)
	if len(p.Records) != 2 || p.Records[0].ID != "1" || p.Records[1].ID != "5" {
		t.Fatalf("records %+v", p.Records)
	}
	if len(p.Rejects) != 3 {
		t.Fatalf("rejects %v", p.Rejects)
	}
	want := []struct{ key, raw, msg string }{
		{"2", `{"id":2,"amount":"twelve"}`, `amount: invalid decimal "twelve"`},
		{"3", `{"id":3,"period_start":"soon"}`, `period_start: want a date YYYY-MM-DD, got "soon"`},
		{"#3", `null`, `record: want an object, got null`},
	}
	for i, w := range want {
		r := p.Rejects[i]
		if r.Key != w.key || string(r.Raw) != w.raw || !strings.Contains(r.Error(), w.msg) {
			t.Errorf("reject %d: key %q raw %s err %v", i, r.Key, r.Raw, r.Err)
		}
	}
}

func TestDecodeDoesNotAliasBody(t *testing.T) {
	body := []byte(commsCanonical)
	p, err := DecodeCommunications(body)
	if err != nil {
		t.Fatal(err)
	}
	before := string(p.Records[0].Raw)
	subject := *p.Records[0].Email.Subject
	for i := range body {
		body[i] = 'X'
	}
	if string(p.Records[0].Raw) != before || *p.Records[0].Email.Subject != subject {
		t.Error("records alias the caller's buffer")
	}
}

func TestDecodeUnicode(t *testing.T) {
	body := `[{"id":"1","name":"Caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n","account_manager":"\ud800x","status":"` + "Ștefan" + `"}]`
	p := mustPage[Brand](t, body)
	r := p.Records[0]
	if r.Name != "Café 😀 \"q\" \\ / \n" || r.AccountManager != "\uFFFDx" || r.Status != "Ștefan" {
		t.Errorf("%q %q %q", r.Name, r.AccountManager, r.Status)
	}
	p = mustPage[Brand](t, "[{\"id\":\"1\",\"name\":\"bad \xff utf8\"}]")
	if p.Records[0].Name != "bad \uFFFD utf8" {
		t.Errorf("%q", p.Records[0].Name)
	}
}

func TestDecodeAllFinanceRecords(t *testing.T) {
	inv := mustPage[Invoice](t, `{"data":[{"invoice_info":{"id":"i1","number":2024001,"project_id":7,"brand_id":"1","issue_date":"2024-01-01","due_date":"2024-01-31","amount":"100.00","currency":"EUR","status":"paid","updated_at":"2024-02-01T00:00:00Z"}}]}`).Records[0]
	if inv.ID != "i1" || inv.Number != "2024001" || inv.ProjectID != "7" || inv.Amount != "100.00" || inv.Status != "paid" || inv.DueDate.Day() != 31 {
		t.Errorf("invoice %+v", inv)
	}
	col := mustPage[Collection](t, `[{"id":1,"invoice_id":"i1","collected_on":"2024-02-01","amount":50,"currency":"EUR","updated_at":"2024-02-01T10:00:00Z"}]`).Records[0]
	if col.ID != "1" || col.InvoiceID != "i1" || col.Amount != "50" || col.CollectedOn.Month() != 2 {
		t.Errorf("collection %+v", col)
	}
	pay := mustPage[Payment](t, `[{"id":1,"project_id":"7","brand_id":1,"payee":"Printer SRL","paid_on":"2024-02-02","amount":"-20.10","currency":"RON","status":"sent","updated_at":"2024-02-02"}]`).Records[0]
	if pay.Payee != "Printer SRL" || pay.Amount != "-20.10" || pay.UpdatedAt == nil {
		t.Errorf("payment %+v", pay)
	}
	bud := mustPage[Budget](t, `[{"id":9,"project_id":"7","brand_id":1,"amount":"1e2","currency":"EUR","period_start":"2024-01-01","period_end":"2024-12-31"}]`).Records[0]
	if bud.Amount != "100" || bud.PeriodEnd.Year() != 2024 {
		t.Errorf("budget %+v", bud)
	}
	pr := mustPage[Profitability](t, `[{"level":"brand","entity_id":1,"period":"2024-01","revenue":"10.5","cost":"4","margin":"6.5","currency":"EUR"}]`).Records[0]
	if pr.Level != "brand" || pr.EntityID != "1" || pr.Margin != "6.5" {
		t.Errorf("profitability %+v", pr)
	}
	su := mustPage[AgencySummary](t, `{"data":[{"summary_info":{"period":"2024-01","total_budget":1,"invoiced":2,"collected":3,"paid":4,"profit":"5.00","currency":"EUR"}}]}`).Records
	if len(su) != 1 || su[0].Period != "2024-01" || su[0].Profit != "5.00" {
		t.Errorf("summary %+v", su)
	}
	con := mustPage[Contact](t, `[{"id":1,"first_name":"Ana","last_name":null,"full_name":"Ana","email":"a@b","phone":"","position":"CEO","is_primary":1},{"id":2,"is_primary":"false"}]`).Records
	if len(con) != 2 || !con[0].IsPrimary || con[0].LastName != nil || *con[0].Phone != "" || *con[0].Position != "CEO" || con[1].IsPrimary {
		t.Errorf("contacts %+v", con)
	}
}

func TestDecodeCommunicationsKeyOrderAndSpacing(t *testing.T) {
	compact := `{"data":{"rows":{"5":{"email":{"type_id":2,"subject":"Hi","has_attachments":1,"size":7,"mailbox_id":"m","mailbox_thread":"t","email_at":"2024-03-01T10:15:30.000001Z"},"users":{"from":[{"first_name":"A","email":"a@x"}],"to":{"9":{"first_name":"B","email":"b@x","phone":""}},"cc":[],"bcc":[]}}}}}`
	shuffled := "{ \"data\" : { \"rows\" : { \"5\" : {\n \"users\" : { \"bcc\" : [ ], \"cc\":{},\"to\" : { \"9\" : { \"phone\":\"\" , \"email\" : \"b@x\", \"first_name\":\"B\" } }, \"from\" : [ { \"email\":\"a@x\",\"first_name\":\"A\" } ] },\n" +
		` "email" : { "email_at" : "2024-03-01T10:15:30.000001Z", "mailbox_thread":"t", "mailbox_id":"m", "size" : 7, "has_attachments" : true, "sub\u006aect" : "Hi", "type_id" : 2 } } } } }`
	a, err := DecodeCommunications([]byte(compact))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeCommunications([]byte(shuffled))
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := a.Records[0], b.Records[0]
	if ra.RecordID != rb.RecordID || *ra.Email.Subject != *rb.Email.Subject || *ra.Email.TypeID != *rb.Email.TypeID ||
		*ra.Email.Size != *rb.Email.Size || ra.Email.MailboxThread != rb.Email.MailboxThread || !ra.Email.EmailAt.Equal(rb.Email.EmailAt) ||
		ra.Email.HasAttachments != rb.Email.HasAttachments || *ra.Users.To[0].PlatformUserID != *rb.Users.To[0].PlatformUserID ||
		ra.Users.To[0].Email != rb.Users.To[0].Email || ra.Users.From[0].FirstName != rb.Users.From[0].FirstName || *rb.Users.To[0].Phone != "" {
		t.Errorf("compact %+v\nshuffled %+v", ra, rb)
	}
}

func TestDecodeSharedPeopleAreIndependent(t *testing.T) {
	// The same user object on two records: decoded once, but the records
	// must not share writable fields.
	user := `{"first_name":"Ana","last_name":"Pop","full_name":"Ana Pop","email":"ana@x","phone":"1","avatar":"a","status":"Activ"}`
	body := `{"data":{"rows":{"1":{"email":{},"users":{"from":[` + user + `],"to":{"3":` + user + `}}},"2":{"email":{},"users":{"from":[` + user + `],"to":{"4":` + user + `}}}}}}`
	p, err := DecodeCommunications([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := p.Records[0], p.Records[1]
	*r1.Users.From[0].LastName = "changed"
	*r1.Users.From[0].Phone = "changed"
	if *r2.Users.From[0].LastName != "Pop" || *r1.Users.To[0].LastName != "Pop" || *r2.Users.To[0].Phone != "1" {
		t.Error("records share pointer fields")
	}
	if *r1.Users.To[0].PlatformUserID != 3 || *r2.Users.To[0].PlatformUserID != 4 || r2.Users.From[0].PlatformUserID != nil {
		t.Errorf("ids %v %v", *r1.Users.To[0].PlatformUserID, *r2.Users.To[0].PlatformUserID)
	}
	// A prefix of a known user object followed by different bytes is not a
	// cache hit.
	body2 := `{"data":{"rows":{"1":{"email":{},"users":{"from":[` + user + `]}},"2":{"email":{},"users":{"from":[` + strings.TrimSuffix(user, `}`) + `,"extra":1}]}}}}}`
	p2, err := DecodeCommunications([]byte(body2))
	if err != nil || len(p2.Records) != 2 || string(p2.Records[1].Raw) == string(p2.Records[0].Raw) {
		t.Fatalf("%v %+v", err, p2)
	}
}

// TestDecodePHPFalseIsMissing: a PHP encoder writes false for a missing
// value (issue 16): every optional string, number, id, date, decimal and
// object read as false is absent, as null is, and the record lands.
func TestDecodePHPFalseIsMissing(t *testing.T) {
	comms := `{"data":{"rows":{"7":{"email":{"type_id":false,"type_name":false,"brand_id":false,"project_id":false,"subject":"Hi","message":false,"has_attachments":false,"size":false,"mailbox_id":"m","mailbox_thread":"t","email_at":"2024-03-01T10:15:30.000001Z"},` +
		`"users":{"from":[{"first_name":"Ana","last_name":false,"full_name":"Ana ","email":"ana@ext.example","phone":false,"avatar":false,"status":false}],"to":{"9":{"first_name":"Dan","last_name":"Pop","full_name":"Dan Pop","email":"dan@a.example","phone":false,"avatar":"a","status":"Activ"}},"cc":false,"bcc":[]}}},"total":1,"per_page":1000,"current_page":1,"last_page":1}}`
	p, err := DecodeCommunications([]byte(comms))
	if err != nil || len(p.Records) != 1 || len(p.Rejects) != 0 {
		t.Fatalf("communications: %v, records %d, rejects %v", err, len(p.Records), p.Rejects)
	}
	r := p.Records[0]
	if r.Email.TypeID != nil || r.Email.TypeName != nil || r.Email.BrandID != "" || r.Email.Message != nil || r.Email.Size != nil || r.Email.HasAttachments ||
		r.Users.From[0].LastName != nil || r.Users.From[0].Phone != nil || r.Users.CC != nil || *r.Users.To[0].PlatformUserID != 9 {
		t.Errorf("record %+v", r)
	}
	brands := mustPage[Brand](t, `[{"id":"1","name":"Acme","status":false,"date_created":false,"account_manager":false,"projects_count":false,"financial_summary":false}]`)
	if len(brands.Records) != 1 || brands.Records[0].ProjectsCount != nil || brands.Records[0].DateCreated != nil || brands.Records[0].FinancialSummary != nil {
		t.Errorf("brand %+v rejects %v", brands.Records, brands.Rejects)
	}
	projects := mustPage[Project](t, `[{"project_info":{"id":7,"brand_id":false,"name":"Site","status":"open","start_date":false,"deadline":false,"closed_at":false,"updated_at":false,"budget":false,"team":false,"deliverables":false,"history":false}}]`)
	if len(projects.Records) != 1 || projects.Records[0].Budget != nil || projects.Records[0].Deadline != nil {
		t.Errorf("project %+v rejects %v", projects.Records, projects.Rejects)
	}
	budgets := mustPage[Budget](t, `[{"id":1,"project_id":false,"brand_id":1,"amount":false,"currency":false,"period_start":false,"period_end":false,"updated_at":false}]`)
	if len(budgets.Records) != 1 || budgets.Records[0].Amount != "" {
		t.Errorf("budget %+v rejects %v", budgets.Records, budgets.Rejects)
	}
}
