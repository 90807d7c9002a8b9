package transform

import (
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
)

func ptrTo[T any](v T) *T { return &v }

// Aggregates recomputed by finance leave the hash alone; every detail-owned
// field changes it.
func TestBrandListHash(t *testing.T) {
	t.Parallel()
	base := func() extract.Brand {
		return extract.Brand{ID: "7", Name: "Alfa SRL", Status: "Activ", DateCreated: ptrTo(time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)),
			AccountManager: "Ana Pop", ProjectsCount: ptrTo(int64(3)),
			FinancialSummary: &extract.FinancialSummary{TotalBudget: "100.00", Currency: "RON"},
			Raw:              []byte(`{"id":7}`)}
	}
	h := BrandListHash(base())
	same := map[string]func(*extract.Brand){
		"projects_count":    func(b *extract.Brand) { b.ProjectsCount = ptrTo(int64(4)) },
		"no projects_count": func(b *extract.Brand) { b.ProjectsCount = nil },
		"financial_summary": func(b *extract.Brand) {
			b.FinancialSummary = &extract.FinancialSummary{TotalBudget: "250.10", Invoiced: "1", Currency: "EUR"}
		},
		"raw": func(b *extract.Brand) { b.Raw = []byte(`{"id":7,"projects_count":4}`) },
	}
	for name, change := range same {
		b := base()
		change(&b)
		if got := BrandListHash(b); got != h {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := map[string]func(*extract.Brand){
		"id":              func(b *extract.Brand) { b.ID = "8" },
		"name":            func(b *extract.Brand) { b.Name = "Alfa SA" },
		"status":          func(b *extract.Brand) { b.Status = "Inactiv" },
		"date_created":    func(b *extract.Brand) { b.DateCreated = ptrTo(time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC)) },
		"no date_created": func(b *extract.Brand) { b.DateCreated = nil },
		"account_manager": func(b *extract.Brand) { b.AccountManager = "Ion Pop" },
		// Values are delimited: moving a character between fields counts.
		"shifted": func(b *extract.Brand) { b.Name, b.Status = "Alfa SRLA", "ctiv" },
	}
	for name, change := range differ {
		b := base()
		change(&b)
		if got := BrandListHash(b); got == h {
			t.Errorf("%s left the hash unchanged", name)
		}
	}
}

func TestProjectListHash(t *testing.T) {
	t.Parallel()
	day := func(d int) *time.Time { return ptrTo(time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC)) }
	base := func() extract.Project {
		return extract.Project{ID: "11", BrandID: "7", Name: "Campanie", Status: "in lucru", StartDate: day(1), Deadline: day(20),
			UpdatedAt: ptrTo(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)),
			Budget:    &extract.Money{Amount: "500.00", Currency: "RON"}, Raw: []byte(`{}`)}
	}
	h := ProjectListHash(base())
	same := map[string]func(*extract.Project){
		"budget amount": func(p *extract.Project) { p.Budget.Amount = "750.00" },
		"no budget":     func(p *extract.Project) { p.Budget = nil },
		"same instant":  func(p *extract.Project) { p.UpdatedAt = ptrTo(p.UpdatedAt.In(time.FixedZone("EET", 7200))) },
	}
	for name, change := range same {
		p := base()
		change(&p)
		if got := ProjectListHash(p); got != h {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := map[string]func(*extract.Project){
		"id":            func(p *extract.Project) { p.ID = "12" },
		"brand_id":      func(p *extract.Project) { p.BrandID = "8" },
		"name":          func(p *extract.Project) { p.Name = "Campanie 2" },
		"status":        func(p *extract.Project) { p.Status = "finalizat" },
		"start_date":    func(p *extract.Project) { p.StartDate = day(2) },
		"deadline":      func(p *extract.Project) { p.Deadline = day(21) },
		"closed_at":     func(p *extract.Project) { p.ClosedAt = day(22) },
		"updated_at":    func(p *extract.Project) { p.UpdatedAt = ptrTo(p.UpdatedAt.Add(time.Second)) },
		"no updated_at": func(p *extract.Project) { p.UpdatedAt = nil },
	}
	for name, change := range differ {
		p := base()
		change(&p)
		if got := ProjectListHash(p); got == h {
			t.Errorf("%s left the hash unchanged", name)
		}
	}
}
