package engine

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// partRefresh is the sync_state partition of the communications stream that
// keeps the rolling re-read (commsCursor.Refresh).
const partRefresh = "refresh"

// loadRefresh reads the refresh partition (see seedRefresh).
func (r *run) loadRefresh(ctx context.Context) (*commsState, error) {
	cs, err := r.loadComms(ctx, partRefresh)
	if err != nil {
		return nil, err
	}
	r.seedRefresh(cs)
	return cs, nil
}

// seedRefresh returns the refresh that cs, the refresh partition's state,
// keeps; a refresh never kept starts seeded on today (the history was read
// in full before it).
func (r *run) seedRefresh(cs *commsState) *refreshState {
	if cs.cur.Refresh == nil {
		cs.cur.Refresh = &refreshState{Seeded: dateString(r.today)}
	}
	return cs.cur.Refresh
}

// markRead records the days from..to (YYYY-MM-DD) as read in full today: a
// range that closed, or days re-fetched with a stable total.
func (r *run) markRead(ctx context.Context, from, to string) error {
	cs, err := r.loadRefresh(ctx)
	if err != nil {
		return err
	}
	cs.cur.Refresh.mark(from, to, dateString(r.today))
	return r.save(ctx, cs, false)
}

// backfillDone says whether the history's backfill is complete.
func (e *Engine) backfillDone(ctx context.Context) (bool, error) {
	var c commsCursor
	if _, _, err := e.readState(ctx, e.mailStream(), partComms, &c); err != nil {
		return false, err
	}
	return c.Backfill != nil && c.Backfill.Done, nil
}

// history lists the days of the history (AGENCY_COMMS_START_DATE to today)
// with when each was last read and the records the warehouse holds for it.
func (e *Engine) history(ctx context.Context, st *refreshState, today time.Time) ([]historyDay, error) {
	from := utcDate(e.set.Mail.StartDate)
	if from.After(today) {
		return nil, nil
	}
	vs, err := e.loadVerify(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := e.heldDays(ctx, from, today, vs)
	if err != nil {
		return nil, fmt.Errorf("plan the communications refresh: %w", err)
	}
	var out []historyDay
	for d := from; !d.After(today); d = d.AddDate(0, 0, 1) {
		day := dateString(d)
		out = append(out, historyDay{day: day, read: st.readOn(day), rows: max(rows[day], 0)})
	}
	return out, nil
}

// refreshPages is what reading the ranges costs: ⌈records ÷ 1000⌉ each
// (one for a range without records), from the warehouse's day counts.
func refreshPages(hist []historyDay, ranges []dayRange) (pages, rows int) {
	for _, rg := range ranges {
		n := 0
		for _, d := range hist {
			if d.day >= rg.From && d.day <= rg.To {
				n += d.rows
			}
		}
		pages += pagesFor(n, 0)
		rows += n
	}
	return pages, rows
}

// commsRefresh is the refresh task: once the backfill is complete, it
// resumes the range being paged, plans the night's slice once a run day (or
// now, with force: `agencysync backfill` without a range, for the days the
// refresh would reach next) and pages its ranges, each closing with the
// reconciliation of its total like any range.
func (r *run) commsRefresh(ctx context.Context, log *zap.Logger, force bool) error {
	done, err := r.e.backfillDone(ctx)
	if err != nil {
		return err
	}
	if !done {
		log.Info("the communications refresh waits for the backfill to complete")
		return nil
	}
	cs, err := r.loadSide(ctx, partRefresh)
	if err != nil {
		return err
	}
	st := r.seedRefresh(cs)
	today := dateString(r.today)
	planned := false
	for {
		if st.Current == nil && len(st.Slice) == 0 {
			// What an earlier run left is read first; then today's slice,
			// once a run day (force: once more, the days that come next).
			if planned || st.SliceOn == today && !force {
				return nil
			}
			planned = true
			if err := r.planRefresh(ctx, log, cs, force); err != nil {
				return err
			}
			continue
		}
		if err := r.refreshRange(ctx, log, cs); err != nil {
			return err
		}
	}
}

// planRefresh plans today's slice of the rolling re-read into cs (force:
// the days the refresh reaches next, see refreshPolicyDay).
func (r *run) planRefresh(ctx context.Context, log *zap.Logger, cs *commsState, force bool) error {
	st, today := cs.cur.Refresh, dateString(r.today)
	hist, err := r.e.history(ctx, st, r.today)
	if err != nil {
		return err
	}
	st.Slice = refreshPolicy{days: refreshDays(r.e.set.Mail.RefreshAge), today: refreshPolicyDay(r.today, force)}.plan(hist)
	st.SliceOn = today
	pages, rows := refreshPages(hist, st.Slice)
	log.Info("communications refresh slice planned", zap.Any("ranges", st.Slice), zap.Int("records", rows), zap.Int("pages", pages))
	return r.save(ctx, cs, false)
}

// refreshPolicyDay is the run day the refresh plans its slice for: today,
// or with force (agencysync backfill without a range) tomorrow — the days
// the refresh reaches next, even those read today (on the day of the first
// sync every day was).
func refreshPolicyDay(today time.Time, force bool) string {
	if force {
		today = today.AddDate(0, 0, 1)
	}
	return dateString(today)
}

// refreshRange pages the refresh's current range (or the slice's next one)
// to its end; its last page records its days as read and queues its
// closing reconciliation.
func (r *run) refreshRange(ctx context.Context, log *zap.Logger, cs *commsState) error {
	st, today := cs.cur.Refresh, dateString(r.today)
	if st.Current == nil {
		st.Current = &rangeCursor{From: st.Slice[0].From, To: st.Slice[0].To, NextPage: 1}
		log.Info("communications refresh range", zap.String("from", st.Current.From), zap.String("to", st.Current.To))
	} else {
		log.Info("resuming communications refresh range", zap.String("from", st.Current.From), zap.String("to", st.Current.To), zap.Int("next_page", st.Current.NextPage))
	}
	rc := st.Current
	return r.pageRange(ctx, log, cs, rc, func(done bool) {
		if !done {
			return
		}
		st.mark(rc.From, rc.To, today)
		if len(st.Slice) > 0 && st.Slice[0].From == rc.From && st.Slice[0].To == rc.To {
			st.Slice = st.Slice[1:]
		}
		st.Current = nil
		r.check(log, rc)
	})
}

// refreshEstimate is the refresh task's share of a plan: the pages of the
// slice it would read (force: as `agencysync backfill` without a range).
func (e *Engine) refreshEstimate(ctx context.Context, force bool) (Estimate, error) {
	est := Estimate{Task: TaskCommsRefresh}
	done, err := e.backfillDone(ctx)
	if err != nil || !done {
		est.Note = "after the backfill is complete"
		return est, err
	}
	today := utcDate(e.set.Now())
	st := &refreshState{Seeded: dateString(today)}
	var c commsCursor
	if _, _, err := e.readState(ctx, e.mailStream(), partRefresh, &c); err != nil {
		return est, err
	}
	if c.Refresh != nil {
		st = c.Refresh
	}
	age := refreshDays(e.set.Mail.RefreshAge)
	ranges := st.Slice
	replan := st.SliceOn != dateString(today) || force && len(ranges) == 0 && st.Current == nil
	if !replan && len(ranges) == 0 && st.Current == nil {
		est.Note = "refreshed today"
		return est, nil
	}
	hist, err := e.history(ctx, st, today)
	if err != nil {
		return est, err
	}
	if replan {
		ranges = refreshPolicy{days: age, today: refreshPolicyDay(today, force)}.plan(hist)
	}
	if c := st.Current; c != nil {
		est.Requests += max(c.LastPage-c.NextPage+1, 1)
		if len(ranges) > 0 && ranges[0].From == c.From && ranges[0].To == c.To {
			ranges = ranges[1:]
		}
	}
	pages, rows := refreshPages(hist, ranges)
	est.Requests += pages
	if len(ranges) == 0 && st.Current == nil {
		est.Note = "refreshed today"
		return est, nil
	}
	est.Note = fmt.Sprintf("%d range(s) read longest ago (%d e-mails), the nightly share of SYNC_COMMS_REFRESH_AGE (%d days)", len(ranges), rows, age)
	return est, nil
}

// RefreshStatus is the rolling re-read's part of `agencysync status`.
type RefreshStatus struct {
	// MaxAgeDays is SYNC_COMMS_REFRESH_AGE in whole days.
	MaxAgeDays int `json:"max_age_days"`
	// OldestDay is the history's day read in full longest ago, and
	// OldestReadOn the run day it was (how stale an old e-mail can be now).
	OldestDay    string `json:"oldest_day,omitempty"`
	OldestReadOn string `json:"oldest_read_on,omitempty"`
	// SliceOn is the run day the last nightly slice was planned on, and
	// Pending its ranges not read yet (FROM..TO).
	SliceOn string   `json:"slice_on,omitempty"`
	Pending []string `json:"pending,omitempty"`
}

func (e *Engine) refreshStatus(ctx context.Context) (*RefreshStatus, error) {
	var c commsCursor
	if _, _, err := e.readState(ctx, e.mailStream(), partRefresh, &c); err != nil || c.Refresh == nil {
		return nil, err
	}
	st := c.Refresh
	rs := &RefreshStatus{MaxAgeDays: refreshDays(e.set.Mail.RefreshAge), SliceOn: st.SliceOn}
	for _, rg := range st.Slice {
		rs.Pending = append(rs.Pending, rg.From+".."+rg.To)
	}
	if e.set.Mail.StartDate.IsZero() {
		return rs, nil
	}
	today := utcDate(e.set.Now())
	for d := utcDate(e.set.Mail.StartDate); !d.After(today); d = d.AddDate(0, 0, 1) {
		if on := st.readOn(dateString(d)); rs.OldestReadOn == "" || on < rs.OldestReadOn {
			rs.OldestDay, rs.OldestReadOn = dateString(d), on
		}
	}
	return rs, nil
}
