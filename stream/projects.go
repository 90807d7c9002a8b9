package stream

import "strconv"

// Endpoint names of the projects stream.
const (
	EndpointProjects = "projects"
	EndpointProject  = "project"
)

// Reject streams of the projects stream's records: the list's and the
// details'.
const (
	RejectProjects       = "projects"
	RejectProjectDetails = "projects.details"
)

var projectOnly = []string{EndpointProject}

// projects: the list (incremental by updated_since) and each project's
// detail when its list entry changed. Only the detail carries the team,
// deliverables and history: team and deliverables are complete there (stored
// ones it no longer lists are deleted); history is a log, only added to.
var projects = &Stream{
	Name: "projects",
	Endpoints: []Endpoint{
		{Name: EndpointProjects, Path: "/v1/projects", Paging: PagingList, Pagination: listPaging, Incremental: true},
		{Name: EndpointProject, Path: "/v1/projects/{id}", Paging: PagingDetail, Inventory: "project_details"},
	},
	// The list is complete on purpose: only a complete listing shows
	// deletions, and at up to 1000 projects a request it costs what an
	// updated_since listing would.
	Lists: []List{{Partition: "list", Endpoint: EndpointProjects}},
	Main:  "projects",
	tables: []*Table{
		{
			Name: "projects", Noun: "project", Wrapper: "project_info",
			Endpoints: []string{EndpointProjects, EndpointProject},
			Reject:    RejectProjects, DetailReject: RejectProjectDetails, SoftDelete: true,
			// budget (the sum of the project's budgets, recomputed by
			// finance) does not make the detail due.
			DetailFields: []string{"brand_id", "name", "status", "start_date", "deadline", "closed_at", "updated_at"},
			Columns: []Column{
				recordID("project_id"),
				field("brand_id", ID),
				field("name", Text),
				field("status", Text),
				field("start_date", Date),
				field("deadline", Date),
				{Name: "closed_at", Field: "closed_at", Type: Timestamptz, Sparse: true},
				field("updated_at", Timestamptz),
				// budget may also be a bare amount.
				{Name: "budget_amount", Field: "budget.amount", Alternates: []string{"budget"}, Type: Numeric},
				{Name: "budget_currency", Field: "budget.currency", Type: Text},
				{Name: "raw", Derived: DerivedRecord, Type: JSONB, Endpoints: []string{EndpointProjects}, Sticky: true, Fallback: "detail_raw"},
				{Name: "detail_raw", Derived: DerivedRecord, Type: JSONB, Endpoints: projectOnly, Sticky: true},
			},
		},
		{
			Name: "project_team_members", Noun: "team member", Parent: "projects", Array: "team", Replace: true,
			Endpoints: projectOnly,
			Columns: []Column{
				{Name: "project_id", Derived: DerivedParent, Type: ID, Key: true},
				{Name: "user_id", Field: "user_id", Alternates: []string{"id"}, ElementKey: true, Type: ID, Key: true},
				{Name: "platform_user_id", Derived: DerivedHook, Type: BigInt},
				{Name: "full_name", Field: "full_name", Type: Text, Trim: true},
				{Name: "role", Field: "role", Type: Text, Trim: true},
			},
			Check: teamMember,
		},
		{
			Name: "project_deliverables", Noun: "deliverable", Parent: "projects", Array: "deliverables", Replace: true,
			Endpoints: projectOnly,
			Columns: []Column{
				{Name: "project_id", Derived: DerivedParent, Type: ID, Key: true},
				{Name: "deliverable_id", Field: "id", Alternates: []string{"deliverable_id"}, ElementKey: true, Type: ID, Key: true},
				field("name", Text),
				field("due_date", Date),
				field("status", Text),
				{Name: "delivered_at", Field: "delivered_at", Type: Timestamptz, Sparse: true},
			},
		},
		{
			// A log: entries of one project with the same at and field are
			// told apart by seq, 1, 2, … in the order received.
			Name: "project_history", Noun: "history entry", Parent: "projects", Array: "history",
			Endpoints: projectOnly,
			Columns: []Column{
				{Name: "project_id", Derived: DerivedParent, Type: ID, Key: true},
				{Name: "at", Field: "at", Type: Timestamptz, Key: true},
				{Name: "field", Field: "field", Type: Text, Key: true},
				{Name: "seq", Derived: DerivedSequence, Type: Integer, Key: true},
				{Name: "from_value", Field: "from", Type: Text, KeepEmpty: true, AnyJSON: true, Sparse: true},
				{Name: "to_value", Field: "to", Type: Text, KeepEmpty: true, AnyJSON: true, Sparse: true},
				field("by_user_id", ID),
			},
		},
	},
}

// teamMember sets platform_user_id: the member's user_id when it is a
// number, to join users.platform_user_id.
func teamMember(_ *View, row Row) error {
	id, _ := row.Get("user_id").(string)
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		row.Set("platform_user_id", n)
	}
	return nil
}
