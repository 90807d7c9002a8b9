package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agencysync/agencysync/extract"
)

// Brands turns brands of the list into brands rows and, for each brand with a
// financial_summary, a brand_financial_snapshots row for the calendar day
// snapshot (its year, month and day as given). GeneralInfo and Metadata stay
// nil: the stored detail fields are kept.
func Brands(list []extract.Brand, snapshot time.Time) Batch {
	var b brandBuilder
	for _, br := range list {
		b.add(br, nil, snapshot)
	}
	return b.batch()
}

// BrandDetails is Brands for brand details: the brand plus its general_info and
// metadata objects. The detail as received goes to DetailRaw; Raw stays nil,
// so the list's record stays in brands.raw and the two do not overwrite each
// other on every sync.
func BrandDetails(list []extract.BrandDetail, snapshot time.Time) Batch {
	var b brandBuilder
	for i := range list {
		b.add(list[i].Brand, &list[i], snapshot)
	}
	return b.batch()
}

// brandBuilder collects the rows of valid brands, the last version of a
// repeated brand winning, and the rejects of the others.
type brandBuilder struct {
	rows    dedup[string, brandRows]
	rejects []Reject
}

type brandRows struct {
	brand    Brand
	snapshot *BrandFinancialSnapshot
}

func (b *brandBuilder) add(br extract.Brand, detail *extract.BrandDetail, snapshot time.Time) {
	row, snap, err := brandRow(br, detail, snapshot)
	if err != nil {
		raw := br.Raw
		if detail != nil && len(detail.Raw) > 0 {
			raw = detail.Raw // the whole record as received
		}
		b.rejects = append(b.rejects, NewReject(StreamBrands, string(br.ID), raw, err))
		return
	}
	b.rows.put(row.BrandID, brandRows{row, snap})
}

func (b *brandBuilder) batch() Batch {
	out := Batch{Rejects: b.rejects}
	for _, r := range b.rows.rows {
		out.Brands = append(out.Brands, r.brand)
		if r.snapshot != nil {
			out.BrandFinancialSnapshots = append(out.BrandFinancialSnapshots, *r.snapshot)
		}
	}
	return out
}

func brandRow(br extract.Brand, detail *extract.BrandDetail, snapshot time.Time) (Brand, *BrandFinancialSnapshot, error) {
	if br.ID == "" {
		return Brand{}, nil, errors.New("brand without id")
	}
	if err := keyLengths("id", string(br.ID)); err != nil {
		return Brand{}, nil, err
	}
	if br.ProjectsCount != nil && *br.ProjectsCount < 0 {
		return Brand{}, nil, fmt.Errorf("negative projects_count %d", *br.ProjectsCount)
	}
	row := Brand{
		BrandID:        cleanText(string(br.ID)),
		Name:           optText(br.Name),
		Status:         optText(br.Status),
		DateCreated:    optDate(br.DateCreated),
		AccountManager: optTrim(br.AccountManager),
		ProjectsCount:  br.ProjectsCount,
		Raw:            recordJSON(br.Raw),
	}
	if detail != nil {
		row.GeneralInfo = optJSON(detail.GeneralInfo)
		row.Metadata = optJSON(detail.Metadata)
		row.Raw, row.DetailRaw = nil, recordJSON(detail.Raw)
		if len(detail.Raw) == 0 {
			row.DetailRaw = recordJSON(br.Raw)
		}
	}
	var snap *BrandFinancialSnapshot
	if fs := br.FinancialSummary; fs != nil {
		var ds decimals
		row.TotalBudget = ds.conv("financial_summary.total_budget", fs.TotalBudget)
		row.Invoiced = ds.conv("financial_summary.invoiced", fs.Invoiced)
		row.Collected = ds.conv("financial_summary.collected", fs.Collected)
		row.Currency = optText(fs.Currency)
		if ds.err != nil {
			return Brand{}, nil, ds.err
		}
		y, m, d := snapshot.Date()
		snap = &BrandFinancialSnapshot{
			BrandID:      row.BrandID,
			SnapshotDate: time.Date(y, m, d, 0, 0, 0, 0, time.UTC),
			TotalBudget:  row.TotalBudget,
			Invoiced:     row.Invoiced,
			Collected:    row.Collected,
			Currency:     row.Currency,
		}
	}
	return row, snap, nil
}

// optJSON is recordJSON for an optional object: nil when absent.
func optJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return recordJSON(raw)
}

// Contacts turns the contact persons of brand brandID into brand_contacts rows.
// Without a brandID every contact is rejected.
func Contacts(brandID extract.ID, list []extract.Contact) Batch {
	var out Batch
	var contacts dedup[string, BrandContact]
	for _, c := range list {
		key := string(brandID) + "/" + string(c.ID)
		var err error
		switch {
		case brandID == "":
			err = errors.New("contact without brand id")
		case c.ID == "":
			err = errors.New("contact without id")
		case c.Email != nil:
			err = keyLengths("brand id", string(brandID), "id", string(c.ID), "email", *c.Email)
		default:
			err = keyLengths("brand id", string(brandID), "id", string(c.ID))
		}
		if err != nil {
			if c.ID == "" {
				key = ""
			}
			out.Rejects = append(out.Rejects, NewReject(StreamBrandContacts, key, c.Raw, err))
			continue
		}
		row := BrandContact{
			BrandID:   cleanText(string(brandID)),
			ContactID: cleanText(string(c.ID)),
			FirstName: optTrim(c.FirstName),
			LastName:  optTrimPtr(c.LastName),
			FullName:  optTrim(c.FullName),
			Email:     optTrimPtr(c.Email),
			Phone:     optTrimPtr(c.Phone),
			Position:  optTrimPtr(c.Position),
			IsPrimary: c.IsPrimary,
			Raw:       recordJSON(c.Raw),
		}
		contacts.put(row.ContactID, row)
	}
	out.BrandContacts = contacts.rows
	return out
}

// BrandListHash is the hash of the fields of a brands-list entry that belong
// to the brand's detail: id, name, status, date_created and account_manager.
// A change in any of them makes the detail (and the contacts) due. The
// aggregates the service recomputes from finance — projects_count and
// financial_summary (total_budget, invoiced, collected, currency) — are stored
// from the list entry and do not count: they change with every finance edit
// and the detail adds nothing to them.
func BrandListHash(b extract.Brand) string {
	kind, id := "brand", string(b.ID)
	return listHash(&kind, &id, &b.Name, &b.Status, hashTime(b.DateCreated), &b.AccountManager)
}
