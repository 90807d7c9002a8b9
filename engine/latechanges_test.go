package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/load"
)

// parseOffset reads ±HH:MM.
func parseOffset(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(strings.Replace(strings.Replace(s, ":", "h", 1), "+", "", 1) + "m")
	if err != nil {
		t.Fatalf("offset %q: %v", s, err)
	}
	if strings.HasPrefix(s, "-") && d > 0 {
		d = -d
	}
	return d
}

// rangePages is the pages a task's ranges committed.
func rangePages(d load.TaskDetail) int {
	n := 0
	for _, rg := range d.Ranges {
		n += rg.Pages
	}
	return n
}

// Against the sandbox with its day boundary at UTC+3, UTC-5 and UTC+14 and
// the default AGENCY_COMMS_TZ: the first sync, nightly runs, a verification
// of the history and of single days never soft-delete a live e-mail, and
// the verification names the offset; with AGENCY_COMMS_TZ set to it, a
// verification of the complete warehouse costs one request.
func TestSandboxDayBoundaryNeverDeletesLiveMail(t *testing.T) {
	t.Parallel()
	for _, c := range shiftedDays {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := smallSandbox()
			o.Emails, o.HistoryDays, o.CommsDayOffset = 12000, 40, c.offset
			h := newHarness(t, o, func(s *Settings) { s.DetailMaxAge = 100 * 365 * 24 * time.Hour })
			noneDeleted := func(when string) {
				t.Helper()
				if n := h.count("SELECT count(*) FROM " + h.table("emails") + " WHERE _deleted_at IS NOT NULL"); n != 0 {
					t.Fatalf("%s: %d live e-mails soft-deleted", when, n)
				}
			}
			h.run(Request{})
			noneDeleted("after the first sync")
			for night := 1; night <= 2; night++ {
				h.advance(24 * time.Hour)
				if _, _, err := h.sb.AppendEmails(300); err != nil {
					t.Fatal(err)
				}
				h.run(Request{})
				noneDeleted("after a nightly run")
			}
			// A named boundary admits the service's offset; single days
			// whose totals differ name it exactly.
			named := 0
			check := func(res *Result, what string) {
				t.Helper()
				b := res.Verify.Boundary
				if b == nil {
					if res.Status != StatusSucceeded || !res.Verify.Proved {
						t.Errorf("%s: not proved and no day boundary named: %s (%v)", what, res.Verify.Summary(), res.Err)
					}
					return
				}
				if lo, hi := parseOffset(t, b.Low), parseOffset(t, b.High); c.offset < lo || c.offset > hi {
					t.Errorf("%s names %+v, which excludes UTC%s", what, b, c.name)
				}
				if b.Offset == c.name && b.Zone == c.zone {
					named++
				}
			}
			for back := 12; back >= 4; back-- {
				day := utcDate(h.sb.Now()).AddDate(0, 0, -back)
				res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{From: day, To: day}}})
				noneDeleted("after verify --from D --to D")
				check(res, "verify of "+dateString(day))
			}
			if named == 0 {
				t.Errorf("no verification of a single day named UTC%s and %s", c.name, c.zone)
			}
			res := h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{}}})
			noneDeleted("after verify")
			check(res, "verify of the history")
			h.eng = h.engine(func(s *Settings) {
				s.DetailMaxAge = 100 * 365 * 24 * time.Hour
				s.Mail.TZ = mustZone(t, c.zone)
			})
			h.run(Request{})
			h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{}}}) // repairs what the wrong zone left unproved
			res = h.run(Request{Trigger: TriggerVerify, Mail: MailRequest{Verify: &Range{}}})
			if res.Status != StatusSucceeded || !res.Verify.Proved || res.RequestsUsed != 1 {
				t.Errorf("verify with AGENCY_COMMS_TZ=%s: %s, %d requests, %s; want succeeded with one request", c.zone, res.Status, res.RequestsUsed, res.Verify.Summary())
			}
			noneDeleted("with the zone set")
			h.assertEqualsTruth()
		})
	}
}

// One e-mail dated 0001-01-01, one 9999-12-31 and one a month ahead, each
// filed under the sandbox's day it arrived: the run that meets them warns
// once about each; the runs after it exit succeeded and spend no request on
// them (their increments send exactly their pages, the daily verification
// one count).
func TestSandboxEmailsFiledFarFromTheirDate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), func(s *Settings) { s.DetailMaxAge = 100 * 365 * 24 * time.Hour })
	h.mustSucceed(Request{}, "first sync")
	h.advance(14 * time.Hour)
	for _, at := range []time.Time{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), h.sb.Now().AddDate(0, 1, 0)} {
		if _, _, err := h.sb.AppendEmails(25); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.sb.AppendEmailsDated(1, at); err != nil {
			t.Fatal(err)
		}
	}
	res := h.run(Request{})
	// The run that meets them is complete and says so once: warning (exit 0).
	if res.Status != StatusWarning || res.Err != nil {
		t.Errorf("the run that meets them: %s %v; want warning with the notes", res.Status, res.Err)
	}
	if n := strings.Count(strings.Join(res.Notes, "\n"), "far from its date"); n != 3 {
		t.Errorf("%d warnings of e-mails filed far from their date, want 3: %v", n, res.Notes)
	}
	for i, step := range []time.Duration{time.Hour, 24 * time.Hour, 3 * time.Hour, 24 * time.Hour} {
		h.advance(step)
		if _, _, err := h.sb.AppendEmails(10); err != nil {
			t.Fatal(err)
		}
		res := h.run(Request{})
		if res.Status != StatusSucceeded {
			t.Fatalf("run %d after them: %s %v", i+1, res.Status, res.Err)
		}
		if n := strings.Count(strings.Join(res.Notes, "\n"), "far from its date"); n != 0 {
			t.Errorf("run %d after them warns again: %v", i+1, res.Notes)
		}
		for _, task := range []Task{TaskCommsIncrement, TaskCommsRefresh} {
			if d := res.Tasks[string(task)]; d.Requests != rangePages(d) {
				t.Errorf("run %d after them: %s sent %d requests for %d pages: it reconciled them again", i+1, task, d.Requests, rangePages(d))
			}
		}
		if res.Verify != nil && (res.Verify.Requests != 1 || len(res.Verify.Days) > 0) {
			t.Errorf("run %d after them: the verification %s", i+1, res.Verify.Summary())
		}
	}
	h.assertEqualsTruth()
}
