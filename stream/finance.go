package stream

// Endpoint names of the finance stream.
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

// finance: six lists, seven listings. Budgets, invoices, collections and
// payments are read incrementally (updated_since = the watermark's day
// minus one) and completely at least every SYNC_FINANCE_FULL_EVERY;
// profitability (once per level) and the agency summary are read whole.
var finance = &Stream{
	Name: "finance",
	Endpoints: []Endpoint{
		{Name: EndpointBudgets, Path: "/v1/finance/budgets", Paging: PagingList, Pagination: listPaging, Incremental: true},
		{Name: EndpointInvoices, Path: "/v1/finance/invoices", Paging: PagingList, Pagination: listPaging, Incremental: true},
		{Name: EndpointCollections, Path: "/v1/finance/collections", Paging: PagingList, Pagination: listPaging, Incremental: true},
		{Name: EndpointPayments, Path: "/v1/finance/payments", Paging: PagingList, Pagination: listPaging, Incremental: true},
		{Name: EndpointProfitability, Path: "/v1/finance/profitability", Paging: PagingList, Pagination: listPaging},
		{Name: EndpointAgencySummary, Path: "/v1/finance/summary", Paging: PagingList, Pagination: listPaging, Inventory: "summary"},
	},
	Lists: []List{
		{Partition: "budgets", Endpoint: EndpointBudgets, Incremental: true},
		{Partition: "invoices", Endpoint: EndpointInvoices, Incremental: true},
		{Partition: "collections", Endpoint: EndpointCollections, Incremental: true},
		{Partition: "payments", Endpoint: EndpointPayments, Incremental: true},
		{Partition: "profitability.project", Endpoint: EndpointProfitability, Params: map[string]string{"level": LevelProject}},
		{Partition: "profitability.brand", Endpoint: EndpointProfitability, Params: map[string]string{"level": LevelBrand}},
		{Partition: "summary", Endpoint: EndpointAgencySummary},
	},
	Main: "invoices",
	tables: []*Table{
		{
			Name: "budgets", Noun: "budget", Wrapper: "budget_info", Endpoints: []string{EndpointBudgets},
			Reject: RejectBudgets, SoftDelete: true,
			Columns: []Column{
				recordID("budget_id"),
				field("project_id", ID),
				field("brand_id", ID),
				{Name: "amount", Field: "amount", Type: Numeric, Required: true},
				field("currency", Text),
				field("period_start", Date),
				field("period_end", Date),
				field("updated_at", Timestamptz),
				rawColumn(),
			},
		},
		{
			Name: "invoices", Noun: "invoice", Wrapper: "invoice_info", Endpoints: []string{EndpointInvoices},
			Reject: RejectInvoices, SoftDelete: true,
			Columns: []Column{
				recordID("invoice_id"),
				field("number", Text),
				field("project_id", ID),
				field("brand_id", ID),
				field("issue_date", Date),
				field("due_date", Date),
				{Name: "amount", Field: "amount", Type: Numeric, Required: true},
				field("currency", Text),
				field("status", Text),
				field("updated_at", Timestamptz),
				rawColumn(),
			},
		},
		{
			Name: "collections", Noun: "collection", Wrapper: "collection_info", Endpoints: []string{EndpointCollections},
			Reject: RejectCollections, SoftDelete: true,
			Columns: []Column{
				recordID("collection_id"),
				field("invoice_id", ID),
				field("collected_on", Date),
				{Name: "amount", Field: "amount", Type: Numeric, Required: true},
				field("currency", Text),
				field("updated_at", Timestamptz),
				rawColumn(),
			},
		},
		{
			Name: "payments", Noun: "payment", Wrapper: "payment_info", Endpoints: []string{EndpointPayments},
			Reject: RejectPayments, SoftDelete: true,
			Columns: []Column{
				recordID("payment_id"),
				field("project_id", ID),
				field("brand_id", ID),
				{Name: "payee", Field: "payee", Type: Text, Trim: true},
				field("paid_on", Date),
				{Name: "amount", Field: "amount", Type: Numeric, Required: true},
				field("currency", Text),
				field("status", Text),
				field("updated_at", Timestamptz),
				rawColumn(),
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
				field("revenue", Numeric),
				field("cost", Numeric),
				field("margin", Numeric),
				field("currency", Text),
				rawColumn(),
			},
		},
		{
			Name: "agency_finance_summary", Noun: "summary", Wrapper: "summary_info",
			Endpoints: []string{EndpointAgencySummary},
			Reject:    RejectAgencySummary, SoftDelete: true,
			Columns: []Column{
				{Name: "period", Field: "period", Type: Month, Key: true},
				field("total_budget", Numeric),
				field("invoiced", Numeric),
				field("collected", Numeric),
				field("paid", Numeric),
				field("profit", Numeric),
				field("currency", Text),
				rawColumn(),
			},
		},
	},
}
