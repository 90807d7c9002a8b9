package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agencysync/agencysync/extract"
)

// financeList applies conv to each record of a list keyed by id; a record
// without id, with an over-long id or reference (refs: name/value pairs), or
// that conv refuses becomes a Reject of stream.
func financeList[T any, R any](stream string, list []T, id func(T) extract.ID, raw func(T) json.RawMessage,
	refs func(T) []string, conv func(T) (R, error)) ([]R, []Reject) {
	var d dedup[string, R]
	var rejects []Reject
	for _, rec := range list {
		if id(rec) == "" {
			rejects = append(rejects, NewReject(stream, "", raw(rec), errors.New("record without id")))
			continue
		}
		err := keyLengths(append([]string{"id", string(id(rec))}, refs(rec)...)...)
		var row R
		if err == nil {
			row, err = conv(rec)
		}
		if err != nil {
			rejects = append(rejects, NewReject(stream, string(id(rec)), raw(rec), err))
			continue
		}
		d.put(cleanText(string(id(rec))), row)
	}
	return d.rows, rejects
}

// required is conv for a field the record cannot do without: a finance
// record without its amount says nothing and is rejected, not stored with a
// NULL amount that sums would silently skip.
func (ds *decimals) required(field string, d extract.Decimal) *string {
	if d == "" {
		if ds.err == nil {
			ds.err = fmt.Errorf("%s is missing", field)
		}
		return nil
	}
	return ds.conv(field, d)
}

// Budgets turns budget records into budgets rows.
func Budgets(list []extract.Budget) Batch {
	rows, rejects := financeList(StreamBudgets, list,
		func(r extract.Budget) extract.ID { return r.ID },
		func(r extract.Budget) json.RawMessage { return r.Raw },
		func(r extract.Budget) []string {
			return []string{"project_id", string(r.ProjectID), "brand_id", string(r.BrandID)}
		},
		func(r extract.Budget) (Budget, error) {
			var ds decimals
			row := Budget{
				BudgetID:    cleanText(string(r.ID)),
				ProjectID:   optID(r.ProjectID),
				BrandID:     optID(r.BrandID),
				Amount:      ds.required("amount", r.Amount),
				Currency:    optText(r.Currency),
				PeriodStart: optDate(r.PeriodStart),
				PeriodEnd:   optDate(r.PeriodEnd),
				UpdatedAt:   optInstant(r.UpdatedAt),
				Raw:         CleanJSON(r.Raw),
			}
			return row, ds.err
		})
	return Batch{Budgets: rows, Rejects: rejects}
}

// Invoices turns invoice records into invoices rows.
func Invoices(list []extract.Invoice) Batch {
	rows, rejects := financeList(StreamInvoices, list,
		func(r extract.Invoice) extract.ID { return r.ID },
		func(r extract.Invoice) json.RawMessage { return r.Raw },
		func(r extract.Invoice) []string {
			return []string{"project_id", string(r.ProjectID), "brand_id", string(r.BrandID)}
		},
		func(r extract.Invoice) (Invoice, error) {
			var ds decimals
			row := Invoice{
				InvoiceID: cleanText(string(r.ID)),
				Number:    optText(r.Number),
				ProjectID: optID(r.ProjectID),
				BrandID:   optID(r.BrandID),
				IssueDate: optDate(r.IssueDate),
				DueDate:   optDate(r.DueDate),
				Amount:    ds.required("amount", r.Amount),
				Currency:  optText(r.Currency),
				Status:    optText(r.Status),
				UpdatedAt: optInstant(r.UpdatedAt),
				Raw:       CleanJSON(r.Raw),
			}
			return row, ds.err
		})
	return Batch{Invoices: rows, Rejects: rejects}
}

// Collections turns collection records into collections rows.
func Collections(list []extract.Collection) Batch {
	rows, rejects := financeList(StreamCollections, list,
		func(r extract.Collection) extract.ID { return r.ID },
		func(r extract.Collection) json.RawMessage { return r.Raw },
		func(r extract.Collection) []string { return []string{"invoice_id", string(r.InvoiceID)} },
		func(r extract.Collection) (Collection, error) {
			var ds decimals
			row := Collection{
				CollectionID: cleanText(string(r.ID)),
				InvoiceID:    optID(r.InvoiceID),
				CollectedOn:  optDate(r.CollectedOn),
				Amount:       ds.required("amount", r.Amount),
				Currency:     optText(r.Currency),
				UpdatedAt:    optInstant(r.UpdatedAt),
				Raw:          CleanJSON(r.Raw),
			}
			return row, ds.err
		})
	return Batch{Collections: rows, Rejects: rejects}
}

// Payments turns payment records into payments rows.
func Payments(list []extract.Payment) Batch {
	rows, rejects := financeList(StreamPayments, list,
		func(r extract.Payment) extract.ID { return r.ID },
		func(r extract.Payment) json.RawMessage { return r.Raw },
		func(r extract.Payment) []string {
			return []string{"project_id", string(r.ProjectID), "brand_id", string(r.BrandID)}
		},
		func(r extract.Payment) (Payment, error) {
			var ds decimals
			row := Payment{
				PaymentID: cleanText(string(r.ID)),
				ProjectID: optID(r.ProjectID),
				BrandID:   optID(r.BrandID),
				Payee:     optTrim(r.Payee),
				PaidOn:    optDate(r.PaidOn),
				Amount:    ds.required("amount", r.Amount),
				Currency:  optText(r.Currency),
				Status:    optText(r.Status),
				UpdatedAt: optInstant(r.UpdatedAt),
				Raw:       CleanJSON(r.Raw),
			}
			return row, ds.err
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
		Raw:      CleanJSON(r.Raw),
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
			Raw:         CleanJSON(r.Raw),
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
