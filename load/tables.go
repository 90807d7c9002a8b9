package load

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/agencysync/agencysync/transform"
)

// column is one column of a warehouse table as the write path sees it.
type column struct {
	name string
	typ  string // SQL type, for staging tables, casts and key arrays
	// sticky: a NULL in the batch keeps the stored value instead of erasing it.
	sticky bool
	// fallback names a column of the same row whose value fills this one when
	// the batch has NULL and nothing is stored (a sticky NOT NULL column).
	fallback string
}

// spec describes one warehouse table to the generic write path.
type spec struct {
	name string
	key  []column
	cols []column // data columns, after the key in every encoded row
	// softDelete: the table has _deleted_at, set by MarkDeleted and cleared
	// when a row comes back.
	softDelete bool
	// parent names the leading key column of a child table whose rows a batch
	// replaces per parent: stored children of the batch's parents that the
	// batch does not hold are deleted. Empty for other tables.
	parent string
	// recurring: the table's rows usually exist already (a dimension seen on
	// page after page), so the fast-path probe is skipped and rows always
	// go through the merge.
	recurring bool
	// stream is the Reject.Stream of the table's records (soft-delete tables).
	stream string
	// rows encodes the table's rows of a batch: key values, then cols values;
	// nil stands for NULL.
	rows func(b *transform.Batch) ([][]any, error)
	// parents returns the parent keys whose children b replaces (child tables).
	parents func(b *transform.Batch) []any
	// rejectKey parses a Reject.Key of stream into key values (soft-delete
	// tables), so that a rejected record is not taken for a deleted one.
	rejectKey func(key string) ([]any, bool)
}

func (s *spec) columns() []column {
	out := make([]column, 0, len(s.key)+len(s.cols))
	return append(append(out, s.key...), s.cols...)
}

func (s *spec) columnNames() []string {
	cols := s.columns()
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

func col(name, typ string) column    { return column{name: name, typ: typ} }
func sticky(name, typ string) column { return column{name: name, typ: typ, sticky: true} }

// rawOrDetail is the raw column of a table that also keeps the detail
// record: the list record as received, kept when a detail load leaves it
// NULL, and the detail's when the entity was never listed.
func rawOrDetail() column {
	return column{name: "raw", typ: "jsonb", sticky: true, fallback: "detail_raw"}
}

// Value encoders: nil pointers become untyped nil (NULL).

func str(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func i64(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func tim(p *time.Time) any {
	if p == nil {
		return nil
	}
	return *p
}

func jsn(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return r
}

// numerics converts exact decimal text to pgtype.Numeric; the first error wins.
type numerics struct{ err error }

func (n *numerics) of(p *string) any {
	if p == nil {
		return nil
	}
	var v pgtype.Numeric
	if err := v.ScanScientific(*p); err != nil {
		if n.err == nil {
			n.err = fmt.Errorf("decimal %q: %w", *p, err)
		}
		return nil
	}
	return v
}

// encode builds the rows of one table from a slice of transform rows.
func encode[R any](rows []R, f func(r *R, n *numerics) []any) ([][]any, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([][]any, len(rows))
	var n numerics
	for i := range rows {
		out[i] = f(&rows[i], &n)
	}
	return out, n.err
}

func textKey(key string) ([]any, bool) { return []any{key}, key != "" && !isHashKey(key) }

func isHashKey(key string) bool { return strings.HasPrefix(key, transform.HashKeyPrefix) }

// monthKey parses the "YYYY-MM" of a rejected record's key.
func monthKey(s string) (time.Time, bool) {
	t, err := time.Parse("2006-01", s)
	return t, err == nil
}

// specs lists every table of the model in write order.
var specs = []*spec{
	{
		name: "brands",
		key:  []column{col("brand_id", "text")},
		cols: []column{col("name", "text"), col("status", "text"), col("date_created", "date"),
			col("account_manager", "text"), col("projects_count", "bigint"), col("total_budget", "numeric"),
			col("invoiced", "numeric"), col("collected", "numeric"), col("currency", "text"),
			sticky("general_info", "jsonb"), sticky("metadata", "jsonb"), rawOrDetail(), sticky("detail_raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamBrands,
		rejectKey:  textKey,
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Brands, func(r *transform.Brand, n *numerics) []any {
				return []any{r.BrandID, str(r.Name), str(r.Status), tim(r.DateCreated), str(r.AccountManager),
					i64(r.ProjectsCount), n.of(r.TotalBudget), n.of(r.Invoiced), n.of(r.Collected), str(r.Currency),
					jsn(r.GeneralInfo), jsn(r.Metadata), jsn(r.Raw), jsn(r.DetailRaw)}
			})
		},
	},
	{
		name: "brand_financial_snapshots",
		key:  []column{col("brand_id", "text"), col("snapshot_date", "date")},
		cols: []column{col("total_budget", "numeric"), col("invoiced", "numeric"), col("collected", "numeric"),
			col("currency", "text")},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.BrandFinancialSnapshots, func(r *transform.BrandFinancialSnapshot, n *numerics) []any {
				return []any{r.BrandID, r.SnapshotDate, n.of(r.TotalBudget), n.of(r.Invoiced), n.of(r.Collected),
					str(r.Currency)}
			})
		},
	},
	{
		name: "brand_contacts",
		key:  []column{col("brand_id", "text"), col("contact_id", "text")},
		cols: []column{col("first_name", "text"), col("last_name", "text"), col("full_name", "text"),
			col("email", "text"), col("phone", "text"), col("position", "text"), col("is_primary", "boolean"),
			col("raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamBrandContacts,
		rejectKey: func(key string) ([]any, bool) {
			brand, contact, ok := strings.Cut(key, "/")
			return []any{brand, contact}, ok && brand != "" && contact != ""
		},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.BrandContacts, func(r *transform.BrandContact, _ *numerics) []any {
				return []any{r.BrandID, r.ContactID, str(r.FirstName), str(r.LastName), str(r.FullName),
					str(r.Email), str(r.Phone), str(r.Position), r.IsPrimary, jsn(r.Raw)}
			})
		},
	},
	{
		name: "projects",
		key:  []column{col("project_id", "text")},
		cols: []column{col("brand_id", "text"), col("name", "text"), col("status", "text"),
			col("start_date", "date"), col("deadline", "date"), col("closed_at", "timestamptz"),
			col("updated_at", "timestamptz"), col("budget_amount", "numeric"), col("budget_currency", "text"),
			rawOrDetail(), sticky("detail_raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamProjects,
		rejectKey:  textKey,
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Projects, func(r *transform.Project, n *numerics) []any {
				return []any{r.ProjectID, str(r.BrandID), str(r.Name), str(r.Status), tim(r.StartDate),
					tim(r.Deadline), tim(r.ClosedAt), tim(r.UpdatedAt), n.of(r.BudgetAmount), str(r.BudgetCurrency),
					jsn(r.Raw), jsn(r.DetailRaw)}
			})
		},
	},
	{
		name: "project_team_members",
		key:  []column{col("project_id", "text"), col("user_id", "text")},
		cols: []column{col("platform_user_id", "bigint"), col("full_name", "text"), col("role", "text")},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.ProjectTeamMembers, func(r *transform.ProjectTeamMember, _ *numerics) []any {
				return []any{r.ProjectID, r.UserID, i64(r.PlatformUserID), str(r.FullName), str(r.Role)}
			})
		},
		parent:  "project_id",
		parents: projectDetails,
	},
	{
		name: "project_deliverables",
		key:  []column{col("project_id", "text"), col("deliverable_id", "text")},
		cols: []column{col("name", "text"), col("due_date", "date"), col("status", "text"),
			col("delivered_at", "timestamptz")},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.ProjectDeliverables, func(r *transform.ProjectDeliverable, _ *numerics) []any {
				return []any{r.ProjectID, r.DeliverableID, str(r.Name), tim(r.DueDate), str(r.Status),
					tim(r.DeliveredAt)}
			})
		},
		parent:  "project_id",
		parents: projectDetails,
	},
	{
		name: "project_history",
		key: []column{col("project_id", "text"), col("at", "timestamptz"), col("field", "text"),
			col("seq", "integer")},
		cols: []column{col("from_value", "text"), col("to_value", "text"), col("by_user_id", "text")},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.ProjectHistory, func(r *transform.ProjectHistoryEntry, _ *numerics) []any {
				return []any{r.ProjectID, r.At, r.Field, r.Seq, str(r.FromValue), str(r.ToValue), str(r.ByUserID)}
			})
		},
	},
	{
		name: "budgets",
		key:  []column{col("budget_id", "text")},
		cols: []column{col("project_id", "text"), col("brand_id", "text"), col("amount", "numeric"),
			col("currency", "text"), col("period_start", "date"), col("period_end", "date"),
			col("updated_at", "timestamptz"), col("raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamBudgets,
		rejectKey:  textKey,
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Budgets, func(r *transform.Budget, n *numerics) []any {
				return []any{r.BudgetID, str(r.ProjectID), str(r.BrandID), n.of(r.Amount), str(r.Currency),
					tim(r.PeriodStart), tim(r.PeriodEnd), tim(r.UpdatedAt), jsn(r.Raw)}
			})
		},
	},
	{
		name: "invoices",
		key:  []column{col("invoice_id", "text")},
		cols: []column{col("number", "text"), col("project_id", "text"), col("brand_id", "text"),
			col("issue_date", "date"), col("due_date", "date"), col("amount", "numeric"), col("currency", "text"),
			col("status", "text"), col("updated_at", "timestamptz"), col("raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamInvoices,
		rejectKey:  textKey,
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Invoices, func(r *transform.Invoice, n *numerics) []any {
				return []any{r.InvoiceID, str(r.Number), str(r.ProjectID), str(r.BrandID), tim(r.IssueDate),
					tim(r.DueDate), n.of(r.Amount), str(r.Currency), str(r.Status), tim(r.UpdatedAt), jsn(r.Raw)}
			})
		},
	},
	{
		name: "collections",
		key:  []column{col("collection_id", "text")},
		cols: []column{col("invoice_id", "text"), col("collected_on", "date"), col("amount", "numeric"),
			col("currency", "text"), col("updated_at", "timestamptz"), col("raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamCollections,
		rejectKey:  textKey,
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Collections, func(r *transform.Collection, n *numerics) []any {
				return []any{r.CollectionID, str(r.InvoiceID), tim(r.CollectedOn), n.of(r.Amount), str(r.Currency),
					tim(r.UpdatedAt), jsn(r.Raw)}
			})
		},
	},
	{
		name: "payments",
		key:  []column{col("payment_id", "text")},
		cols: []column{col("project_id", "text"), col("brand_id", "text"), col("payee", "text"),
			col("paid_on", "date"), col("amount", "numeric"), col("currency", "text"), col("status", "text"),
			col("updated_at", "timestamptz"), col("raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamPayments,
		rejectKey:  textKey,
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Payments, func(r *transform.Payment, n *numerics) []any {
				return []any{r.PaymentID, str(r.ProjectID), str(r.BrandID), str(r.Payee), tim(r.PaidOn),
					n.of(r.Amount), str(r.Currency), str(r.Status), tim(r.UpdatedAt), jsn(r.Raw)}
			})
		},
	},
	{
		name: "profitability",
		key:  []column{col("level", "text"), col("entity_id", "text"), col("period", "date")},
		cols: []column{col("revenue", "numeric"), col("cost", "numeric"), col("margin", "numeric"),
			col("currency", "text"), col("raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamProfitability,
		rejectKey: func(key string) ([]any, bool) { // level/entity_id/YYYY-MM
			level, rest, ok1 := strings.Cut(key, "/")
			i := strings.LastIndexByte(rest, '/')
			if !ok1 || i <= 0 {
				return nil, false
			}
			month, ok2 := monthKey(rest[i+1:])
			return []any{level, rest[:i], month}, ok2
		},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Profitability, func(r *transform.Profitability, n *numerics) []any {
				return []any{r.Level, r.EntityID, r.Period, n.of(r.Revenue), n.of(r.Cost), n.of(r.Margin),
					str(r.Currency), jsn(r.Raw)}
			})
		},
	},
	{
		name: "agency_finance_summary",
		key:  []column{col("period", "date")},
		cols: []column{col("total_budget", "numeric"), col("invoiced", "numeric"), col("collected", "numeric"),
			col("paid", "numeric"), col("profit", "numeric"), col("currency", "text"), col("raw", "jsonb")},
		softDelete: true,
		stream:     transform.StreamAgencySummary,
		rejectKey: func(key string) ([]any, bool) {
			month, ok := monthKey(key)
			return []any{month}, ok
		},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.AgencyFinanceSummary, func(r *transform.AgencyFinanceSummary, n *numerics) []any {
				return []any{r.Period, n.of(r.TotalBudget), n.of(r.Invoiced), n.of(r.Collected), n.of(r.Paid),
					n.of(r.Profit), str(r.Currency), jsn(r.Raw)}
			})
		},
	},
	{
		name:      "users",
		recurring: true,
		key:       []column{col("user_key", "text")},
		cols: []column{sticky("platform_user_id", "bigint"), sticky("first_name", "text"),
			sticky("last_name", "text"), sticky("full_name", "text"), sticky("email", "text"),
			sticky("phone", "text"), sticky("avatar_url", "text"), sticky("status", "text")},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Users, func(r *transform.User, _ *numerics) []any {
				return []any{r.UserKey, i64(r.PlatformUserID), str(r.FirstName), str(r.LastName), str(r.FullName),
					str(r.Email), str(r.Phone), str(r.AvatarURL), str(r.Status)}
			})
		},
	},
	{
		name: "emails",
		key:  []column{col("record_id", "bigint")},
		// Reconciliation soft-deletes e-mails a re-fetched day no longer
		// holds (see reconcile.go); one that comes back is live again.
		softDelete: true,
		cols: []column{col("type_id", "bigint"), col("type_name", "text"), col("brand_id", "text"),
			col("project_id", "text"), col("subject", "text"), col("message", "text"),
			col("has_attachments", "boolean"), col("size_bytes", "bigint"), col("mailbox_id", "text"),
			col("mailbox_thread", "text"), col("email_at", "timestamptz"), col("raw", "jsonb")},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.Emails, func(r *transform.Email, _ *numerics) []any {
				return []any{r.RecordID, i64(r.TypeID), str(r.TypeName), str(r.BrandID), str(r.ProjectID),
					r.Subject, str(r.Message), r.HasAttachments, i64(r.SizeBytes), str(r.MailboxID),
					str(r.MailboxThread), r.EmailAt, jsn(r.Raw)}
			})
		},
	},
	{
		name: "email_recipients",
		key:  []column{col("record_id", "bigint"), col("role", "text"), col("user_key", "text")},
		rows: func(b *transform.Batch) ([][]any, error) {
			return encode(b.EmailRecipients, func(r *transform.EmailRecipient, _ *numerics) []any {
				return []any{r.RecordID, r.Role, r.UserKey}
			})
		},
		parent: "record_id",
		parents: func(b *transform.Batch) []any {
			out := make([]any, len(b.Emails))
			for i := range b.Emails {
				out[i] = b.Emails[i].RecordID
			}
			return out
		},
	},
}

func projectDetails(b *transform.Batch) []any {
	out := make([]any, len(b.ProjectDetails))
	for i, id := range b.ProjectDetails {
		out[i] = id
	}
	return out
}

// typedArray turns values of one column (none NULL) into a slice pgx encodes
// as an array of typ.
func typedArray(typ string, vals []any) (any, error) {
	switch typ {
	case "text":
		return convertAll[string](vals)
	case "bigint":
		return convertAll[int64](vals)
	case "integer":
		return convertAll[int32](vals)
	case "date", "timestamptz":
		return convertAll[time.Time](vals)
	default:
		return nil, fmt.Errorf("no key arrays of type %s", typ)
	}
}

func convertAll[T any](vals []any) ([]T, error) {
	out := make([]T, len(vals))
	for i, v := range vals {
		t, ok := v.(T)
		if !ok {
			return nil, fmt.Errorf("key value %v is a %T, not a %T", v, v, t)
		}
		out[i] = t
	}
	return out, nil
}
