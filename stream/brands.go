package stream

// Endpoint names of the brands stream.
const (
	EndpointBrands        = "brands"
	EndpointBrand         = "brand"
	EndpointBrandContacts = "brand_contacts"
)

// Reject streams of the brands stream's records.
const (
	RejectBrands        = "brands"
	RejectBrandDetails  = "brands.details"
	RejectBrandContacts = "brands.contacts"
)

// brandsOnly limits a column to records of the brands list.
var brandsOnly = []string{EndpointBrands}

// brandOnly limits a column to brand details.
var brandOnly = []string{EndpointBrand}

// brands: the list, and each brand's detail and contact persons when the
// brand is due (its list entry changed, or its staggered refresh). The detail's brand_info carries the list's fields; its
// general_info and metadata objects land in their own columns.
var brands = &Stream{
	Name: "brands",
	Endpoints: []Endpoint{
		{Name: EndpointBrands, Path: "/v1/brands", Paging: PagingList, Pagination: listPaging},
		{Name: EndpointBrand, Path: "/v1/brands/{id}", Paging: PagingDetail, Inventory: "brand_details"},
		{Name: EndpointBrandContacts, Path: "/v1/brands/{id}/contacts", Paging: PagingList, Pagination: listPaging,
			Parent: EndpointBrands, Inventory: "contacts"},
	},
	Lists: []List{{Partition: "list", Endpoint: EndpointBrands}},
	Main:  "brands",
	tables: []*Table{
		{
			Name: "brands", Noun: "brand", Wrapper: "brand_info",
			Endpoints: []string{EndpointBrands, EndpointBrand},
			Reject:    RejectBrands, DetailReject: RejectBrandDetails, SoftDelete: true,
			// The aggregates the service recomputes from finance
			// (projects_count, financial_summary) do not make a detail due.
			DetailFields: []string{"name", "status", "date_created", "account_manager"},
			Columns: []Column{
				recordID("brand_id"),
				field("name", Text),
				field("status", Text),
				field("date_created", Date),
				{Name: "account_manager", Field: "account_manager", Type: Text, Trim: true},
				{Name: "projects_count", Field: "projects_count", Type: BigInt, NonNegative: true},
				{Name: "total_budget", Field: "financial_summary.total_budget", Type: Numeric},
				{Name: "invoiced", Field: "financial_summary.invoiced", Type: Numeric},
				{Name: "collected", Field: "financial_summary.collected", Type: Numeric},
				{Name: "currency", Field: "financial_summary.currency", Type: Text},
				{Name: "general_info", Field: "general_info", Type: JSONB, Object: true, Endpoints: brandOnly, Sticky: true},
				{Name: "metadata", Field: "metadata", Type: JSONB, Object: true, Endpoints: brandOnly, Sticky: true},
				// raw keeps the list's record; a brand never listed gets the detail's.
				{Name: "raw", Derived: DerivedRecord, Type: JSONB, Endpoints: brandsOnly, Sticky: true, Fallback: "detail_raw"},
				{Name: "detail_raw", Derived: DerivedRecord, Type: JSONB, Endpoints: brandOnly, Sticky: true},
			},
		},
		{
			// The brand's financial summary as seen on the day of the sync.
			Name: "brand_financial_snapshots", Noun: "snapshot", Parent: "brands", When: "financial_summary",
			Endpoints: []string{EndpointBrands, EndpointBrand},
			Columns: []Column{
				{Name: "brand_id", Derived: DerivedParent, Type: ID, Key: true},
				{Name: "snapshot_date", Derived: DerivedSnapshotDay, Type: Date, Key: true},
				{Name: "total_budget", Derived: DerivedRow, Type: Numeric},
				{Name: "invoiced", Derived: DerivedRow, Type: Numeric},
				{Name: "collected", Derived: DerivedRow, Type: Numeric},
				{Name: "currency", Derived: DerivedRow, Type: Text},
			},
		},
		{
			// A brand's contacts come from their own endpoint; the brand's id
			// is the request's.
			Name: "brand_contacts", Noun: "contact", Wrapper: "contact_info",
			Endpoints: []string{EndpointBrandContacts},
			Reject:    RejectBrandContacts, SoftDelete: true,
			Columns: []Column{
				{Name: "brand_id", Param: "brand_id", Derived: DerivedParam, Type: ID, Key: true},
				recordID("contact_id"),
				{Name: "first_name", Field: "first_name", Type: Text, Trim: true},
				{Name: "last_name", Field: "last_name", Type: Text, Trim: true},
				{Name: "full_name", Field: "full_name", Type: Text, Trim: true},
				{Name: "email", Field: "email", Type: Text, Trim: true, Indexed: true},
				{Name: "phone", Field: "phone", Type: Text, Trim: true, Sparse: true},
				{Name: "position", Field: "position", Type: Text, Trim: true},
				field("is_primary", Boolean),
				rawColumn(),
			},
		},
	},
}
