package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/transform"
)

// spanFetch is a span of days a reconciliation paged in full.
type spanFetch struct {
	a, b     time.Time
	ids      map[int64]bool // record ids returned (e-mails and rejected records)
	stable   bool           // every page carried the same total, and the records seen equal it
	unstable string         // why it is not stable ("" when it is)
	total    int            // the service's total (-1: never answered with one)
	pages    int
	outside  int   // records returned dated outside the days in AGENCY_COMMS_TZ (but not far from them)
	rejected int   // rejected records among them
	filled   int64 // e-mail rows inserted or updated
	undated  []string
	// offLo and offHi bound the UTC offsets at which the service could cut
	// its days, as the records it returned tell (each lies in the span's
	// days under the offset): [offLo, offHi).
	offLo, offHi time.Duration
}

// pin narrows the offsets a record returned for the span at instant at
// allows.
func (f *spanFetch) pin(at time.Time) {
	f.offLo = max(f.offLo, utcDate(f.a).Sub(at))
	f.offHi = min(f.offHi, utcDate(f.b).AddDate(0, 0, 1).Sub(at))
}

// allows says that the records of every stable span lie on its days when
// the service cuts them at UTC+off.
func (fs *fetchedSpans) allows(off time.Duration) bool {
	for _, f := range fs.list {
		if f.stable && (off < f.offLo || off >= f.offHi) {
			return false
		}
	}
	return true
}

// scan notes what a page of the span returned: its record ids, the offsets
// its records allow, those dated outside the days (start..end in
// AGENCY_COMMS_TZ) but not far from them, the rejected records (those
// without a readable date apart). It returns the rejected records' keys.
func (f *spanFetch) scan(batch *transform.Batch, start, end time.Time) []string {
	for _, id := range commsIDs(batch) {
		f.ids[id] = true
	}
	note := func(at time.Time) {
		if farFrom(at, f.a, f.b) {
			return
		}
		f.pin(at)
		if at.Before(start) || !at.Before(end) {
			f.outside++
		}
	}
	for _, v := range batch.Column("emails", "email_at") {
		if at, ok := v.(time.Time); ok {
			note(at)
		}
	}
	keys := make([]string, len(batch.Rejects))
	for i, rj := range batch.Rejects {
		keys[i] = rj.Key
		if at, ok := rejectEmailAt(rj.Payload); ok {
			note(at)
		} else {
			f.undated = append(f.undated, rj.Key)
		}
	}
	f.rejected += len(batch.Rejects)
	return keys
}

// spanName is "a" for one day, else "a..b".
func spanName(a, b time.Time) string {
	if a.Equal(b) {
		return dateString(a)
	}
	return dateString(a) + ".." + dateString(b)
}

// fetchedSpans are the spans one reconciliation paged, so that the
// neighbouring days of several differing days are paged once, and what the
// service returned for any of them counts for all.
type fetchedSpans struct{ list []*spanFetch }

// covers says that a stable span holds day.
func (fs *fetchedSpans) covers(day time.Time) bool {
	for _, f := range fs.list {
		if f.stable && !day.Before(f.a) && !day.After(f.b) {
			return true
		}
	}
	return false
}

// returned says that a span returned record id.
func (fs *fetchedSpans) returned(id int64) bool {
	for _, f := range fs.list {
		if f.ids[id] {
			return true
		}
	}
	return false
}

// ids are every record id returned.
func (fs *fetchedSpans) ids() []int64 {
	var out []int64
	for _, f := range fs.list {
		for id := range f.ids {
			out = append(out, id)
		}
	}
	return out
}

// known are the totals of the stable spans.
func (fs *fetchedSpans) known() []knownTotal {
	var out []knownTotal
	for _, f := range fs.list {
		if f.stable {
			out = append(out, knownTotal{a: f.a, b: f.b, total: f.total})
		}
	}
	return out
}

// fetchSpan pages the days a..b in full and commits their records. Records
// filed far from their date are recorded (recordFiled).
func (r *run) fetchSpan(ctx context.Context, log *zap.Logger, a, b time.Time) (*spanFetch, error) {
	loc := r.e.set.Mail.TZ
	f := &spanFetch{a: a, b: b, ids: map[int64]bool{}, total: -1, stable: true, offLo: minOffset - time.Hour, offHi: maxOffset + time.Hour}
	name := spanName(a, b)
	start, end := load.DayStart(a, loc), load.DayStart(b.AddDate(0, 0, 1), loc)
	q := extract.CommsQuery{DomainID: r.e.set.Mail.DomainID, UserIDs: r.e.set.Mail.UserIDs, BrandURL: r.e.set.Mail.BrandURL,
		DateStart: a, DateEnd: b, WithMessage: r.e.set.Mail.WithMessage}
	users := newKnownUsers()
	var far []farRecord
	seen := 0
	for page, err := range r.client.Communications(ctx, q) {
		if err != nil {
			return f, fmt.Errorf("re-fetch communications of %s: %w", name, err)
		}
		f.pages++
		switch {
		case !page.Paged:
			f.unstable = "the service's answers carry no total"
		case f.total < 0:
			f.total = page.Total
		case page.Total != f.total && f.unstable == "":
			f.unstable = fmt.Sprintf("the service's total moved while the days were paged (%d, then %d)", f.total, page.Total)
		}
		batch := users.filter(r.commsBatch(page))
		keys := f.scan(&batch, start, end)
		seen += page.Rows()
		again, err := r.e.mail.recon.RejectsSeenByRun(ctx, r.id, keys)
		if err != nil {
			return f, err
		}
		c, err := r.commit(ctx, &load.RangePage{Stream: r.e.mailStream(), Batch: batch})
		if err != nil {
			return f, fmt.Errorf("re-fetch communications of %s: %w", name, err)
		}
		if again > 0 { // met earlier in this run: counted once
			r.mu.Lock()
			r.counts.Rejected -= int64(again)
			r.mu.Unlock()
		}
		users.committed(&batch)
		f.filled += c.Tables["emails"].Inserted + c.Tables["emails"].Updated
		far = append(far, farRecords(&batch, a, b, loc)...)
	}
	if f.unstable == "" && seen != f.total {
		f.unstable = fmt.Sprintf("the days' pages delivered %d records, fewer records than the service's total of %d", seen, f.total)
		if seen > f.total {
			f.unstable = fmt.Sprintf("the days' pages delivered %d records, more than the service's total of %d", seen, f.total)
		}
	}
	f.stable = f.unstable == ""
	if err := r.recordFiled(ctx, log, far); err != nil {
		return f, err
	}
	if !f.stable {
		return f, nil
	}
	return f, r.markRead(ctx, dateString(a), dateString(b))
}

// absentee is a live e-mail the warehouse holds for re-fetched days that
// the service did not return there, with the days it could be filed under.
type absentee struct {
	id          int64
	first, last time.Time
}

// absentees lists the live e-mails of the days a..b (by email_at in
// AGENCY_COMMS_TZ, or filed far from their date under one of the days) that
// no span of fs returned, each with the days the service could file it
// under: those of its email_at under any offset within ±14 h, or, filed
// far, its filing day and the days next to it.
func (r *run) absentees(ctx context.Context, a, b time.Time, fs *fetchedSpans, vs *verifyState) ([]absentee, error) {
	loc := r.e.set.Mail.TZ
	rows, err := r.e.mail.recon.EmailsNotIn(ctx, load.DayStart(a, loc), load.DayStart(b.AddDate(0, 0, 1), loc), fs.ids())
	if err != nil {
		return nil, err
	}
	var out []absentee
	for _, e := range rows {
		if f, ok := vs.Filed[strconv.FormatInt(e.ID, 10)]; ok && !f.Reject {
			continue // counted on its filing day, decided there
		}
		first, last := filingDays(e.At)
		out = append(out, absentee{id: e.ID, first: first, last: last})
	}
	var filed []int64
	for k, f := range vs.Filed {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil || f.Reject || f.On < dateString(a) || f.On > dateString(b) || fs.returned(id) {
			continue
		}
		filed = append(filed, id)
	}
	live, err := r.e.mail.recon.LiveEmails(ctx, filed)
	if err != nil {
		return nil, err
	}
	for id := range live {
		on, _ := parseDate(vs.Filed[strconv.FormatInt(id, 10)].On)
		out = append(out, absentee{id: id, first: on.AddDate(0, 0, -1), last: on.AddDate(0, 0, 1)})
	}
	slices.SortFunc(out, func(x, y absentee) int { return cmp.Compare(x.id, y.id) })
	return out, nil
}

// deleteAbsent soft-deletes the e-mails of the re-fetched days a..b that
// the service does not return for any day it could file them under: the
// days next to a..b that such an e-mail could be filed under are paged
// first (once per reconciliation). An e-mail returned for a neighbouring
// day is live (elsewhere counts them: a day boundary other than
// AGENCY_COMMS_TZ's); one whose days could not all be paged with a stable
// total is kept.
func (r *run) deleteAbsent(ctx context.Context, log *zap.Logger, a, b time.Time, fs *fetchedSpans, vs *verifyState) (deleted int64, elsewhere, pages int, err error) {
	abs, err := r.absentees(ctx, a, b, fs, vs)
	if err != nil || len(abs) == 0 {
		return 0, 0, 0, err
	}
	lo, hi := a, b
	for _, x := range abs {
		lo, hi = minTime(lo, x.first), maxTime(hi, x.last)
	}
	// Page the days not paged yet, each run of them as one range.
	for d := lo; !d.After(hi); {
		if fs.covers(d) {
			d = d.AddDate(0, 0, 1)
			continue
		}
		e := d
		for e.Before(hi) && !fs.covers(e.AddDate(0, 0, 1)) {
			e = e.AddDate(0, 0, 1)
		}
		f, err := r.fetchSpan(ctx, log, d, e)
		pages += f.pages
		if err != nil {
			return 0, 0, pages, err
		}
		fs.list = append(fs.list, f)
		log.Info("communications neighbouring days paged before soft-deleting", zap.String("days", spanName(d, e)),
			zap.Int("total", f.total), zap.Bool("stable", f.stable), zap.Int("pages", f.pages))
		d = e.AddDate(0, 0, 1) // an unstable span covers nothing: its e-mails are kept
	}
	var gone []int64
	for _, x := range abs {
		if fs.returned(x.id) {
			elsewhere++
			continue
		}
		all := true
		for d := x.first; !d.After(x.last); d = d.AddDate(0, 0, 1) {
			all = all && fs.covers(d)
		}
		if all {
			gone = append(gone, x.id)
		}
	}
	deleted, err = r.e.mail.recon.SoftDeleteEmails(ctx, gone)
	if err != nil {
		return 0, elsewhere, pages, err
	}
	if deleted > 0 {
		r.countDeleted(deleted)
	}
	return deleted, elsewhere, pages, nil
}

// countDeleted adds soft-deleted e-mails to the run's counts.
func (r *run) countDeleted(n int64) {
	c := load.Counts{Tables: map[string]load.TableCounts{"emails": {Deleted: n}}}
	r.mu.Lock()
	r.counts.Add(c)
	r.mu.Unlock()
	r.stats.changed(c)
}

// refetchDays pages the days a..b in full (one day, or a span the
// warehouse or the service holds nothing of), commits their records, and
// soft-deletes the e-mails of those days that the service does not return
// for any day it could file them under (deleteAbsent) — only when the days'
// paging completed with an unchanged total.
func (r *run) refetchDays(ctx context.Context, log *zap.Logger, a, b time.Time, derived, before int, vs *verifyState, fs *fetchedSpans) (DayRepair, error) {
	d := DayRepair{Day: spanName(a, b), Service: derived, WarehouseBefore: before}
	f, err := r.fetchSpan(ctx, log, a, b)
	fs.list = append(fs.list, f)
	d.Pages, d.Filled, d.Rejected, d.undated, d.Outside = f.pages, f.filled, f.rejected, f.undated, f.outside
	if err != nil {
		return d, err
	}
	if !f.stable {
		d.moved = true
		d.Reason = f.unstable + "; nothing soft-deleted"
	} else {
		d.Service = f.total
		n, elsewhere, pages, err := r.deleteAbsent(ctx, log, a, b, fs, vs)
		d.SoftDeleted, d.Elsewhere, d.Pages = n, elsewhere, d.Pages+pages
		if err != nil {
			return d, err
		}
	}
	// The days' rejected records whose date cannot be read are those just
	// returned (filed under the span's first day), not those learned before.
	after := *vs
	after.Undated = map[string][]string{}
	for day, keys := range vs.Undated {
		if day < dateString(a) || day > dateString(b) {
			after.Undated[day] = keys
		}
	}
	after.Undated[dateString(a)] = d.undated
	if after.Filed, err = r.filedNow(ctx, vs); err != nil {
		return d, err
	}
	wh, err := r.e.heldDays(ctx, a, b, &after)
	if err != nil {
		return d, err
	}
	d.Undated = len(d.undated)
	for _, n := range wh {
		d.WarehouseAfter += n
	}
	if d.Reason == "" {
		d.Resolved = d.WarehouseAfter == d.Service
		switch {
		case d.Resolved:
		case d.Elsewhere > 0 || d.Outside > 0:
			d.Reason = fmt.Sprintf("the service files %d e-mail(s) of %s in %s under a neighbouring day and returned %d dated outside it: "+
				"it does not cut its days in AGENCY_COMMS_TZ; nothing live was soft-deleted", d.Elsewhere, d.Day, r.e.set.Mail.TZ, d.Outside)
		default:
			d.Reason = fmt.Sprintf("after the re-fetch the warehouse holds %d (%d of them rejected records) for the service's %d", d.WarehouseAfter, d.Rejected, d.Service)
		}
	}
	log.Info("communications days re-fetched", zap.String("day", d.Day), zap.Int("service", d.Service), zap.Int("warehouse_before", before),
		zap.Int("warehouse_after", d.WarehouseAfter), zap.Int64("filled", d.Filled), zap.Int64("soft_deleted", d.SoftDeleted),
		zap.Int("elsewhere", d.Elsewhere), zap.Int("outside", d.Outside),
		zap.Int("pages", d.Pages), zap.Bool("resolved", d.Resolved), zap.String("reason", d.Reason))
	return d, nil
}

// filedNow is the records filed far from their date as the verify state
// holds them now (the re-fetch may have learned some since vs was read).
func (r *run) filedNow(ctx context.Context, vs *verifyState) (map[string]filedEmail, error) {
	now, err := r.e.loadVerify(ctx)
	if err != nil {
		return nil, err
	}
	if len(now.Filed) == 0 {
		return vs.Filed, nil
	}
	return now.Filed, nil
}
