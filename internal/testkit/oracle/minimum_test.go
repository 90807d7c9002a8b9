package oracle

import (
	"maps"
	"testing"
)

func TestPages(t *testing.T) {
	for _, c := range []struct{ rows, per, want int }{
		{0, 1000, 1}, {1, 1000, 1}, {999, 1000, 1}, {1000, 1000, 1}, {1001, 1000, 2},
		{1_000_000, 1000, 1000}, {1_000_001, 1000, 1001}, {250, 100, 3}, {5, 0, 1}, {2000, -1, 2},
	} {
		if got := Pages(c.rows, c.per); got != c.want {
			t.Errorf("Pages(%d, %d) = %d, want %d", c.rows, c.per, got, c.want)
		}
	}
}

func TestMinimumRequests(t *testing.T) {
	contacts := map[string]int{"1": 3, "2": 1500} // brand 2 needs two contact pages
	for i := 3; i <= 40; i++ {
		contacts[string(rune('a'+i))+"x"] = 0 // brands without contacts still cost their one request
	}
	inv := Inventory{
		Brands: 40, Projects: 600, BrandContacts: contacts, ProjectDetails: 600,
		Budgets: 1200, Invoices: 2500, Collections: 0, Payments: 1000,
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
	if m.Total != 1707 {
		t.Errorf("Total = %d, want 1707", m.Total)
	}
}

func TestMinimumRequestsEmptyAgency(t *testing.T) {
	// Every list still costs its one request; no details are needed.
	m := MinimumRequests(Inventory{})
	if m.Total != 10 || m.ByEndpoint["profitability"] != 2 || m.ByEndpoint["brand_detail"] != 0 || m.ByEndpoint["contacts"] != 0 {
		t.Errorf("MinimumRequests(empty) = %+v, want 10 list requests (profitability 2) and no details", m)
	}
}

func TestFirstSyncCountsTheTruth(t *testing.T) {
	tr, err := Parse([]byte(`{"stream":"brands","key":"1","bad":false,"record":{}}
{"stream":"brands","key":"2","bad":false,"record":{}}
{"stream":"brand_details","key":"1","bad":false,"record":{}}
{"stream":"contacts","key":"7","brand_id":"1","bad":false,"record":{}}
{"stream":"contacts","key":"8","brand_id":"1","bad":false,"record":{}}
{"stream":"brand_notes","key":"201","brand_id":"2","bad":false,"record":{}}
{"stream":"projects","key":"5","bad":false,"record":{}}
{"stream":"budgets","key":"9","bad":true,"record":{}}
{"stream":"profitability","key":"project:5:2026-09","bad":false,"record":{}}
{"stream":"profitability","key":"brand:1:2026-09","bad":false,"record":{}}
{"stream":"profitability","key":"brand:2:2026-09","bad":false,"record":{}}
{"stream":"summary","key":"2026-09","bad":false,"record":{}}
{"stream":"communications","key":"100","bad":false,"record":{}}
{"stream":"communications","key":"101","bad":true,"record":{}}
`))
	if err != nil {
		t.Fatal(err)
	}
	inv := tr.FirstSync()
	if inv.Brands != 2 || inv.Projects != 1 || inv.ProjectDetails != 1 || inv.Budgets != 1 || inv.Emails != 2 ||
		inv.ProfitabilityProject != 1 || inv.ProfitabilityBrand != 2 || inv.Summary != 1 ||
		!maps.Equal(inv.BrandContacts, map[string]int{"1": 2, "2": 0}) ||
		len(inv.BrandLists) != 1 || !maps.Equal(inv.BrandLists["brand_notes"], map[string]int{"2": 1}) {
		t.Errorf("FirstSync = %+v", inv)
	}
}

// Each brand whose detail the sync fetches costs a request of each other
// list per brand too, one for an empty list; brands not due cost none.
func TestMinimumRequestsCountsBrandLists(t *testing.T) {
	inv := Inventory{BrandContacts: map[string]int{"1": 0, "2": 0},
		BrandLists: map[string]map[string]int{"brand_notes": {"1": 1500, "3": 4}}}
	m := MinimumRequests(inv)
	if m.ByEndpoint["brand_notes"] != 2+1 || m.Total != 10+2+2+3 {
		t.Errorf("MinimumRequests = %+v, want brand_notes 3 (brand 1's two pages, brand 2's empty list) of 17", m)
	}
}

func TestParseRejectsMalformedLines(t *testing.T) {
	for _, body := range []string{`{"stream":"brands","key":"1"}`, `{"stream":"brands","key":"1","record":{"a":}`,
		`{"stream":"brands","key":1,"record":{}}`} {
		if _, err := Parse([]byte(body)); err == nil {
			t.Errorf("Parse(%s) succeeded", body)
		}
	}
}
