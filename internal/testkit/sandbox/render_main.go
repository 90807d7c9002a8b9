package sandbox

import (
	"strconv"
	"time"
)

// mainStyle is the variants in effect, as the main interface's writers see
// them (the zero value is the canonical shape).
type mainStyle struct{ variantSet }

// emptyRows reports whether empty keyed rows are written as [].
func (st mainStyle) emptyRows() bool { return st.emptyRowsArray || st.phpEmptyArray }

// emptyArr writes an empty collection where an array is expected.
func (st mainStyle) emptyArr(e *enc) {
	if st.emptyAsObject {
		e.raw("{}")
	} else {
		e.raw("[]")
	}
}

// writeArr writes the member key, an array of n elements that item writes
// (an empty one in the configured shape).
func (st mainStyle) writeArr(e *enc, key string, n int, item func(k int)) {
	e.key(key)
	if n == 0 {
		st.emptyArr(e)
		return
	}
	e.openArr()
	for k := range n {
		item(k)
	}
	e.closeArr()
}

// Finance record kinds, also used as tags for the bad-record choice.
const (
	kindBudget uint64 = iota + 1
	kindInvoice
	kindCollection
	kindPayment
)

// isBadFinance reports whether finance record id of kind is deliberately
// malformed at rate, and how (0..3).
func isBadFinance(seed int64, kind uint64, id int64, rate float64) (bool, int) {
	if rate <= 0 {
		return false, 0
	}
	r := newRNG(seed, tagBad, kind<<48|uint64(id))
	if r.float() >= rate {
		return false, 0
	}
	return true, r.intn(4)
}

// badAmount is an amount as a person would type it: decimal comma, thousands
// dot and the currency, valid JSON but not a number.
func badAmount(cents int64, cur string) string {
	whole := strconv.FormatInt(cents/100, 10)
	var b []byte
	for i, ch := range []byte(whole) {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b = append(b, '.')
		}
		b = append(b, ch)
	}
	f := cents % 100
	return string(b) + "," + string([]byte{byte('0' + f/10), byte('0' + f%10)}) + " " + cur
}

func (d *dataset) userName(id int64) string {
	if id >= 1 && int(id) < len(d.people) {
		return d.people[id].full
	}
	return ""
}

func (d *dataset) writeBrandInfo(e *enc, b *brand, st mainStyle) {
	e.open()
	e.key("id").id(b.id, st.numericIDs)
	e.key("name").str(b.name)
	e.key("status").str(b.status)
	e.key("date_created").date(b.dateCreated)
	e.key("account_manager").str(d.userName(b.accountManager))
	st.int(e.key("projects_count"), int64(b.projectsCount))
	e.key("financial_summary")
	total, invoiced, collected := b.financialSummary()
	e.open()
	st.money(e.key("total_budget"), total)
	st.money(e.key("invoiced"), invoiced)
	st.money(e.key("collected"), collected)
	e.key("currency").str(b.currency)
	e.close()
	if st.phpEmptyArray {
		st.emptyObj(e.key("custom_fields"))
	}
	e.close()
}

// writeBrandElement writes a brands-list element.
func (d *dataset) writeBrandElement(e *enc, b *brand, st mainStyle) {
	if st.unwrapped {
		d.writeBrandInfo(e, b, st)
		return
	}
	e.open()
	e.key("brand_info")
	d.writeBrandInfo(e, b, st)
	e.close()
}

func (d *dataset) writeBrandDetail(e *enc, b *brand, st mainStyle) {
	e.open()
	e.key("brand_info")
	d.writeBrandInfo(e, b, st)
	e.key("general_info")
	e.open()
	e.key("legal_name").str(b.legalName)
	e.key("fiscal_code").str(b.fiscalCode)
	e.key("registration_number").str(b.regNumber)
	e.key("address").str(b.address)
	e.key("city").str(b.city)
	e.key("county").str(b.county)
	e.key("country").str("România")
	e.key("website").str(b.website)
	e.key("industry").str(b.industry)
	e.close()
	e.key("metadata")
	e.open()
	e.key("created_by").id(b.createdBy, st.numericIDs)
	e.key("created_at").ts(b.createdAt)
	e.key("updated_at").ts(b.updatedAt)
	st.writeArr(e, "tags", len(b.tags), func(k int) { e.str(b.tags[k]) })
	e.key("source").str(b.source)
	e.close()
	e.close()
}

func writeContact(e *enc, c *contact, st mainStyle) {
	n := func(k string) string { return st.name(k, renamedContact) }
	e.open()
	e.key("id").id(c.id, st.numericIDs)
	e.key(n("first_name")).str(c.first)
	st.strOrNull(e.key(n("last_name")), c.last, c.lastNull)
	e.key("full_name").str(c.full)
	st.strOrNull(e.key("email"), c.email, c.emailNull)
	st.strOrNull(e.key("phone"), c.phone, c.phoneNull)
	e.key(n("position")).str(c.position)
	st.flag(e.key(n("is_primary")), c.primary)
	e.close()
}

func (d *dataset) writeProject(e *enc, p *project, detail bool, st mainStyle) {
	b := d.brands[p.brand]
	n := func(k string) string { return st.name(k, renamedProject) }
	e.open()
	e.key("id").id(p.id, st.numericIDs)
	e.key("brand_id").id(b.id, st.numericIDs)
	e.key(n("name")).str(p.name)
	e.key(n("status")).str(p.status)
	e.key(n("start_date")).date(p.start)
	e.key(n("deadline")).date(p.deadline)
	st.tsOrNull(e.key("closed_at"), p.closedAt)
	e.key("updated_at").ts(p.updatedAt)
	if st.renamed {
		st.money(e.key("budget_total"), p.budgetTotal)
		e.key("budget_currency").str(b.currency)
	} else {
		e.key("budget")
		e.open()
		st.money(e.key("amount"), p.budgetTotal)
		e.key("currency").str(b.currency)
		e.close()
	}
	if st.phpEmptyArray {
		st.emptyObj(e.key("custom_fields"))
	}
	if detail {
		st.writeArr(e, "team", len(p.team), func(k int) {
			t := p.team[k]
			e.open()
			e.key("user_id").id(t.userID, st.numericIDs)
			e.key("full_name").str(d.userName(t.userID))
			e.key("role").str(t.role)
			e.close()
		})
		st.writeArr(e, "deliverables", len(p.deliverables), func(k int) {
			dl := p.deliverables[k]
			e.open()
			e.key("id").id(dl.id, st.numericIDs)
			e.key("name").str(dl.name)
			e.key("due_date").date(dl.due)
			e.key("status").str(dl.status)
			st.tsOrNull(e.key("delivered_at"), dl.deliveredAt)
			e.close()
		})
		st.writeArr(e, "history", len(p.history), func(k int) {
			h := p.history[k]
			e.open()
			e.key("at").ts(h.at)
			e.key("field").str(h.field)
			st.strOrNull(e.key("from"), h.from, h.fromNull)
			st.strOrNull(e.key("to"), h.to, h.toNull)
			e.key("by_user_id").id(h.by, st.numericIDs)
			e.close()
		})
	}
	e.close()
}

// writeOwner writes the project and the brand a finance record belongs to;
// a malformed project reference as {"id":N}.
func writeOwner(e *enc, project, brand int64, st mainStyle, malformed bool) {
	writeRef(e.key("project_id"), project, st, malformed)
	e.key("brand_id").id(brand, st.numericIDs)
}

// writeRef writes a reference to another record; malformed as {"id":N}.
func writeRef(e *enc, id int64, st mainStyle, malformed bool) {
	if malformed {
		e.open()
		e.key("id").int(id)
		e.close()
		return
	}
	e.id(id, st.numericIDs)
}

// writeMoney writes a finance record's amount under key, then its currency;
// a malformed amount (bad kind 0) as typed text, or (bad kind 3) missing.
func writeMoney(e *enc, key string, cents int64, cur string, st mainStyle, badKind int) {
	switch badKind {
	case 3: // missing
	case 0:
		e.key(key).str(badAmount(cents, cur))
	default:
		st.money(e.key(key), cents)
	}
	e.key("currency").str(cur)
}

// writeDay writes a date; malformed as DD/MM/YYYY.
func writeDay(e *enc, key string, t time.Time, malformed bool) {
	e.key(key)
	if malformed {
		e.str(t.Format("02/01/2006"))
		return
	}
	e.date(t)
}

func (d *dataset) writeBudget(e *enc, bg *budget, st mainStyle, badKind int) {
	p := d.projects[bg.project]
	b := d.brands[p.brand]
	e.open()
	e.key("id").id(bg.id, st.numericIDs)
	writeOwner(e, p.id, b.id, st, badKind == 1)
	writeMoney(e, "amount", bg.amount, b.currency, st, badKind)
	writeDay(e, "period_start", bg.periodStart, badKind == 2)
	e.key("period_end").date(bg.periodEnd)
	e.key("updated_at").ts(bg.updatedAt)
	e.close()
}

func (d *dataset) writeInvoice(e *enc, inv *invoice, st mainStyle, badKind int) {
	p := d.projects[inv.project]
	b := d.brands[p.brand]
	n := func(k string) string { return st.name(k, renamedInvoice) }
	e.open()
	e.key("id").id(inv.id, st.numericIDs)
	e.key(n("number")).str(inv.number)
	writeOwner(e, p.id, b.id, st, badKind == 1)
	writeDay(e, n("issue_date"), inv.issue, badKind == 2)
	e.key(n("due_date")).date(inv.due)
	writeMoney(e, n("amount"), inv.amount, b.currency, st, badKind)
	e.key("status").str(inv.status)
	e.key("updated_at").ts(inv.updatedAt)
	e.close()
}

func (d *dataset) writeCollection(e *enc, c *collection, st mainStyle, badKind int) {
	inv := d.invoices[c.invoice]
	b := d.brands[d.projects[inv.project].brand]
	e.open()
	e.key("id").id(c.id, st.numericIDs)
	writeRef(e.key("invoice_id"), inv.id, st, badKind == 1)
	writeDay(e, "collected_on", c.on, badKind == 2)
	writeMoney(e, "amount", c.amount, b.currency, st, badKind)
	e.key("updated_at").ts(c.updatedAt)
	e.close()
}

func (d *dataset) writePayment(e *enc, pm *payment, st mainStyle, badKind int) {
	p := d.projects[pm.project]
	b := d.brands[p.brand]
	e.open()
	e.key("id").id(pm.id, st.numericIDs)
	writeOwner(e, p.id, b.id, st, badKind == 1)
	e.key("payee").str(pm.payee)
	writeDay(e, "paid_on", pm.paidOn, badKind == 2)
	writeMoney(e, "amount", pm.amount, b.currency, st, badKind)
	e.key("status").str(pm.status)
	e.key("updated_at").ts(pm.updatedAt)
	e.close()
}

func writeProfit(e *enc, r *profitRow, st mainStyle) {
	e.open()
	e.key("level").str(r.level)
	e.key("entity_id").id(r.entityID, st.numericIDs)
	e.key("period").str(periodString(r.period))
	st.money(e.key("revenue"), r.revenue)
	st.money(e.key("cost"), r.cost)
	st.money(e.key("margin"), r.revenue-r.cost)
	e.key("currency").str(r.currency)
	e.close()
}

// summaryCurrency is the currency of the agency-wide aggregates.
const summaryCurrency = "RON"

func writeSummary(e *enc, period int, s *summaryMonth, st mainStyle) {
	var z summaryMonth
	if s == nil {
		s = &z
	}
	e.open()
	e.key("period").str(periodString(period))
	st.money(e.key("total_budget"), s.totalBudget)
	st.money(e.key("invoiced"), s.invoiced)
	st.money(e.key("collected"), s.collected)
	st.money(e.key("paid"), s.paid)
	st.money(e.key("profit"), s.invoiced-s.paid)
	e.key("currency").str(summaryCurrency)
	e.close()
}

// page describes one page of a list.
type page struct {
	total, perPage, current int
	// lying (the lying_paging twist) leaves the last record out of the
	// advertised pages and serves it alone on page lastPage()+1.
	lying bool
	// path is the list's address without a query, for the page URLs of
	// the php-paginator and php-resource envelopes.
	path string
	// win, under a paging variant, is the window the answer holds.
	win *pagedWindow
}

func (p page) lastPage() int {
	if p.perPage <= 0 {
		return 0
	}
	return (p.total + p.perPage - 1) / p.perPage
}

// bounds returns the slice [from, to) of the list that the page holds.
func (p page) bounds() (from, to int) {
	if p.win != nil {
		return p.win.from, p.win.to
	}
	if p.lying && p.total > 0 {
		last := p.lastPage()
		switch {
		case p.current == last+1:
			return p.total - 1, p.total
		case p.current >= 1 && p.current <= last:
			from = (p.current - 1) * p.perPage
			return from, min(p.total-1, from+p.perPage)
		}
		return p.total, p.total
	}
	if p.perPage <= 0 || p.current < 1 || p.current-1 > p.total/p.perPage {
		return p.total, p.total
	}
	from = (p.current - 1) * p.perPage
	return from, min(p.total, from+p.perPage)
}

// writePaging writes the four paging fields, as numbers or (php-strings)
// numeric strings.
func writePaging(e *enc, p page, asStrings bool) {
	e.key("total").num(int64(p.total), asStrings)
	e.key("per_page").num(int64(p.perPage), asStrings)
	e.key("current_page").num(int64(p.current), asStrings)
	e.key("last_page").num(int64(p.lastPage()), asStrings)
}

// writeList writes one page of a main-interface list in the configured shape.
// keyOf gives an element's key (for the keyed rows shape); item writes the
// element itself; wrap, when not empty, wraps each element in {wrap: ...}.
func writeList(e *enc, st mainStyle, p page, wrap string, keyOf func(k int) string, item func(e *enc, k int)) {
	from, to := p.bounds()
	elements := func(keyed bool) { writeElements(e, st, from, to, keyed, wrap, keyOf, item) }
	switch st.listShape {
	case VariantOffsetPaging, VariantCursorPaging, VariantLinkPaging, VariantSilentCap, VariantIgnorePage:
		writePagedList(e, st, p, func() { elements(false) })
	case VariantBareArray:
		elements(false)
	case VariantMetaPaging, VariantPaginationPaging:
		e.open()
		e.key("data")
		elements(false)
		if st.listShape == VariantMetaPaging {
			e.key("meta")
		} else {
			e.key("pagination")
		}
		e.open()
		writePaging(e, p, st.phpStrings)
		e.close()
		e.close()
	case VariantPHPPaginator:
		writePHPPaginator(e, st, p, from, to, func() { elements(false) })
	case VariantPHPResource:
		writePHPResource(e, st, p, func() { elements(false) })
	case VariantNoPaging:
		e.open()
		e.key("data")
		elements(false)
		e.close()
	case VariantRowsShape, VariantRowsArray:
		e.open()
		e.key("data")
		e.open()
		e.key("rows")
		elements(st.listShape == VariantRowsShape)
		writePaging(e, p, st.phpStrings)
		e.close()
		e.close()
	default:
		e.open()
		e.key("data")
		elements(false)
		writePaging(e, p, st.phpStrings)
		e.close()
	}
}

// writeElements writes the elements [from, to) of a list: an array, or
// when keyed an object of the elements under their keys (keyOf); item
// writes an element, wrapped in {wrap: ...} when wrap is not empty.
func writeElements(e *enc, st mainStyle, from, to int, keyed bool, wrap string, keyOf func(k int) string, item func(e *enc, k int)) {
	if to == from {
		switch {
		case keyed && st.emptyRows():
			e.raw("[]")
		case keyed:
			e.raw("{}")
		default:
			st.emptyArr(e)
		}
		return
	}
	if keyed {
		e.open()
	} else {
		e.openArr()
	}
	for k := from; k < to; k++ {
		if keyed {
			e.keyStr(keyOf(k))
		}
		if wrap != "" {
			e.open()
			e.key(wrap)
			item(e, k)
			e.close()
		} else {
			item(e, k)
		}
	}
	if keyed {
		e.close()
	} else {
		e.closeArr()
	}
}

// writePHPPaginator writes page p, holding the elements [from, to) that
// elements writes, as Laravel's LengthAwarePaginator does: the paging
// fields beside data, with the page URLs, in its (alphabetical) order.
func writePHPPaginator(e *enc, st mainStyle, p page, from, to int, elements func()) {
	last := p.lastPage()
	e.open()
	e.key("current_page").num(int64(p.current), st.phpStrings)
	e.key("data")
	elements()
	e.key("first_page_url").str(pageURL(p.path, 1))
	e.key("from")
	if to > from {
		e.num(int64(from+1), st.phpStrings)
	} else {
		e.null()
	}
	e.key("last_page").num(int64(last), st.phpStrings)
	e.key("last_page_url").str(pageURL(p.path, max(last, 1)))
	e.key("links")
	writePaginatorLinks(e, p, p.path)
	e.key("next_page_url")
	urlOrNull(e, p.path, p.current+1, last)
	e.key("path").str(p.path)
	e.key("per_page").num(int64(p.perPage), st.phpStrings)
	e.key("prev_page_url")
	urlOrNull(e, p.path, p.current-1, last)
	e.key("to")
	if to > from {
		e.num(int64(to), st.phpStrings)
	} else {
		e.null()
	}
	e.key("total").num(int64(p.total), st.phpStrings)
	e.close()
}

// writePHPResource writes page p, whose elements elements writes, as a
// Laravel API resource collection: data, links, meta.
func writePHPResource(e *enc, st mainStyle, p page, elements func()) {
	last := p.lastPage()
	e.open()
	e.key("data")
	elements()
	e.key("links")
	e.open()
	e.key("first").str(pageURL(p.path, 1))
	e.key("last").str(pageURL(p.path, max(last, 1)))
	e.key("prev")
	urlOrNull(e, p.path, p.current-1, last)
	e.key("next")
	urlOrNull(e, p.path, p.current+1, last)
	e.close()
	e.key("meta")
	e.open()
	writeLaravelMeta(e, p, p.path, st.phpStrings)
	e.key("links")
	writePaginatorLinks(e, p, p.path)
	e.close()
	e.close()
}
