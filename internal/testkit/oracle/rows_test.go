package oracle

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// handTruth is a small truth written by hand, with the cases the warehouse
// contract spells out.
const handTruth = `{"stream":"brands","key":"1","bad":false,"record":{"brand_info":{"id":"1","name":" Flori ","status":"Activ","date_created":"2023-02-08","account_manager":" Ana Pop ","projects_count":3,"financial_summary":{"total_budget":48850.00,"invoiced":24811.57,"collected":0,"currency":"USD"}}}}
{"stream":"brands","key":"2","bad":false,"record":{"brand_info":{"id":2,"name":"","status":null,"date_created":null,"account_manager":"","projects_count":null,"financial_summary":null}}}
{"stream":"brand_details","key":"1","bad":false,"record":{"brand_info":{"id":"1"},"general_info":{"city":"Sibiu"},"metadata":{"tags":["nou"]}}}
{"stream":"contacts","key":"7","brand_id":"1","bad":false,"record":{"id":"7","first_name":" Adrian ","last_name":"Anghel","full_name":"Adrian Anghel ","email":"A@X.ro","phone":"","position":null,"is_primary":true}}
{"stream":"projects","key":"5","bad":false,"record":{"id":"5","brand_id":"1","name":"Spot","status":"activ","start_date":"2026-09-04","deadline":null,"closed_at":null,"updated_at":"2026-10-19T16:49:43.1234567+02:00","budget":{"amount":58050.5,"currency":"RON"},"team":[{"user_id":"5","full_name":" Irina ","role":"pm"},{"user_id":"ext-1","full_name":"Ext","role":null}],"deliverables":[{"id":"9","name":"Machete","due_date":"2026-11-03","status":"în lucru","delivered_at":null}],"history":[{"at":"2026-09-04T12:37:42Z","field":"status","from":null,"to":"planificat","by_user_id":"5"},{"at":"2026-09-04T12:37:42Z","field":"status","from":"planificat","to":"","by_user_id":null}]}}
{"stream":"invoices","key":"20","bad":false,"record":{"id":"20","number":"AG-1","project_id":"5","brand_id":"1","issue_date":"2026-09-30","due_date":"2026-11-14","amount":8943.82,"currency":"RON","status":"emisă","updated_at":"2026-10-14T13:01:12Z"}}
{"stream":"invoices","key":"21","bad":true,"record":{"id":"21","amount":"2.609,35 USD"}}
{"stream":"payments","key":"60","bad":false,"record":{"id":"60","project_id":"5","brand_id":"1","payee":" Media SRL ","paid_on":"2026-09-11","amount":1963.47,"currency":"RON","status":"ok","updated_at":"2026-09-11T08:48:09Z"}}
{"stream":"profitability","key":"brand:1:2026-09","bad":false,"record":{"level":"brand","entity_id":"1","period":"2026-09","revenue":10,"cost":4,"margin":6,"currency":"RON"}}
{"stream":"summary","key":"2026-09","bad":false,"record":{"period":"2026-09","total_budget":1,"invoiced":2,"collected":3,"paid":4,"profit":5,"currency":"RON"}}
{"stream":"communications","key":"100","bad":false,"record":{"email":{"type_id":2,"type_name":"","brand_id":"2","project_id":null,"subject":"Ofertă","message":null,"has_attachments":1,"size":2727,"mailbox_id":"","mailbox_thread":"t1","email_at":"2026-09-02T00:48:24.174380Z"},"users":{"from":[{"first_name":"Ion","last_name":"V","full_name":"Ion V ","email":" Ion.V@Agentia.ro ","phone":"","avatar":"a.jpg","status":"Activ"}],"to":{"14":{"first_name":"Radu","last_name":null,"full_name":"Radu","email":"radu@agentia.ro","phone":"+40 1","avatar":"","status":"Activ"},"15":{"first_name":"Radu","last_name":null,"full_name":"Radu","email":"RADU@agentia.ro","phone":null,"avatar":"","status":"Activ"}},"cc":{"9":{"first_name":"Ion","last_name":null,"full_name":"Ion V","email":"ion.v@agentia.ro","phone":"+40 2","avatar":null,"status":"Activ"},"client@firma.ro":{"first_name":"Client","email":"client@firma.ro"}},"bcc":[]}}}
{"stream":"communications","key":"101","bad":true,"record":{"email":{"email_at":"yesterday"}}}
{"stream":"communications","key":"102","bad":false,"record":{"email":{"type_id":null,"subject":"Re","has_attachments":null,"size":null,"email_at":"2026-09-03T00:00:00Z"},"users":{"from":[{"first_name":"Ion","email":"ion.v@agentia.ro","phone":null}],"to":{"33":{"first_name":"Fără adresă","email":""}},"cc":[],"bcc":null}}}
`

func dec(t *testing.T, s string) pgtype.Numeric {
	t.Helper()
	var n pgtype.Numeric
	if err := n.ScanScientific(s); err != nil {
		t.Fatal(err)
	}
	return n
}

func day(s string) time.Time {
	d, _ := time.Parse(time.DateOnly, s)
	return d
}

func ts(s string) time.Time {
	d, _ := time.Parse(time.RFC3339Nano, s)
	return d.UTC()
}

// show renders a row for comparison: numerics by value, JSON as text.
func show(row []any) string {
	parts := make([]string, len(row))
	for i, v := range row {
		switch x := v.(type) {
		case pgtype.Numeric:
			f, _ := x.Float64Value()
			parts[i] = fmt.Sprintf("num(%v)", f.Float64)
		case json.RawMessage:
			parts[i] = "json(" + string(x) + ")"
		case time.Time:
			parts[i] = x.UTC().Format(time.RFC3339Nano)
		default:
			parts[i] = fmt.Sprintf("%#v", v)
		}
	}
	return strings.Join(parts, " | ")
}

func TestExpectedFollowsTheContract(t *testing.T) {
	tr, err := Parse([]byte(handTruth))
	if err != nil {
		t.Fatal(err)
	}
	snap := time.Date(2026, 11, 24, 15, 0, 0, 0, time.FixedZone("EET", 7200))
	rows, err := Expected(tr, snap)
	if err != nil {
		t.Fatal(err)
	}
	for table, cols := range Columns {
		for _, r := range rows[table] {
			if len(r) != len(cols) {
				t.Errorf("%s row %s: %d values for %d columns", table, show(r), len(r), len(cols))
			}
		}
	}
	want := map[string][][]any{
		"brands": {
			{"1", " Flori ", "Activ", day("2023-02-08"), "Ana Pop", int64(3), dec(t, "48850.00"), dec(t, "24811.57"), dec(t, "0"), "USD",
				json.RawMessage(`{"city":"Sibiu"}`), json.RawMessage(`{"tags":["nou"]}`)},
			{"2", nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		},
		"brand_financial_snapshots": {{"1", day("2026-11-24"), dec(t, "48850"), dec(t, "24811.57"), dec(t, "0"), "USD"}},
		"brand_contacts": {{"1", "7", "Adrian", "Anghel", "Adrian Anghel", "A@X.ro", nil, nil, true,
			json.RawMessage(`{"id":"7","first_name":" Adrian ","last_name":"Anghel","full_name":"Adrian Anghel ","email":"A@X.ro","phone":"","position":null,"is_primary":true}`)}},
		"projects":             {{"5", "1", "Spot", "activ", day("2026-09-04"), nil, nil, ts("2026-10-19T14:49:43.123456Z"), dec(t, "58050.5"), "RON"}},
		"project_team_members": {{"5", "5", int64(5), "Irina", "pm"}, {"5", "ext-1", nil, "Ext", nil}},
		"project_deliverables": {{"5", "9", "Machete", day("2026-11-03"), "în lucru", nil}},
		"project_history": {
			{"5", ts("2026-09-04T12:37:42Z"), "status", int32(1), nil, "planificat", "5"},
			{"5", ts("2026-09-04T12:37:42Z"), "status", int32(2), "planificat", "", nil},
		},
		"invoices": {{"20", "AG-1", "5", "1", day("2026-09-30"), day("2026-11-14"), dec(t, "8943.82"), "RON", "emisă",
			ts("2026-10-14T13:01:12Z"), json.RawMessage(tr["invoices"][0].Record)}},
		"payments": {{"60", "5", "1", "Media SRL", day("2026-09-11"), dec(t, "1963.47"), "RON", "ok", ts("2026-09-11T08:48:09Z"),
			json.RawMessage(tr["payments"][0].Record)}},
		"profitability": {{"brand", "1", day("2026-09-01"), dec(t, "10"), dec(t, "4"), dec(t, "6"), "RON", json.RawMessage(tr["profitability"][0].Record)}},
		"agency_finance_summary": {{day("2026-09-01"), dec(t, "1"), dec(t, "2"), dec(t, "3"), dec(t, "4"), dec(t, "5"), "RON",
			json.RawMessage(tr["summary"][0].Record)}},
		"emails": {
			{int64(100), int64(2), "", "2", nil, "Ofertă", nil, true, int64(2727), nil, "t1", ts("2026-09-02T00:48:24.17438Z"),
				json.RawMessage(tr["communications"][0].Record)},
			{int64(102), nil, nil, nil, nil, "Re", nil, false, nil, nil, nil, ts("2026-09-03T00:00:00Z"),
				json.RawMessage(tr["communications"][2].Record)},
		},
		// One row per person: the address trimmed and lower-cased is the key
		// (id:<user id> without one); the user id learned from a keyed
		// appearance; the last known value of each attribute kept.
		"users": {
			{"ion.v@agentia.ro", int64(9), "Ion", "V", "Ion V", "ion.v@agentia.ro", "+40 2", "a.jpg", "Activ"},
			{"radu@agentia.ro", int64(15), "Radu", nil, "Radu", "radu@agentia.ro", "+40 1", nil, "Activ"},
			{"client@firma.ro", nil, "Client", nil, nil, "client@firma.ro", nil, nil, nil},
			{"id:33", int64(33), "Fără adresă", nil, nil, nil, nil, nil, nil},
		},
		// Radu twice in to is one recipient.
		"email_recipients": {
			{int64(100), "from", "ion.v@agentia.ro"}, {int64(100), "to", "radu@agentia.ro"},
			{int64(100), "cc", "ion.v@agentia.ro"}, {int64(100), "cc", "client@firma.ro"},
			{int64(102), "from", "ion.v@agentia.ro"}, {int64(102), "to", "id:33"},
		},
		"rejected_records": {
			{"finance.invoices", "21", json.RawMessage(tr["invoices"][1].Record)},
			{"communications", "101", json.RawMessage(tr["communications"][1].Record)},
		},
	}
	for table := range Columns {
		var got, exp []string
		for _, r := range rows[table] {
			got = append(got, show(r))
		}
		for _, r := range want[table] {
			exp = append(exp, show(r))
		}
		slices.Sort(got)
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			t.Errorf("%s:\n got  %s\n want %s", table, strings.Join(got, "\n      "), strings.Join(exp, "\n      "))
		}
	}
}

func TestExpectedRefusesUnreadableGoodRecords(t *testing.T) {
	for _, line := range []string{
		`{"stream":"invoices","key":"1","bad":false,"record":{"id":"1","amount":"1.000,00"}}`,
		`{"stream":"invoices","key":"1","bad":false,"record":{"id":"1"}}`,
		`{"stream":"projects","key":"1","bad":false,"record":{"id":"1","updated_at":"ieri"}}`,
		`{"stream":"communications","key":"5","bad":false,"record":{"email":{"subject":"x","email_at":"2026-09-03T00:00:00Z"},"users":{"from":[]}}}`,
		`{"stream":"communications","key":"5","bad":false,"record":{"email":{"subject":"x","email_at":"2026-09-03T00:00:00Z"},"users":{"from":[{"first_name":"Nimeni"}]}}}`,
		`{"stream":"contacts","key":"1","bad":true,"record":{}}`,
	} {
		tr, err := Parse([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Expected(tr, time.Now()); !errors.Is(err, ErrMalformedTruth) {
			t.Errorf("Expected(%s) = %v, want ErrMalformedTruth", line, err)
		}
	}
}
