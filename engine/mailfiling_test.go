package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Three e-mails dated 0001-01-01, 9999-12-31 and a month ahead, each filed
// under the day it arrived: the run that meets them warns once about each
// and records where they are filed; the runs after it end succeeded, warn
// no more, and spend no request on them (no count beyond the daily
// verification's one, no day re-fetched).
func TestEmailsFiledFarFromTheirDateAreKnownExceptions(t *testing.T) {
	t.Parallel()
	mails, start := tenDays()
	now := start.AddDate(0, 0, 9).Add(23 * time.Hour)
	h := newDayMailHarness(t, mails, start, now, nil)
	if res := h.run(Request{Streams: []string{"communications"}}); res.Status != StatusSucceeded {
		t.Fatalf("first sync: %s %v", res.Status, res.Err)
	}
	now = now.Add(14 * time.Hour) // the next day, 13:00
	h.now.Store(now.UnixNano())
	h.srv.mu.Lock()
	h.srv.filed = map[int64]time.Time{}
	for id, at := range map[int64]time.Time{
		201: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		202: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		203: now.AddDate(0, 1, 0),
	} {
		h.srv.mails[id] = at
		h.srv.filed[id] = now.Add(-time.Duration(205-id) * time.Hour)
	}
	h.srv.mails[204] = now.Add(-30 * time.Minute) // an ordinary one
	h.srv.mu.Unlock()
	res := h.run(Request{Streams: []string{"communications"}})
	// The run that meets them is complete and says so once: warning (exit 0).
	if res.Status != StatusWarning || res.Err != nil {
		t.Errorf("the run that meets them: %s %v; want warning with the notes", res.Status, res.Err)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, id := range []string{"201", "202", "203"} {
		if n := strings.Count(notes, "e-mail "+id+" "); n != 1 {
			t.Errorf("e-mail %s: %d notes, want one: %s", id, n, notes)
		}
	}
	if !strings.Contains(notes, "dated after now") {
		t.Errorf("no note says an e-mail is dated after now: %s", notes)
	}
	if got := h.ids("_deleted_at IS NULL"); len(got) != 34 {
		t.Errorf("%d live e-mails, want 34", len(got))
	}
	for i, step := range []time.Duration{time.Hour, 24 * time.Hour, time.Hour, 24 * time.Hour} {
		now = now.Add(step)
		h.now.Store(now.UnixNano())
		counts := h.srv.counts.Load()
		res := h.run(Request{Streams: []string{"communications"}})
		if res.Status != StatusSucceeded {
			t.Fatalf("run %d after them: %s %v", i+1, res.Status, res.Err)
		}
		for _, n := range res.Notes {
			if strings.Contains(n, "e-mail 20") {
				t.Errorf("run %d after them warns again: %s", i+1, n)
			}
		}
		if c := h.srv.counts.Load() - counts; c > 1 {
			t.Errorf("run %d after them sent %d count requests, want at most the daily verification's one", i+1, c)
		}
		if res.Verify != nil && len(res.Verify.Days) > 0 {
			t.Errorf("run %d after them re-fetched days: %+v", i+1, res.Verify.Days)
		}
	}
	var raw []byte
	if err := h.pool.QueryRow(context.Background(), "SELECT cursor FROM "+h.table("sync_state")+" WHERE stream = 'communications' AND partition = 'verify'").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var vs verifyState
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if vs.LastDifference != nil {
		t.Errorf("a reconciliation found a difference: %s", vs.LastDifference.Summary())
	}
	for _, id := range []string{"201", "202", "203"} {
		if f, ok := vs.Filed[id]; !ok || f.On != dateString(start.AddDate(0, 0, 10)) {
			t.Errorf("e-mail %s filed as %+v, want on %s", id, f, dateString(start.AddDate(0, 0, 10)))
		}
	}
}
