package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agencysync/agencysync/extract"
)

// financeRecord is what financeList reads of every finance record (budget,
// invoice, collection, payment): its id, amount, currency, update time and
// raw bytes, and refs, the references it carries as name/value pairs for
// keyLengths.
type financeRecord struct {
	id        extract.ID
	amount    extract.Decimal
	currency  string
	updatedAt *time.Time
	raw       json.RawMessage
	refs      []string
}

// financeFields is a financeRecord checked and converted for its row.
type financeFields struct {
	id        string
	amount    *string
	currency  *string
	updatedAt *time.Time
	raw       json.RawMessage
}

// financeList turns a list of finance records into rows keyed by id: common
// gives the record's financeRecord, row builds the row from the record and
// its converted financeFields. A record without id, with an over-long id or
// reference, or without a valid amount becomes a Reject of stream.
func financeList[T any, R any](stream string, list []T, common func(T) financeRecord,
	row func(T, financeFields) R) ([]R, []Reject) {
	var d dedup[string, R]
	var rejects []Reject
	for _, rec := range list {
		c := common(rec)
		f, err := c.fields()
		if err != nil {
			rejects = append(rejects, NewReject(stream, string(c.id), c.raw, err))
			continue
		}
		d.put(f.id, row(rec, f))
	}
	return d.rows, rejects
}

// fields checks c's id and references and converts its fields.
func (c financeRecord) fields() (financeFields, error) {
	if c.id == "" {
		return financeFields{}, errors.New("record without id")
	}
	if err := keyLengths(append([]string{"id", string(c.id)}, c.refs...)...); err != nil {
		return financeFields{}, err
	}
	amount, err := required("amount", c.amount)
	if err != nil {
		return financeFields{}, err
	}
	return financeFields{
		id:        cleanText(string(c.id)),
		amount:    amount,
		currency:  optText(c.currency),
		updatedAt: optInstant(c.updatedAt),
		raw:       recordJSON(c.raw),
	}, nil
}

// required is decimal for a field the record cannot do without: a finance
// record without its amount says nothing and is rejected, not stored with a
// NULL amount that sums would silently skip.
func required(field string, d extract.Decimal) (*string, error) {
	if d == "" {
		return nil, fmt.Errorf("%s is missing", field)
	}
	return decimal(field, d)
}

// projectBrand is the refs of a record that belongs to a project and a brand.
func projectBrand(project, brand extract.ID) []string {
	return []string{"project_id", string(project), "brand_id", string(brand)}
}

// Budgets turns budget records into budgets rows.
func Budgets(list []extract.Budget) Batch {
	rows, rejects := financeList(StreamBudgets, list,
		func(r extract.Budget) financeRecord {
			return financeRecord{r.ID, r.Amount, r.Currency, r.UpdatedAt, r.Raw, projectBrand(r.ProjectID, r.BrandID)}
		},
		func(r extract.Budget, f financeFields) Budget {
			return Budget{
				BudgetID:    f.id,
				ProjectID:   optID(r.ProjectID),
				BrandID:     optID(r.BrandID),
				Amount:      f.amount,
				Currency:    f.currency,
				PeriodStart: optDate(r.PeriodStart),
				PeriodEnd:   optDate(r.PeriodEnd),
				UpdatedAt:   f.updatedAt,
				Raw:         f.raw,
			}
		})
	return Batch{Budgets: rows, Rejects: rejects}
}

// Invoices turns invoice records into invoices rows.
func Invoices(list []extract.Invoice) Batch {
	rows, rejects := financeList(StreamInvoices, list,
		func(r extract.Invoice) financeRecord {
			return financeRecord{r.ID, r.Amount, r.Currency, r.UpdatedAt, r.Raw, projectBrand(r.ProjectID, r.BrandID)}
		},
		func(r extract.Invoice, f financeFields) Invoice {
			return Invoice{
				InvoiceID: f.id,
				Number:    optText(r.Number),
				ProjectID: optID(r.ProjectID),
				BrandID:   optID(r.BrandID),
				IssueDate: optDate(r.IssueDate),
				DueDate:   optDate(r.DueDate),
				Amount:    f.amount,
				Currency:  f.currency,
				Status:    optText(r.Status),
				UpdatedAt: f.updatedAt,
				Raw:       f.raw,
			}
		})
	return Batch{Invoices: rows, Rejects: rejects}
}

// Collections turns collection records into collections rows.
func Collections(list []extract.Collection) Batch {
	rows, rejects := financeList(StreamCollections, list,
		func(r extract.Collection) financeRecord {
			return financeRecord{r.ID, r.Amount, r.Currency, r.UpdatedAt, r.Raw, []string{"invoice_id", string(r.InvoiceID)}}
		},
		func(r extract.Collection, f financeFields) Collection {
			return Collection{
				CollectionID: f.id,
				InvoiceID:    optID(r.InvoiceID),
				CollectedOn:  optDate(r.CollectedOn),
				Amount:       f.amount,
				Currency:     f.currency,
				UpdatedAt:    f.updatedAt,
				Raw:          f.raw,
			}
		})
	return Batch{Collections: rows, Rejects: rejects}
}

// Payments turns payment records into payments rows.
func Payments(list []extract.Payment) Batch {
	rows, rejects := financeList(StreamPayments, list,
		func(r extract.Payment) financeRecord {
			return financeRecord{r.ID, r.Amount, r.Currency, r.UpdatedAt, r.Raw, projectBrand(r.ProjectID, r.BrandID)}
		},
		func(r extract.Payment, f financeFields) Payment {
			return Payment{
				PaymentID: f.id,
				ProjectID: optID(r.ProjectID),
				BrandID:   optID(r.BrandID),
				Payee:     optTrim(r.Payee),
				PaidOn:    optDate(r.PaidOn),
				Amount:    f.amount,
				Currency:  f.currency,
				Status:    optText(r.Status),
				UpdatedAt: f.updatedAt,
				Raw:       f.raw,
			}
		})
	return Batch{Payments: rows, Rejects: rejects}
}

// Profitabilities turns profitability records (of either level) into
// profitability rows. The key of a rejected record is "level/entity_id/period".
func Profitabilities(list []extract.Profitability) Batch {
	type key struct{ level, entity, period string }
	var d dedup[key, Profitability]
	var out Batch
	for _, r := range list {
		row, err := profitabilityRow(r)
		if err != nil {
			k := ""
			if r.EntityID != "" && r.Period != "" {
				k = r.Level + "/" + string(r.EntityID) + "/" + r.Period
			}
			out.Rejects = append(out.Rejects, NewReject(StreamProfitability, k, r.Raw, err))
			continue
		}
		d.put(key{row.Level, row.EntityID, row.Period.Format("2006-01")}, row)
	}
	out.Profitability = d.rows
	return out
}

func profitabilityRow(r extract.Profitability) (Profitability, error) {
	if r.Level != LevelProject && r.Level != LevelBrand {
		return Profitability{}, fmt.Errorf("level %q is neither %q nor %q", r.Level, LevelProject, LevelBrand)
	}
	if r.EntityID == "" {
		return Profitability{}, errors.New("profitability without entity_id")
	}
	if err := keyLengths("entity_id", string(r.EntityID)); err != nil {
		return Profitability{}, err
	}
	p, err := period(r.Period)
	if err != nil {
		return Profitability{}, err
	}
	var ds decimals
	row := Profitability{
		Level:    r.Level,
		EntityID: cleanText(string(r.EntityID)),
		Period:   p,
		Revenue:  ds.conv("revenue", r.Revenue),
		Cost:     ds.conv("cost", r.Cost),
		Margin:   ds.conv("margin", r.Margin),
		Currency: optText(r.Currency),
		Raw:      recordJSON(r.Raw),
	}
	return row, ds.err
}

// AgencySummaries turns agency-wide monthly aggregates into
// agency_finance_summary rows.
func AgencySummaries(list []extract.AgencySummary) Batch {
	var d dedup[time.Time, AgencyFinanceSummary]
	var out Batch
	for _, r := range list {
		p, err := period(r.Period)
		if err != nil {
			out.Rejects = append(out.Rejects, NewReject(StreamAgencySummary, r.Period, r.Raw, err))
			continue
		}
		var ds decimals
		row := AgencyFinanceSummary{
			Period:      p,
			TotalBudget: ds.conv("total_budget", r.TotalBudget),
			Invoiced:    ds.conv("invoiced", r.Invoiced),
			Collected:   ds.conv("collected", r.Collected),
			Paid:        ds.conv("paid", r.Paid),
			Profit:      ds.conv("profit", r.Profit),
			Currency:    optText(r.Currency),
			Raw:         recordJSON(r.Raw),
		}
		if ds.err != nil {
			out.Rejects = append(out.Rejects, NewReject(StreamAgencySummary, r.Period, r.Raw, ds.err))
			continue
		}
		d.put(p, row)
	}
	out.AgencyFinanceSummary = d.rows
	return out
}
