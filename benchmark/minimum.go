package benchmark

import (
	"maps"
	"slices"
)

// PageSize is the largest page the service answers: 1000 rows a request.
const PageSize = 1000

// Inventory is what an agency holds, as the sandbox's ground truth counts
// it: the rows of every list and the entities whose details a first sync
// needs.
type Inventory struct {
	Brands   int
	Projects int
	// ContactsByBrand counts each listed brand's contacts (a brand without
	// contacts may be absent: its contacts list still costs one request).
	ContactsByBrand map[string]int
	Budgets         int
	Invoices        int
	Collections     int
	Payments        int
	// ProfitabilityProject and ProfitabilityBrand are the rows of the two
	// levels of the profitability list, which is listed once per level.
	ProfitabilityProject int
	ProfitabilityBrand   int
	Summary              int
	Emails               int
}

// Pages is the number of requests a list of rows costs at perPage rows a
// request: ceil(rows/perPage), and one for an empty list (its one request
// says it is empty).
func Pages(rows, perPage int) int {
	if perPage <= 0 {
		perPage = PageSize
	}
	return max(1, (rows+perPage-1)/perPage)
}

// Minimum is the fewest requests that can sync an inventory completely.
type Minimum struct {
	Total int
	// ByEndpoint uses the sandbox's endpoint names (sandbox.Stats.ByEndpoint):
	// brands, brand_detail, contacts, projects, project_detail, budgets,
	// invoices, collections, payments, profitability, summary, communications.
	ByEndpoint map[string]int
}

// MinimumRequests is what a complete first sync of inv costs at best at
// PageSize rows a page: each list paged once (brands, projects, the seven
// finance lists — budgets, invoices, collections, payments, profitability by
// project and by brand, the agency summary — and the communications), plus
// per brand its detail and its contacts list, and per project its detail.
func MinimumRequests(inv Inventory) Minimum {
	contacts := inv.Brands // one request per brand at least
	for _, n := range inv.ContactsByBrand {
		contacts += Pages(n, PageSize) - 1 // more pages for a brand with over 1000 contacts
	}
	m := Minimum{ByEndpoint: map[string]int{
		"brands":         Pages(inv.Brands, PageSize),
		"projects":       Pages(inv.Projects, PageSize),
		"budgets":        Pages(inv.Budgets, PageSize),
		"invoices":       Pages(inv.Invoices, PageSize),
		"collections":    Pages(inv.Collections, PageSize),
		"payments":       Pages(inv.Payments, PageSize),
		"profitability":  Pages(inv.ProfitabilityProject, PageSize) + Pages(inv.ProfitabilityBrand, PageSize),
		"summary":        Pages(inv.Summary, PageSize),
		"communications": Pages(inv.Emails, PageSize),
		"brand_detail":   inv.Brands,
		"contacts":       contacts,
		"project_detail": inv.Projects,
	}}
	for _, n := range m.ByEndpoint {
		m.Total += n
	}
	return m
}

// EndpointExcess lists, endpoint by endpoint in name order, the requests
// used beyond (positive) or short of (negative) the minimum; endpoints that
// match are left out.
func EndpointExcess(used map[string]int64, minimum map[string]int) map[string]int {
	out := map[string]int{}
	names := slices.Sorted(maps.Keys(minimum))
	for k := range used {
		if _, ok := minimum[k]; !ok {
			names = append(names, k)
		}
	}
	for _, k := range names {
		if d := int(used[k]) - minimum[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
