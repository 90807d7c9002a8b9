package extract

import (
	"encoding/json"
	"time"
)

// This file holds typed records in the canonical shapes of
// shared/design/api-assumptions.md. The client no longer yields them (it
// returns each record's JSON as received, Record); they remain as the
// fixtures tests build pages from (internal/testkit/recordjson renders them
// as the service's JSON). Conventions shared by all records:
//
//   - An absent or null optional value is a nil pointer, an empty ID or an empty
//     Decimal.
//   - Calendar dates ("YYYY-MM-DD") are time.Time at UTC midnight; instants are
//     time.Time in UTC with their microseconds.
//   - Raw is the record exactly as received (for the warehouse's raw jsonb column).

// ID is a source identifier normalised to text: the JSON string "42" and the JSON
// number 42 decode to the same ID("42"). The empty ID means absent (null).
type ID string

// Decimal is an exact decimal amount kept as its canonical text, for example
// "1250.50" or "-3". It is decoded from a JSON number or a numeric JSON string
// without passing through float64. The empty Decimal means absent (null).
type Decimal string

// Money is an amount with its currency code.
type Money struct {
	Amount   Decimal
	Currency string
}

// FinancialSummary is a brand's financial_summary object.
type FinancialSummary struct {
	TotalBudget Decimal
	Invoiced    Decimal
	Collected   Decimal
	Currency    string
}

// Brand is one element of the brands list (the object under brand_info).
type Brand struct {
	ID               ID
	Name             string
	Status           string
	DateCreated      *time.Time
	AccountManager   string
	ProjectsCount    *int64
	FinancialSummary *FinancialSummary
	Raw              json.RawMessage
}

// BrandDetail is the answer of GET /v1/brands/{id}: the brand plus the general
// information and metadata objects, kept as received because their fields are
// not shown by the spec.
type BrandDetail struct {
	Brand       Brand
	GeneralInfo json.RawMessage
	Metadata    json.RawMessage
	Raw         json.RawMessage
}

// Contact is a brand's contact person (GET /v1/brands/{id}/contacts).
type Contact struct {
	ID        ID
	FirstName string
	LastName  *string
	FullName  string
	Email     *string
	Phone     *string
	Position  *string
	IsPrimary bool
	Raw       json.RawMessage
}

// Project is a project from the list or the detail endpoint. The list may omit
// Team, Deliverables and History; the detail carries them.
type Project struct {
	ID           ID
	BrandID      ID
	Name         string
	Status       string
	StartDate    *time.Time
	Deadline     *time.Time
	ClosedAt     *time.Time
	UpdatedAt    *time.Time
	Budget       *Money
	Team         []TeamMember
	Deliverables []Deliverable
	History      []HistoryEntry
	Raw          json.RawMessage
}

// TeamMember is one person assigned to a project.
type TeamMember struct {
	UserID   ID
	FullName string
	Role     string
}

// Deliverable is one deliverable of a project.
type Deliverable struct {
	ID          ID
	Name        string
	DueDate     *time.Time
	Status      string
	DeliveredAt *time.Time
}

// HistoryEntry is one change of a project's field. From and To are the JSON
// scalars rendered as text (nil for null).
type HistoryEntry struct {
	At       time.Time
	Field    string
	From     *string
	To       *string
	ByUserID ID
}

// Budget is a finance budget record.
type Budget struct {
	ID          ID
	ProjectID   ID
	BrandID     ID
	Amount      Decimal
	Currency    string
	PeriodStart *time.Time
	PeriodEnd   *time.Time
	UpdatedAt   *time.Time
	Raw         json.RawMessage
}

// Invoice is a finance invoice record.
type Invoice struct {
	ID        ID
	Number    string
	ProjectID ID
	BrandID   ID
	IssueDate *time.Time
	DueDate   *time.Time
	Amount    Decimal
	Currency  string
	Status    string
	UpdatedAt *time.Time
	Raw       json.RawMessage
}

// Collection is money collected against an invoice.
type Collection struct {
	ID          ID
	InvoiceID   ID
	CollectedOn *time.Time
	Amount      Decimal
	Currency    string
	UpdatedAt   *time.Time
	Raw         json.RawMessage
}

// Payment is money the agency paid out.
type Payment struct {
	ID        ID
	ProjectID ID
	BrandID   ID
	Payee     string
	PaidOn    *time.Time
	Amount    Decimal
	Currency  string
	Status    string
	UpdatedAt *time.Time
	Raw       json.RawMessage
}

// Profitability is revenue, cost and margin of one project or brand in one month.
type Profitability struct {
	Level    string // "project" or "brand"
	EntityID ID
	Period   string // YYYY-MM
	Revenue  Decimal
	Cost     Decimal
	Margin   Decimal
	Currency string
	Raw      json.RawMessage
}

// AgencySummary is the agency-wide aggregate of one month.
type AgencySummary struct {
	Period      string // YYYY-MM
	TotalBudget Decimal
	Invoiced    Decimal
	Collected   Decimal
	Paid        Decimal
	Profit      Decimal
	Currency    string
	Raw         json.RawMessage
}

// Communication is one record of the communications endpoint: an e-mail and its
// participants, keyed by RecordID.
type Communication struct {
	RecordID int64
	Email    EmailFields
	Users    Participants
	Raw      json.RawMessage
}

// EmailFields is the "email" object of a communication record.
type EmailFields struct {
	TypeID         *int64
	TypeName       *string
	BrandID        ID
	ProjectID      ID
	Subject        *string // nil when missing (the transform rejects such a record)
	Message        *string
	HasAttachments bool // 1 or true → true; null, 0, false or absent → false
	Size           *int64
	MailboxID      string
	MailboxThread  string
	EmailAt        time.Time
}

// Participants is the "users" object of a communication record, in the order
// received (keyed objects in key order).
type Participants struct {
	From []Participant
	To   []Participant
	CC   []Participant
	BCC  []Participant
}

// Participant is one user object. PlatformUserID is known when the user was keyed
// by a platform user id (to/cc/bcc objects) and nil otherwise (from lists, arrays).
type Participant struct {
	PlatformUserID *int64
	FirstName      string
	LastName       *string
	FullName       string // as received, trailing space included
	Email          string
	Phone          *string // as received: "" is kept here, the transform stores NULL
	Avatar         string
	Status         string
}
