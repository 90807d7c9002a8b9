package sandbox

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

const day = 24 * time.Hour

// Brand, project and finance records are few (tens of thousands at most), so
// they are generated once at New and kept; admin edits change them in place.

type contact struct {
	id        int64
	first     string
	last      string
	lastNull  bool
	full      string
	email     string
	emailNull bool
	phone     string
	phoneNull bool
	position  string
	primary   bool
}

type brand struct {
	idx            int
	id             int64
	name           string
	slug           string
	status         string
	dateCreated    time.Time
	accountManager int64 // platform user id
	currency       string
	team           []int64 // platform user ids working for the brand
	contacts       []contact
	projects       []int // indexes into dataset.projects
	outsiders      []int // indexes into the outsider pool

	legalName, fiscalCode, regNumber, address, city, county, website, industry string
	createdBy                                                                  int64
	createdAt, updatedAt                                                       time.Time
	tags                                                                       []string
	source                                                                     string

	deleted bool
	// fsOverride replaces computed financial_summary amounts (admin edit).
	fsOverride [3]*int64 // total_budget, invoiced, collected

	// aggregates, recomputed after every change
	projectsCount                  int
	totalBudget, invoiced, collect int64
}

type teamMember struct {
	userID int64
	role   string
}

type deliverable struct {
	id          int64
	name        string
	due         time.Time
	status      string
	deliveredAt time.Time // zero = null
}

type historyEntry struct {
	at       time.Time
	field    string
	from, to string
	fromNull bool
	toNull   bool
	by       int64
}

type project struct {
	idx          int
	id           int64
	brand        int // index
	name         string
	status       string
	start        time.Time
	deadline     time.Time
	closedAt     time.Time // zero = null
	updatedAt    time.Time
	team         []teamMember
	deliverables []deliverable
	history      []historyEntry
	deleted      bool
	budgets      []int
	invoices     []int
	payments     []int
	budgetTotal  int64 // aggregate
	seq          int   // position within its brand, for generation order
}

type budget struct {
	ledgerEntry
	project     int
	periodStart time.Time
	periodEnd   time.Time
}

type invoice struct {
	ledgerEntry
	number      string
	project     int
	issue, due  time.Time
	collections []int
}

type collection struct {
	ledgerEntry
	invoice int
	on      time.Time
}

type payment struct {
	ledgerEntry
	project int
	payee   string
	paidOn  time.Time
}

// Status values.
const (
	invoiceCancelled = "anulată"
	paymentDone      = "efectuată"
	projectDone      = "finalizat"
	projectCancelled = "anulat"
	projectRunning   = "în desfășurare"
	projectOnHold    = "în așteptare"
	projectPlanned   = "planificat"
)

// profitRow is one profitability row (level project or brand).
type profitRow struct {
	level    string
	entityID int64
	period   int // months since year 0
	revenue  int64
	cost     int64
	currency string
}

func (p profitRow) key() string {
	return p.level + ":" + strconv.FormatInt(p.entityID, 10) + ":" + periodString(p.period)
}

// summaryMonth holds the agency-wide RON sums of one month.
type summaryMonth struct {
	totalBudget, invoiced, collected, paid int64
}

type dataset struct {
	people    []person // platform users, index = id
	histStart time.Time
	start     time.Time

	brands      []*brand
	projects    []*project
	budgets     []*budget
	invoices    []*invoice
	collections []*collection
	payments    []*payment

	brandByID      map[int64]int
	projectByID    map[int64]int
	budgetByID     map[int64]int
	invoiceByID    map[int64]int
	collectionByID map[int64]int
	paymentByID    map[int64]int

	// brandCum is the cumulative e-mail weight of brands (for picking a brand).
	brandCum []float64

	profit      []profitRow // project rows then brand rows, by entity id then period
	summary     map[int]*summaryMonth
	firstPeriod int
}

func monthIndex(t time.Time) int { return t.Year()*12 + int(t.Month()) - 1 }

func periodString(p int) string {
	y, m := p/12, p%12+1
	b := strconv.AppendInt(nil, int64(y), 10)
	b = append(b, '-', byte('0'+m/10), byte('0'+m%10))
	return string(b)
}

func dayOf(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// at returns the day plus a working-hours time of day.
func at(r *rng, d time.Time) time.Time {
	return dayOf(d).Add(time.Duration(r.between(8*3600, 18*3600)) * time.Second)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func randDay(r *rng, lo, hi time.Time) time.Time {
	lo, hi = dayOf(lo), dayOf(hi)
	if !hi.After(lo) {
		return lo
	}
	n := int(hi.Sub(lo) / day)
	return lo.AddDate(0, 0, r.between(0, n))
}

// currency scale: generated amounts are drawn in RON and scaled.
func currencyScale(cur string) float64 {
	switch cur {
	case "EUR":
		return 0.2
	case "USD":
		return 0.22
	}
	return 1
}

// ronRate is the fixed conversion rate to RON in units of 1/10000.
func ronRate(cur string) int64 {
	switch cur {
	case "EUR":
		return 49750
	case "USD":
		return 45600
	}
	return 10000
}

// toRON converts cents to RON cents at the fixed rate, rounding half up.
func toRON(cents int64, cur string) int64 {
	v := cents * ronRate(cur)
	if v >= 0 {
		return (v + 5000) / 10000
	}
	return -((-v + 5000) / 10000)
}

// splitCents divides total into n positive parts with random weights; the
// parts add up to total exactly.
func splitCents(r *rng, total int64, n int) []int64 {
	if n < 1 {
		n = 1
	}
	w := make([]float64, n)
	var sum float64
	for i := range w {
		w[i] = 0.5 + r.float()
		sum += w[i]
	}
	parts := make([]int64, n)
	var used int64
	for i := 0; i < n-1; i++ {
		parts[i] = int64(float64(total) * w[i] / sum)
		used += parts[i]
	}
	parts[n-1] = total - used
	return parts
}

// genDataset generates the brands, projects and finance records of o for
// the platform users given, and derives their aggregates.
func genDataset(o *Options, users []person) *dataset {
	seed := o.Seed
	now := o.Start.UTC()
	d := &dataset{
		people:         users,
		histStart:      dayOf(now.AddDate(0, 0, -o.HistoryDays)),
		start:          now,
		brandByID:      map[int64]int{},
		projectByID:    map[int64]int{},
		budgetByID:     map[int64]int{},
		invoiceByID:    map[int64]int{},
		collectionByID: map[int64]int{},
		paymentByID:    map[int64]int{},
	}
	ids := newRNG(seed, tagIDs, 0)
	d.genBrands(o, now, &ids)
	d.weighBrands(seed)
	d.genProjects(o, now)
	d.genFinance(seed, now, &ids)
	d.recompute()
	return d
}

// brandOrder returns the indexes of brandNames in a seeded random order.
func brandOrder(seed int64) []int {
	perm := newRNG(seed, tagBrand, 1<<40)
	order := make([]int, len(brandNames))
	for i := range order {
		order[i] = i
	}
	for i := len(order) - 1; i > 0; i-- {
		j := perm.intn(i + 1)
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// brandName is the name of brand k (0-based) under order: once every name is
// taken, the names repeat with a number after them.
func brandName(order []int, k int) string {
	name := brandNames[order[k%len(order)]]
	if k >= len(order) {
		name += " " + strconv.Itoa(k/len(order)+1)
	}
	return name
}

// genBrands generates o.Brands brands; ids draws the gaps between contact
// ids.
func (d *dataset) genBrands(o *Options, now time.Time, ids *rng) {
	order := brandOrder(o.Seed)
	// Brands are numbered 1..Brands and projects 1..P (in order of their
	// start dates), so tests can name them; other records get gapped ids in
	// their own ranges.
	var nextContact int64 = 7000
	for k := 0; k < o.Brands; k++ {
		b := genBrand(o, k, brandName(order, k), now, ids, &nextContact)
		d.brandByID[b.id] = k
		d.brands = append(d.brands, b)
	}
}

// genBrand generates brand k (0-based), id k+1, with its contacts, whose
// ids follow *nextContact by gaps that ids draws.
func genBrand(o *Options, k int, name string, now time.Time, ids *rng, nextContact *int64) *brand {
	r := newRNG(o.Seed, tagBrand, uint64(k))
	b := &brand{idx: k, id: int64(k + 1), name: name, status: "Activ"}
	b.slug = asciiFold(strings.NewReplacer("&", "si", `"`, "").Replace(name))
	if r.chance(0.05) {
		b.status = "Inactiv"
	}
	switch x := r.float(); {
	case x < 0.55:
		b.currency = "RON"
	case x < 0.9:
		b.currency = "EUR"
	default:
		b.currency = "USD"
	}
	b.dateCreated = now.AddDate(0, 0, -r.between(30, o.HistoryDays+1500))
	b.dateCreated = dayOf(b.dateCreated)
	b.accountManager = int64(r.between(1, o.Users))
	nTeam := min(o.Users, r.between(4, 8))
	for len(b.team) < nTeam {
		u := int64(r.between(1, o.Users))
		if !slices.Contains(b.team, u) {
			b.team = append(b.team, u)
		}
	}
	c := pick(&r, cities)
	b.city, b.county = c.city, c.county
	b.legalName = strings.ReplaceAll(name, `"`, "") + pick(&r, []string{" SRL", " SRL", " SA", " SRL-D"})
	b.fiscalCode = "RO" + strconv.Itoa(r.between(10000000, 49999999))
	b.regNumber = "J" + strconv.Itoa(r.between(1, 52)) + "/" + strconv.Itoa(r.between(100, 9999)) + "/" + strconv.Itoa(b.dateCreated.Year()-r.between(0, 12))
	b.address = pick(&r, streets) + " nr. " + strconv.Itoa(r.between(1, 180))
	b.website = "https://www." + b.slug + ".ro"
	b.industry = pick(&r, industries)
	b.createdBy = int64(r.between(1, o.Users))
	b.createdAt = at(&r, b.dateCreated)
	b.updatedAt = minTime(b.createdAt.AddDate(0, 0, r.between(0, 400)), now.Add(-time.Hour))
	b.updatedAt = maxTime(b.updatedAt, b.createdAt)
	for range r.between(1, 3) {
		t := pick(&r, brandTags)
		if !slices.Contains(b.tags, t) {
			b.tags = append(b.tags, t)
		}
	}
	b.source = pick(&r, []string{"platformă", "platformă", "import"})
	b.genContacts(&r, ids, nextContact)
	return b
}

// genContacts gives b one to four contacts drawn from r, the first one its
// primary contact; their ids follow *next by gaps that ids draws.
func (b *brand) genContacts(r, ids *rng, next *int64) {
	for ci := range r.between(1, 4) {
		*next += int64(ids.between(1, 5))
		first := firstName(r)
		last := pick(r, lastNames)
		ct := contact{id: *next, first: first, last: last, full: first + " " + last,
			position: pick(r, contactPositions), primary: ci == 0}
		ct.email = strings.ReplaceAll(asciiFold(first), "-", "") + "." + strings.ReplaceAll(asciiFold(last), "-", "") + "@" + b.slug + ".ro"
		if r.chance(0.1) {
			ct.lastNull, ct.last, ct.full = true, "", first
		}
		if r.chance(0.05) {
			ct.emailNull = true
		}
		ct.phone, ct.phoneNull = drawPhone(r, 0.7)
		b.contacts = append(b.contacts, ct)
	}
}

// weighBrands sets the brands' cumulative e-mail weights: a few brands are
// much busier than others.
func (d *dataset) weighBrands(seed int64) {
	wr := newRNG(seed, tagBrandWeight, 0)
	d.brandCum = make([]float64, len(d.brands))
	var cum float64
	for i := range d.brands {
		cum += 0.2 + wr.float()*wr.float()*3
		d.brandCum[i] = cum
	}
}

// genProjects generates o.ProjectsPerBrand projects per brand, numbered
// 1..P in order of their start dates, and fills them in that order.
func (d *dataset) genProjects(o *Options, now time.Time) {
	seed := o.Seed
	for _, b := range d.brands {
		for j := 0; j < o.ProjectsPerBrand; j++ {
			r := newRNG(seed, tagProject, uint64(b.idx)<<16|uint64(j))
			lo := maxTime(d.histStart, b.dateCreated)
			hi := now.AddDate(0, 0, -10)
			if !hi.After(lo) {
				lo = hi.AddDate(0, 0, -60)
			}
			p := &project{brand: b.idx, seq: j, start: randDay(&r, lo, hi)}
			d.projects = append(d.projects, p)
		}
	}
	slices.SortStableFunc(d.projects, func(a, b *project) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.brand, b.brand); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	var nextDeliverable int64 = 90000
	for i, p := range d.projects {
		pid := int64(i + 1)
		p.idx, p.id = i, pid
		d.projectByID[pid] = i
		b := d.brands[p.brand]
		b.projects = append(b.projects, i)
		r := newRNG(seed, tagProject, uint64(p.brand)<<16|uint64(p.seq)|1<<40)
		d.fillProject(&r, p, b, now, &nextDeliverable)
	}
}

// fillProject draws the rest of project p of brand b from r: name, deadline,
// team, status, history and deliverables, whose ids follow *nextDeliverable.
func (d *dataset) fillProject(r *rng, p *project, b *brand, now time.Time, nextDeliverable *int64) {
	p.name = pick(r, projectKinds) + " " + strconv.Itoa(p.start.Year())
	deadline0 := p.start.AddDate(0, 0, r.between(20, 240))
	p.deadline = deadline0
	moved := r.chance(0.3)
	if moved {
		p.deadline = deadline0.AddDate(0, 0, r.between(7, 45))
	}
	p.drawTeam(r, b)
	p.drawStatus(r, now)
	p.genHistory(r, deadline0, moved, now)
	p.genDeliverables(r, now, nextDeliverable)
}

// drawTeam picks two to five members of b's team for p, the first one its
// project manager.
func (p *project) drawTeam(r *rng, b *brand) {
	nTeam := min(len(b.team), r.between(2, 5))
	perm := r.intn(len(b.team))
	for t := 0; t < nTeam; t++ {
		role := teamRoles[0]
		if t > 0 {
			role = teamRoles[1+r.intn(len(teamRoles)-1)]
		}
		p.team = append(p.team, teamMember{userID: b.team[(perm+t)%len(b.team)], role: role})
	}
}

// drawStatus draws p's status, and when it is closed the time it closed
// (before now): projects past their deadline are mostly done.
func (p *project) drawStatus(r *rng, now time.Time) {
	switch {
	case p.deadline.Before(now.AddDate(0, 0, -14)):
		switch x := r.float(); {
		case x < 0.85:
			p.status = projectDone
			p.closedAt = at(r, p.deadline.AddDate(0, 0, r.between(-5, 13)))
		case x < 0.95:
			p.status = projectCancelled
			span := int(p.deadline.Sub(p.start) / day)
			p.closedAt = at(r, p.start.AddDate(0, 0, span*r.between(30, 90)/100))
		default:
			p.status = projectRunning
		}
	case r.chance(0.8):
		p.status = projectRunning
	default:
		p.status = projectOnHold
	}
	if !p.closedAt.IsZero() && p.closedAt.After(now) {
		p.closedAt = now.Add(-time.Hour)
	}
}

// genHistory writes p's history of changes, all before now and in time
// order, and sets updatedAt to the last: its creation and start, the move of
// its deadline from deadline0 when moved, and the change to its status.
func (p *project) genHistory(r *rng, deadline0 time.Time, moved bool, now time.Time) {
	pm := p.team[0].userID
	by := func() int64 { return p.team[r.intn(len(p.team))].userID }
	created := at(r, p.start)
	p.history = append(p.history,
		historyEntry{at: created, field: "status", fromNull: true, to: projectPlanned, by: pm},
		historyEntry{at: created.Add(time.Duration(r.between(20, 30)) * time.Hour), field: "status", from: projectPlanned, to: projectRunning, by: pm},
	)
	if moved {
		mid := at(r, randDay(r, p.start.AddDate(0, 0, 2), minTime(deadline0, now.AddDate(0, 0, -1))))
		p.history = append(p.history, historyEntry{at: mid, field: "deadline",
			from: deadline0.Format(layoutDate), to: p.deadline.Format(layoutDate), by: by()})
	}
	switch p.status {
	case projectOnHold:
		t := at(r, randDay(r, p.start.AddDate(0, 0, 3), now.AddDate(0, 0, -1)))
		p.history = append(p.history, historyEntry{at: t, field: "status", from: projectRunning, to: projectOnHold, by: by()})
	case projectDone, projectCancelled:
		p.history = append(p.history, historyEntry{at: p.closedAt, field: "status", from: projectRunning, to: p.status, by: pm})
	}
	for h := range p.history {
		if !p.history[h].at.Before(now) {
			p.history[h].at = now.Add(-time.Duration(len(p.history)-h) * time.Minute)
		}
	}
	slices.SortStableFunc(p.history, func(a, b historyEntry) int { return a.at.Compare(b.at) })
	p.updatedAt = p.history[len(p.history)-1].at
}

// genDeliverables gives p one to six deliverables due by its deadline, in
// order of their due dates, with ids after *next.
func (p *project) genDeliverables(r *rng, now time.Time, next *int64) {
	for range r.between(1, 6) {
		dl := deliverable{name: pick(r, deliverableNames), due: randDay(r, p.start.AddDate(0, 0, 5), p.deadline)}
		switch {
		case dl.due.Before(now) && (p.status == projectDone || r.chance(0.85)):
			dl.status = "livrat"
			dl.deliveredAt = at(r, dl.due.AddDate(0, 0, r.between(-3, 5)))
			if dl.deliveredAt.After(now) {
				dl.deliveredAt = now.Add(-2 * time.Hour)
			}
		case p.status == projectCancelled:
			dl.status = "anulat"
		case dl.due.Before(now):
			dl.status = "întârziat"
		default:
			dl.status = "în lucru"
		}
		p.deliverables = append(p.deliverables, dl)
	}
	slices.SortStableFunc(p.deliverables, func(a, b deliverable) int { return a.due.Compare(b.due) })
	for k := range p.deliverables {
		*next += int64(r.between(1, 3))
		p.deliverables[k].id = *next
	}
}

// pendingInvoice is a generated invoice with its collections, before the
// ledgers are numbered.
type pendingInvoice struct {
	inv  *invoice
	cols []*collection
}

func (p pendingInvoice) entry() *ledgerEntry { return p.inv.entry() }

// genFinance generates every project's budgets, invoices with their
// collections, and payments, then numbers the ledgers with ids.
func (d *dataset) genFinance(seed int64, now time.Time, ids *rng) {
	var budgets []*budget
	var invoices []pendingInvoice
	var payments []*payment
	for _, p := range d.projects {
		r := newRNG(seed, tagFinance, uint64(p.id))
		b := d.brands[p.brand]
		var budgetTotal, invoiced int64
		budgets, budgetTotal = appendBudgets(budgets, &r, p, currencyScale(b.currency), now)
		progress, end := invoiceProgress(p, now)
		toInvoice := int64(float64(budgetTotal) * progress * (0.85 + 0.15*r.float()))
		invoices, invoiced = appendInvoices(invoices, &r, p, toInvoice, end, now)
		payments = appendPayments(payments, &r, p, invoiced, end, now)
	}
	d.numberFinance(ids, budgets, invoices, payments)
}

// appendBudgets appends project p's budgets to list: one to three phases
// covering the project, drawn in RON and scaled to its currency. It returns
// the list and the budgets' total.
func appendBudgets(list []*budget, r *rng, p *project, scale float64, now time.Time) ([]*budget, int64) {
	nb := r.between(1, 3)
	span := p.deadline.Sub(p.start)
	var budgetTotal int64
	for i := range nb {
		units := float64(r.between(2000, 60000)) * scale
		cents := int64(units/50+0.5) * 50 * 100
		if cents < 5000 {
			cents = 5000
		}
		ps := dayOf(p.start.Add(span * time.Duration(i) / time.Duration(nb)))
		pe := dayOf(p.start.Add(span * time.Duration(i+1) / time.Duration(nb)))
		if i < nb-1 {
			pe = pe.AddDate(0, 0, -1)
		}
		upd := at(r, ps.AddDate(0, 0, -r.between(1, 10)))
		upd = minTime(maxTime(upd, at(r, p.start)), now.Add(-time.Hour))
		list = append(list, &budget{ledgerEntry: ledgerEntry{amount: cents, updatedAt: upd}, project: p.idx, periodStart: ps, periodEnd: pe})
		budgetTotal += cents
	}
	return list, budgetTotal
}

// invoiceProgress returns the share (0..1) of p's budget that its progress
// by now allows to invoice, and the day its work ends: the day it closed,
// else its deadline.
func invoiceProgress(p *project, now time.Time) (progress float64, end time.Time) {
	span := p.deadline.Sub(p.start)
	progress = 1.0
	end = p.deadline
	if !p.closedAt.IsZero() {
		end = dayOf(p.closedAt)
	}
	if p.status == projectCancelled {
		progress = float64(end.Sub(p.start)) / float64(span)
	} else if p.status != projectDone && end.After(now) {
		progress = float64(now.Sub(p.start)) / float64(span)
	}
	return max(0, min(1, progress)), end
}

// appendInvoices appends to list project p's invoices for toInvoice cents,
// issued a week after its start until 15 days after end (and before now).
// It returns the list and the amount invoiced, cancelled invoices left out.
func appendInvoices(list []pendingInvoice, r *rng, p *project, toInvoice int64, end, now time.Time) ([]pendingInvoice, int64) {
	invFrom := p.start.AddDate(0, 0, 7)
	invTo := minTime(now.AddDate(0, 0, -1), end.AddDate(0, 0, 15))
	var invoiced int64
	if toInvoice < 100 || !invTo.After(invFrom) {
		return list, invoiced
	}
	n := max(1, min(6, int(invTo.Sub(invFrom)/(30*day))+r.between(0, 1)))
	parts := splitCents(r, toInvoice, n)
	for i, amount := range parts {
		issue := dayOf(invFrom.Add(invTo.Sub(invFrom)*time.Duration(i+1)/time.Duration(n+1)).AddDate(0, 0, r.between(-3, 3)))
		issue = minTime(maxTime(issue, invFrom), invTo)
		pi := genInvoice(r, p, amount, issue, now)
		if pi.inv.status != invoiceCancelled {
			invoiced += amount
		}
		list = append(list, pi)
	}
	return list, invoiced
}

// genInvoice draws an invoice of project p for amount cents issued on issue:
// its due date, whether it was cancelled, else its collections by now and
// the status they give it.
func genInvoice(r *rng, p *project, amount int64, issue, now time.Time) pendingInvoice {
	inv := &invoice{ledgerEntry: ledgerEntry{amount: amount}, project: p.idx, issue: issue, due: issue.AddDate(0, 0, pick(r, []int{15, 30, 30, 45}))}
	pi := pendingInvoice{inv: inv}
	last := at(r, issue)
	if r.chance(0.03) {
		inv.status = invoiceCancelled
		last = at(r, issue.AddDate(0, 0, r.between(1, 10)))
	} else {
		last = pi.collect(r, last, now)
	}
	inv.updatedAt = minTime(last.Add(time.Duration(r.between(1, 180))*time.Minute), now.Add(-time.Minute))
	return pi
}

// collect draws how much of the invoice was collected by now, in one or two
// instalments, and sets its status from it. It returns the latest of last
// and the collections' update times.
func (pi *pendingInvoice) collect(r *rng, last, now time.Time) time.Time {
	inv := pi.inv
	frac := collectedShare(r, inv, now)
	collected := int64(float64(inv.amount) * frac)
	if frac == 1 {
		collected = inv.amount
	}
	if collected > 0 {
		ninst := 1
		if frac == 1 && r.chance(0.2) {
			ninst = 2
		}
		for _, part := range splitCents(r, collected, ninst) {
			on := randDay(r, inv.issue.AddDate(0, 0, 3), minTime(now.AddDate(0, 0, -1), inv.due.AddDate(0, 0, 40)))
			c := &collection{ledgerEntry: ledgerEntry{amount: part}, on: on}
			c.updatedAt = minTime(at(r, on), now.Add(-time.Minute))
			pi.cols = append(pi.cols, c)
			last = maxTime(last, c.updatedAt)
		}
	}
	switch {
	case collected == inv.amount:
		inv.status = "încasată"
	case collected > 0:
		inv.status = "parțial încasată"
	case now.After(inv.due):
		inv.status = "restantă"
	default:
		inv.status = "emisă"
	}
	return last
}

// collectedShare draws the share (0..1) of inv collected by now: most of
// an invoice long overdue, about half of a recent one, none of a new one.
func collectedShare(r *rng, inv *invoice, now time.Time) float64 {
	var frac float64
	switch x := r.float(); {
	case now.After(inv.due.AddDate(0, 0, 30)):
		switch {
		case x < 0.92:
			frac = 1
		case x < 0.97:
			frac = 0.5 + 0.4*r.float()
		}
	case now.After(inv.issue.AddDate(0, 0, 10)):
		switch {
		case x < 0.5:
			frac = 1
		case x < 0.65:
			frac = 0.3 + 0.5*r.float()
		}
	}
	return frac
}

// appendPayments appends to list project p's payments, the costs of what
// it invoiced, paid from its start until 30 days after end.
func appendPayments(list []*payment, r *rng, p *project, invoiced int64, end, now time.Time) []*payment {
	if invoiced <= 0 {
		return list
	}
	cost := int64(float64(invoiced) * (0.4 + 0.45*r.float()))
	n := r.between(1, 5)
	for _, amount := range splitCents(r, cost, n) {
		pm := &payment{ledgerEntry: ledgerEntry{amount: amount, status: paymentDone}, project: p.idx, payee: pick(r, payees)}
		pm.paidOn = randDay(r, p.start.AddDate(0, 0, 3), minTime(now.AddDate(0, 0, -1), end.AddDate(0, 0, 30)))
		switch x := r.float(); {
		case x < 0.05:
			pm.status = invoiceCancelled
		case x < 0.10:
			pm.status = "programată"
			pm.paidOn = dayOf(now.AddDate(0, 0, r.between(1, 30)))
		}
		pm.updatedAt = minTime(at(r, pm.paidOn), now.Add(-time.Minute))
		list = append(list, pm)
	}
	return list
}

// numberFinance numbers the generated ledgers with ids, each in the order
// of its records' dates as a real ledger's would be, numbers the invoices
// per year, and links every record to its project or invoice.
func (d *dataset) numberFinance(ids *rng, budgets []*budget, invoices []pendingInvoice, payments []*payment) {
	d.budgets = numberLedger(ids, 1000, budgets, d.budgetByID, func(x *budget) time.Time { return x.periodStart },
		func(i int, x *budget) { d.projects[x.project].budgets = append(d.projects[x.project].budgets, i) })
	yearSeq := map[int]int{}
	var cols []*collection
	numberLedger(ids, 20000, invoices, d.invoiceByID, func(x pendingInvoice) time.Time { return x.inv.issue },
		func(i int, pi pendingInvoice) {
			inv := pi.inv
			d.invoices = append(d.invoices, inv)
			y := inv.issue.Year()
			yearSeq[y]++
			inv.number = "AG-" + strconv.Itoa(y) + "-" + leftPad(strconv.Itoa(yearSeq[y]), 5)
			d.projects[inv.project].invoices = append(d.projects[inv.project].invoices, i)
			for _, c := range pi.cols {
				c.invoice = i
				cols = append(cols, c)
			}
		})
	d.collections = numberLedger(ids, 40000, cols, d.collectionByID, func(x *collection) time.Time { return x.on },
		func(i int, x *collection) {
			d.invoices[x.invoice].collections = append(d.invoices[x.invoice].collections, i)
		})
	d.payments = numberLedger(ids, 60000, payments, d.paymentByID, func(x *payment) time.Time { return x.paidOn },
		func(i int, x *payment) { d.projects[x.project].payments = append(d.projects[x.project].payments, i) })
}

func leftPad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return strings.Repeat("0", n-len(s)) + s
}

// entityPeriod is a project or brand (by index) and a month.
type entityPeriod struct {
	entity int
	period int
}

// recompute derives every aggregate from the records: brand projects_count
// and financial_summary, project budget totals, profitability and the agency
// summary. It runs at New and after every admin change.
func (d *dataset) recompute() {
	d.resetAggregates()
	projRev, projCost := d.sumLedgers()
	d.buildProfit(projRev, projCost)
	d.firstPeriod = monthIndex(d.histStart)
	for m := range d.summary {
		d.firstPeriod = min(d.firstPeriod, m)
	}
}

// resetAggregates zeroes the brands' and projects' sums, empties the agency
// summary and counts the brands' projects that are not deleted.
func (d *dataset) resetAggregates() {
	for _, b := range d.brands {
		b.projectsCount, b.totalBudget, b.invoiced, b.collect = 0, 0, 0, 0
	}
	d.summary = map[int]*summaryMonth{}
	for _, p := range d.projects {
		p.budgetTotal = 0
		if !p.deleted {
			d.brands[p.brand].projectsCount++
		}
	}
}

// month returns the agency summary of t's month, adding it when missing.
func (d *dataset) month(t time.Time) *summaryMonth {
	m := monthIndex(t)
	s := d.summary[m]
	if s == nil {
		s = &summaryMonth{}
		d.summary[m] = s
	}
	return s
}

// sumLedgers adds every finance record to the sums of its project, its
// brand and the agency summary (cancelled invoices and payments not done
// left out), and returns the projects' revenue and cost by month.
func (d *dataset) sumLedgers() (projRev, projCost map[entityPeriod]int64) {
	projRev = map[entityPeriod]int64{}
	projCost = map[entityPeriod]int64{}
	for _, bg := range d.budgets {
		p := d.projects[bg.project]
		b := d.brands[p.brand]
		p.budgetTotal += bg.amount
		b.totalBudget += bg.amount
		d.month(bg.periodStart).totalBudget += toRON(bg.amount, b.currency)
	}
	for _, inv := range d.invoices {
		if inv.status == invoiceCancelled {
			continue
		}
		p := d.projects[inv.project]
		b := d.brands[p.brand]
		b.invoiced += inv.amount
		projRev[entityPeriod{inv.project, monthIndex(inv.issue)}] += inv.amount
		d.month(inv.issue).invoiced += toRON(inv.amount, b.currency)
	}
	for _, c := range d.collections {
		inv := d.invoices[c.invoice]
		b := d.brands[d.projects[inv.project].brand]
		b.collect += c.amount
		d.month(c.on).collected += toRON(c.amount, b.currency)
	}
	for _, pm := range d.payments {
		if pm.status != paymentDone {
			continue
		}
		b := d.brands[d.projects[pm.project].brand]
		projCost[entityPeriod{pm.project, monthIndex(pm.paidOn)}] += pm.amount
		d.month(pm.paidOn).paid += toRON(pm.amount, b.currency)
	}
	return projRev, projCost
}

// buildProfit rebuilds the profitability rows from the projects' revenue
// and cost by month: a row per project and month with either, and their
// sums per brand and month, ordered by level, entity id and period.
func (d *dataset) buildProfit(projRev, projCost map[entityPeriod]int64) {
	keys := map[entityPeriod]bool{}
	for k := range projRev {
		keys[k] = true
	}
	for k := range projCost {
		keys[k] = true
	}
	brandRows := map[entityPeriod]*profitRow{}
	d.profit = d.profit[:0]
	for k := range keys {
		p := d.projects[k.entity]
		b := d.brands[p.brand]
		row := profitRow{level: "project", entityID: p.id, period: k.period, revenue: projRev[k], cost: projCost[k], currency: b.currency}
		d.profit = append(d.profit, row)
		bk := entityPeriod{p.brand, k.period}
		br := brandRows[bk]
		if br == nil {
			br = &profitRow{level: "brand", entityID: b.id, period: k.period, currency: b.currency}
			brandRows[bk] = br
		}
		br.revenue += row.revenue
		br.cost += row.cost
	}
	for _, br := range brandRows {
		d.profit = append(d.profit, *br)
	}
	slices.SortFunc(d.profit, func(a, b profitRow) int {
		if a.level != b.level {
			if a.level == "project" {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.entityID, b.entityID); c != 0 {
			return c
		}
		return cmp.Compare(a.period, b.period)
	})
}

// financialSummary returns the brand's summary amounts with admin overrides.
func (b *brand) financialSummary() (total, invoiced, collected int64) {
	total, invoiced, collected = b.totalBudget, b.invoiced, b.collect
	if v := b.fsOverride[0]; v != nil {
		total = *v
	}
	if v := b.fsOverride[1]; v != nil {
		invoiced = *v
	}
	if v := b.fsOverride[2]; v != nil {
		collected = *v
	}
	return total, invoiced, collected
}

// summaryPeriods returns the months from the first with data to lastMonth.
func (d *dataset) summaryPeriods(lastMonth int) []int {
	var out []int
	last := lastMonth
	for m := range d.summary {
		last = max(last, m)
	}
	for m := d.firstPeriod; m <= last; m++ {
		out = append(out, m)
	}
	return out
}
