// Package transform turns the typed records of package extract into rows of the
// warehouse tables (migrations/00002_model.sql). It is pure: no I/O, no database,
// no clock — the caller passes the snapshot day where one is needed.
//
// Every function validates its records against the model. A record that violates
// it (missing key, missing subject, zero date, negative size, a participant with
// neither e-mail nor user id, …) becomes a Reject carrying the record as received
// and the reason; the other records of the page proceed. Rows are ready to store:
// text is stripped of NUL characters (which PostgreSQL cannot hold), raw JSON is
// valid UTF-8 JSON, instants are UTC with microsecond precision and dates are UTC
// midnights. Within one call, records with the same key collapse (the last one
// wins) and so do the users and recipients they mention.
package transform

import (
	"encoding/json"
	"time"
)

// Batch holds the rows of one page, for any tables, plus the page's rejected
// records. Package load writes a Batch in one transaction.
type Batch struct {
	Brands                  []Brand
	BrandFinancialSnapshots []BrandFinancialSnapshot
	BrandContacts           []BrandContact
	Projects                []Project
	// ProjectDetails lists the projects whose detail was transformed: their
	// team members and deliverables in this batch are complete, so stored ones
	// absent from it are deleted.
	ProjectDetails       []string
	ProjectTeamMembers   []ProjectTeamMember
	ProjectDeliverables  []ProjectDeliverable
	ProjectHistory       []ProjectHistoryEntry
	Budgets              []Budget
	Invoices             []Invoice
	Collections          []Collection
	Payments             []Payment
	Profitability        []Profitability
	AgencyFinanceSummary []AgencyFinanceSummary
	// Emails come with their complete participant lists: the recipients of
	// every e-mail in the batch are replaced exactly by EmailRecipients.
	Emails          []Email
	EmailRecipients []EmailRecipient
	Users           []User
	Rejects         []Reject
}

// Append adds the rows and rejects of o to b.
func (b *Batch) Append(o Batch) {
	b.Brands = append(b.Brands, o.Brands...)
	b.BrandFinancialSnapshots = append(b.BrandFinancialSnapshots, o.BrandFinancialSnapshots...)
	b.BrandContacts = append(b.BrandContacts, o.BrandContacts...)
	b.Projects = append(b.Projects, o.Projects...)
	b.ProjectDetails = append(b.ProjectDetails, o.ProjectDetails...)
	b.ProjectTeamMembers = append(b.ProjectTeamMembers, o.ProjectTeamMembers...)
	b.ProjectDeliverables = append(b.ProjectDeliverables, o.ProjectDeliverables...)
	b.ProjectHistory = append(b.ProjectHistory, o.ProjectHistory...)
	b.Budgets = append(b.Budgets, o.Budgets...)
	b.Invoices = append(b.Invoices, o.Invoices...)
	b.Collections = append(b.Collections, o.Collections...)
	b.Payments = append(b.Payments, o.Payments...)
	b.Profitability = append(b.Profitability, o.Profitability...)
	b.AgencyFinanceSummary = append(b.AgencyFinanceSummary, o.AgencyFinanceSummary...)
	b.Emails = append(b.Emails, o.Emails...)
	b.EmailRecipients = append(b.EmailRecipients, o.EmailRecipients...)
	b.Users = append(b.Users, o.Users...)
	b.Rejects = append(b.Rejects, o.Rejects...)
}

// Reject is a record that could not be loaded; it becomes a rejected_records row.
type Reject struct {
	// Stream is the stream and list the record came from, e.g. "communications"
	// or "finance.invoices" (the Stream* constants).
	Stream string
	// Key is the record's key when known, otherwise HashKeyPrefix and a
	// hash of Payload.
	Key string
	// Payload is the record as received: valid JSON (a JSON string when the
	// received bytes were not JSON).
	Payload json.RawMessage
	// Error says why the record was rejected.
	Error string
}

// Stream names used in Reject.Stream.
const (
	StreamBrands         = "brands"
	StreamBrandContacts  = "brands.contacts"
	StreamProjects       = "projects"
	StreamBudgets        = "finance.budgets"
	StreamInvoices       = "finance.invoices"
	StreamCollections    = "finance.collections"
	StreamPayments       = "finance.payments"
	StreamProfitability  = "finance.profitability"
	StreamAgencySummary  = "finance.summary"
	StreamCommunications = "communications"
)

// Brand is a row of brands. Numeric columns are exact decimal text; nil is NULL.
type Brand struct {
	BrandID        string
	Name           *string
	Status         *string
	DateCreated    *time.Time // date
	AccountManager *string
	ProjectsCount  *int64
	TotalBudget    *string // numeric
	Invoiced       *string // numeric
	Collected      *string // numeric
	Currency       *string
	// GeneralInfo and Metadata come from the brand detail; nil when only the
	// list was read, in which case the stored values are kept.
	GeneralInfo json.RawMessage
	Metadata    json.RawMessage
	// Raw is the brand as received in the list; nil from a detail, which
	// keeps the stored one (a brand never listed gets DetailRaw).
	Raw json.RawMessage
	// DetailRaw is the brand detail as received; nil from the list, which
	// keeps the stored one.
	DetailRaw json.RawMessage
}

// BrandFinancialSnapshot is a row of brand_financial_snapshots: a brand's
// financial summary as seen on SnapshotDate.
type BrandFinancialSnapshot struct {
	BrandID      string
	SnapshotDate time.Time // date
	TotalBudget  *string   // numeric
	Invoiced     *string   // numeric
	Collected    *string   // numeric
	Currency     *string
}

// BrandContact is a row of brand_contacts.
type BrandContact struct {
	BrandID   string
	ContactID string
	FirstName *string
	LastName  *string
	FullName  *string
	Email     *string
	Phone     *string
	Position  *string
	IsPrimary bool
	Raw       json.RawMessage
}

// Project is a row of projects.
type Project struct {
	ProjectID      string
	BrandID        *string
	Name           *string
	Status         *string
	StartDate      *time.Time // date
	Deadline       *time.Time // date
	ClosedAt       *time.Time
	UpdatedAt      *time.Time
	BudgetAmount   *string // numeric
	BudgetCurrency *string
	// Raw is the project as received in the list; nil from a detail, which
	// keeps the stored one (a project never listed gets DetailRaw).
	Raw json.RawMessage
	// DetailRaw is the project detail as received; nil from the list, which
	// keeps the stored one.
	DetailRaw json.RawMessage
}

// ProjectTeamMember is a row of project_team_members.
type ProjectTeamMember struct {
	ProjectID string
	UserID    string
	// PlatformUserID is UserID as a number when it is one, for joins with
	// users.platform_user_id.
	PlatformUserID *int64
	FullName       *string
	Role           *string
}

// ProjectDeliverable is a row of project_deliverables.
type ProjectDeliverable struct {
	ProjectID     string
	DeliverableID string
	Name          *string
	DueDate       *time.Time // date
	Status        *string
	DeliveredAt   *time.Time
}

// ProjectHistoryEntry is a row of project_history.
type ProjectHistoryEntry struct {
	ProjectID string
	At        time.Time
	Field     string
	// Seq tells apart entries of one project with the same At and Field: 1 for
	// the first in the order received, 2 for the next, …
	Seq       int32
	FromValue *string
	ToValue   *string
	ByUserID  *string
}

// Budget is a row of budgets.
type Budget struct {
	BudgetID    string
	ProjectID   *string
	BrandID     *string
	Amount      *string // numeric
	Currency    *string
	PeriodStart *time.Time // date
	PeriodEnd   *time.Time // date
	UpdatedAt   *time.Time
	Raw         json.RawMessage
}

// Invoice is a row of invoices.
type Invoice struct {
	InvoiceID string
	Number    *string
	ProjectID *string
	BrandID   *string
	IssueDate *time.Time // date
	DueDate   *time.Time // date
	Amount    *string    // numeric
	Currency  *string
	Status    *string
	UpdatedAt *time.Time
	Raw       json.RawMessage
}

// Collection is a row of collections.
type Collection struct {
	CollectionID string
	InvoiceID    *string
	CollectedOn  *time.Time // date
	Amount       *string    // numeric
	Currency     *string
	UpdatedAt    *time.Time
	Raw          json.RawMessage
}

// Payment is a row of payments.
type Payment struct {
	PaymentID string
	ProjectID *string
	BrandID   *string
	Payee     *string
	PaidOn    *time.Time // date
	Amount    *string    // numeric
	Currency  *string
	Status    *string
	UpdatedAt *time.Time
	Raw       json.RawMessage
}

// Profitability is a row of profitability.
type Profitability struct {
	Level    string // LevelProject or LevelBrand
	EntityID string
	Period   time.Time // first day of the month
	Revenue  *string   // numeric
	Cost     *string   // numeric
	Margin   *string   // numeric
	Currency *string
	Raw      json.RawMessage
}

// Profitability levels.
const (
	LevelProject = "project"
	LevelBrand   = "brand"
)

// AgencyFinanceSummary is a row of agency_finance_summary.
type AgencyFinanceSummary struct {
	Period      time.Time // first day of the month
	TotalBudget *string   // numeric
	Invoiced    *string   // numeric
	Collected   *string   // numeric
	Paid        *string   // numeric
	Profit      *string   // numeric
	Currency    *string
	Raw         json.RawMessage
}

// Email is a row of emails.
type Email struct {
	RecordID       int64
	TypeID         *int64
	TypeName       *string
	BrandID        *string
	ProjectID      *string
	Subject        string
	Message        *string
	HasAttachments bool
	SizeBytes      *int64
	MailboxID      *string
	MailboxThread  *string
	EmailAt        time.Time
	Raw            json.RawMessage
}

// User is a row of users: one person seen in communications. Nil attributes
// are unknown; the loader keeps the stored value for them.
type User struct {
	UserKey        string
	PlatformUserID *int64
	FirstName      *string
	LastName       *string
	FullName       *string
	Email          *string
	Phone          *string
	AvatarURL      *string
	Status         *string
}

// EmailRecipient is a row of email_recipients.
type EmailRecipient struct {
	RecordID int64
	Role     string // RoleFrom, RoleTo, RoleCC or RoleBCC
	UserKey  string
}

// Participant roles of email_recipients.role.
const (
	RoleFrom = "from"
	RoleTo   = "to"
	RoleCC   = "cc"
	RoleBCC  = "bcc"
)
