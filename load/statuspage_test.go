package load

import (
	"errors"
	"testing"
	"time"
)

func TestLedgerHistoryFillsEmptyDays(t *testing.T) {
	t.Parallel()
	pool, schema := warehousetestSchema(t)
	// 7 requests today, 3 four days ago, 5 forty days ago (outside the window).
	for day, n := range map[string]int{"2026-03-10": 7, "2026-03-06": 3, "2026-01-29": 5} {
		execSQL(t, pool, "INSERT INTO "+qualified(schema, "api_quota_usage")+" (day, requests) VALUES ($1::date, $2)", day, n)
	}
	now := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	l, err := NewLedger(pool, schema, time.UTC, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	got, err := l.History(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 30 {
		t.Fatalf("%d days, want 30", len(got))
	}
	if first := got[0].Day.Format(time.DateOnly); first != "2026-02-09" {
		t.Errorf("first day %s, want 2026-02-09", first)
	}
	total := 0
	for i, d := range got {
		total += d.Requests
		want := 0
		switch d.Day.Format(time.DateOnly) {
		case "2026-03-10":
			want = 7
		case "2026-03-06":
			want = 3
		}
		if d.Requests != want {
			t.Errorf("day %d (%s): %d requests, want %d", i, d.Day.Format(time.DateOnly), d.Requests, want)
		}
		if i > 0 && !d.Day.Equal(got[i-1].Day.AddDate(0, 0, 1)) {
			t.Errorf("day %d is %s, not the day after %s", i, d.Day, got[i-1].Day)
		}
	}
	if total != 10 {
		t.Errorf("total %d, want 10", total)
	}
	if _, err := l.History(ctx, 0); err == nil {
		t.Error("History(0) accepted")
	}
}

func TestPreviousRunStatus(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	insert := func(id, status string, started string) {
		t.Helper()
		execSQL(t, pool, "INSERT INTO "+qualified(schema, "sync_runs")+" (run_id, trigger, status, started_at) VALUES ($1::uuid, 'test', $2, $3::timestamptz)", id, status, started)
	}
	const (
		a = "00000000-0000-0000-0000-00000000000a"
		b = "00000000-0000-0000-0000-00000000000b"
		c = "00000000-0000-0000-0000-00000000000c"
		d = "00000000-0000-0000-0000-00000000000d"
	)
	insert(a, RunFailed, "2026-03-01 10:00Z")
	insert(b, RunSkipped, "2026-03-01 11:00Z")
	insert(c, RunSucceeded, "2026-03-01 12:00Z")
	insert(d, RunRunning, "2026-03-01 13:00Z")
	ctx := t.Context()
	for id, want := range map[string]string{a: "", b: RunFailed, c: RunFailed, d: RunSucceeded} {
		got, err := s.PreviousRunStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("run %s: previous %q, want %q", id[len(id)-1:], got, want)
		}
	}
	if _, err := s.PreviousRunStatus(ctx, "00000000-0000-0000-0000-0000000000ff"); !errors.Is(err, ErrNoSuchRun) {
		t.Errorf("unknown run: %v, want ErrNoSuchRun", err)
	}
}
