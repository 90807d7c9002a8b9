package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
)

// Reconciliation proves that the warehouse holds what the service holds:
// for a range of calendar days it compares the service's total (from a
// closing range's own pages, or one per_page=1 request) with the number of
// records the warehouse holds (heldDays: e-mails not soft-deleted, and
// rejected records not also e-mails, with email_at on those days in
// MailSettings.TZ; records filed far from their date on the day that
// returned them). Where they differ it bisects: it asks the total of the
// left half (one per_page=1 request; the right half's is the rest of the
// parent's), recurses into the halves that differ, and re-fetches the days
// that differ, all their pages. An e-mail the warehouse holds for a
// re-fetched day that the service did not return gets _deleted_at only when
// no day it could be filed under (its own and the neighbouring ones under
// any offset within ±14 h, paged too) returned it, every page with a total
// that did not change (deleteAbsent). When a day boundary other than
// MailSettings.TZ's explains the totals, the bisection stops and names it
// (mailboundary.go). A gap is about log2(days) count requests plus its pages; a
// complete warehouse costs one request for the whole history, or none when
// a closing range's pages carried the total.
//
// Equal counts are taken as equal content: a day that lost one e-mail and
// gained another would pass, and an edit changes no count. The per-record
// content of a day is compared when the day is next paged in full; the
// rolling re-read (mailrefreshplan.go) pages every day within
// MailSettings.RefreshAge.

// partVerify is the sync_state partition of the communications stream
// that keeps the reconciliation's results.
const partVerify = "verify"

// ErrNoServiceTotal means the service answered a count request without
// a total, so a range cannot be reconciled.
var ErrNoServiceTotal = errors.New("the service answered without a total")

// DayRepair is one calendar day (or span of days) whose counts differed
// and that was re-fetched.
type DayRepair struct {
	// Day is YYYY-MM-DD in the reconciliation's zone, or FROM..TO for a
	// span of days re-fetched whole (one the warehouse or the service held
	// nothing of).
	Day string `json:"day"`
	// Service is the day's total: from the re-fetch when it completed, else
	// as the bisection derived it.
	Service int `json:"service"`
	// WarehouseBefore and WarehouseAfter are the records the warehouse holds
	// for the day (live e-mails and dated rejected records) before and after
	// the re-fetch.
	WarehouseBefore int `json:"warehouse_before"`
	WarehouseAfter  int `json:"warehouse_after"`
	Pages           int `json:"pages"`    // pages re-fetched
	Rejected        int `json:"rejected"` // records of the day the warehouse rejected (in rejected_records)
	// Filled is the e-mail rows the re-fetch inserted or updated.
	Filled int64 `json:"filled"`
	// SoftDeleted is the e-mails marked deleted because the service no
	// longer returned them.
	SoftDeleted int64 `json:"soft_deleted"`
	// Resolved: after the re-fetch the warehouse's count equals the
	// service's total.
	Resolved bool   `json:"resolved"`
	Reason   string `json:"reason,omitempty"` // why not resolved
	// Undated counts the day's rejected records whose email_at cannot be
	// read; they count as held on this day from now on.
	Undated int `json:"undated,omitempty"`
	// Elsewhere counts the day's e-mails the service did not return for it
	// but for a neighbouring day, and Outside the e-mails it returned dated
	// outside it in AGENCY_COMMS_TZ (within a day): both say that the service
	// cuts its days elsewhere. Nothing live is soft-deleted for it.
	Elsewhere int      `json:"elsewhere,omitempty"`
	Outside   int      `json:"outside,omitempty"`
	moved     bool     // the days were not paged stable: the total moved, or the pages did not reach it (spanFetch.unstable)
	undated   []string // their keys
}

// VerifyReport is what one reconciliation found and did.
type VerifyReport struct {
	From string `json:"from"` // YYYY-MM-DD, inclusive
	To   string `json:"to"`   // YYYY-MM-DD, inclusive
	Zone string `json:"zone"` // the time zone of the days (AGENCY_COMMS_TZ)
	// Closing: the reconciliation of a range that just closed (its total
	// came with its pages); else an on-demand or scheduled verification.
	Closing bool `json:"closing,omitempty"`
	// ServiceTotal and WarehouseTotal are the range's totals before repairs.
	ServiceTotal   int `json:"service_total"`
	WarehouseTotal int `json:"warehouse_total"`
	// CountRequests are the per_page=1 requests; Requests all requests
	// (counts and re-fetched pages).
	CountRequests int `json:"count_requests"`
	Requests      int `json:"requests"`
	// Days are the days that differed, in date order.
	Days        []DayRepair `json:"days,omitempty"`
	Filled      int64       `json:"filled"`
	SoftDeleted int64       `json:"soft_deleted"`
	// Proved: the counts are equal (after repairs) over the whole range.
	Proved bool      `json:"proved"`
	At     time.Time `json:"at"`
	// Boundary, when set, is the day boundary under which the service's
	// totals agree with the warehouse's: not AGENCY_COMMS_TZ's.
	Boundary *Boundary `json:"boundary,omitempty"`
}

// Summary is a one-line account of the report.
func (v *VerifyReport) Summary() string {
	if v == nil {
		return "not verified"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s..%s (%s): service %d, warehouse %d e-mails", v.From, v.To, v.Zone, v.ServiceTotal, v.WarehouseTotal)
	if len(v.Days) > 0 {
		days := make([]string, len(v.Days))
		for i, d := range v.Days {
			days[i] = d.Day
		}
		fmt.Fprintf(&b, "; %d day(s) differed (%s): %d e-mail(s) filled, %d soft-deleted", len(v.Days), strings.Join(days, ", "), v.Filled, v.SoftDeleted)
	}
	if v.Proved {
		b.WriteString("; equal")
	} else {
		b.WriteString("; NOT proved equal")
	}
	if v.Boundary != nil {
		b.WriteString("; " + v.Boundary.Advice())
	}
	fmt.Fprintf(&b, "; %d request(s)", v.Requests)
	return b.String()
}

// verifyState is the cursor of the "verify" partition.
type verifyState struct {
	// Last is the last scheduled or on-demand verification.
	Last *VerifyReport `json:"last,omitempty"`
	// LastProvedAt is when a whole-history verification last proved equality.
	LastProvedAt *time.Time `json:"last_proved_at,omitempty"`
	// LastDifference is the last reconciliation (closing ones included)
	// that found days that differed.
	LastDifference *VerifyReport `json:"last_difference,omitempty"`
	// BackfillUnproved: a backfill window's closing reconciliation did not
	// prove equality, so the backfill's completion proves nothing.
	BackfillUnproved bool `json:"backfill_unproved,omitempty"`
	// GapPending: a range closed since the last whole-history verification
	// and its reconciliation could not prove it (no budget left, a stop, a
	// total that kept moving): the next run verifies the history again.
	GapPending bool `json:"gap_pending,omitempty"`
	// Undated are, per day (YYYY-MM-DD), the keys of rejected records whose
	// email_at cannot be read (so the warehouse cannot count them by day),
	// learned when the day was re-fetched: they count as held on that day.
	Undated map[string][]string `json:"undated,omitempty"`
	// Filed are, by record key, the records the service files under a day
	// far from their email_at: they count as held on that day.
	Filed map[string]filedEmail `json:"filed,omitempty"`
}

// undatedKeys are the keys of every learned undated reject.
func (vs *verifyState) undatedKeys() []string {
	var out []string
	for _, keys := range vs.Undated {
		out = append(out, keys...)
	}
	return out
}

// closedRange is a communications range that closed in this run, waiting
// for its reconciliation once its last page is committed.
type closedRange struct {
	from, to    string
	total, seen int
	// completes: proved equal, the range completes the stream's own
	// partition, which its commit did not (it fell short of the total).
	completes bool
}

// markClosingCompletes marks the range that closed last (queued by check)
// as completing the stream's own partition once its reconciliation proves
// it.
func (r *run) markClosingCompletes() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.mail.closing); n > 0 {
		r.mail.closing[n-1].completes = true
	}
}

// completeOwn records the stream's own partition as completed (its last
// success), after a reconciliation proved the range that ended it.
func (r *run) completeOwn(ctx context.Context) error {
	cs, err := r.loadComms(ctx, partComms)
	if err != nil {
		return err
	}
	return r.save(ctx, cs, true)
}

// check is the closing reconciliation's entry point, called when a
// communications range's last page is about to commit: it returns the
// range's check for the cursor and queues the range, which afterTask
// reconciles with the warehouse once the page is committed.
func (r *run) check(log *zap.Logger, rc *rangeCursor) *rangeCheck {
	c := &rangeCheck{From: rc.From, To: rc.To, Total: rc.Total, Seen: rc.Seen, Shortfall: max(rc.Total-rc.Seen, 0), At: r.e.set.Now().UTC()}
	if c.Shortfall > 0 {
		log.Warn("communications range delivered fewer records than the server's total; reconciling",
			zap.String("from", rc.From), zap.String("to", rc.To), zap.Int("total", rc.Total), zap.Int("seen", rc.Seen), zap.Int("shortfall", c.Shortfall))
	}
	if rc.Unpaged {
		// No total to compare with: the range closed on its first short
		// page, which is all a service without paging fields can tell.
		log.Warn("the service's answers carry no total: this communications range cannot be reconciled",
			zap.String("from", rc.From), zap.String("to", rc.To), zap.Int("seen", rc.Seen))
		r.note(fmt.Sprintf("communications %s..%s: the service sent no totals; %d records landed, not reconciled", rc.From, rc.To, rc.Seen))
		return c
	}
	r.mu.Lock()
	r.mail.closing = append(r.mail.closing, closedRange{from: rc.From, to: rc.To, total: rc.Total, seen: rc.Seen})
	r.mu.Unlock()
	return c
}

// afterTask reconciles the ranges that closed during a task. When the task
// failed or was stopped, a range that cannot be reconciled is recorded as a
// gap and the task's error stands; otherwise a reconciliation error is the
// task's (manual: the task is an `agencysync backfill` range, not the
// history's backfill). A backfill whose every window was proved equal at its closing has
// verified the whole history: the scheduled verification waits a day.
func (r *run) afterTask(ctx context.Context, task Task, manual bool, log *zap.Logger, taskErr error) error {
	r.mu.Lock()
	pending := r.mail.closing
	r.mail.closing = nil
	r.mu.Unlock()
	proved := true
	for _, c := range pending {
		rep, err := r.reconcileClosed(ctx, log, c)
		switch {
		case err != nil:
			proved = false
			r.gap(fmt.Sprintf("communications %s..%s: not reconciled (%d of %d records delivered): %v", c.from, c.to, c.seen, c.total, err))
			if taskErr == nil {
				taskErr = err
			}
		case !rep.Proved:
			proved = false
			r.gap("communications " + rep.Summary())
		case c.completes:
			if err := r.completeOwn(ctx); err != nil && taskErr == nil {
				taskErr = err
			}
		}
	}
	if !proved {
		// Retried: the next run's verify task reconciles the history again.
		if err := r.saveVerify(ctx, func(st *verifyState) { st.GapPending = true }); err != nil && taskErr == nil {
			taskErr = err
		}
	}
	if task != TaskCommsBackfill || manual || len(pending) == 0 {
		return taskErr
	}
	if err := r.backfillClosed(ctx, log, proved); err != nil && taskErr == nil {
		taskErr = err
	}
	return taskErr
}

// backfillClosed notes the outcome of backfill windows' reconciliations
// and, when the backfill is complete and every window was proved equal,
// records the whole backfill as verified today.
func (r *run) backfillClosed(ctx context.Context, log *zap.Logger, proved bool) error {
	cs, err := r.loadComms(ctx, partComms)
	if err != nil {
		return err
	}
	bf := cs.cur.Backfill
	if bf == nil {
		return nil
	}
	vs, err := r.e.loadVerify(ctx)
	if err != nil {
		return err
	}
	if !bf.Done {
		if proved || vs.BackfillUnproved {
			return nil
		}
		return r.saveVerify(ctx, func(st *verifyState) { st.BackfillUnproved = true })
	}
	if !proved || vs.BackfillUnproved {
		return r.saveVerify(ctx, func(st *verifyState) { st.BackfillUnproved = false })
	}
	from, to, err := parseDates(bf.Start, bf.End)
	if err != nil {
		return err
	}
	wh, err := r.e.heldDays(ctx, from, to, vs)
	if err != nil {
		return err
	}
	n := 0
	for _, c := range wh {
		n += c
	}
	rep := &VerifyReport{From: bf.Start, To: bf.End, Zone: r.e.set.Mail.TZ.String(), Closing: true,
		ServiceTotal: n, WarehouseTotal: n, Proved: true, At: r.e.set.Now().UTC()}
	log.Info("communications backfill complete and every window reconciled: the history is verified", zap.String("summary", rep.Summary()))
	return r.saveVerify(ctx, func(st *verifyState) {
		st.Last = rep
		at := rep.At
		st.LastProvedAt = &at
	})
}

// parseDates parses the first and last days of a range (YYYY-MM-DD, as
// cursors keep them).
func parseDates(from, to string) (time.Time, time.Time, error) {
	f, err := parseDate(from)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	t, err := parseDate(to)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	return f, t, nil
}

func (r *run) reconcileClosed(ctx context.Context, log *zap.Logger, c closedRange) (*VerifyReport, error) {
	from, to, err := parseDates(c.from, c.to)
	if err != nil {
		return nil, err
	}
	rep, err := r.reconcile(ctx, log, from, to, c.total)
	if rep != nil {
		rep.Closing = true
		if len(rep.Days) > 0 || !rep.Proved {
			if serr := r.saveVerify(ctx, func(st *verifyState) { st.LastDifference = rep }); serr != nil && err == nil {
				err = serr
			}
		}
	}
	return rep, err
}

// reconcile compares the service's total of from..to (calendar dates) with
// the warehouse's count, bisects to the days that differ and re-fetches
// them. knownTotal is the service's total when known (a closing range's
// pages carry it), or negative to ask for it (one per_page=1 request). The
// report is returned with the error too (what was done before it).
func (r *run) reconcile(ctx context.Context, log *zap.Logger, from, to time.Time, knownTotal int) (*VerifyReport, error) {
	loc := r.e.set.Mail.TZ
	from, to = utcDate(from), utcDate(to)
	rep := &VerifyReport{From: dateString(from), To: dateString(to), Zone: loc.String(), At: r.e.set.Now().UTC()}
	spent := r.budget.Spent()
	defer func() { rep.Requests = r.budget.Spent() - spent }()
	if to.Before(from) {
		return rep, fmt.Errorf("reconcile communications: range ends (%s) before it starts (%s)", rep.To, rep.From)
	}
	vs, err := r.e.loadVerify(ctx)
	if err != nil {
		return rep, err
	}
	wh, err := r.e.heldDays(ctx, from, to, vs)
	if err != nil {
		return rep, err
	}
	sum := func(a, b time.Time) int {
		n := 0
		for d := a; !d.After(b); d = d.AddDate(0, 0, 1) {
			n += wh[dateString(d)]
		}
		return n
	}
	rep.WarehouseTotal = sum(from, to)
	if knownTotal < 0 {
		if knownTotal, err = r.serviceCount(ctx, from, to); err != nil {
			return rep, err
		}
		rep.CountRequests++
	}
	rep.ServiceTotal = knownTotal
	if rep.WarehouseTotal == knownTotal {
		rep.Proved = true
		log.Debug("communications reconciled", zap.String("from", rep.From), zap.String("to", rep.To), zap.Int("total", knownTotal))
		return rep, nil
	}
	log.Info("communications differ from the warehouse; bisecting", zap.String("from", rep.From), zap.String("to", rep.To),
		zap.Int("service", knownTotal), zap.Int("warehouse", rep.WarehouseTotal), zap.String("zone", rep.Zone))
	b := &bisection{r: r, log: log, rep: rep, sum: sum, vs: vs}
	differ, err := b.run(ctx, from, to, knownTotal)
	if err != nil || rep.Boundary != nil {
		if rep.Boundary != nil {
			log.Warn("communications day totals differ as a day boundary explains: not bisected further",
				zap.String("summary", rep.Summary()))
		}
		return rep, err
	}
	rep.Proved = true
	if err := b.repair(ctx, differ); err != nil {
		rep.Proved = false
		return rep, err
	}
	log.Info("communications reconciliation done", zap.String("summary", rep.Summary()))
	return rep, nil
}

// bisection is one reconciliation's search for the days that differ, and
// their repair.
type bisection struct {
	r     *run
	log   *zap.Logger
	rep   *VerifyReport
	sum   func(a, b time.Time) int // the warehouse's count of days a..b, before repairs
	vs    *verifyState
	known []knownTotal  // the service totals known
	model *quarterModel // the warehouse per quarter hour, read once it is needed
	fs    fetchedSpans  // the spans re-fetched
}

// span is a span of days with the service's total.
type span struct {
	a, b time.Time
	svc  int
}

// run bisects from..to (the service's total svc) down to the days that
// differ: one per_page=1 request for the left half of each span that
// differs, the right half's total being the rest. It stops early when a
// day boundary other than AGENCY_COMMS_TZ's explains every total known
// (rep.Boundary).
func (b *bisection) run(ctx context.Context, from, to time.Time, svc int) ([]span, error) {
	var differ []span
	b.known = append(b.known, knownTotal{from, to, svc})
	stack := []span{{from, to, svc}}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if b.sum(s.a, s.b) == s.svc {
			continue
		}
		if n := b.sum(s.a, s.b); s.a.Equal(s.b) || n == 0 || s.svc <= 0 {
			// One day, or a span the warehouse or the service holds nothing
			// of (a range never fetched, or deleted at the service): every
			// day in it differs, so it is re-fetched whole.
			differ = append(differ, s)
			continue
		}
		days := int(s.b.Sub(s.a)/(24*time.Hour)) + 1
		mid := s.a.AddDate(0, 0, days/2-1)
		left, err := b.r.serviceCount(ctx, s.a, mid)
		if err != nil {
			return nil, err
		}
		b.rep.CountRequests++
		// The right half's total is the rest of the parent's: a stale or
		// moving total can only cost a needless re-fetch, which is harmless,
		// or leave a difference for the next verification.
		right := span{mid.AddDate(0, 0, 1), s.b, s.svc - left}
		b.known = append(b.known, knownTotal{s.a, mid, left}, knownTotal{right.a, right.b, right.svc})
		if done, err := b.explained(ctx, false); done || err != nil {
			return nil, err
		}
		stack = append(stack, right, span{s.a, mid, left})
	}
	slices.SortFunc(differ, func(x, y span) int { return x.a.Compare(y.a) })
	return differ, nil
}

// explained says whether a day boundary other than AGENCY_COMMS_TZ's
// explains every total known, and sets rep.Boundary when it does. During
// the bisection (repaired false) the offset must move records across at
// least minBoundaryEvidence day boundaries of the spans known, which a real
// gap cannot mimic; after the repairs, re-fetched days that returned
// e-mails dated outside them or filed next to them are the evidence.
func (b *bisection) explained(ctx context.Context, repaired bool) (bool, error) {
	spans := append(slices.Clone(b.known), b.fs.known()...)
	differing := 0
	for _, k := range b.known {
		if b.sum(k.a, k.b) != k.total {
			differing++
		}
	}
	if !repaired && differing < minBoundaryEvidence {
		return false, nil
	}
	if b.model == nil || repaired {
		from, to := b.known[0].a, b.known[0].b
		for _, k := range spans {
			from, to = minTime(from, k.a), maxTime(to, k.b)
		}
		m, err := b.r.e.quarterModel(ctx, from, to, b.vs)
		if err != nil {
			return false, err
		}
		b.model = m
	}
	bd, off := b.model.explain(spans, b.r.e.set.Mail.TZ, b.fs.allows)
	if bd == nil {
		return false, nil
	}
	if !repaired && b.model.evidence(spans, off) < minBoundaryEvidence {
		return false, nil
	}
	if repaired {
		moved := 0
		for _, d := range b.rep.Days {
			moved += d.Elsewhere + d.Outside
		}
		if moved == 0 && b.model.evidence(spans, off) < minBoundaryEvidence {
			return false, nil
		}
	}
	b.rep.Boundary = bd
	return true, nil
}

// repair re-fetches the spans that differ, in date order, and names the day
// boundary that explains what stays unresolved.
func (b *bisection) repair(ctx context.Context, differ []span) error {
	r, rep := b.r, b.rep
	learned := map[string][]string{}
	defer func() {
		if len(learned) == 0 {
			return
		}
		// The learned undated rejects are saved even when a later day failed.
		_ = r.saveVerify(ctx, func(st *verifyState) {
			if st.Undated == nil {
				st.Undated = map[string][]string{}
			}
			for day, keys := range learned {
				if len(keys) == 0 {
					delete(st.Undated, day)
				} else {
					st.Undated[day] = keys
				}
			}
		})
	}()
	for _, s := range differ {
		d, err := r.refetchDays(ctx, b.log, s.a, s.b, s.svc, b.sum(s.a, s.b), b.vs, &b.fs)
		if err == nil && d.moved {
			// Paged while the service changed: once more, to a stable total.
			pages := d.Pages
			d, err = r.refetchDays(ctx, b.log, s.a, s.b, s.svc, b.sum(s.a, s.b), b.vs, &b.fs)
			d.Pages += pages
		}
		rep.Days = append(rep.Days, d)
		if d.Reason == "" || d.Resolved {
			// A span's undated rejects are filed under its first day.
			learned[dateString(s.a)] = d.undated
		}
		rep.Filled += d.Filled
		rep.SoftDeleted += d.SoftDeleted
		if err != nil {
			return err
		}
		rep.Proved = rep.Proved && d.Resolved
	}
	if !rep.Proved {
		if _, err := b.explained(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// serviceCount asks the service how many e-mails from..to holds: one
// per_page=1 request, counted in the quota and the run's budget.
func (r *run) serviceCount(ctx context.Context, from, to time.Time) (int, error) {
	q := extract.CommsQuery{DomainID: r.e.set.Mail.DomainID, UserIDs: r.e.set.Mail.UserIDs, BrandURL: r.e.set.Mail.BrandURL,
		DateStart: from, DateEnd: to, WithMessage: "0", PerPage: 1}
	p, err := r.client.CommunicationsPage(ctx, q, 1)
	if err != nil {
		return 0, fmt.Errorf("count communications %s..%s: %w", dateString(from), dateString(to), err)
	}
	if !p.Paged {
		return 0, fmt.Errorf("count communications %s..%s: %w", dateString(from), dateString(to), ErrNoServiceTotal)
	}
	return p.Total, nil
}

// datedReject says whether a rejected record's payload carries an
// email.email_at the warehouse's day count can read (as load's
// EmailDayCounts reads it).
func datedReject(payload json.RawMessage) bool {
	_, ok := rejectEmailAt(payload)
	return ok
}

// rejectEmailAt is a rejected record's email.email_at, when its payload
// carries one that parses.
func rejectEmailAt(payload json.RawMessage) (time.Time, bool) {
	var rec struct {
		Email struct {
			EmailAt json.RawMessage `json:"email_at"`
		} `json:"email"`
	}
	if json.Unmarshal(payload, &rec) != nil {
		return time.Time{}, false
	}
	var at string
	if json.Unmarshal(rec.Email.EmailAt, &at) != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	return t, err == nil
}

// loadVerify reads the "verify" partition's state.
func (e *Engine) loadVerify(ctx context.Context) (*verifyState, error) {
	vs := &verifyState{}
	if _, _, err := e.readState(ctx, e.mailStream(), partVerify, vs); err != nil {
		return nil, err
	}
	return vs, nil
}

// saveVerify updates the "verify" partition's state. It never marks the
// partition succeeded: the stream's last success stays its syncs'.
func (r *run) saveVerify(ctx context.Context, update func(*verifyState)) error {
	vs, err := r.e.loadVerify(ctx)
	if err != nil {
		return err
	}
	update(vs)
	b, err := json.Marshal(vs)
	if err != nil {
		return fmt.Errorf("encode verify state: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 8*time.Second)
	defer cancel()
	return r.e.store.SetState(sctx, r.e.mailStream(), r.id, load.Checkpoint{Partition: partVerify, Cursor: b})
}

// historyRange is the whole history: AGENCY_COMMS_START_DATE to today in
// the communications zone.
func (e *Engine) historyRange() (Range, error) {
	if e.set.Mail.StartDate.IsZero() {
		return Range{}, errors.New("verify communications: AGENCY_COMMS_START_DATE is not set")
	}
	y, m, d := e.set.Now().In(e.set.Mail.TZ).Date()
	return Range{From: utcDate(e.set.Mail.StartDate), To: time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}, nil
}

// fillRange fills a verification range's zero ends from the whole history.
func (e *Engine) fillRange(rg Range) (Range, error) {
	if !rg.From.IsZero() && !rg.To.IsZero() {
		return rg, nil
	}
	h, err := e.historyRange()
	if err != nil && rg.From.IsZero() {
		return rg, err
	}
	if rg.From.IsZero() {
		rg.From = h.From
	}
	if rg.To.IsZero() {
		y, m, d := e.set.Now().In(e.set.Mail.TZ).Date()
		rg.To = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	return rg, nil
}

// verifyDue says whether the scheduled verification is due: once a day
// (UTC date of the last one), after the backfill is complete, and again at
// the next run while the last one did not prove equality.
func (e *Engine) verifyDue(ctx context.Context) (bool, string, error) {
	cs := &commsState{}
	if _, _, err := e.readState(ctx, e.mailStream(), partComms, &cs.cur); err != nil {
		return false, "", err
	}
	if bf := cs.cur.Backfill; bf == nil || !bf.Done {
		return false, "after the backfill is complete", nil
	}
	vs, err := e.loadVerify(ctx)
	if err != nil {
		return false, "", err
	}
	today := utcDate(e.set.Now())
	switch last := vs.Last; {
	case vs.GapPending:
		return true, "whole history; a range closed since could not be reconciled", nil
	case last == nil:
		return true, "whole history, never verified", nil
	case !last.Proved:
		return true, fmt.Sprintf("whole history; the last verification (%s) did not prove equality", last.At.Format(time.DateOnly)), nil
	case utcDate(last.At).Before(today):
		return true, fmt.Sprintf("whole history, last verified %s", last.At.Format(time.DateOnly)), nil
	}
	return false, fmt.Sprintf("verified today (%s)", vs.Last.At.Format(time.RFC3339)), nil
}

// verifyEstimate is the verify task's share of a plan.
func (e *Engine) verifyEstimate(ctx context.Context, rg *Range) (Estimate, error) {
	est := Estimate{Task: TaskVerify}
	if rg == nil {
		due, why, err := e.verifyDue(ctx)
		if err != nil {
			return est, err
		}
		if !due {
			est.Note = "not due: " + why
			return est, nil
		}
		h, err := e.historyRange()
		if err != nil {
			return est, err
		}
		rg = &h
		est.Note = why + "; "
	}
	filled, err := e.fillRange(*rg)
	if err != nil {
		return est, err
	}
	rg = &filled
	est.Requests = 1
	est.Note += fmt.Sprintf("%s..%s: one count request; a differing day costs about log2(days) counts plus its pages", dateString(rg.From), dateString(rg.To))
	return est, nil
}

// verifyTask is the scheduled verification (the verify task of a run):
// the whole history, once a day after the backfill.
func (r *run) verifyTask(ctx context.Context, log *zap.Logger) error {
	due, why, err := r.e.verifyDue(ctx)
	if err != nil {
		return err
	}
	if !due {
		log.Info("verification not due", zap.String("why", why))
		return nil
	}
	if r.budget.Remaining() < 1 {
		log.Info("verification waits for budget: none left in this run")
		return nil
	}
	rg, err := r.e.historyRange()
	if err != nil {
		return err
	}
	err = r.verifyRange(ctx, log, rg)
	if errors.Is(err, ErrNoServiceTotal) {
		// A tolerated variant of the service: nothing to compare with. Said
		// loudly, but it is no failure of the sync.
		log.Warn("the service answers without totals: the history cannot be verified", zap.Error(err))
		r.note("verify: the service sent no total, so the warehouse could not be reconciled with it")
		return nil
	}
	return err
}

// verifyRange reconciles rg (agencysync verify, or the scheduled task),
// records the result in sync_state and the run, and records a gap when it
// could not prove equality. A zero From is AGENCY_COMMS_START_DATE, a zero
// To today.
func (r *run) verifyRange(ctx context.Context, log *zap.Logger, rg Range) error {
	rg, err := r.e.fillRange(rg)
	if err != nil {
		return err
	}
	if rg.To.Before(rg.From) {
		return fmt.Errorf("verify communications: range ends (%s) before it starts (%s)", dateString(rg.To), dateString(rg.From))
	}
	rep, err := r.reconcile(ctx, log, rg.From, rg.To, -1)
	if rep == nil {
		return err
	}
	r.mu.Lock()
	r.mail.verified = rep
	r.mu.Unlock()
	hist, herr := r.e.historyRange()
	whole := herr == nil && !rg.From.After(hist.From) && !rg.To.Before(hist.To)
	if serr := r.saveVerify(ctx, func(st *verifyState) {
		st.Last = rep
		if rep.Proved {
			at := rep.At
			st.LastProvedAt = &at
			if whole {
				st.GapPending = false
			}
		}
		if len(rep.Days) > 0 {
			st.LastDifference = rep
		}
	}); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	log.Info("communications verified", zap.String("summary", rep.Summary()), zap.Bool("proved", rep.Proved))
	if !rep.Proved {
		for _, d := range rep.Days {
			if !d.Resolved {
				r.gap(fmt.Sprintf("communications %s not reconciled: %s", d.Day, d.Reason))
			}
		}
		if rep.Boundary != nil {
			r.gap(fmt.Sprintf("communications %s..%s not reconciled: %s", rep.From, rep.To, rep.Boundary.Advice()))
		}
	}
	return nil
}

// VerifyStatus is the reconciliation's part of `agencysync status`.
type VerifyStatus struct {
	Last           *VerifyReport `json:"last,omitempty"`
	LastProvedAt   *time.Time    `json:"last_proved_at,omitempty"`
	LastDifference *VerifyReport `json:"last_difference,omitempty"`
}

func (e *Engine) verifyStatus(ctx context.Context) (*VerifyStatus, error) {
	vs, err := e.loadVerify(ctx)
	if err != nil {
		return nil, err
	}
	return &VerifyStatus{Last: vs.Last, LastProvedAt: vs.LastProvedAt, LastDifference: vs.LastDifference}, nil
}
