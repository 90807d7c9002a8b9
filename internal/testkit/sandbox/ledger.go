package sandbox

import (
	"slices"
	"strings"
	"time"
)

// ledgerEntry holds what every finance record (budget, invoice, collection,
// payment) has, so that one piece of code lists, writes and edits any of them.
type ledgerEntry struct {
	id        int64
	amount    int64  // cents
	status    string // invoices and payments only
	updatedAt time.Time
}

// entry returns the record's common fields (promoted to every finance record).
func (x *ledgerEntry) entry() *ledgerEntry { return x }

// ledgerRecord is a finance record type.
type ledgerRecord interface{ entry() *ledgerEntry }

// numberLedger sorts list by date (stably) and gives its records ascending
// ids after base, 1 to 3 apart, in that order, as a real ledger numbers
// them; it indexes them in byID, calls link with each record's index and
// returns list.
func numberLedger[T ledgerRecord](ids *rng, base int64, list []T, byID map[int64]int, date func(T) time.Time, link func(int, T)) []T {
	slices.SortStableFunc(list, func(a, b T) int { return date(a).Compare(date(b)) })
	next := base
	for i, x := range list {
		next += int64(ids.between(1, 4))
		x.entry().id = next
		byID[next] = i
		link(i, x)
	}
	return list
}

// ledger is one finance list seen through what the list handlers, the truth
// and the admin API do with any of them alike.
type ledger struct {
	name      string // the endpoint, the truth stream and the admin kind
	tag       uint64 // kindBudget..kindPayment: the bad-record choice
	hasStatus bool
	byID      map[int64]int
	n         int
	entry     func(k int) *ledgerEntry
	brand     func(k int) int // the brand's index
	write     func(e *enc, k int, st mainStyle, badKind int)
}

// newLedger describes list, whose records belong to the brand brand gives
// and are written by write.
func newLedger[T ledgerRecord](name string, tag uint64, hasStatus bool, list []T, byID map[int64]int,
	brand func(T) int, write func(*enc, T, mainStyle, int)) ledger {
	return ledger{name: name, tag: tag, hasStatus: hasStatus, byID: byID, n: len(list),
		entry: func(k int) *ledgerEntry { return list[k].entry() },
		brand: func(k int) int { return brand(list[k]) },
		write: func(e *enc, k int, st mainStyle, badKind int) { write(e, list[k], st, badKind) },
	}
}

// ledgers returns the four finance lists in the truth's order.
func (d *dataset) ledgers() []ledger {
	brandOf := func(project int) int { return d.projects[project].brand }
	return []ledger{
		newLedger(FinanceBudgets, kindBudget, false, d.budgets, d.budgetByID,
			func(x *budget) int { return brandOf(x.project) }, d.writeBudget),
		newLedger(FinanceInvoices, kindInvoice, true, d.invoices, d.invoiceByID,
			func(x *invoice) int { return brandOf(x.project) }, d.writeInvoice),
		newLedger(FinanceCollections, kindCollection, false, d.collections, d.collectionByID,
			func(x *collection) int { return brandOf(d.invoices[x.invoice].project) }, d.writeCollection),
		newLedger(FinancePayments, kindPayment, true, d.payments, d.paymentByID,
			func(x *payment) int { return brandOf(x.project) }, d.writePayment),
	}
}

// ledger returns the finance list named name (budgets, invoices, collections,
// payments).
func (d *dataset) ledger(name string) (ledger, bool) {
	for _, l := range d.ledgers() {
		if l.name == name {
			return l, true
		}
	}
	return ledger{}, false
}

// wrap is the element wrapper of the wrapped variant: budget_info, ...
func (l ledger) wrap() string { return strings.TrimSuffix(l.name, "s") + "_info" }

// badKind reports whether record k is deliberately malformed at rate, and
// the kind to write it with (-1 for a sound record).
func (l ledger) badKind(k int, seed int64, rate float64) (bool, int) {
	bad, kind := isBadFinance(seed, l.tag, l.entry(k).id, rate)
	return bad, badKindOf(bad, kind)
}

// writeRecord writes record k, malformed when the bad-record rate says so.
func (l ledger) writeRecord(e *enc, k int, st mainStyle, seed int64, rate float64) {
	_, kind := l.badKind(k, seed, rate)
	l.write(e, k, st, kind)
}
