package stream

// Endpoint names of the finance stream (as extract.Endpoint*).
const (
	EndpointBudgets       = "budgets"
	EndpointInvoices      = "invoices"
	EndpointCollections   = "collections"
	EndpointPayments      = "payments"
	EndpointProfitability = "profitability"
	EndpointAgencySummary = "agency_summary"
)

// Reject streams of the finance stream's records.
const (
	RejectBudgets       = "finance.budgets"
	RejectInvoices      = "finance.invoices"
	RejectCollections   = "finance.collections"
	RejectPayments      = "finance.payments"
	RejectProfitability = "finance.profitability"
	RejectAgencySummary = "finance.summary"
)

// Profitability levels: the request's level parameter and the rows' level.
const (
	LevelProject = "project"
	LevelBrand   = "brand"
)

// finance: six lists. Budgets, invoices, collections and payments are read
// incrementally (updated_since = the watermark's day minus one) and
// completely at least once a day; profitability (per level) and the agency
// summary are read whole.
var finance = &Stream{
	Name: "finance",
	Endpoints: []Endpoint{
		{Name: EndpointBudgets, Path: "/v1/finance/budgets", Paging: PagingList, Incremental: true},
		{Name: EndpointInvoices, Path: "/v1/finance/invoices", Paging: PagingList, Incremental: true},
		{Name: EndpointCollections, Path: "/v1/finance/collections", Paging: PagingList, Incremental: true},
		{Name: EndpointPayments, Path: "/v1/finance/payments", Paging: PagingList, Incremental: true},
		{Name: EndpointProfitability, Path: "/v1/finance/profitability", Paging: PagingList},
		{Name: EndpointAgencySummary, Path: "/v1/finance/summary", Paging: PagingList},
	},
	Cursor: "per list (budgets, invoices, collections, payments, profitability.project, " +
		"profitability.brand, summary): the last completed page, the watermark (the greatest " +
		"updated_at seen) and when the list was last read completely",
	Estimate: "per list, one request per page of its stored rows (its last total when known)",
	tables: []*Table{
		{
			Name: "budgets", Noun: "budget", Wrapper: "budget_info", Endpoints: []string{EndpointBudgets},
			Reject: RejectBudgets, SoftDelete: true,
			Columns: []Column{
				{Name: "budget_id", Field: "id", Alternates: []string{"budget_id"}, Type: ID, Key: true},
				{Name: "project_id", Field: "project_id", Type: ID},
				{Name: "brand_id", Field: "brand_id", Type: ID},
				{Name: "amount", Field: "amount", Type: Numeric, Required: true},
				{Name: "currency", Field: "currency", Type: Text},
				{Name: "period_start", Field: "period_start", Type: Date},
				{Name: "period_end", Field: "period_end", Type: Date},
				{Name: "updated_at", Field: "updated_at", Type: Timestamptz},
				{Name: "raw", Derived: DerivedRecord, Type: JSONB},
			},
		},
		{
			Name: "invoices", Noun: "invoice", Wrapper: "invoice_info", Endpoints: []string{EndpointInvoices},
			Reject: RejectInvoices, SoftDelete: true,
			Columns: []Column{
				{Name: "invoice_id", Field: "id", Alternates: []string{"invoice_id"}, Type: ID, Key: true},
				{Name: "number", Field: "number", Type: Text},
				{Name: "project_id", Field: "project_id", Type: ID},
				{Name: "brand_id", Field: "brand_id", Type: ID},
				{Name: "issue_date", Field: "issue_date", Type: Date},
				{Name: "due_date", Field: "due_date", Type: Date},
				{Name: "amount", Field: "amount", Type: Numeric, Required: true},
				{Name: "currency", Field: "currency", Type: Text},
				{Name: "status", Field: "status", Type: Text},
				{Name: "updated_at", Field: "updated_at", Type: Timestamptz},
				{Name: "raw", Derived: DerivedRecord, Type: JSONB},
			},
		},
		{
			Name: "collections", Noun: "collection", Wrapper: "collection_info", Endpoints: []string{EndpointCollections},
			Reject: RejectCollections, SoftDelete: true,
			Columns: []Column{
				{Name: "collection_id", Field: "id", Alternates: []string{"collection_id"}, Type: ID, Key: true},
				{Name: "invoice_id", Field: "invoice_id", Type: ID},
				{Name: "collected_on", Field: "collected_on", Type: Date},
				{Name: "amount", Field: "amount", Type: Numeric, Required: true},
				{Name: "currency", Field: "currency", Type: Text},
				{Name: "updated_at", Field: "updated_at", Type: Timestamptz},
				{Name: "raw", Derived: DerivedRecord, Type: JSONB},
			},
		},
		{
			Name: "payments", Noun: "payment", Wrapper: "payment_info", Endpoints: []string{EndpointPayments},
			Reject: RejectPayments, SoftDelete: true,
			Columns: []Column{
				{Name: "payment_id", Field: "id", Alternates: []string{"payment_id"}, Type: ID, Key: true},
				{Name: "project_id", Field: "project_id", Type: ID},
				{Name: "brand_id", Field: "brand_id", Type: ID},
				{Name: "payee", Field: "payee", Type: Text, Trim: true},
				{Name: "paid_on", Field: "paid_on", Type: Date},
				{Name: "amount", Field: "amount", Type: Numeric, Required: true},
				{Name: "currency", Field: "currency", Type: Text},
				{Name: "status", Field: "status", Type: Text},
				{Name: "updated_at", Field: "updated_at", Type: Timestamptz},
				{Name: "raw", Derived: DerivedRecord, Type: JSONB},
			},
		},
		{
			// One list per level; a row that does not name its level gets
			// the one asked for.
			Name: "profitability", Noun: "profitability", Wrapper: "profitability_info",
			Endpoints: []string{EndpointProfitability},
			Reject:    RejectProfitability, SoftDelete: true,
			Columns: []Column{
				{Name: "level", Field: "level", Param: "level", Type: Text, Key: true, OneOf: []string{LevelProject, LevelBrand}},
				{Name: "entity_id", Field: "entity_id", Type: ID, Key: true},
				{Name: "period", Field: "period", Type: Month, Key: true},
				{Name: "revenue", Field: "revenue", Type: Numeric},
				{Name: "cost", Field: "cost", Type: Numeric},
				{Name: "margin", Field: "margin", Type: Numeric},
				{Name: "currency", Field: "currency", Type: Text},
				{Name: "raw", Derived: DerivedRecord, Type: JSONB},
			},
		},
		{
			Name: "agency_finance_summary", Noun: "summary", Wrapper: "summary_info",
			Endpoints: []string{EndpointAgencySummary},
			Reject:    RejectAgencySummary, SoftDelete: true,
			Columns: []Column{
				{Name: "period", Field: "period", Type: Month, Key: true},
				{Name: "total_budget", Field: "total_budget", Type: Numeric},
				{Name: "invoiced", Field: "invoiced", Type: Numeric},
				{Name: "collected", Field: "collected", Type: Numeric},
				{Name: "paid", Field: "paid", Type: Numeric},
				{Name: "profit", Field: "profit", Type: Numeric},
				{Name: "currency", Field: "currency", Type: Text},
				{Name: "raw", Derived: DerivedRecord, Type: JSONB},
			},
		},
	},
}
