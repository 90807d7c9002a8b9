package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/transform"
)

// Partitions of the communications stream in sync_state.
const (
	partComms    = ""         // watermark, backfill and increment cursors
	partBackfill = "backfill" // a manual `agencysync backfill` range
)

// rangeCursor is a date range being paged. NextPage is the first page not
// yet committed: a run that resumes asks for it and for no committed page.
type rangeCursor struct {
	From     string `json:"from"` // YYYY-MM-DD, inclusive
	To       string `json:"to"`   // YYYY-MM-DD, inclusive
	NextPage int    `json:"next_page"`
	PerPage  int    `json:"per_page,omitempty"` // as answered by the server
	Total    int    `json:"total"`
	LastPage int    `json:"last_page"`
	Seen     int    `json:"seen"` // distinct records received (loaded or rejected) in committed pages
	// Offset is the position after the last committed page (records before
	// NextPage in the layout it was paged under): a resume under another
	// per_page starts from it.
	Offset int `json:"offset,omitempty"`
	// LastID is the highest record id committed (records come in ascending id).
	LastID int64 `json:"last_id,omitempty"`
	// Unpaged: the service's answers carried no paging fields, so Total is
	// unknown and the range cannot be reconciled at its closing.
	Unpaged bool `json:"unpaged,omitempty"`
	// FirstPage is the page an increment started at because the warehouse
	// already held the pages before it (see skipHeld); 0 for a range read
	// from its first page.
	FirstPage int `json:"first_page,omitempty"`
	// SkipPerPage is the page size skipHeld asked with (0 when it did
	// not skip): it may be smaller than the server's, to leave room for
	// new records in the page holding the last held one.
	SkipPerPage int `json:"skip_per_page,omitempty"`
}

// backfillCursor is the history backfill: from Start to End (the day it
// began), in windows, the one in progress in Current.
type backfillCursor struct {
	Start     string       `json:"start"`
	End       string       `json:"end"`
	DoneUntil string       `json:"done_until,omitempty"`
	Current   *rangeCursor `json:"current,omitempty"`
	Done      bool         `json:"done"`
}

// rangeCheck compares what a completed range delivered with the server's total.
type rangeCheck struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	Total     int       `json:"total"`
	Seen      int       `json:"seen"`
	Shortfall int       `json:"shortfall"`
	At        time.Time `json:"at"`
}

// commsCursor is the cursor of the communications stream.
type commsCursor struct {
	Backfill           *backfillCursor `json:"backfill,omitempty"`
	Increment          *rangeCursor    `json:"increment,omitempty"`
	LastIncrementPages int             `json:"last_increment_pages,omitempty"`
	LastCheck          *rangeCheck     `json:"last_check,omitempty"`
	Manual             *rangeCursor    `json:"manual,omitempty"`  // partition "backfill" only
	Refresh            *refreshState   `json:"refresh,omitempty"` // partition "refresh" only
	// FullReadOn is the run day (YYYY-MM-DD) on which an increment last
	// read its whole range, FullReadFrom..FullReadTo, from its first page
	// (FullReadPages pages). Until the day changes, later increments whose
	// range lies inside it start at the first page that can hold new records.
	FullReadOn    string `json:"full_read_on,omitempty"`
	FullReadFrom  string `json:"full_read_from,omitempty"`
	FullReadTo    string `json:"full_read_to,omitempty"`
	FullReadPages int    `json:"full_read_pages,omitempty"`
	// LastPerPage is the page size the service answered in the last
	// increment; LastSkipRequests the requests of the last increment that
	// started past its first page.
	LastPerPage      int `json:"last_per_page,omitempty"`
	LastSkipRequests int `json:"last_skip_requests,omitempty"`
}

func dateString(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func parseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse cursor date %q: %w", s, err)
	}
	return t, nil
}

// dates parses the range's first and last day.
func (rc *rangeCursor) dates() (from, to time.Time, err error) {
	if from, err = parseDate(rc.From); err == nil {
		to, err = parseDate(rc.To)
	}
	return from, to, err
}

// commsState is the loaded state of a communications partition.
type commsState struct {
	partition string
	watermark *time.Time
	cur       commsCursor
}

func (r *run) loadComms(ctx context.Context, partition string) (*commsState, error) {
	cs := &commsState{partition: partition}
	st, _, err := r.e.readState(ctx, r.e.mailStream(), partition, &cs.cur)
	if err != nil {
		return nil, err
	}
	cs.watermark = st.Watermark
	return cs, nil
}

func (cs *commsState) checkpoint(succeeded bool) (*load.Checkpoint, error) {
	b, err := json.Marshal(cs.cur)
	if err != nil {
		return nil, fmt.Errorf("encode communications cursor: %w", err)
	}
	return &load.Checkpoint{Partition: cs.partition, Watermark: cs.watermark, Cursor: b, Succeeded: succeeded}, nil
}

// save writes the state outside a page (cursor changes that load nothing).
func (r *run) save(ctx context.Context, cs *commsState, succeeded bool) error {
	cp, err := cs.checkpoint(succeeded)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 8*time.Second)
	defer cancel()
	return r.e.store.SetState(sctx, r.e.mailStream(), r.id, *cp)
}

// loadSide reads partition, one that pages ranges besides the stream's own
// (a manual backfill, the refresh), with the watermark of the stream's own
// partition (partComms) in place of its own.
func (r *run) loadSide(ctx context.Context, partition string) (*commsState, error) {
	main, err := r.loadComms(ctx, partComms)
	if err != nil {
		return nil, err
	}
	cs, err := r.loadComms(ctx, partition)
	if err == nil {
		cs.watermark = main.watermark
	}
	return cs, err
}

// loadCommsStarted reads the state of partition partComms, as the increment
// and the backfill begin, starting the backfill first when it never started.
func (r *run) loadCommsStarted(ctx context.Context) (*commsState, error) {
	cs, err := r.loadComms(ctx, partComms)
	if err != nil {
		return nil, err
	}
	if err := r.initBackfill(ctx, cs); err != nil {
		return nil, err
	}
	return cs, nil
}

// initBackfill starts the backfill the first time the stream runs: from
// AGENCY_COMMS_START_DATE to today, as one range (or windows).
func (r *run) initBackfill(ctx context.Context, cs *commsState) error {
	if cs.cur.Backfill != nil {
		return nil
	}
	if r.e.set.Mail.StartDate.IsZero() {
		return errors.New("start backfill: AGENCY_COMMS_START_DATE is not set")
	}
	end := r.today
	start := utcDate(r.e.set.Mail.StartDate)
	cs.cur.Backfill = &backfillCursor{Start: dateString(start), End: dateString(end), Done: start.After(end)}
	return r.save(ctx, cs, false)
}

// commsIncrement fetches what is new: a resumed increment first, then the
// range from the watermark minus the lookback to today. While the backfill
// is still under way, the increment covers only the days after the
// backfill's end, which the backfill will not fetch.
func (r *run) commsIncrement(ctx context.Context, log *zap.Logger) error {
	cs, err := r.loadCommsStarted(ctx)
	if err != nil {
		return err
	}
	if now := r.e.set.Now().UTC(); cs.watermark != nil && cs.watermark.After(now) {
		// A watermark past now (left by a future-dated e-mail before the
		// watermark was held at now) would stop the increments.
		log.Warn("communications watermark is in the future; held at now", zap.Time("watermark", *cs.watermark), zap.Time("now", now))
		r.note(fmt.Sprintf("communications watermark %s was in the future; held at now", cs.watermark.UTC().Format(time.RFC3339)))
		cs.watermark = &now
	}
	if cs.cur.Increment != nil {
		log.Info("resuming communications increment", zap.String("from", cs.cur.Increment.From), zap.String("to", cs.cur.Increment.To), zap.Int("next_page", cs.cur.Increment.NextPage))
		if err := r.incrementRange(ctx, log, cs); err != nil {
			return err
		}
	}
	var from time.Time
	if bf := cs.cur.Backfill; !bf.Done || cs.watermark == nil {
		end, err := parseDate(bf.End)
		if err != nil {
			return err
		}
		from = end.AddDate(0, 0, 1)
	} else {
		// The earlier of the UTC date and the AGENCY_COMMS_TZ date: a zone
		// west of UTC files the instant under the day before.
		back := cs.watermark.Add(-r.e.set.Mail.Lookback)
		from = minTime(utcDate(back), dateIn(back, r.e.set.Mail.TZ))
	}
	to := r.commsToday(r.today)
	if from.After(to) {
		if cs.watermark != nil && cs.watermark.After(r.e.set.Now()) {
			log.Warn("no communications increment due: the watermark is in the future", zap.Time("from", from), zap.Time("watermark", *cs.watermark))
		} else {
			log.Debug("no communications increment due", zap.Time("from", from))
		}
		return nil
	}
	cs.cur.Increment = &rangeCursor{From: dateString(from), To: dateString(to), NextPage: 1}
	if err := r.skipHeld(ctx, log, cs); err != nil {
		return err
	}
	if err := r.incrementRange(ctx, log, cs); err != nil {
		return err
	}
	return r.catchUpServiceDay(ctx, log, cs, to)
}

// commsToday is the last day an increment asks for: the service's today in
// AGENCY_COMMS_TZ (a zone east of UTC starts its day before UTC's), at
// least today (UTC, as the run started).
func (r *run) commsToday(today time.Time) time.Time {
	return maxTime(today, dateIn(r.e.set.Now(), r.e.set.Mail.TZ))
}

// catchUpServiceDay fetches the days after to that the service's clock has
// reached meanwhile. The run's today comes from the service clock as known
// when the run started (its offset as a previous run saw it); when the
// answers show that the service's day has moved on since (its clock jumped,
// or this is the first process to see it), the increment goes on to the
// service's today rather than leave that day to the next run.
func (r *run) catchUpServiceDay(ctx context.Context, log *zap.Logger, cs *commsState, to time.Time) error {
	svcToday := r.commsToday(utcDate(r.e.set.Now()))
	if !svcToday.After(to) {
		return nil
	}
	log.Info("the service's day is later than the run's start said: fetching up to it",
		zap.String("run_today", dateString(to)), zap.String("service_today", dateString(svcToday)))
	cs.cur.Increment = &rangeCursor{From: dateString(to.AddDate(0, 0, 1)), To: dateString(svcToday), NextPage: 1}
	return r.incrementRange(ctx, log, cs)
}

// skipHeld lets a new increment start at the first page that can hold
// records the warehouse does not hold yet, when today's run already read
// the increment's range in full (the lookback is re-read once a day).
//
// Records come in ascending id, so the warehouse's held records of the
// range (counted as the reconciliation counts them: per day of
// AGENCY_COMMS_TZ, rejected records included) are its first positions:
// with per_page as last answered, the pages before floor(held/per_page)+1
// hold nothing new. The cursor is seeded as if those pages had been
// committed: Seen = held (so no shortfall is reported for pages skipped on
// purpose), LastID = the highest id held, and the layout unknown (Total -1),
// so that the first page asked is checked: when it does not start with a
// record the warehouse holds (records deleted at the service moved the new
// ones to earlier pages), the pager steps back page by page until it does.
// The closing reconciliation compares the service's total with the
// warehouse's count of the range, as for any range.
func (r *run) skipHeld(ctx context.Context, log *zap.Logger, cs *commsState) error {
	rc, c := cs.cur.Increment, &cs.cur
	today := dateString(r.today)
	switch {
	case c.FullReadOn != today || c.FullReadFrom == "" || c.FullReadFrom > rc.From || c.FullReadTo < rc.To:
		log.Info("communications increment reads its range from the first page: not read in full today",
			zap.String("from", rc.From), zap.String("to", rc.To), zap.String("last_full_read", c.FullReadOn))
		return nil
	case c.LastPerPage <= 0:
		return nil
	}
	from, to, err := rc.dates()
	if err != nil {
		return err
	}
	loc := r.e.set.Mail.TZ
	vs, err := r.e.loadVerify(ctx)
	if err != nil {
		return err
	}
	days, err := r.e.heldDays(ctx, from, to, vs)
	if err != nil {
		return fmt.Errorf("count held communications: %w", err)
	}
	held := 0
	for _, n := range days {
		held += n
	}
	per := skipPerPage(held, c.LastPerPage)
	page := (held-1)/per + 1 // the page of the last held record
	if page <= 1 {
		return nil
	}
	lastID, err := r.e.mail.recon.MaxEmailID(ctx, load.DayStart(from, loc), load.DayStart(to.AddDate(0, 0, 1), loc))
	if err != nil {
		return err
	}
	if lastID <= 0 {
		return nil // nothing to check the first page against
	}
	rc.NextPage, rc.FirstPage, rc.PerPage, rc.SkipPerPage = page, page, per, per
	rc.Offset, rc.Seen, rc.LastID = (page-1)*per, held, lastID
	rc.Total, rc.LastPage = -1, (held+per-1)/per
	log.Info("communications increment starts at the first page that can hold new records",
		zap.String("from", rc.From), zap.String("to", rc.To), zap.Int("held", held), zap.Int("per_page", per), zap.Int("page", page))
	return nil
}

// skipPerPage is the page size that skipHeld asks with: per, when the
// page holding the last held record leaves at least half a page of room for
// new ones after it; else the size, down to half of per, whose page holding
// the last held record leaves the most room — so that an increment's new
// records fit in that one page instead of spilling into the next (and a
// page never starts with a new record, which would prove nothing about the
// pages before it).
func skipPerPage(held, per int) int {
	if per <= 1 {
		return per
	}
	room := func(p int) int { return ((held-1)/p+1)*p - held }
	if room(per) >= per/2 {
		return per
	}
	best, most := per, room(per)
	for p := per - 1; p >= max(per/2, 1); p-- {
		if r := room(p); r > most {
			best, most = p, r
		}
	}
	return best
}

func (r *run) incrementRange(ctx context.Context, log *zap.Logger, cs *commsState) error {
	rc := cs.cur.Increment
	startPage := rc.NextPage
	spent := r.budget.Spent()
	full := false
	err := r.pageRange(ctx, log, cs, rc, func(done bool) {
		if done {
			c := &cs.cur
			c.LastIncrementPages = max(rc.NextPage-startPage, 1)
			// The size the server answers; not the one skipHeld chose
			// to leave room for new records, unless the server capped it.
			if rc.PerPage > 0 && !rc.Unpaged && (rc.SkipPerPage == 0 || rc.PerPage < rc.SkipPerPage) {
				c.LastPerPage = rc.PerPage
			}
			switch {
			case rc.FirstPage > 1:
				c.LastSkipRequests = max(r.budget.Spent()-spent, 1)
			default:
				// Read from its first page to its last (a resumed range in
				// more than one run; the range's To tells its day).
				c.FullReadOn, c.FullReadFrom, c.FullReadTo = dateString(r.today), rc.From, rc.To
				c.FullReadPages = max(rc.NextPage-1, 1)
				full = true
			}
			c.LastCheck = r.check(log, rc)
			c.Increment = nil
		}
	})
	if err != nil || !full {
		return err
	}
	return r.markRead(ctx, rc.From, rc.To)
}

// commsBackfill pages through the history, window by window, resuming at
// the first page not committed.
func (r *run) commsBackfill(ctx context.Context, log *zap.Logger) error {
	cs, err := r.loadCommsStarted(ctx)
	if err != nil {
		return err
	}
	bf := cs.cur.Backfill
	for !bf.Done {
		if bf.Current == nil {
			from, err := parseDate(bf.Start)
			if err != nil {
				return err
			}
			if bf.DoneUntil != "" {
				d, err := parseDate(bf.DoneUntil)
				if err != nil {
					return err
				}
				from = d.AddDate(0, 0, 1)
			}
			end, err := parseDate(bf.End)
			if err != nil {
				return err
			}
			to := end
			if w := r.e.set.Mail.BackfillWindow; w > 0 {
				days := max(int(w/(24*time.Hour)), 1)
				to = from.AddDate(0, 0, days-1)
				if to.After(end) {
					to = end
				}
			}
			bf.Current = &rangeCursor{From: dateString(from), To: dateString(to), NextPage: 1}
			log.Info("communications backfill window", zap.String("from", bf.Current.From), zap.String("to", bf.Current.To))
		} else {
			log.Info("resuming communications backfill", zap.String("from", bf.Current.From), zap.String("to", bf.Current.To), zap.Int("next_page", bf.Current.NextPage))
		}
		rc := bf.Current
		err := r.pageRange(ctx, log, cs, rc, func(done bool) {
			if !done {
				return
			}
			cs.cur.LastCheck = r.check(log, rc)
			bf.DoneUntil = rc.To
			bf.Current = nil
			bf.Done = bf.DoneUntil >= bf.End
		})
		if err != nil {
			return err
		}
		if err := r.markRead(ctx, rc.From, rc.To); err != nil {
			return err
		}
	}
	return nil
}

// manualBackfill re-fetches a range (agencysync backfill), resuming the same
// range where a previous attempt stopped. The stream's watermark is raised,
// never lowered.
func (r *run) manualBackfill(ctx context.Context, rg Range, log *zap.Logger) error {
	cs, err := r.loadSide(ctx, partBackfill)
	if err != nil {
		return err
	}
	from, to := dateString(rg.From), dateString(rg.To)
	if m := cs.cur.Manual; m == nil || m.From != from || m.To != to {
		cs.cur.Manual = &rangeCursor{From: from, To: to, NextPage: 1}
	} else {
		log.Info("resuming manual backfill", zap.String("from", from), zap.String("to", to), zap.Int("next_page", m.NextPage))
	}
	rc := cs.cur.Manual
	err = r.pageRange(ctx, log, cs, rc, func(done bool) {
		if done {
			cs.cur.LastCheck = r.check(log, rc)
			cs.cur.Manual = nil
		}
	})
	if err != nil {
		return err
	}
	return r.markRead(ctx, rc.From, rc.To)
}

// raiseWatermark raises cs's watermark to the latest email_at of a page's
// e-mails, never past now (a future-dated e-mail would stop the increments
// until its date), and returns how many were dated after now. The records
// filed far from their date say nothing of the range's time: they leave it
// alone.
func raiseWatermark(cs *commsState, b *transform.Batch, far []farRecord, now time.Time) (future int) {
	farKeys := make(map[string]bool, len(far))
	for _, f := range far {
		farKeys[f.key] = true
	}
	ids := b.Column("emails", "record_id")
	for i, v := range b.Column("emails", "email_at") {
		at, ok := v.(time.Time)
		if id, isID := ids[i].(int64); !ok || isID && farKeys[strconv.FormatInt(id, 10)] {
			continue
		}
		if at.After(now) {
			future++
			at = now
		}
		if cs.watermark == nil || at.After(*cs.watermark) {
			cs.watermark = &at
		}
	}
	return future
}

// pageRange pages through rc from its NextPage. Each page commits with the
// cursor that points past it; onPage updates the cursor before the commit
// (done: the page is the range's last). Fetching the next page overlaps the
// loading of the current one.
//
// Only a real last page closes the range (see rangePages): a sequence that
// ends otherwise — cancellation, an error — returns an error and leaves the
// cursor on the first page not committed.
func (r *run) pageRange(ctx context.Context, log *zap.Logger, cs *commsState, rc *rangeCursor, onPage func(done bool)) error {
	from, to, err := rc.dates()
	if err != nil {
		return err
	}
	q := extract.CommsQuery{DomainID: r.e.set.Mail.DomainID, UserIDs: r.e.set.Mail.UserIDs, BrandURL: r.e.set.Mail.BrandURL,
		DateStart: from, DateEnd: to, WithMessage: r.e.set.Mail.WithMessage}
	r.progress.Update(r.e.mailStream(), rc.NextPage-1, rc.LastPage)
	// Each page is fetched, decoded and transformed ahead (when prefetching,
	// in the prefetcher's goroutine, while the page before commits), and
	// spooled until its commit. The producer works on its own copy of the
	// cursor: the page loop below writes rc while it runs.
	start := *rc
	pages := prefetch(ctx, r.e.set.NoPrefetch, func(ctx context.Context) iter.Seq2[*pageStep, error] {
		return r.rangePages(ctx, log, q, start)
	})
	users := newKnownUsers()
	now := r.e.set.Now().UTC()
	future := 0
	decl, _ := r.e.mailDecl()
	var landed, rejected int // this run's e-mails and rejects of the range
	defer func() {
		if future > 0 {
			log.Warn("communications dated after the service's now: kept; the watermark stays at now",
				zap.String("from", rc.From), zap.String("to", rc.To), zap.Int("records", future), zap.Time("now", now))
			r.note(fmt.Sprintf("communications %s..%s: %d e-mails dated after now (%s) kept; the watermark stays at now",
				rc.From, rc.To, future, now.Format(time.RFC3339)))
		}
	}()
	for st, err := range pages {
		if err != nil {
			return fmt.Errorf("fetch communications %s..%s page %d: %w", rc.From, rc.To, rc.NextPage, err)
		}
		page := st.page
		batch := users.filter(page.Batch)
		// A record filed far from its date (a bogus Date: header) is
		// recorded where it is filed once the page is committed.
		far := farRecords(&batch, from, to, r.e.set.Mail.TZ)
		future += raiseWatermark(cs, &batch, far, now)
		rc.NextPage = page.Number + 1
		rc.PerPage, rc.Total, rc.LastPage = page.PerPage, page.Total, page.LastPage
		rc.Unpaged = !page.Paged && page.LastPage == 0
		rc.Seen += st.fresh
		rc.LastID = st.lastID
		rc.Offset = (page.Number-1)*page.PerPage + page.Rows
		onPage(st.done)
		landed, rejected = landed+batch.Len(decl.Main), rejected+len(batch.Rejects)
		cp, err := cs.checkpoint(r.rangeCompletes(log, cs, rc, st.done, landed, rejected))
		if err != nil {
			return err
		}
		if _, err := r.commit(ctx, &load.RangePage{Stream: r.e.mailStream(), Batch: batch, State: cp}); err != nil {
			return err
		}
		users.committed(&batch)
		if err := r.recordFiled(ctx, log, far); err != nil {
			return err
		}
		r.stats.rangePage(rc.From, rc.To, int64(batch.Len("emails")+len(batch.Rejects)), st.done)
		if r.spool != nil {
			r.spool.drop(r.pageKey(rc, page.Number))
		}
		r.progress.Update(r.e.mailStream(), page.Number, page.LastPage)
		if st.done {
			log.Debug("communications range done", zap.String("from", rc.From), zap.String("to", rc.To), zap.Int("total", rc.Total), zap.Int("seen", rc.Seen))
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("page communications: %w", ctx.Err())
		}
	}
	// The producer ends only after a last page or with an error; anything
	// else must not pass for the end of the range.
	return fmt.Errorf("page communications %s..%s: the pages ended before the last one at page %d: %w",
		rc.From, rc.To, rc.NextPage, cmp.Or(ctx.Err(), ErrIncomplete))
}

// rangeCompletes reports whether the commit of a range's page completes
// the stream's own partition (its last success, the stream's freshness):
// the range's real last page (done), in that partition, with no increment
// pending and the backfill done — and the range landed whole: not short of
// the service's total (such a range completes the partition only once its
// reconciliation proves it; see markClosingCompletes), and not every record
// of it rejected (nothing landed).
func (r *run) rangeCompletes(log *zap.Logger, cs *commsState, rc *rangeCursor, done bool, landed, rejected int) bool {
	if !done || cs.partition != partComms || cs.cur.Increment != nil || (cs.cur.Backfill != nil && !cs.cur.Backfill.Done) {
		return false
	}
	if landed == 0 && rejected > 0 {
		log.Warn("every record of the range was rejected: the stream is not complete (see rejected_records)",
			zap.String("from", rc.From), zap.String("to", rc.To), zap.Int("rejected", rejected))
		return false
	}
	if !rc.Unpaged && rc.Seen < rc.Total {
		r.markClosingCompletes()
		return false
	}
	return true
}

func (e *Engine) estimateComms(ctx context.Context) (inc, back Estimate, err error) {
	inc = Estimate{Task: TaskCommsIncrement}
	back = Estimate{Task: TaskCommsBackfill}
	var cs commsState
	st, _, err := e.readState(ctx, e.mailStream(), partComms, &cs.cur)
	if err != nil {
		return inc, back, err
	}
	cs.watermark = st.Watermark
	remaining := func(rc *rangeCursor) (int, bool) {
		if rc.LastPage == 0 {
			return 1, true
		}
		return max(rc.LastPage-rc.NextPage+1, 0), false
	}
	today := utcDate(e.set.Now())
	if rc := cs.cur.Increment; rc != nil {
		n, _ := remaining(rc)
		inc.Requests += n
		inc.Note = fmt.Sprintf("resume %s..%s at page %d; ", rc.From, rc.To, rc.NextPage)
	}
	bf := cs.cur.Backfill
	switch {
	case bf == nil:
		back.Requests, back.Unknown = 1, true
		back.Note = fmt.Sprintf("first backfill from %s; the first page tells its size", dateString(e.set.Mail.StartDate))
	case !bf.Done:
		if bf.End < dateString(today) {
			inc.Requests++
			inc.Note += "days after the backfill's end"
		}
		if rc := bf.Current; rc != nil {
			n, unknown := remaining(rc)
			back.Requests, back.Unknown = n, unknown || bf.DoneUntil < bf.End && rc.To < bf.End
			back.Note = fmt.Sprintf("window %s..%s from page %d of %d; backfill to %s", rc.From, rc.To, rc.NextPage, rc.LastPage, bf.End)
		} else {
			back.Requests, back.Unknown = 1, true
			if bf.DoneUntil == "" {
				back.Note = fmt.Sprintf("first window from %s; backfill to %s; the first page tells its size", bf.Start, bf.End)
			} else {
				back.Note = fmt.Sprintf("next window after %s; backfill to %s", bf.DoneUntil, bf.End)
			}
		}
	default:
		if c := cs.cur; c.FullReadOn == dateString(today) && c.LastPerPage > 0 {
			// Read in full today: the next increment starts at the first
			// page that can hold new records (skipHeld).
			n := max(c.LastSkipRequests, 1)
			inc.Requests += n
			inc.Note += fmt.Sprintf("from the first page that can hold new records (the lookback window was read in full today); last time %d request(s)", n)
		} else {
			// The day's first increment re-reads the lookback window whole.
			n := max(c.FullReadPages, c.LastIncrementPages, 1)
			inc.Requests += n
			inc.Note += fmt.Sprintf("the lookback window read in full, once a day: about %d page(s)", n)
		}
		back.Note = "backfill complete"
	}
	return inc, back, nil
}
