package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/transform"
)

// The communications endpoint files each e-mail under a calendar day of its
// own zone (date_start and date_end select those days). The zones in use lie
// within UTC-12 and UTC+14, so an e-mail sent at instant t can be filed
// under any UTC date from that of t-14h to that of t+14h: its own day and
// the neighbouring ones under any offset within ±14 h. An e-mail returned
// for a range of days none of which it could be filed under by its email_at
// (a bogus Date: header says year 0001, 9999 or a month ahead, and the
// service files it under its arrival day) is filed far from its date: the
// worker records where (verifyState.Filed) and counts it there.

// boundarySlack bounds how far from UTC a service cuts its calendar days.
const boundarySlack = 14 * time.Hour

// filingDays are the first and last UTC dates a service could file an
// e-mail dated at under, whatever its zone within ±boundarySlack.
func filingDays(at time.Time) (first, last time.Time) {
	return utcDate(at.Add(-boundarySlack)), utcDate(at.Add(boundarySlack))
}

// farFrom says that no zone within ±boundarySlack files an e-mail dated at
// under any day of from..to (calendar dates).
func farFrom(at, from, to time.Time) bool {
	first, last := filingDays(at)
	return last.Before(from) || first.After(to)
}

// dateIn is the calendar date of t in loc, as a UTC midnight.
func dateIn(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// filedEmail is where the service files a record whose email_at lies far
// from the day (verifyState.Filed, keyed by record key).
type filedEmail struct {
	On    string    `json:"on"`              // YYYY-MM-DD: the day whose range returned it
	At    time.Time `json:"at"`              // its email_at
	Exact bool      `json:"exact,omitempty"` // On is the one day of the range that returned it; else placed by its neighbours within a longer range
	// Reject: a rejected record (counted by its key), not a live e-mail.
	Reject bool `json:"reject,omitempty"`
}

// farRecord is a record of a page filed far from its date.
type farRecord struct {
	key string
	id  int64
	filedEmail
	// between: the record's neighbours by id lie on the days On..between
	// (a later day): it is filed under one of them, which a count tells.
	between string
}

// farRecords finds the records of a page of range from..to that are filed
// far from their date: e-mails, and rejected records whose email_at is
// readable. A one-day range says exactly where; within a longer range a
// record is placed on the day (in loc) of the records next to it by record
// id, which ascends with the filing time (the range's last day when it has
// no such neighbour).
func farRecords(b *transform.Batch, from, to time.Time, loc *time.Location) []farRecord {
	type rec struct {
		id     int64
		key    string
		at     time.Time
		far    bool
		reject bool
	}
	var recs []rec
	ids, ats := b.Column("emails", "record_id"), b.Column("emails", "email_at")
	nFar := 0
	for i := range ids {
		id, ok1 := ids[i].(int64)
		at, ok2 := ats[i].(time.Time)
		if ok1 && ok2 {
			r := rec{id: id, key: strconv.FormatInt(id, 10), at: at, far: farFrom(at, from, to)}
			recs = append(recs, r)
			if r.far {
				nFar++
			}
		}
	}
	for _, rj := range b.Rejects {
		at, ok := rejectEmailAt(rj.Payload)
		if !ok || !farFrom(at, from, to) {
			continue
		}
		id, _ := strconv.ParseInt(rj.Key, 10, 64)
		recs = append(recs, rec{id: id, key: rj.Key, at: at, far: true, reject: true})
		nFar++
	}
	if nFar == 0 {
		return nil
	}
	slices.SortFunc(recs, func(a, b rec) int { return cmp.Compare(a.id, b.id) })
	exact := from.Equal(to)
	dayOf := func(k int) (string, bool) {
		if k < 0 || k >= len(recs) || recs[k].far || recs[k].id <= 0 {
			return "", false
		}
		d := dateIn(recs[k].at, loc)
		d = maxTime(from, minTime(to, d))
		return dateString(d), true
	}
	var out []farRecord
	for k, r := range recs {
		if !r.far {
			continue
		}
		f := farRecord{key: r.key, id: r.id, filedEmail: filedEmail{On: dateString(to), At: r.at, Exact: exact, Reject: r.reject}}
		if exact {
			f.On = dateString(from)
		} else if r.id > 0 {
			lo, hi := k-1, k+1
			for lo >= 0 && recs[lo].far {
				lo--
			}
			for hi < len(recs) && recs[hi].far {
				hi++
			}
			l, okL := dayOf(lo)
			h, okH := dayOf(hi)
			switch {
			case okL && okH && l < h:
				f.On, f.between = l, h
			case okL:
				f.On = l
			case okH:
				f.On = h
			}
		}
		out = append(out, f)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// recordFiled keeps where the far records of a committed page are filed
// (verifyState.Filed) and warns once per record, when it is first met: a
// known exception is no gap, and the run is not the worse for it. A place
// learned from a one-day range is not replaced by a guess.
func (r *run) recordFiled(ctx context.Context, log *zap.Logger, recs []farRecord) error {
	if len(recs) == 0 {
		return nil
	}
	vs, err := r.e.loadVerify(ctx)
	if err != nil {
		return err
	}
	var fresh []farRecord
	changed := map[string]filedEmail{}
	r.placeFiled(ctx, log, vs, recs)
	for _, f := range recs {
		old, known := vs.Filed[f.key]
		switch {
		case !known:
			fresh = append(fresh, f)
		case old.Exact && !f.Exact, old == f.filedEmail:
			continue
		}
		changed[f.key] = f.filedEmail
	}
	if len(changed) == 0 {
		return nil
	}
	now := r.e.set.Now()
	for _, f := range fresh {
		dated := "dated " + f.At.UTC().Format(time.RFC3339)
		if f.At.After(now) {
			dated = "dated after now (" + f.At.UTC().Format(time.RFC3339) + ")"
		}
		log.Warn("an e-mail is filed far from its date: it is counted on the day whose range returned it",
			zap.String("record", f.key), zap.Time("email_at", f.At), zap.String("filed_on", f.On))
		r.note(fmt.Sprintf("communications: e-mail %s is %s but filed under %s, far from its date; counted on that day from now on",
			f.key, dated, f.On))
	}
	return r.saveVerify(ctx, func(st *verifyState) {
		if st.Filed == nil {
			st.Filed = map[string]filedEmail{}
		}
		maps.Copy(st.Filed, changed)
	})
}

// placeFiled decides, for the new far records whose neighbours lie on
// different days, under which of those days the service files them: the
// records come in ascending id, so for each day from the first, one
// per_page=1 count says how many more the service holds than the
// warehouse, and that many of them (the lowest ids) are filed under it. A
// count that fails leaves them on the first day, not exact; a later
// re-fetch of their day places them exactly.
func (r *run) placeFiled(ctx context.Context, log *zap.Logger, vs *verifyState, recs []farRecord) {
	var rest []*farRecord
	for i := range recs {
		if _, known := vs.Filed[recs[i].key]; !known && recs[i].between != "" {
			rest = append(rest, &recs[i])
		}
	}
	slices.SortFunc(rest, func(a, b *farRecord) int { return cmp.Compare(a.id, b.id) })
	for len(rest) > 0 {
		group := rest
		for i := range rest {
			if rest[i].On != rest[0].On || rest[i].between != rest[0].between {
				group = rest[:i]
				break
			}
		}
		rest = rest[len(group):]
		first, last, err := parseDates(group[0].On, group[0].between)
		if err != nil {
			continue
		}
		for d := first; d.Before(last) && len(group) > 0; d = d.AddDate(0, 0, 1) {
			total, err := r.serviceCount(ctx, d, d)
			if err != nil {
				log.Info("could not count the day of e-mails filed far from their date; placed by their neighbours", zap.Error(err))
				break
			}
			held, err := r.e.heldDays(ctx, d, d, vs)
			if err != nil {
				break
			}
			n := min(max(total-held[dateString(d)], 0), len(group))
			for _, f := range group[:n] {
				f.On, f.Exact = dateString(d), true
			}
			group = group[n:]
			if next := d.AddDate(0, 0, 1); next.Equal(last) {
				for _, f := range group {
					f.On, f.Exact = dateString(last), true
				}
				group = nil
			}
		}
	}
}

// filedKeys are the keys of the records filed far from their date: those of
// rejected records (to leave out of the count by email_at) and the ids of
// e-mails.
func (vs *verifyState) filedKeys() (rejects []string, emails []int64) {
	for k, f := range vs.Filed {
		if f.Reject {
			rejects = append(rejects, k)
		} else if id, err := strconv.ParseInt(k, 10, 64); err == nil {
			emails = append(emails, id)
		}
	}
	slices.Sort(rejects)
	slices.Sort(emails)
	return rejects, emails
}

// heldDays counts what the warehouse holds for each day from..to of
// AGENCY_COMMS_TZ, as the reconciliation compares it with the service's
// totals: the live e-mails and the dated rejected records on the day of
// their email_at (load.Reconciler.EmailDayCounts), the rejected records
// whose date cannot be read on the day that returned them (vs.Undated), and
// the records filed far from their date on the day that returned them
// (vs.Filed) instead of their email_at's.
func (e *Engine) heldDays(ctx context.Context, from, to time.Time, vs *verifyState) (map[string]int, error) {
	loc := e.set.Mail.TZ
	rejects, emails := vs.filedKeys()
	wh, err := e.mail.recon.EmailDayCounts(ctx, from, to, loc, append(vs.undatedKeys(), rejects...))
	if err != nil {
		return nil, err
	}
	in := func(day string) bool { return day >= dateString(from) && day <= dateString(to) }
	for day, keys := range vs.Undated {
		if in(day) {
			wh[day] += len(keys)
		}
	}
	held, err := e.heldFiled(ctx, emails, vs)
	if err != nil {
		return nil, err
	}
	for _, h := range held {
		if h.live {
			if day := dateString(dateIn(h.at, loc)); in(day) {
				wh[day]--
			}
		}
		if in(h.on) {
			wh[h.on]++
		}
	}
	return wh, nil
}

// heldRecord is a record filed far from its date that the warehouse holds:
// the day it is filed on and, for a live e-mail, its email_at.
type heldRecord struct {
	on   string
	at   time.Time
	live bool
}

// heldFiled returns the records of vs.Filed the warehouse holds: the
// rejected ones, and the e-mails among emails (vs.filedKeys) that are live;
// an e-mail soft-deleted since, or never loaded, is left out.
func (e *Engine) heldFiled(ctx context.Context, emails []int64, vs *verifyState) ([]heldRecord, error) {
	live, err := e.mail.recon.LiveEmails(ctx, emails)
	if err != nil {
		return nil, err
	}
	var out []heldRecord
	for k, f := range vs.Filed {
		id, _ := strconv.ParseInt(k, 10, 64)
		at, isLive := live[id]
		if f.Reject || isLive {
			out = append(out, heldRecord{on: f.On, at: at, live: isLive})
		}
	}
	return out, nil
}
