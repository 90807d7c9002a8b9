package load

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestEmailDayCountsCutsDaysInTheZone inserts e-mails at chosen instants
// and checks the per-day counts in UTC and in a zone two or three hours
// ahead, and that soft-deleted e-mails are not counted.
func TestEmailDayCountsCutsDaysInTheZone(t *testing.T) {
	t.Parallel()
	rc, pool, schema := reconcilerOver(t,
		storedEmail{id: 1, at: "2025-03-01T00:00:00Z"},
		storedEmail{id: 2, at: "2025-03-01T22:30:00Z"}, // 2025-03-02 00:30 in Bucharest
		storedEmail{id: 3, at: "2025-03-02T12:00:00Z"},
		storedEmail{id: 4, at: "2025-03-02T13:00:00Z", deleted: true}, // soft-deleted: not counted
		storedEmail{id: 5, at: "2025-03-03T23:59:59Z"},                // outside 03-01..03-02 in UTC; 03-04 in Bucharest
		storedEmail{id: 6, at: "2025-02-28T23:00:00Z"},                // 02-28 in UTC; 03-01 01:00 in Bucharest
	)
	ctx := t.Context()
	from, to := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)
	got, err := rc.EmailDayCounts(ctx, from, to, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"2025-03-01": 2, "2025-03-02": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("UTC counts = %v, want %v", got, want)
	}
	buc, err := time.LoadLocation("Europe/Bucharest")
	if err != nil {
		t.Skip("no tz data:", err)
	}
	got, err = rc.EmailDayCounts(ctx, from, to, buc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"2025-03-01": 2, "2025-03-02": 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Bucharest counts = %v, want %v", got, want)
	}
	// The 2025-03-02 (UTC) e-mails not returned, keeping 3: none (4 is
	// deleted already); keeping nothing: 3, which is then soft-deleted.
	dayStart, dayEnd := DayStart(to, time.UTC), DayStart(to.AddDate(0, 0, 1), time.UTC)
	if got, err := rc.EmailsNotIn(ctx, dayStart, dayEnd, []int64{3}); err != nil || len(got) != 0 {
		t.Fatalf("e-mails not returned, keeping 3 = %v, %v; want none", got, err)
	}
	cands, err := rc.EmailsNotIn(ctx, dayStart, dayEnd, nil)
	if err != nil || len(cands) != 1 || cands[0].ID != 3 || !cands[0].At.Equal(time.Date(2025, 3, 2, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("e-mails not returned, keeping none = %v, %v; want 3 at 12:00", cands, err)
	}
	if n, err := rc.SoftDeleteEmails(ctx, []int64{3, 4}); err != nil || n != 1 {
		t.Fatalf("soft delete 3 and the deleted 4 = %d, %v; want 1", n, err)
	}
	if live := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "emails")+" WHERE _deleted_at IS NULL"); live != 4 {
		t.Errorf("live e-mails = %d, want 4", live)
	}
	if _, err := rc.EmailsNotIn(ctx, dayEnd, dayStart, nil); err == nil {
		t.Error("an empty window: no error")
	}
}

// TestEmailQuarterCountsAndLiveEmails: the held records per quarter hour
// (live e-mails and dated rejects), and the live e-mails among ids.
func TestEmailQuarterCountsAndLiveEmails(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rc, pool, schema := reconcilerOver(t,
		storedEmail{id: 1, at: "2025-03-01T00:00:00Z"},
		storedEmail{id: 2, at: "2025-03-01T00:14:59Z"},
		storedEmail{id: 3, at: "2025-03-01T00:15:00Z"},
		storedEmail{id: 4, at: "2025-03-01T00:20:00Z", deleted: true},
		storedEmail{id: 5, at: "2025-03-01T01:00:00Z"}, // the end: not counted
	)
	execSQL(t, pool, "INSERT INTO "+qualified(schema, "rejected_records")+" (stream, record_key, payload, error) VALUES ('communications', '7', $1::jsonb, 'bad')",
		`{"email":{"email_at":"2025-03-01T00:50:00Z"}}`)
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	got, err := rc.EmailQuarterCounts(ctx, start, start.Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 1, 0, 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("quarter counts = %v, want %v", got, want)
	}
	if _, err := rc.EmailQuarterCounts(ctx, start.Add(time.Minute), start.Add(time.Hour), nil); err == nil {
		t.Error("a window off the quarter hours: no error")
	}
	live, err := rc.LiveEmails(ctx, []int64{1, 4, 99})
	if err != nil || len(live) != 1 || !live[1].Equal(start) {
		t.Errorf("live among 1, 4, 99 = %v, %v; want 1 only", live, err)
	}
}

// TestEmailDayCountsPlacesRejects: a rejected record counts on the day of
// its readable email_at, or, unreadable, on the day of its neighbours by
// record id when they share it; skipped keys, rejects that are live
// e-mails and rejects of other streams (one whose name only starts like
// the e-mails' stream included) do not count; a reject of one of the
// stream's tables does.
func TestEmailDayCountsPlacesRejects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rc, pool, schema := reconcilerOver(t,
		storedEmail{id: 9, at: "2025-03-01T08:00:00Z"},
		storedEmail{id: 11, at: "2025-03-01T20:00:00Z"},
		storedEmail{id: 20, at: "2025-03-02T08:00:00Z"},
		storedEmail{id: 30, at: "2025-03-03T08:00:00Z"},
	)
	rejIn := func(stream, key, payload string) {
		t.Helper()
		execSQL(t, pool, "INSERT INTO "+qualified(schema, "rejected_records")+" (stream, record_key, payload, error) VALUES ($1, $2, $3::jsonb, 'bad')", stream, key, payload)
	}
	rej := func(key, payload string) { t.Helper(); rejIn("communications", key, payload) }
	rej("10", `{"email":{"email_at":"yesterday"}}`)                                                 // between 9 and 11: 03-01
	rej("15", `{"email":{"email_at":"yesterday"}}`)                                                 // between 11 (03-01) and 20 (03-02): nowhere
	rej("25", `{"email":{"email_at":"2025-03-02T23:00:00.5Z"}}`)                                    // readable: 03-02
	rej("30", `{"email":{"email_at":"2025-03-02T23:00:00Z"}}`)                                      // a live e-mail: not counted twice
	rej("h:abc", `{"email":{"email_at":"2025-03-01T01:00:00Z"}}`)                                   // hash key, readable: 03-01
	rej("12", `{"email":{"email_at":"2025-03-01T02:00:00Z"}}`)                                      // skipped by the caller
	rejIn("communications.email_recipients", "26", `{"email":{"email_at":"2025-03-02T09:00:00Z"}}`) // the stream's table: 03-02
	rejIn("communications_old", "27", `{"email":{"email_at":"2025-03-02T09:00:00Z"}}`)              // another stream
	rejIn("invoices", "28", `{"email":{"email_at":"2025-03-02T09:00:00Z"}}`)                        // another stream
	got, err := rc.EmailDayCounts(ctx, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC), time.UTC, []string{"12"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"2025-03-01": 4, "2025-03-02": 3, "2025-03-03": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts = %v, want %v", got, want)
	}
	// The e-mails' stream is the reconciler's, not a name load knows: for
	// a stream named invoices, its reject counts and the others do not.
	other, err := NewReconciler(pool, schema, "invoices")
	if err != nil {
		t.Fatal(err)
	}
	got, err = other.EmailDayCounts(ctx, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC), time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"2025-03-01": 2, "2025-03-02": 2, "2025-03-03": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts with the stream invoices = %v, want %v", got, want)
	}
}

// TestMaxEmailIDOfAWindow: the highest id of the live e-mails in a window,
// soft-deleted and out-of-window e-mails left out; 0 for an empty window;
// an error for a window that ends before it starts.
func TestMaxEmailIDOfAWindow(t *testing.T) {
	t.Parallel()
	rc, _, _ := reconcilerOver(t,
		storedEmail{id: 10, at: "2025-03-01T00:00:00Z"},
		storedEmail{id: 12, at: "2025-03-01T23:59:59Z"},
		storedEmail{id: 14, at: "2025-03-01T23:00:00Z", deleted: true},
		storedEmail{id: 16, at: "2025-03-02T00:00:00Z"}, // the next day
	)
	d := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		start, end time.Time
		want       int64
	}{
		{d, d.AddDate(0, 0, 1), 12},
		{d, d.AddDate(0, 0, 2), 16},
		{d.AddDate(0, 0, 5), d.AddDate(0, 0, 6), 0},
	} {
		got, err := rc.MaxEmailID(t.Context(), c.start, c.end)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("MaxEmailID(%s, %s) = %d, want %d", c.start, c.end, got, c.want)
		}
	}
	if _, err := rc.MaxEmailID(t.Context(), d, d); err == nil {
		t.Error("MaxEmailID of an empty window: no error")
	}
}

// storedEmail is an e-mail row a reconciler test starts from: its id, its
// RFC 3339 instant, and whether it is soft-deleted (at that instant).
type storedEmail struct {
	id      int64
	at      string
	deleted bool
}

// reconcilerOver returns a Reconciler on a fresh schema whose emails table
// holds the given e-mails, with the pool and schema under it.
func reconcilerOver(t *testing.T, emails ...storedEmail) (*Reconciler, *pgxpool.Pool, string) {
	t.Helper()
	pool, schema := warehousetestSchema(t)
	for _, e := range emails {
		ts, err := time.Parse(time.RFC3339, e.at)
		if err != nil {
			t.Fatal(err)
		}
		var del any
		if e.deleted {
			del = ts
		}
		if _, err := pool.Exec(t.Context(), fmt.Sprintf(`INSERT INTO %s (record_id, subject, email_at, raw, _deleted_at) VALUES ($1, 's', $2, '{}', $3)`, qualified(schema, "emails")), e.id, ts, del); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := NewReconciler(pool, schema, "communications")
	if err != nil {
		t.Fatal(err)
	}
	return rc, pool, schema
}
