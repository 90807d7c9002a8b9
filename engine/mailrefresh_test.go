package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// lateEdit is an old e-mail edited after the fact: linked to a project (and
// its brand) and given a cc recipient.
type lateEdit struct {
	id      int64
	project string
	cc      string // the user_key of the new cc recipient
}

// editOld links the e-mail sent about ago days before the sandbox's now to
// project k of the truth and adds platform user 3 as cc.
func (h *harness) editOld(tr oracle.Truth, ago, k int) lateEdit {
	h.t.Helper()
	target := h.sb.Now().AddDate(0, 0, -ago)
	var id int64
	for _, l := range tr["communications"] {
		var rec struct {
			Email struct {
				EmailAt string `json:"email_at"`
			} `json:"email"`
		}
		if l.Bad || json.Unmarshal(l.Record, &rec) != nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, rec.Email.EmailAt)
		if err == nil && !at.Before(target) {
			id, _ = strconv.ParseInt(l.Key, 10, 64)
			break
		}
	}
	if id == 0 {
		h.t.Fatalf("no e-mail %d days back", ago)
	}
	project := tr["projects"][k].Key
	pid, _ := strconv.ParseInt(project, 10, 64)
	cc := []int64{3}
	if err := h.sb.EditEmail(id, sandbox.EmailEdit{ProjectID: &pid, CC: &cc}); err != nil {
		h.t.Fatal(err)
	}
	var key string
	for _, l := range h.truth()["communications"] {
		if l.Key != strconv.FormatInt(id, 10) {
			continue
		}
		var rec struct {
			Users struct {
				CC json.RawMessage `json:"cc"`
			} `json:"users"`
		}
		if err := json.Unmarshal(l.Record, &rec); err != nil {
			h.t.Fatal(err)
		}
		var byID map[string]struct {
			Email string `json:"email"`
		}
		if err := json.Unmarshal(rec.Users.CC, &byID); err != nil || byID["3"].Email == "" {
			h.t.Fatalf("the edited e-mail's cc is %s", rec.Users.CC)
		}
		key = byID["3"].Email
	}
	return lateEdit{id: id, project: project, cc: key}
}

// landed says that the warehouse holds the edit.
func (h *harness) landed(e lateEdit) bool {
	h.t.Helper()
	return h.count("SELECT count(*) FROM "+h.table("emails")+" WHERE record_id = $1 AND project_id = $2", e.id, e.project) == 1 &&
		h.count("SELECT count(*) FROM "+h.table("email_recipients")+" WHERE record_id = $1 AND role = 'cc' AND user_key = lower($2)", e.id, e.cc) == 1
}

// E-mails edited 10, 100 and 400 days back land in the warehouse within
// SYNC_COMMS_REFRESH_AGE nightly runs, no command naming their day; each
// night's refresh reads about its even share and counts the rows it
// changed (sync_runs.streams_detail).
func TestLateEditsLandWithinTheRefreshAge(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.HistoryDays, o.Emails = 450, 2700
	const ageDays = 10
	h := newHarness(t, o, func(s *Settings) {
		s.Mail.RefreshAge = ageDays * 24 * time.Hour
		s.DetailMaxAge = 100 * 365 * 24 * time.Hour
	})
	h.mustSucceed(Request{}, "first sync")
	h.advance(2 * time.Hour)
	tr := h.truth()
	edits := []lateEdit{h.editOld(tr, 10, 0), h.editOld(tr, 100, 4), h.editOld(tr, 400, 7)}
	landedOn := map[int64]int{}
	var changed int64
	for night := 1; night <= ageDays; night++ {
		h.advance(24 * time.Hour)
		if _, _, err := h.sb.AppendEmails(20); err != nil {
			t.Fatal(err)
		}
		res := h.run(Request{})
		if res.Status != StatusSucceeded {
			t.Fatalf("night %d: %s %v", night, res.Status, res.Err)
		}
		d := res.Tasks[string(TaskCommsRefresh)]
		changed += d.Changed["emails"]
		if plan := planned(res.Plan, TaskCommsRefresh); d.Requests > plan.Allotted+1 {
			t.Errorf("night %d: the refresh sent %d requests, %d planned", night, d.Requests, plan.Allotted)
		}
		for _, e := range edits {
			if _, done := landedOn[e.id]; !done && h.landed(e) {
				landedOn[e.id] = night
			}
		}
	}
	for _, e := range edits {
		if _, ok := landedOn[e.id]; !ok {
			t.Errorf("e-mail %d (project %s, cc %s) not in the warehouse after %d nightly runs", e.id, e.project, e.cc, ageDays)
		}
	}
	if changed < int64(len(edits)) {
		t.Errorf("the refresh counted %d e-mail rows changed over the nights, want the edited ones", changed)
	}
	var raw []byte
	if err := h.pool.QueryRow(context.Background(), "SELECT streams_detail FROM "+h.table("sync_runs")+
		" WHERE streams_detail ? 'communications-refresh' AND (streams_detail->'communications-refresh'->'changed'->>'emails')::int > 0 LIMIT 1").Scan(&raw); err != nil {
		t.Errorf("no run recorded the refresh's changed rows in sync_runs.streams_detail: %v", err)
	}
	h.assertEqualsTruth()
}

// planned is the plan's item for task.
func planned(p Plan, task Task) PlanItem {
	for _, it := range p.Items {
		if it.Task == task {
			return it
		}
	}
	return PlanItem{}
}

// agencysync backfill without a range reads now the days the refresh would
// reach next: an edit there lands at once, and the nightly refresh goes on
// after them.
func TestBackfillWithoutRangeReadsTheNextDays(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	h := newHarness(t, o, func(s *Settings) { s.DetailMaxAge = 100 * 365 * 24 * time.Hour })
	h.mustSucceed(Request{}, "first sync")
	h.advance(24 * time.Hour)
	h.mustSucceed(Request{}, "nightly run")
	st := h.refreshState()
	// The days the refresh reaches next follow tonight's slice.
	var next string
	for _, r := range st.Reads {
		if r.On == dateString(utcDate(h.sb.Now())) && r.From == dateString(utcDate(h.eng.set.Mail.StartDate)) {
			next = nextDay(r.To)
		}
	}
	if next == "" {
		t.Fatalf("tonight's slice did not start at the history's first day: %+v", st.Reads)
	}
	nd, _ := parseDate(next)
	tr := h.truth()
	ago := int(utcDate(h.sb.Now()).Sub(nd)/(24*time.Hour)) - 1
	e := h.editOld(tr, ago, 2)
	res := h.run(Request{Trigger: TriggerBackfill, Mail: MailRequest{RefreshNext: true}})
	if res.Status != StatusSucceeded {
		t.Fatalf("backfill of the next days: %s %v", res.Status, res.Err)
	}
	if !h.landed(e) {
		t.Errorf("e-mail %d (on %s, the next days) not in the warehouse after backfill without a range", e.id, next)
	}
	if d := res.Tasks[string(TaskCommsRefresh)]; d.Changed["emails"] < 1 || len(d.Ranges) == 0 || d.Ranges[0].From != next {
		t.Errorf("backfill without a range: %+v, want the days from %s read and the edit counted", d, next)
	}
}

// TestBackfillWithoutRangeOnTheFirstDay: on the day of the first sync every
// day of the history was read today, so tonight's refresh has nothing due;
// agencysync backfill without a range still reads the days the refresh
// reaches next — those of tomorrow's slice, from the history's first day —
// and an edit there lands.
func TestBackfillWithoutRangeOnTheFirstDay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	h.mustSucceed(Request{}, "first sync")
	tr := h.truth()
	ago := int(utcDate(h.sb.Now()).Sub(utcDate(h.eng.set.Mail.StartDate))/(24*time.Hour)) - 2
	e := h.editOld(tr, ago, 2)
	res := h.run(Request{Trigger: TriggerBackfill, Mail: MailRequest{RefreshNext: true}})
	if res.Status != StatusSucceeded {
		t.Fatalf("backfill of the next days: %s %v", res.Status, res.Err)
	}
	d := res.Tasks[string(TaskCommsRefresh)]
	if len(d.Ranges) == 0 || d.Ranges[0].From != dateString(utcDate(h.eng.set.Mail.StartDate)) {
		t.Fatalf("backfill without a range on the first day read %+v, want the days from the history's first day", d.Ranges)
	}
	if !h.landed(e) {
		t.Errorf("e-mail %d, edited near the history's start, not in the warehouse after backfill without a range", e.id)
	}
}

// refreshState reads the refresh partition.
func (h *harness) refreshState() refreshState {
	h.t.Helper()
	var raw []byte
	if err := h.pool.QueryRow(context.Background(), "SELECT cursor FROM "+h.table("sync_state")+
		" WHERE stream = 'communications' AND partition = 'refresh'").Scan(&raw); err != nil {
		h.t.Fatal(err)
	}
	var c commsCursor
	if err := json.Unmarshal(raw, &c); err != nil || c.Refresh == nil {
		h.t.Fatalf("refresh cursor %s: %v", raw, err)
	}
	return *c.Refresh
}

// A finance record corrected without moving its updated_at is read again
// within SYNC_COMMS_REFRESH_AGE, however rare SYNC_FINANCE_FULL_EVERY is.
func TestFinanceCorrectionLandsWithinTheRefreshAge(t *testing.T) {
	t.Parallel()
	const ageDays = 3
	h := newHarness(t, smallSandbox(), func(s *Settings) {
		s.Mail.RefreshAge = ageDays * 24 * time.Hour
		s.IncrementalFullEvery = 30 * 24 * time.Hour
		s.DetailMaxAge = 100 * 365 * 24 * time.Hour
	})
	h.mustSucceed(Request{}, "first sync")
	tr := h.truth()
	id, _ := strconv.ParseInt(tr["invoices"][3].Key, 10, 64)
	amount := ptrAmount(t, "4321.09")
	if err := h.sb.EditFinance(sandbox.FinanceInvoices, id, sandbox.FinanceEdit{Amount: amount, KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	got := func() string {
		var s string
		if err := h.pool.QueryRow(context.Background(), "SELECT amount::text FROM "+h.table("invoices")+" WHERE invoice_id = $1", fmt.Sprint(id)).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	var nights []string
	for night := 1; night <= ageDays; night++ {
		h.advance(24 * time.Hour)
		if res := h.run(Request{}); res.Status != StatusSucceeded {
			t.Fatalf("night %d: %s %v", night, res.Status, res.Err)
		}
		nights = append(nights, got())
	}
	if !slices.Contains(nights, "4321.09") {
		t.Errorf("invoice %d corrected without a new updated_at: amounts over %d nights %v, want 4321.09 by the last", id, ageDays, nights)
	}
}
