package oracle

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Columns lists, for every table the oracle fills, the columns of its rows
// in order (the key first). Bookkeeping columns (_synced_at, _deleted_at)
// are not the oracle's business; nor is the raw of brands and projects,
// which the warehouse takes from either of two records.
var Columns = map[string][]string{
	"brands": {"brand_id", "name", "status", "date_created", "account_manager", "projects_count", "total_budget",
		"invoiced", "collected", "currency", "general_info", "metadata"},
	"brand_financial_snapshots": {"brand_id", "snapshot_date", "total_budget", "invoiced", "collected", "currency"},
	"brand_contacts": {"brand_id", "contact_id", "first_name", "last_name", "full_name", "email", "phone", "position",
		"is_primary", "raw"},
	"projects": {"project_id", "brand_id", "name", "status", "start_date", "deadline", "closed_at", "updated_at",
		"budget_amount", "budget_currency"},
	"project_team_members": {"project_id", "user_id", "platform_user_id", "full_name", "role"},
	"project_deliverables": {"project_id", "deliverable_id", "name", "due_date", "status", "delivered_at"},
	"project_history":      {"project_id", "at", "field", "seq", "from_value", "to_value", "by_user_id"},
	"budgets": {"budget_id", "project_id", "brand_id", "amount", "currency", "period_start", "period_end",
		"updated_at", "raw"},
	"invoices": {"invoice_id", "number", "project_id", "brand_id", "issue_date", "due_date", "amount", "currency",
		"status", "updated_at", "raw"},
	"collections": {"collection_id", "invoice_id", "collected_on", "amount", "currency", "updated_at", "raw"},
	"payments": {"payment_id", "project_id", "brand_id", "payee", "paid_on", "amount", "currency", "status",
		"updated_at", "raw"},
	"profitability":          {"level", "entity_id", "period", "revenue", "cost", "margin", "currency", "raw"},
	"agency_finance_summary": {"period", "total_budget", "invoiced", "collected", "paid", "profit", "currency", "raw"},
	"emails": {"record_id", "type_id", "type_name", "brand_id", "project_id", "subject", "message",
		"has_attachments", "size_bytes", "mailbox_id", "mailbox_thread", "email_at", "raw"},
	"users": {"user_key", "platform_user_id", "first_name", "last_name", "full_name", "email", "phone",
		"avatar_url", "status"},
	"email_recipients": {"record_id", "role", "user_key"},
	"rejected_records": {"stream", "record_key", "payload"},
}

// rejectStreams names, in rejected_records.stream, the truth's streams that
// can hold bad records.
var rejectStreams = map[string]string{
	"budgets": "finance.budgets", "invoices": "finance.invoices", "collections": "finance.collections",
	"payments": "finance.payments", "communications": "communications",
}

// Rows maps a table to its rows, each laid out as Columns says.
type Rows map[string][][]any

func (r Rows) add(table string, row ...any) { r[table] = append(r[table], row) }

// Expected builds the rows every table of Columns should hold after a
// complete sync of the truth, day being the snapshot day of
// brand_financial_snapshots. Records the truth marks bad are
// rejected_records rows (stream, key, the record); a record it does not
// mark bad but that cannot be read is an error wrapping ErrMalformedTruth.
func Expected(t Truth, day time.Time) (Rows, error) {
	r := Rows{}
	for _, step := range []struct {
		stream string
		fn     func(r Rows, l Line, o object) error
	}{
		{"contacts", contactRows},
		{"projects", projectRows},
		{"budgets", financeRows("budgets")},
		{"invoices", financeRows("invoices")},
		{"collections", financeRows("collections")},
		{"payments", financeRows("payments")},
		{"profitability", profitabilityRows},
		{"summary", summaryRows},
	} {
		for _, l := range t[step.stream] {
			if err := eachRecord(r, l, step.fn); err != nil {
				return nil, err
			}
		}
	}
	if err := brandRows(r, t, day); err != nil {
		return nil, err
	}
	c := NewComms()
	for _, l := range t["communications"] {
		if err := c.Add(l); err != nil {
			return nil, err
		}
	}
	r["emails"], r["email_recipients"], r["users"] = c.Emails, c.Recipients, c.Users()
	r["rejected_records"] = append(r["rejected_records"], c.Rejects...)
	return r, nil
}

// eachRecord adds the rows of one line: a reject when it is bad, fn's rows
// otherwise.
func eachRecord(r Rows, l Line, fn func(r Rows, l Line, o object) error) error {
	if l.Bad {
		stream, ok := rejectStreams[l.Stream]
		if !ok {
			return fmt.Errorf("truth %s %s: marked bad, but the stream has no rejects: %w", l.Stream, l.Key, ErrMalformedTruth)
		}
		r.add("rejected_records", stream, l.Key, rawJSON(l.Record))
		return nil
	}
	o, err := objectOf(l.Record)
	if err == nil {
		err = fn(r, l, o)
	}
	if err != nil {
		return fmt.Errorf("truth %s %s: %v: %w", l.Stream, l.Key, err, ErrMalformedTruth)
	}
	return nil
}

// brandRows adds brands (the list's fields, general_info and metadata from
// the detail) and, for a brand with a financial summary, its snapshot of day.
func brandRows(r Rows, t Truth, day time.Time) error {
	details := map[string]object{}
	for _, l := range t["brand_details"] {
		o, err := objectOf(l.Record)
		if err != nil {
			return fmt.Errorf("truth brand detail %s: %v: %w", l.Key, err, ErrMalformedTruth)
		}
		details[l.Key] = o
	}
	y, m, d := day.Date()
	snapDay := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return eachLine(t["brands"], func(l Line) error {
		return eachRecord(r, l, func(r Rows, l Line, rec object) error {
			o, err := rec.child("brand_info")
			if err != nil || o == nil {
				o = rec // a brand not wrapped in brand_info
			}
			var f fields
			id, err := o.mustID("id")
			if err != nil {
				return err
			}
			fs, err := o.part("financial_summary")
			if err != nil {
				return err
			}
			budget, invoiced, collected := f.v(fs.decimal("total_budget")), f.v(fs.decimal("invoiced")), f.v(fs.decimal("collected"))
			currency := f.v(fs.text("currency"))
			var info, meta any
			if det, ok := details[l.Key]; ok {
				info, meta = det.json("general_info"), det.json("metadata")
			}
			r.add("brands", id, f.v(o.text("name")), f.v(o.text("status")), f.v(o.date("date_created")),
				f.v(o.trimmed("account_manager")), f.v(o.integer("projects_count")), budget, invoiced, collected, currency,
				info, meta)
			if !rec.isNull("brand_info") && !o.isNull("financial_summary") {
				r.add("brand_financial_snapshots", id, snapDay, budget, invoiced, collected, currency)
			}
			return f.err
		})
	})
}

func eachLine(lines []Line, fn func(Line) error) error {
	for _, l := range lines {
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

func contactRows(r Rows, l Line, o object) error {
	var f fields
	id, err := o.mustID("id")
	if err != nil {
		return err
	}
	if l.BrandID == "" {
		return fmt.Errorf("contact without brand_id")
	}
	primary, err := o.flag("is_primary")
	if err != nil {
		return err
	}
	r.add("brand_contacts", l.BrandID, id, f.v(o.trimmed("first_name")), f.v(o.trimmed("last_name")),
		f.v(o.trimmed("full_name")), f.v(o.trimmed("email")), f.v(o.trimmed("phone")), f.v(o.trimmed("position")),
		primary, rawJSON(l.Record))
	return f.err
}

// projectRows adds a project (the truth holds its detail) with its team,
// deliverables and history; history entries of one instant and field are
// numbered 1, 2, … in the order given.
func projectRows(r Rows, l Line, o object) error {
	var f fields
	id, err := o.mustID("id")
	if err != nil {
		return err
	}
	budget, err := o.part("budget")
	if err != nil {
		return err
	}
	r.add("projects", id, f.v(o.id("brand_id")), f.v(o.text("name")), f.v(o.text("status")), f.v(o.date("start_date")),
		f.v(o.date("deadline")), f.v(o.instant("closed_at")), f.v(o.instant("updated_at")),
		f.v(budget.decimal("amount")), f.v(budget.text("currency")))
	members, err := o.list("team")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, m := range members {
		uid, err := m.mustID("user_id")
		if err != nil {
			return fmt.Errorf("team: %w", err)
		}
		if seen[uid] {
			return fmt.Errorf("team: user %s listed twice", uid)
		}
		seen[uid] = true
		var platform any
		if n, err := strconv.ParseInt(uid, 10, 64); err == nil {
			platform = n
		}
		r.add("project_team_members", id, uid, platform, f.v(m.trimmed("full_name")), f.v(m.trimmed("role")))
	}
	deliverables, err := o.list("deliverables")
	if err != nil {
		return err
	}
	for _, d := range deliverables {
		did, err := d.mustID("id")
		if err != nil {
			return fmt.Errorf("deliverables: %w", err)
		}
		r.add("project_deliverables", id, did, f.v(d.text("name")), f.v(d.date("due_date")), f.v(d.text("status")),
			f.v(d.instant("delivered_at")))
	}
	history, err := o.list("history")
	if err != nil {
		return err
	}
	seq := map[string]int32{}
	for _, h := range history {
		at, err := h.instant("at")
		if err != nil || at == nil {
			return fmt.Errorf("history entry without a valid at: %v", err)
		}
		field, err := h.str("field")
		if err != nil || field == nil || *field == "" {
			return fmt.Errorf("history entry without field: %v", err)
		}
		k := at.(time.Time).Format(time.RFC3339Nano) + "\x00" + *field
		seq[k]++
		r.add("project_history", id, at, *field, seq[k], f.v(h.kept("from")), f.v(h.kept("to")), f.v(h.id("by_user_id")))
	}
	return f.err
}

// list is the member k as an array of objects; nil when absent or null.
func (o object) list(k string) ([]object, error) {
	out, ok, err := member[[]object](o, k, "an array of objects")
	if !ok {
		return nil, err
	}
	return out, nil
}

// financeRows reads a finance record (budgets, invoices, collections,
// payments) into table, column by column as Columns lists them: the id and
// the amount every finance record must have, the record itself as raw, and
// each other column from the member of its name as financeColumn reads it.
func financeRows(table string) func(r Rows, l Line, o object) error {
	return func(r Rows, l Line, o object) error {
		var f fields
		id, amount, err := financeKey(o)
		if err != nil {
			return err
		}
		row := []any{id}
		for _, c := range Columns[table][1:] {
			switch c {
			case "amount":
				row = append(row, amount)
			case "raw":
				row = append(row, rawJSON(l.Record))
			default:
				row = append(row, f.v(financeColumn(o, c)))
			}
		}
		r.add(table, row...)
		return f.err
	}
}

// financeColumn reads the member c of a finance record by the kind of its
// column: references as ids, dates, updated_at as an instant, the payee
// trimmed, other text (number, currency, status) with "" as NULL.
func financeColumn(o object, c string) (any, error) {
	switch c {
	case "project_id", "brand_id", "invoice_id":
		return o.id(c)
	case "period_start", "period_end", "issue_date", "due_date", "collected_on", "paid_on":
		return o.date(c)
	case "updated_at":
		return o.instant(c)
	case "payee":
		return o.trimmed(c)
	}
	return o.text(c)
}

// financeKey reads what every finance record must have: its id and amount.
func financeKey(o object) (string, any, error) {
	id, err := o.mustID("id")
	if err != nil {
		return "", nil, err
	}
	amount, err := o.decimal("amount")
	if err == nil && amount == nil {
		err = fmt.Errorf("amount is missing")
	}
	return id, amount, err
}

func profitabilityRows(r Rows, l Line, o object) error {
	var f fields
	level, err := o.str("level")
	if err != nil || level == nil || (*level != "project" && *level != "brand") {
		return fmt.Errorf("level is neither project nor brand (%v)", err)
	}
	entity, err := o.mustID("entity_id")
	if err != nil {
		return err
	}
	period, err := month(o)
	if err != nil {
		return err
	}
	r.add("profitability", *level, entity, period, f.v(o.decimal("revenue")), f.v(o.decimal("cost")),
		f.v(o.decimal("margin")), f.v(o.text("currency")), rawJSON(l.Record))
	return f.err
}

func summaryRows(r Rows, l Line, o object) error {
	var f fields
	period, err := month(o)
	if err != nil {
		return err
	}
	r.add("agency_finance_summary", period, f.v(o.decimal("total_budget")), f.v(o.decimal("invoiced")),
		f.v(o.decimal("collected")), f.v(o.decimal("paid")), f.v(o.decimal("profit")), f.v(o.text("currency")),
		rawJSON(l.Record))
	return f.err
}

// month reads the period, "YYYY-MM", as its first day.
func month(o object) (time.Time, error) {
	s, err := o.str("period")
	if err != nil || s == nil {
		return time.Time{}, fmt.Errorf("period is missing (%v)", err)
	}
	t, err := time.Parse("2006-01", strings.TrimSpace(*s))
	if err != nil {
		return time.Time{}, fmt.Errorf("period %q is not YYYY-MM", *s)
	}
	return t, nil
}
