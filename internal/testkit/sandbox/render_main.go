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
	e.key("id")
	e.id(b.id, st.numericIDs)
	e.key("name")
	e.str(b.name)
	e.key("status")
	e.str(b.status)
	e.key("date_created")
	e.date(b.dateCreated)
	e.key("account_manager")
	e.str(d.userName(b.accountManager))
	e.key("projects_count")
	st.int(e, int64(b.projectsCount))
	e.key("financial_summary")
	total, invoiced, collected := b.financialSummary()
	e.open()
	e.key("total_budget")
	st.money(e, total)
	e.key("invoiced")
	st.money(e, invoiced)
	e.key("collected")
	st.money(e, collected)
	e.key("currency")
	e.str(b.currency)
	e.close()
	if st.phpEmptyArray {
		e.key("custom_fields")
		st.emptyObj(e)
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
	e.key("legal_name")
	e.str(b.legalName)
	e.key("fiscal_code")
	e.str(b.fiscalCode)
	e.key("registration_number")
	e.str(b.regNumber)
	e.key("address")
	e.str(b.address)
	e.key("city")
	e.str(b.city)
	e.key("county")
	e.str(b.county)
	e.key("country")
	e.str("România")
	e.key("website")
	e.str(b.website)
	e.key("industry")
	e.str(b.industry)
	e.close()
	e.key("metadata")
	e.open()
	e.key("created_by")
	e.id(b.createdBy, st.numericIDs)
	e.key("created_at")
	e.ts(b.createdAt)
	e.key("updated_at")
	e.ts(b.updatedAt)
	st.writeArr(e, "tags", len(b.tags), func(k int) { e.str(b.tags[k]) })
	e.key("source")
	e.str(b.source)
	e.close()
	e.close()
}

func writeContact(e *enc, c *contact, st mainStyle) {
	n := func(k string) string { return st.name(k, renamedContact) }
	e.open()
	e.key("id")
	e.id(c.id, st.numericIDs)
	e.key(n("first_name"))
	e.str(c.first)
	e.key(n("last_name"))
	st.strOrNull(e, c.last, c.lastNull)
	e.key("full_name")
	e.str(c.full)
	e.key("email")
	st.strOrNull(e, c.email, c.emailNull)
	e.key("phone")
	st.strOrNull(e, c.phone, c.phoneNull)
	e.key(n("position"))
	e.str(c.position)
	e.key(n("is_primary"))
	st.flag(e, c.primary)
	e.close()
}

func (d *dataset) writeProject(e *enc, p *project, detail bool, st mainStyle) {
	b := d.brands[p.brand]
	n := func(k string) string { return st.name(k, renamedProject) }
	e.open()
	e.key("id")
	e.id(p.id, st.numericIDs)
	e.key("brand_id")
	e.id(b.id, st.numericIDs)
	e.key(n("name"))
	e.str(p.name)
	e.key(n("status"))
	e.str(p.status)
	e.key(n("start_date"))
	e.date(p.start)
	e.key(n("deadline"))
	e.date(p.deadline)
	e.key("closed_at")
	st.tsOrNull(e, p.closedAt)
	e.key("updated_at")
	e.ts(p.updatedAt)
	if st.renamed {
		e.key("budget_total")
		st.money(e, p.budgetTotal)
		e.key("budget_currency")
		e.str(b.currency)
	} else {
		e.key("budget")
		e.open()
		e.key("amount")
		st.money(e, p.budgetTotal)
		e.key("currency")
		e.str(b.currency)
		e.close()
	}
	if st.phpEmptyArray {
		e.key("custom_fields")
		st.emptyObj(e)
	}
	if detail {
		st.writeArr(e, "team", len(p.team), func(k int) {
			t := p.team[k]
			e.open()
			e.key("user_id")
			e.id(t.userID, st.numericIDs)
			e.key("full_name")
			e.str(d.userName(t.userID))
			e.key("role")
			e.str(t.role)
			e.close()
		})
		st.writeArr(e, "deliverables", len(p.deliverables), func(k int) {
			dl := p.deliverables[k]
			e.open()
			e.key("id")
			e.id(dl.id, st.numericIDs)
			e.key("name")
			e.str(dl.name)
			e.key("due_date")
			e.date(dl.due)
			e.key("status")
			e.str(dl.status)
			e.key("delivered_at")
			st.tsOrNull(e, dl.deliveredAt)
			e.close()
		})
		st.writeArr(e, "history", len(p.history), func(k int) {
			h := p.history[k]
			e.open()
			e.key("at")
			e.ts(h.at)
			e.key("field")
			e.str(h.field)
			e.key("from")
			st.strOrNull(e, h.from, h.fromNull)
			e.key("to")
			st.strOrNull(e, h.to, h.toNull)
			e.key("by_user_id")
			e.id(h.by, st.numericIDs)
			e.close()
		})
	}
	e.close()
}

// writeRef writes a reference to another record; malformed as {"id":N}.
func writeRef(e *enc, id int64, st mainStyle, malformed bool) {
	if malformed {
		e.open()
		e.key("id")
		e.int(id)
		e.close()
		return
	}
	e.id(id, st.numericIDs)
}

// writeAmount writes an amount; malformed as typed text.
func writeAmount(e *enc, key string, cents int64, cur string, st mainStyle, badKind int) {
	switch badKind {
	case 3: // missing
		return
	case 0:
		e.key(key)
		e.str(badAmount(cents, cur))
	default:
		e.key(key)
		st.money(e, cents)
	}
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
	e.key("id")
	e.id(bg.id, st.numericIDs)
	e.key("project_id")
	writeRef(e, p.id, st, badKind == 1)
	e.key("brand_id")
	e.id(b.id, st.numericIDs)
	writeAmount(e, "amount", bg.amount, b.currency, st, badKind)
	e.key("currency")
	e.str(b.currency)
	writeDay(e, "period_start", bg.periodStart, badKind == 2)
	e.key("period_end")
	e.date(bg.periodEnd)
	e.key("updated_at")
	e.ts(bg.updatedAt)
	e.close()
}

func (d *dataset) writeInvoice(e *enc, inv *invoice, st mainStyle, badKind int) {
	p := d.projects[inv.project]
	b := d.brands[p.brand]
	n := func(k string) string { return st.name(k, renamedInvoice) }
	e.open()
	e.key("id")
	e.id(inv.id, st.numericIDs)
	e.key(n("number"))
	e.str(inv.number)
	e.key("project_id")
	writeRef(e, p.id, st, badKind == 1)
	e.key("brand_id")
	e.id(b.id, st.numericIDs)
	writeDay(e, n("issue_date"), inv.issue, badKind == 2)
	e.key(n("due_date"))
	e.date(inv.due)
	writeAmount(e, n("amount"), inv.amount, b.currency, st, badKind)
	e.key("currency")
	e.str(b.currency)
	e.key("status")
	e.str(inv.status)
	e.key("updated_at")
	e.ts(inv.updatedAt)
	e.close()
}

func (d *dataset) writeCollection(e *enc, c *collection, st mainStyle, badKind int) {
	inv := d.invoices[c.invoice]
	b := d.brands[d.projects[inv.project].brand]
	e.open()
	e.key("id")
	e.id(c.id, st.numericIDs)
	e.key("invoice_id")
	writeRef(e, inv.id, st, badKind == 1)
	writeDay(e, "collected_on", c.on, badKind == 2)
	writeAmount(e, "amount", c.amount, b.currency, st, badKind)
	e.key("currency")
	e.str(b.currency)
	e.key("updated_at")
	e.ts(c.updatedAt)
	e.close()
}

func (d *dataset) writePayment(e *enc, pm *payment, st mainStyle, badKind int) {
	p := d.projects[pm.project]
	b := d.brands[p.brand]
	e.open()
	e.key("id")
	e.id(pm.id, st.numericIDs)
	e.key("project_id")
	writeRef(e, p.id, st, badKind == 1)
	e.key("brand_id")
	e.id(b.id, st.numericIDs)
	e.key("payee")
	e.str(pm.payee)
	writeDay(e, "paid_on", pm.paidOn, badKind == 2)
	writeAmount(e, "amount", pm.amount, b.currency, st, badKind)
	e.key("currency")
	e.str(b.currency)
	e.key("status")
	e.str(pm.status)
	e.key("updated_at")
	e.ts(pm.updatedAt)
	e.close()
}

func writeProfit(e *enc, r *profitRow, st mainStyle) {
	e.open()
	e.key("level")
	e.str(r.level)
	e.key("entity_id")
	e.id(r.entityID, st.numericIDs)
	e.key("period")
	e.str(periodString(r.period))
	e.key("revenue")
	st.money(e, r.revenue)
	e.key("cost")
	st.money(e, r.cost)
	e.key("margin")
	st.money(e, r.revenue-r.cost)
	e.key("currency")
	e.str(r.currency)
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
	e.key("period")
	e.str(periodString(period))
	e.key("total_budget")
	st.money(e, s.totalBudget)
	e.key("invoiced")
	st.money(e, s.invoiced)
	e.key("collected")
	st.money(e, s.collected)
	e.key("paid")
	st.money(e, s.paid)
	e.key("profit")
	st.money(e, s.invoiced-s.paid)
	e.key("currency")
	e.str(summaryCurrency)
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
	e.key("total")
	e.num(int64(p.total), asStrings)
	e.key("per_page")
	e.num(int64(p.perPage), asStrings)
	e.key("current_page")
	e.num(int64(p.current), asStrings)
	e.key("last_page")
	e.num(int64(p.lastPage()), asStrings)
}

// writeList writes one page of a main-interface list in the configured shape.
// keyOf gives an element's key (for the keyed rows shape); item writes the
// element itself; wrap, when not empty, wraps each element in {wrap: ...}.
func writeList(e *enc, st mainStyle, p page, wrap string, keyOf func(k int) string, item func(e *enc, k int)) {
	from, to := p.bounds()
	elements := func(keyed bool) {
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
		// Laravel's LengthAwarePaginator: the paging fields beside data,
		// with the page URLs, in its (alphabetical) order.
		last := p.lastPage()
		e.open()
		e.key("current_page")
		e.num(int64(p.current), st.phpStrings)
		e.key("data")
		elements(false)
		e.key("first_page_url")
		e.str(pageURL(p.path, 1))
		e.key("from")
		if to > from {
			e.num(int64(from+1), st.phpStrings)
		} else {
			e.null()
		}
		e.key("last_page")
		e.num(int64(last), st.phpStrings)
		e.key("last_page_url")
		e.str(pageURL(p.path, max(last, 1)))
		e.key("links")
		writePaginatorLinks(e, p, p.path)
		e.key("next_page_url")
		urlOrNull(e, p.path, p.current+1, last)
		e.key("path")
		e.str(p.path)
		e.key("per_page")
		e.num(int64(p.perPage), st.phpStrings)
		e.key("prev_page_url")
		urlOrNull(e, p.path, p.current-1, last)
		e.key("to")
		if to > from {
			e.num(int64(to), st.phpStrings)
		} else {
			e.null()
		}
		e.key("total")
		e.num(int64(p.total), st.phpStrings)
		e.close()
	case VariantPHPResource:
		// A Laravel API resource collection: data, links, meta.
		last := p.lastPage()
		e.open()
		e.key("data")
		elements(false)
		e.key("links")
		e.open()
		e.key("first")
		e.str(pageURL(p.path, 1))
		e.key("last")
		e.str(pageURL(p.path, max(last, 1)))
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
