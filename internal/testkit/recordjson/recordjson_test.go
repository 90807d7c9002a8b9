package recordjson

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/fixture"
)

// TestRecordShapes pins the service JSON that fixtures render as: names from
// the field names, calendar dates against instants, absent zero values,
// "always" members, bad decimals as strings and keyed recipient lists.
func TestRecordShapes(t *testing.T) {
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	day := time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)
	at := time.Date(2024, 2, 3, 4, 5, 6, 789000, time.UTC)
	for _, c := range []struct {
		name string
		got  json.RawMessage
		want string
	}{
		{"empty brand of the list", Brand(fixture.Brand{}), `{"brand_info":{}}`},
		{"brand detail", Record(fixture.BrandDetail{Brand: fixture.Brand{ID: "1", DateCreated: &day, ProjectsCount: n(0),
			FinancialSummary: &fixture.FinancialSummary{TotalBudget: "1.50", Invoiced: "abc", Collected: `"3"`}}, GeneralInfo: json.RawMessage(`{"a":1}`)}),
			`{"brand_info":{"date_created":"2024-02-03","financial_summary":{"collected":"\"3\"","invoiced":"abc","total_budget":1.50},"id":"1","projects_count":0},"general_info":{"a":1}}`},
		{"contact", Record(fixture.Contact{ID: "c", LastName: s(""), IsPrimary: false, Raw: json.RawMessage(`{"x":1}`)}),
			`{"id":"c","is_primary":false,"last_name":""}`},
		{"project", Record(fixture.Project{Deadline: &day, ClosedAt: &at, Budget: &fixture.Money{Amount: "12"}, Team: []fixture.TeamMember{},
			Deliverables: []fixture.Deliverable{{ID: "d", DueDate: &day, DeliveredAt: &at}},
			History:      []fixture.HistoryEntry{{}, {At: at, From: s(""), ByUserID: "u"}}}),
			`{"budget":{"amount":12},"closed_at":"2024-02-03T04:05:06.000789Z","deadline":"2024-02-03","deliverables":[{"delivered_at":"2024-02-03T04:05:06.000789Z","due_date":"2024-02-03","id":"d"}],"history":[{},{"at":"2024-02-03T04:05:06.000789Z","by_user_id":"u","from":""}],"team":[]}`},
		{"invoice", Record(fixture.Invoice{ProjectID: "2", IssueDate: &day, Amount: "1e3", UpdatedAt: &day}),
			`{"amount":1e3,"issue_date":"2024-02-03","project_id":"2","updated_at":"2024-02-03T00:00:00Z"}`},
		{"communication", Record(fixture.Communication{RecordID: 5, Email: fixture.EmailFields{TypeID: n(1), HasAttachments: true, EmailAt: at},
			Users: fixture.Participants{From: []fixture.Participant{{FirstName: "f", Phone: s("")}},
				To: []fixture.Participant{{PlatformUserID: n(7), FirstName: "k"}, {Email: "out@x"}}}}),
			`{"email":{"email_at":"2024-02-03T04:05:06.000789Z","has_attachments":1,"type_id":1},"users":{"bcc":[],"cc":[],"from":[{"first_name":"f","last_name":null,"phone":""}],"to":{"7":{"first_name":"k","last_name":null},"out@x":{"email":"out@x","last_name":null}}}}`},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}
