package oracle

import (
	"slices"
	"strings"
)

// PageSize is the largest page the service answers: 1000 rows a request.
const PageSize = 1000

// Inventory is the work a sync has to do, as counted from the ground truth:
// the rows of every list it pages through and the entities whose details it
// fetches. For a first sync, FirstSync counts it from the truth; a test of
// a later sync states what changed.
type Inventory struct {
	// Brands and Projects are the rows of the brands and projects lists.
	Brands   int
	Projects int
	// BrandContacts holds, for each brand whose detail the sync fetches, its
	// number of contacts (0 for none): such a brand costs its detail and its
	// contacts list.
	BrandContacts map[string]int
	// BrandLists holds, for each other list asked per brand (the lists the
	// sandbox serves from their declarations, by inventory name), the rows
	// of each brand: each brand of BrandContacts costs ceil(rows ÷ PageSize)
	// requests of each (one for none).
	BrandLists map[string]map[string]int
	// ProjectDetails is the number of projects whose detail the sync fetches.
	ProjectDetails int
	// Budgets, Invoices, Collections and Payments are the rows of the four
	// finance lists.
	Budgets     int
	Invoices    int
	Collections int
	Payments    int
	// ProfitabilityProject and ProfitabilityBrand are the rows of the two
	// levels of the profitability list, which is listed once per level.
	ProfitabilityProject int
	ProfitabilityBrand   int
	// Summary is the rows of the agency summary list.
	Summary int
	// Emails is the rows of the communications list.
	Emails int
	// Refresh holds the e-mails of each range of days the rolling re-read
	// of the history (SYNC_COMMS_REFRESH_AGE) reads in the sync: each is
	// paged once more. A first sync reads nothing again (every day was just
	// read); a later night reads its share (RefreshShare).
	Refresh []int
}

// FirstSync counts what a complete first sync of the truth has to do: every
// list whole (bad records are rows of their pages too) and the details of
// every brand and project.
func (t Truth) FirstSync() Inventory {
	inv := Inventory{
		Brands: len(t["brands"]), Projects: len(t["projects"]), ProjectDetails: len(t["projects"]),
		BrandContacts: make(map[string]int, len(t["brands"])),
		Budgets:       len(t["budgets"]), Invoices: len(t["invoices"]),
		Collections: len(t["collections"]), Payments: len(t["payments"]),
		Summary: len(t["summary"]), Emails: len(t["communications"]),
	}
	for _, l := range t["brands"] {
		inv.BrandContacts[l.Key] = 0
	}
	for _, l := range t["contacts"] {
		inv.BrandContacts[l.BrandID]++
	}
	for name, lines := range t {
		for _, l := range lines {
			if name != "contacts" && l.BrandID != "" {
				if inv.BrandLists == nil {
					inv.BrandLists = map[string]map[string]int{}
				}
				if inv.BrandLists[name] == nil {
					inv.BrandLists[name] = map[string]int{}
				}
				inv.BrandLists[name][l.BrandID]++
			}
		}
	}
	for _, l := range t["profitability"] {
		if strings.HasPrefix(l.Key, "brand:") {
			inv.ProfitabilityBrand++
		} else {
			inv.ProfitabilityProject++
		}
	}
	return inv
}

// Pages is the number of requests a list of rows costs at perPage rows a
// request (PageSize when perPage is not positive): ceil(rows/perPage), and
// one for an empty list, whose one request says it is empty.
func Pages(rows, perPage int) int {
	if perPage <= 0 {
		perPage = PageSize
	}
	return max(1, (rows+perPage-1)/perPage)
}

// Minimum is the fewest requests that can do an inventory's work.
type Minimum struct {
	// Total is the sum of ByEndpoint.
	Total int
	// ByEndpoint uses the sandbox's endpoint names (sandbox.Stats.ByEndpoint):
	// brands, brand_detail, contacts, projects, project_detail, budgets,
	// invoices, collections, payments, profitability, summary, communications,
	// and the names of Inventory.BrandLists.
	ByEndpoint map[string]int
}

// MinimumRequests is the one statement of what a sync costs at best, at
// PageSize rows a page: each list paged once — brands, projects, budgets,
// invoices, collections, payments, profitability by project and by brand,
// the agency summary, the communications — ceil(rows ÷ PageSize) requests
// each (one for an empty list); plus one request per detail: per brand its
// detail and ceil(contacts ÷ PageSize) contacts requests (and as many of
// each of its other lists, Inventory.BrandLists), per project its detail;
// plus, on a later night, each range the rolling re-read of the
// history reads (Inventory.Refresh).
func MinimumRequests(inv Inventory) Minimum {
	contacts := 0
	for _, n := range inv.BrandContacts {
		contacts += Pages(n, PageSize)
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
		"brand_detail":   len(inv.BrandContacts),
		"contacts":       contacts,
		"project_detail": inv.ProjectDetails,
	}}
	for name, rows := range inv.BrandLists {
		for brand := range inv.BrandContacts {
			m.ByEndpoint[name] += Pages(rows[brand], PageSize)
		}
	}
	for _, n := range inv.Refresh {
		m.ByEndpoint["communications"] += Pages(n, PageSize)
	}
	for _, n := range m.ByEndpoint {
		m.Total += n
	}
	return m
}

// ListEndpoints are the sandbox's endpoints (by their names in its stats)
// that a sync lists once, whatever the number of entities.
var ListEndpoints = []string{"brands", "projects", "budgets", "invoices", "collections", "payments", "profitability", "summary"}

// CommsEndpoint is the sandbox's name of the communications endpoint in its
// stats.
const CommsEndpoint = "communications"

// EntityEndpoints are the sandbox's endpoints a sync asks per due entity:
// the brands' and projects' details, the brands' contacts and every other
// list asked per brand that inv counts (BrandLists), sorted.
func EntityEndpoints(inv Inventory) []string {
	out := []string{"brand_detail", "contacts", "project_detail"}
	for name := range inv.BrandLists {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// RefreshShare is what the rolling re-read reads in one night when the days
// it may read (eligible: their e-mails, in date order, the days read on the
// same earlier day) were all read on the same day: the first of them, in
// date order, until they hold the night's even share of the history's
// total e-mails, ⌈total ÷ days⌉ (days: the maximum age in whole days). It
// is one range: the e-mails it holds.
func RefreshShare(eligible []int, total, days int) int {
	share := (total + days - 1) / days
	n := 0
	for _, e := range eligible {
		if n >= share {
			break
		}
		n += e
	}
	return n
}
