package benchmark

import (
	"maps"
	"testing"
)

func TestPages(t *testing.T) {
	for _, c := range []struct{ rows, per, want int }{
		{0, 1000, 1}, {1, 1000, 1}, {999, 1000, 1}, {1000, 1000, 1}, {1001, 1000, 2},
		{1_000_000, 1000, 1000}, {1_000_001, 1000, 1001}, {250, 100, 3}, {5, 0, 1},
	} {
		if got := Pages(c.rows, c.per); got != c.want {
			t.Errorf("Pages(%d, %d) = %d, want %d", c.rows, c.per, got, c.want)
		}
	}
}

func TestMinimumRequests(t *testing.T) {
	inv := Inventory{
		Brands: 40, Projects: 600,
		ContactsByBrand: map[string]int{"1": 3, "2": 1500}, // brand 2 needs two contact pages
		Budgets:         1200, Invoices: 2500, Collections: 0, Payments: 1000,
		ProfitabilityProject: 14_400, ProfitabilityBrand: 960, Summary: 30,
		Emails: 1_000_000,
	}
	m := MinimumRequests(inv)
	want := map[string]int{
		"brands": 1, "projects": 1, "budgets": 2, "invoices": 3, "collections": 1, "payments": 1,
		"profitability": 15 + 1, "summary": 1, "communications": 1000,
		"brand_detail": 40, "contacts": 41, "project_detail": 600,
	}
	if !maps.Equal(m.ByEndpoint, want) {
		t.Fatalf("ByEndpoint = %v, want %v", m.ByEndpoint, want)
	}
	total := 0
	for _, n := range want {
		total += n
	}
	if m.Total != total || total != 1707 {
		t.Errorf("Total = %d, want %d (1707)", m.Total, total)
	}
}

func TestMinimumRequestsEmptyAgency(t *testing.T) {
	// Every list still costs its one request; no details are needed.
	m := MinimumRequests(Inventory{})
	if m.Total != 10 || m.ByEndpoint["profitability"] != 2 || m.ByEndpoint["brand_detail"] != 0 || m.ByEndpoint["contacts"] != 0 {
		t.Errorf("MinimumRequests(empty) = %+v, want 10 list requests (profitability 2) and no details", m)
	}
}

func TestEndpointExcess(t *testing.T) {
	used := map[string]int64{"brands": 1, "communications": 1003, "project_detail": 598, "unknown": 2}
	minimum := map[string]int{"brands": 1, "communications": 1000, "project_detail": 600, "summary": 1}
	got := EndpointExcess(used, minimum)
	want := map[string]int{"communications": 3, "project_detail": -2, "summary": -1, "unknown": 2}
	if !maps.Equal(got, want) {
		t.Errorf("EndpointExcess = %v, want %v", got, want)
	}
}
