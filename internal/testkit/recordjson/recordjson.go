// Package recordjson renders the typed records of package fixture as the service's
// canonical JSON and turns them into transform batches, for tests that
// build pages from typed fixtures: the generic transform reads only a
// record's raw JSON, so a fixture must be one.
package recordjson

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

type obj map[string]any

func (o obj) str(k, v string) {
	if v != "" {
		o[k] = v
	}
}

func (o obj) ptr(k string, v *string) {
	if v != nil {
		o[k] = *v
	}
}

func (o obj) date(k string, t *time.Time) {
	if t != nil {
		o[k] = t.Format("2006-01-02")
	}
}

func (o obj) instant(k string, t *time.Time) {
	if t != nil {
		o[k] = t.Format(time.RFC3339Nano)
	}
}

// dec writes a decimal as a JSON number, or as a string when it is not one
// (a fixture of a bad amount).
func (o obj) dec(k string, d fixture.Decimal) {
	switch {
	case d == "":
	case json.Valid([]byte(d)) && d[0] != '"':
		o[k] = json.Number(d)
	default:
		o[k] = string(d)
	}
}

func (o obj) i64(k string, v *int64) {
	if v != nil {
		o[k] = *v
	}
}

func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of plain values always marshal
	}
	return b
}

func brandObj(b fixture.Brand) obj {
	o := obj{}
	o.str("id", string(b.ID))
	o.str("name", b.Name)
	o.str("status", b.Status)
	o.date("date_created", b.DateCreated)
	o.str("account_manager", b.AccountManager)
	o.i64("projects_count", b.ProjectsCount)
	if fs := b.FinancialSummary; fs != nil {
		f := obj{}
		f.dec("total_budget", fs.TotalBudget)
		f.dec("invoiced", fs.Invoiced)
		f.dec("collected", fs.Collected)
		f.str("currency", fs.Currency)
		o["financial_summary"] = f
	}
	return o
}

// Brand renders a brand of the list: {"brand_info": {...}}.
func Brand(b fixture.Brand) json.RawMessage { return marshal(obj{"brand_info": brandObj(b)}) }

// BrandDetail renders a brand detail: brand_info, general_info, metadata.
func BrandDetail(d fixture.BrandDetail) json.RawMessage {
	o := obj{"brand_info": brandObj(d.Brand)}
	if d.GeneralInfo != nil {
		o["general_info"] = d.GeneralInfo
	}
	if d.Metadata != nil {
		o["metadata"] = d.Metadata
	}
	return marshal(o)
}

// Contact renders a contact person.
func Contact(c fixture.Contact) json.RawMessage {
	o := obj{"is_primary": c.IsPrimary}
	o.str("id", string(c.ID))
	o.str("first_name", c.FirstName)
	o.ptr("last_name", c.LastName)
	o.str("full_name", c.FullName)
	o.ptr("email", c.Email)
	o.ptr("phone", c.Phone)
	o.ptr("position", c.Position)
	return marshal(o)
}

// Project renders a project; its team, deliverables and history when set.
func Project(p fixture.Project) json.RawMessage {
	o := obj{}
	o.str("id", string(p.ID))
	o.str("brand_id", string(p.BrandID))
	o.str("name", p.Name)
	o.str("status", p.Status)
	o.date("start_date", p.StartDate)
	o.date("deadline", p.Deadline)
	o.instant("closed_at", p.ClosedAt)
	o.instant("updated_at", p.UpdatedAt)
	if p.Budget != nil {
		m := obj{}
		m.dec("amount", p.Budget.Amount)
		m.str("currency", p.Budget.Currency)
		o["budget"] = m
	}
	if p.Team != nil {
		team := make([]obj, len(p.Team))
		for i, m := range p.Team {
			team[i] = obj{}
			team[i].str("user_id", string(m.UserID))
			team[i].str("full_name", m.FullName)
			team[i].str("role", m.Role)
		}
		o["team"] = team
	}
	if p.Deliverables != nil {
		ds := make([]obj, len(p.Deliverables))
		for i, d := range p.Deliverables {
			ds[i] = obj{}
			ds[i].str("id", string(d.ID))
			ds[i].str("name", d.Name)
			ds[i].date("due_date", d.DueDate)
			ds[i].str("status", d.Status)
			ds[i].instant("delivered_at", d.DeliveredAt)
		}
		o["deliverables"] = ds
	}
	if p.History != nil {
		hs := make([]obj, len(p.History))
		for i, h := range p.History {
			hs[i] = obj{}
			if !h.At.IsZero() {
				hs[i].instant("at", &h.At)
			}
			hs[i].str("field", h.Field)
			hs[i].ptr("from", h.From)
			hs[i].ptr("to", h.To)
			hs[i].str("by_user_id", string(h.ByUserID))
		}
		o["history"] = hs
	}
	return marshal(o)
}

// Budget renders a budget.
func Budget(r fixture.Budget) json.RawMessage {
	o := obj{}
	o.str("id", string(r.ID))
	o.str("project_id", string(r.ProjectID))
	o.str("brand_id", string(r.BrandID))
	o.dec("amount", r.Amount)
	o.str("currency", r.Currency)
	o.date("period_start", r.PeriodStart)
	o.date("period_end", r.PeriodEnd)
	o.instant("updated_at", r.UpdatedAt)
	return marshal(o)
}

// Invoice renders an invoice.
func Invoice(r fixture.Invoice) json.RawMessage {
	o := obj{}
	o.str("id", string(r.ID))
	o.str("number", r.Number)
	o.str("project_id", string(r.ProjectID))
	o.str("brand_id", string(r.BrandID))
	o.date("issue_date", r.IssueDate)
	o.date("due_date", r.DueDate)
	o.dec("amount", r.Amount)
	o.str("currency", r.Currency)
	o.str("status", r.Status)
	o.instant("updated_at", r.UpdatedAt)
	return marshal(o)
}

// Collection renders a collection.
func Collection(r fixture.Collection) json.RawMessage {
	o := obj{}
	o.str("id", string(r.ID))
	o.str("invoice_id", string(r.InvoiceID))
	o.date("collected_on", r.CollectedOn)
	o.dec("amount", r.Amount)
	o.str("currency", r.Currency)
	o.instant("updated_at", r.UpdatedAt)
	return marshal(o)
}

// Payment renders a payment.
func Payment(r fixture.Payment) json.RawMessage {
	o := obj{}
	o.str("id", string(r.ID))
	o.str("project_id", string(r.ProjectID))
	o.str("brand_id", string(r.BrandID))
	o.str("payee", r.Payee)
	o.date("paid_on", r.PaidOn)
	o.dec("amount", r.Amount)
	o.str("currency", r.Currency)
	o.str("status", r.Status)
	o.instant("updated_at", r.UpdatedAt)
	return marshal(o)
}

// Profitability renders a profitability row.
func Profitability(r fixture.Profitability) json.RawMessage {
	o := obj{}
	o.str("level", r.Level)
	o.str("entity_id", string(r.EntityID))
	o.str("period", r.Period)
	o.dec("revenue", r.Revenue)
	o.dec("cost", r.Cost)
	o.dec("margin", r.Margin)
	o.str("currency", r.Currency)
	return marshal(o)
}

// AgencySummary renders a month of the agency summary.
func AgencySummary(r fixture.AgencySummary) json.RawMessage {
	o := obj{}
	o.str("period", r.Period)
	o.dec("total_budget", r.TotalBudget)
	o.dec("invoiced", r.Invoiced)
	o.dec("collected", r.Collected)
	o.dec("paid", r.Paid)
	o.dec("profit", r.Profit)
	o.str("currency", r.Currency)
	return marshal(o)
}

func participant(p fixture.Participant) obj {
	o := obj{}
	o.str("first_name", p.FirstName)
	if p.LastName != nil {
		o["last_name"] = *p.LastName
	} else {
		o["last_name"] = nil
	}
	o.str("full_name", p.FullName)
	o.str("email", p.Email)
	o.ptr("phone", p.Phone)
	o.str("avatar", p.Avatar)
	o.str("status", p.Status)
	return o
}

// participants renders a recipient list as the spec does: [] when empty, an
// object keyed by platform user id when one has an id (others keyed by
// their address), an array otherwise.
func participants(list []fixture.Participant) any {
	keyed := false
	for _, p := range list {
		keyed = keyed || p.PlatformUserID != nil
	}
	if !keyed {
		out := make([]obj, len(list))
		for i, p := range list {
			out[i] = participant(p)
		}
		return out
	}
	out := obj{}
	for _, p := range list {
		k := p.Email
		if p.PlatformUserID != nil {
			k = strconv.FormatInt(*p.PlatformUserID, 10)
		}
		out[k] = participant(p)
	}
	return out
}

// Communication renders a communication record (without its id: rows are
// keyed by it; see Communications).
func Communication(c fixture.Communication) json.RawMessage {
	e := c.Email
	o := obj{"has_attachments": 0}
	if e.HasAttachments {
		o["has_attachments"] = 1
	}
	o.i64("type_id", e.TypeID)
	o.ptr("type_name", e.TypeName)
	o.str("brand_id", string(e.BrandID))
	o.str("project_id", string(e.ProjectID))
	o.ptr("subject", e.Subject)
	o.ptr("message", e.Message)
	o.i64("size", e.Size)
	o.str("mailbox_id", e.MailboxID)
	o.str("mailbox_thread", e.MailboxThread)
	if !e.EmailAt.IsZero() {
		o.instant("email_at", &e.EmailAt)
	}
	users := obj{"from": participants(c.Users.From), "to": participants(c.Users.To),
		"cc": participants(c.Users.CC), "bcc": participants(c.Users.BCC)}
	return marshal(obj{"email": o, "users": users})
}

func records[T any](list []T, key func(T) string, raw func(T) json.RawMessage) []stream.Record {
	out := make([]stream.Record, len(list))
	for i, r := range list {
		out[i] = stream.Record{Key: key(r), Raw: raw(r)}
	}
	return out
}

func declared(name string) *stream.Stream {
	s, ok := stream.Lookup(name)
	if !ok {
		panic("no stream " + name)
	}
	return s
}

func noKey[T any](T) string { return "" }

// Brands is the batch of a brands list page.
func Brands(list []fixture.Brand, snapshot time.Time) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("brands"), Endpoint: stream.EndpointBrands, Snapshot: snapshot},
		records(list, noKey, Brand))
}

// BrandDetails is the batch of brand details.
func BrandDetails(list []fixture.BrandDetail, snapshot time.Time) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("brands"), Endpoint: stream.EndpointBrand, Snapshot: snapshot},
		records(list, noKey, BrandDetail))
}

// Contacts is the batch of a page of brandID's contacts.
func Contacts(brandID extract.ID, list []fixture.Contact) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("brands"), Endpoint: stream.EndpointBrandContacts,
		Params: map[string]string{"brand_id": string(brandID)}}, records(list, noKey, Contact))
}

// Projects is the batch of a projects list page.
func Projects(list []fixture.Project) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("projects"), Endpoint: stream.EndpointProjects},
		records(list, noKey, Project))
}

// ProjectDetails is the batch of project details.
func ProjectDetails(list []fixture.Project) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("projects"), Endpoint: stream.EndpointProject},
		records(list, noKey, Project))
}

func financeBatch(endpoint string, recs []stream.Record, params map[string]string) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("finance"), Endpoint: endpoint, Params: params}, recs)
}

// Budgets is the batch of a budgets page.
func Budgets(list []fixture.Budget) transform.Batch {
	return financeBatch(stream.EndpointBudgets, records(list, noKey, Budget), nil)
}

// Invoices is the batch of an invoices page.
func Invoices(list []fixture.Invoice) transform.Batch {
	return financeBatch(stream.EndpointInvoices, records(list, noKey, Invoice), nil)
}

// Collections is the batch of a collections page.
func Collections(list []fixture.Collection) transform.Batch {
	return financeBatch(stream.EndpointCollections, records(list, noKey, Collection), nil)
}

// Payments is the batch of a payments page.
func Payments(list []fixture.Payment) transform.Batch {
	return financeBatch(stream.EndpointPayments, records(list, noKey, Payment), nil)
}

// Profitabilities is the batch of profitability rows (each names its level).
func Profitabilities(list []fixture.Profitability) transform.Batch {
	return financeBatch(stream.EndpointProfitability, records(list, noKey, Profitability), nil)
}

// AgencySummaries is the batch of agency summary months.
func AgencySummaries(list []fixture.AgencySummary) transform.Batch {
	return financeBatch(stream.EndpointAgencySummary, records(list, noKey, AgencySummary), nil)
}

// Communications is the batch of a communications page, rows keyed by
// record id.
func Communications(list []fixture.Communication) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("communications"), Endpoint: stream.EndpointCommunications},
		records(list, func(c fixture.Communication) string { return strconv.FormatInt(c.RecordID, 10) }, Communication))
}
