package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// aroundTheClock is ten days of e-mails from 2025-06-01 at hours that tell
// the day boundaries of UTC+3, UTC-5 and UTC+14 apart (one e-mail half an
// hour before and one half an hour after each, and a number varying by day
// before each), ids ascending with time.
func aroundTheClock() (map[int64]time.Time, time.Time) {
	start := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	hours := []time.Duration{30 * time.Minute, 4*time.Hour + 30*time.Minute, 5*time.Hour + 30*time.Minute,
		9*time.Hour + 30*time.Minute, 10*time.Hour + 30*time.Minute, 14 * time.Hour,
		20*time.Hour + 30*time.Minute, 21*time.Hour + 30*time.Minute, 23*time.Hour + 30*time.Minute}
	m := map[int64]time.Time{}
	id := int64(1)
	for d := range 10 {
		day := hours
		// A varying number near each boundary, so that shifted days hold
		// other totals.
		for k := range d % 3 {
			day = append(day, 22*time.Hour+time.Duration(45+k)*time.Minute)
		}
		for k := range (d + 1) % 3 {
			day = append(day, 2*time.Hour+time.Duration(k)*time.Minute)
		}
		for k := range (d + 2) % 3 {
			day = append(day, 9*time.Hour+time.Duration(45+k)*time.Minute)
		}
		slices.Sort(day)
		for _, h := range day {
			m[id] = start.AddDate(0, 0, d).Add(h)
			id++
		}
	}
	return m, start
}

// shiftedDays are the day boundaries a service may cut its days at, other
// than UTC: the offset, as verification names it, and the IANA zone that
// AGENCY_COMMS_TZ is told to set.
var shiftedDays = []struct {
	offset time.Duration
	name   string
	zone   string
}{
	{3 * time.Hour, "+03:00", "Etc/GMT-3"},
	{-5 * time.Hour, "-05:00", "Etc/GMT+5"},
	{14 * time.Hour, "+14:00", "Etc/GMT-14"},
}

// With the service's days cut at UTC+3, UTC-5 and UTC+14 and the default
// AGENCY_COMMS_TZ (UTC), no run, no verification of the history and no
// verification of one day soft-deletes a live e-mail, the verifications
// name the offset and the zone to set, and with that zone set a
// verification of a complete warehouse costs one request.
func TestShiftedDayBoundaryDeletesNothingAndIsNamed(t *testing.T) {
	t.Parallel()
	for _, c := range shiftedDays {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			mails, start := aroundTheClock()
			last := start.AddDate(0, 0, 9)
			h := newDayMailHarness(t, mails, start, last.AddDate(0, 0, 1).Add(12*time.Hour), nil)
			h.srv.offset = c.offset
			all := h.serverIDs()
			live := func(when string) {
				t.Helper()
				if got := h.ids("_deleted_at IS NULL"); !slices.Equal(got, all) {
					t.Fatalf("%s: live e-mails %v, want all %d (soft-deleted: %v)", when, len(got), len(all), h.ids("_deleted_at IS NOT NULL"))
				}
			}
			res := h.run(Request{Mail: MailRequest{Backfill: &Range{From: start.AddDate(0, 0, -1), To: last.AddDate(0, 0, 1)}}})
			live("after the backfill")
			named := func(res *Result, what string) {
				t.Helper()
				if res.Status == StatusSucceeded {
					t.Errorf("%s under a wrong zone: succeeded", what)
				}
				if res.Verify == nil || res.Verify.Boundary == nil {
					t.Fatalf("%s: no day boundary named: %+v (%v)", what, res.Verify, res.Err)
				}
				if b := res.Verify.Boundary; b.Offset != c.name || b.Zone != c.zone {
					t.Errorf("%s: boundary %+v, want UTC%s and %s", what, b, c.name, c.zone)
				}
				if !strings.Contains(fmt.Sprint(res.Err), "AGENCY_COMMS_TZ="+c.zone) {
					t.Errorf("%s: the run's error does not say to set AGENCY_COMMS_TZ=%s: %v", what, c.zone, res.Err)
				}
			}
			for _, d := range []time.Time{start.AddDate(0, 0, 4), start.AddDate(0, 0, 7)} {
				res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{From: d, To: d}}})
				live("after verify --from " + dateString(d) + " --to " + dateString(d))
				named(res, "verify of "+dateString(d))
			}
			res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{From: start, To: last}}})
			live("after verifying the history")
			named(res, "verify of the history")
			if res.RequestsUsed > 12 {
				t.Errorf("verify of the history under a wrong zone used %d requests: it bisected on instead of naming the boundary", res.RequestsUsed)
			}
			h.now.Store(last.AddDate(0, 0, 2).Add(3 * time.Hour).UnixNano())
			res = h.run(Request{Streams: []string{"communications"}})
			live("after a run")
			h.retune(func(s *Settings) { s.Mail.TZ = mustZone(t, c.zone) })
			h.run(Request{Mail: MailRequest{Backfill: &Range{From: start.AddDate(0, 0, -1), To: last.AddDate(0, 0, 1)}}})
			res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{From: start, To: last}}})
			if res.Status != StatusSucceeded || res.Verify == nil || !res.Verify.Proved || res.RequestsUsed != 1 {
				t.Errorf("verify with AGENCY_COMMS_TZ=%s: %s, %d requests, %+v; want succeeded, one request, proved", c.zone, res.Status, res.RequestsUsed, res.Verify)
			}
			live("with the zone set")
		})
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	return loc
}

// A genuine deletion under the right zone is still found and soft-deleted
// (the neighbouring days are paged first), and is not taken for a day
// boundary.
func TestDeletionIsNotTakenForADayBoundary(t *testing.T) {
	t.Parallel()
	mails, start := aroundTheClock()
	last := start.AddDate(0, 0, 9)
	h := newDayMailHarness(t, mails, start, last.AddDate(0, 0, 1).Add(12*time.Hour), nil)
	h.run(Request{Mail: MailRequest{Backfill: &Range{From: start, To: last}}})
	h.srv.remove(8) // 2025-06-01 21:30
	h.srv.remove(40)
	want := []int64{8, 40}
	res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{From: start, To: last}}})
	if res.Status != StatusSucceeded || res.Verify == nil || !res.Verify.Proved || res.Verify.Boundary != nil {
		t.Fatalf("verify: %s %v %+v", res.Status, res.Err, res.Verify)
	}
	if got := h.ids("_deleted_at IS NOT NULL"); !slices.Equal(got, want) {
		t.Errorf("soft-deleted %v, want %v", got, want)
	}
}

// The service cuts its days at UTC+3; the night before D is quiet, so the
// re-fetch of D returns nothing dated outside it, while the e-mail sent at
// 21:00 UTC on D is filed under D+1: verify --from D --to D must keep it.
func TestVerifyOneDayKeepsAnEmailFiledUnderTheNextDay(t *testing.T) {
	t.Parallel()
	d := time.Date(2025, 6, 5, 0, 0, 0, 0, time.UTC)
	mails := map[int64]time.Time{1: d.Add(-14 * time.Hour), 2: d.Add(10 * time.Hour), 3: d.Add(21 * time.Hour), 4: d.Add(34 * time.Hour)}
	h := newDayMailHarness(t, mails, d.AddDate(0, 0, -1), d.AddDate(0, 0, 3), nil)
	h.srv.offset = 3 * time.Hour
	h.run(Request{Mail: MailRequest{Backfill: &Range{From: d.AddDate(0, 0, -1), To: d.AddDate(0, 0, 2)}}})
	if got := h.ids("_deleted_at IS NULL"); len(got) != 4 {
		t.Fatalf("after the backfill %v live, want 4", got)
	}
	res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{From: d, To: d}}})
	if got := h.ids("_deleted_at IS NOT NULL"); len(got) != 0 {
		t.Errorf("verify --from %s --to %s soft-deleted %v, a live e-mail the service files under the next day", dateString(d), dateString(d), got)
	}
	if res.Status == StatusSucceeded {
		t.Errorf("verify of a day the service cuts elsewhere: succeeded, %+v", res.Verify)
	}
}
