package sandbox

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// route is a parsed main-interface path.
type route struct {
	endpoint string
	id       int64 // brand or project id of detail paths
	badID    bool  // the id segment is not a number: nothing can match
}

// Endpoint names (also the keys of Stats.ByEndpoint).
const (
	epBrands        = "brands"
	epBrandDetail   = "brand_detail"
	epContacts      = "contacts"
	epProjects      = "projects"
	epProjectDetail = "project_detail"
	epBudgets       = "budgets"
	epInvoices      = "invoices"
	epCollections   = "collections"
	epPayments      = "payments"
	epProfitability = "profitability"
	epSummary       = "summary"
	epUnknown       = "unknown"
)

func routeMain(path string) route {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 2 || parts[0] != "v1" {
		return route{endpoint: epUnknown}
	}
	idOf := func(s string) (int64, bool) {
		v, err := strconv.ParseInt(s, 10, 64)
		return v, err == nil && v > 0
	}
	switch {
	case parts[1] == "brands" && len(parts) == 2:
		return route{endpoint: epBrands}
	case parts[1] == "brands" && len(parts) == 3:
		id, ok := idOf(parts[2])
		return route{endpoint: epBrandDetail, id: id, badID: !ok}
	case parts[1] == "brands" && len(parts) == 4 && parts[3] == "contacts":
		id, ok := idOf(parts[2])
		return route{endpoint: epContacts, id: id, badID: !ok}
	case parts[1] == "projects" && len(parts) == 2:
		return route{endpoint: epProjects}
	case parts[1] == "projects" && len(parts) == 3:
		id, ok := idOf(parts[2])
		return route{endpoint: epProjectDetail, id: id, badID: !ok}
	case parts[1] == "finance" && len(parts) == 3:
		switch parts[2] {
		case epBudgets, epInvoices, epCollections, epPayments, epProfitability, epSummary:
			return route{endpoint: parts[2]}
		}
	}
	return route{endpoint: epUnknown}
}

// listParams are the query parameters of the main lists.
type listParams struct {
	page, perPage int
	since         time.Time // zero = no filter
	brandID       int64     // 0 = no filter
	level         string
}

// defaultPerPage is per_page when a main list request does not say.
const defaultPerPage = 100

// pageCap is the largest per_page answered.
func (s *Server) pageCap() int {
	c := s.opts.MaxPerPage
	if s.vars.smallPage {
		c = min(c, smallPageCap)
	}
	if tw := s.twists(); tw.maxPerPage > 0 {
		c = tw.maxPerPage
	}
	return c
}

// answeredPerPage is the per_page answered to an ask: the ask under the cap,
// or the fixed_per_page twist's size whatever the ask.
func (s *Server) answeredPerPage(asked int) int {
	if tw := s.twists(); tw.fixedPerPage > 0 {
		return tw.fixedPerPage
	}
	return min(asked, s.pageCap())
}

// parsePaging reads page and per_page; the reason is empty when valid.
func (s *Server) parsePaging(pageText, perPageText string, defPerPage int) (pg, pp int, reason string) {
	pg, pp = 1, defPerPage
	if pageText != "" {
		v, err := strconv.Atoi(pageText)
		if err != nil || v < 1 {
			return 0, 0, "page must be an integer of at least 1"
		}
		pg = v
	}
	if perPageText != "" {
		v, err := strconv.Atoi(perPageText)
		if err != nil || v < 1 {
			return 0, 0, "per_page must be an integer of at least 1"
		}
		pp = v
	}
	return pg, s.answeredPerPage(pp), ""
}

func (s *Server) parseList(q url.Values, endpoint string) (listParams, string) {
	var p listParams
	var reason string
	p.page, p.perPage, reason = s.parsePaging(q.Get("page"), q.Get("per_page"), defaultPerPage)
	if reason != "" {
		return p, reason
	}
	if v := q.Get("updated_since"); v != "" {
		t, err := time.Parse(layoutDate, v)
		if err != nil {
			return p, "updated_since must be a date YYYY-MM-DD"
		}
		if !s.vars.ignoreUpdatedSince {
			p.since = t
		}
	}
	if v := q.Get("brand_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return p, "brand_id must be a numeric id"
		}
		p.brandID = id
	}
	if endpoint == epProfitability {
		switch v := q.Get("level"); v {
		case "", "project", "brand":
			p.level = v
		default:
			return p, "level must be project or brand"
		}
	}
	return p, ""
}

// handleMain answers a main-interface request for route rt with key
// standing a: a record's details, or a page of a list.
func (s *Server) handleMain(w http.ResponseWriter, e *enc, r *http.Request, rt route, a auth) (int, string) {
	if rt.endpoint == epUnknown {
		return notFound(e)
	}
	if r.Method != http.MethodGet {
		return methodNotAllowed(w, e, http.MethodGet)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.data
	st := s.mainSt

	// Detail paths: unknown or deleted ids are 404 for every key; a foreign
	// key gets 403 on this agency's existing records.
	b, p, found := d.detailRecords(rt)
	if !found {
		return notFound(e)
	}
	if a == authForeign {
		return forbidden(e)
	}
	switch rt.endpoint {
	case epBrandDetail:
		d.writeBrandDetail(e, b, st)
		return http.StatusOK, ctJSON
	case epProjectDetail:
		d.writeProject(e, p, true, st)
		return http.StatusOK, ctJSON
	}
	return s.handleList(w, e, r, rt, b)
}

// detailRecords returns the brand (brand detail, contacts) or the project
// (project detail) that rt names; found is false when the record does not
// exist or is deleted. Other endpoints name none and are always found.
func (d *dataset) detailRecords(rt route) (b *brand, p *project, found bool) {
	switch rt.endpoint {
	case epBrandDetail, epContacts:
		k, ok := d.brandByID[rt.id]
		if !ok || rt.badID || d.brands[k].deleted {
			return nil, nil, false
		}
		return d.brands[k], nil, true
	case epProjectDetail:
		k, ok := d.projectByID[rt.id]
		if !ok || rt.badID || d.projects[k].deleted {
			return nil, nil, false
		}
		return nil, d.projects[k], true
	}
	return nil, nil, true
}

// handleList answers a page of the main list of rt (the contacts of brand
// b): it reads the list's query and paging parameters, then writes the
// page. The caller holds s.mu.
func (s *Server) handleList(w http.ResponseWriter, e *enc, r *http.Request, rt route, b *brand) (int, string) {
	lp, reason := s.parseList(r.URL.Query(), rt.endpoint)
	if reason != "" {
		return s.badParam(e, reason)
	}
	lying := s.twists().lyingPaging
	path := "http://" + r.Host + r.URL.Path
	if reason := s.pagingReason(r, path); reason != "" {
		return s.badParam(e, reason)
	}
	pageOf := func(n int) page {
		return s.pagedAs(w, r, page{total: n, perPage: lp.perPage, current: lp.page, lying: lying, path: path})
	}
	s.writeListPage(e, rt.endpoint, b, lp, pageOf)
	return http.StatusOK, ctJSON
}

// writeListPage writes the page of the list of endpoint (the contacts of
// brand b) that pageOf gives for the number of records, filtered by lp.
func (s *Server) writeListPage(e *enc, endpoint string, b *brand, lp listParams, pageOf func(n int) page) {
	d, st := s.data, s.mainSt
	idKey := func(id int64) string { return strconv.FormatInt(id, 10) }
	wrap := func(name string) string {
		if st.wrapped {
			return name
		}
		return ""
	}
	seed, badRate := s.opts.Seed, s.faultConfig().badRate
	brandOK := func(bi int) bool { return lp.brandID == 0 || d.brands[bi].id == lp.brandID }
	fresh := func(t time.Time) bool { return lp.since.IsZero() || !t.Before(lp.since) }

	switch endpoint {
	case epBrands:
		var list []*brand
		for _, b := range d.brands {
			if !b.deleted {
				list = append(list, b)
			}
		}
		writeList(e, st, pageOf(len(list)), "", func(k int) string { return idKey(list[k].id) },
			func(e *enc, k int) { d.writeBrandElement(e, list[k], st) })
	case epContacts:
		writeList(e, st, pageOf(len(b.contacts)), wrap("contact_info"), func(k int) string { return idKey(b.contacts[k].id) },
			func(e *enc, k int) { writeContact(e, &b.contacts[k], st) })
	case epProjects:
		var list []*project
		for _, p := range d.projects {
			if !p.deleted && brandOK(p.brand) && fresh(p.updatedAt) {
				list = append(list, p)
			}
		}
		writeList(e, st, pageOf(len(list)), wrap("project_info"), func(k int) string { return idKey(list[k].id) },
			func(e *enc, k int) { d.writeProject(e, list[k], false, st) })
	case epBudgets, epInvoices, epCollections, epPayments:
		l, _ := d.ledger(endpoint)
		var list []int
		for k := range l.n {
			if brandOK(l.brand(k)) && fresh(l.entry(k).updatedAt) {
				list = append(list, k)
			}
		}
		writeList(e, st, pageOf(len(list)), wrap(l.wrap()), func(k int) string { return idKey(l.entry(list[k]).id) },
			func(e *enc, k int) { l.writeRecord(e, list[k], st, seed, badRate) })
	case epProfitability:
		list := d.profitRows(lp)
		writeList(e, st, pageOf(len(list)), wrap("profitability_info"), func(k int) string { return list[k].key() },
			func(e *enc, k int) { writeProfit(e, list[k], st) })
	case epSummary:
		periods := d.summaryPeriods(monthIndex(s.Now()))
		writeList(e, st, pageOf(len(periods)), wrap("summary_info"), func(k int) string { return periodString(periods[k]) },
			func(e *enc, k int) { writeSummary(e, periods[k], d.summary[periods[k]], st) })
	}
}

// profitRows returns the profitability rows of lp's level and brand (all
// when they are not given).
func (d *dataset) profitRows(lp listParams) []*profitRow {
	var list []*profitRow
	for k := range d.profit {
		row := &d.profit[k]
		if lp.level != "" && row.level != lp.level {
			continue
		}
		if lp.brandID != 0 {
			if row.level == "brand" && row.entityID != lp.brandID {
				continue
			}
			if row.level == "project" && d.brands[d.projects[d.projectByID[row.entityID]].brand].id != lp.brandID {
				continue
			}
		}
		list = append(list, row)
	}
	return list
}

// badKindOf returns the bad-record kind, or -1 for a sound record.
func badKindOf(bad bool, kind int) int {
	if !bad {
		return -1
	}
	return kind
}
