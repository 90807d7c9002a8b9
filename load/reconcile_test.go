package load

import (
	"context"
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
	_, pool, schema := newStore(t)
	ctx := context.Background()
	ins := emailInserter(t, pool, schema)
	ins(1, "2025-03-01T00:00:00Z", false)
	ins(2, "2025-03-01T22:30:00Z", false) // 2025-03-02 00:30 in Bucharest
	ins(3, "2025-03-02T12:00:00Z", false)
	ins(4, "2025-03-02T13:00:00Z", true)  // soft-deleted: not counted
	ins(5, "2025-03-03T23:59:59Z", false) // outside 03-01..03-02 in UTC; 03-04 in Bucharest
	ins(6, "2025-02-28T23:00:00Z", false) // 02-28 in UTC; 03-01 01:00 in Bucharest
	rc, err := NewReconciler(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
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
	// Soft-delete the 2025-03-02 (UTC) e-mails except 3: none (4 is deleted
	// already); then except nothing: 3 goes.
	n, err := rc.SoftDeleteEmailsNotIn(ctx, DayStart(to, time.UTC), DayStart(to.AddDate(0, 0, 1), time.UTC), []int64{3})
	if err != nil || n != 0 {
		t.Fatalf("soft delete keeping 3 = %d, %v; want 0", n, err)
	}
	n, err = rc.SoftDeleteEmailsNotIn(ctx, DayStart(to, time.UTC), DayStart(to.AddDate(0, 0, 1), time.UTC), nil)
	if err != nil || n != 1 {
		t.Fatalf("soft delete keeping none = %d, %v; want 1", n, err)
	}
	if live := queryInt(t, pool, "SELECT count(*) FROM "+qualified(schema, "emails")+" WHERE _deleted_at IS NULL"); live != 4 {
		t.Errorf("live e-mails = %d, want 4", live)
	}
}

// TestEmailDayCountsPlacesRejects: a rejected record counts on the day of
// its readable email_at, or, unreadable, on the day of its neighbours by
// record id when they share it; skipped keys and rejects that are live
// e-mails do not count.
func TestEmailDayCountsPlacesRejects(t *testing.T) {
	t.Parallel()
	_, pool, schema := newStore(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	emails, rejects := qualified(schema, "emails"), qualified(schema, "rejected_records")
	for id, at := range map[int64]string{9: "2025-03-01T08:00:00Z", 11: "2025-03-01T20:00:00Z", 20: "2025-03-02T08:00:00Z", 30: "2025-03-03T08:00:00Z"} {
		exec("INSERT INTO "+emails+" (record_id, subject, email_at, raw) VALUES ($1, 's', $2, '{}')", id, at)
	}
	rej := func(key, payload string) {
		exec("INSERT INTO "+rejects+" (stream, record_key, payload, error) VALUES ('communications', $1, $2::jsonb, 'bad')", key, payload)
	}
	rej("10", `{"email":{"email_at":"yesterday"}}`)               // between 9 and 11: 03-01
	rej("15", `{"email":{"email_at":"yesterday"}}`)               // between 11 (03-01) and 20 (03-02): nowhere
	rej("25", `{"email":{"email_at":"2025-03-02T23:00:00.5Z"}}`)  // readable: 03-02
	rej("30", `{"email":{"email_at":"2025-03-02T23:00:00Z"}}`)    // a live e-mail: not counted twice
	rej("h:abc", `{"email":{"email_at":"2025-03-01T01:00:00Z"}}`) // hash key, readable: 03-01
	rej("12", `{"email":{"email_at":"2025-03-01T02:00:00Z"}}`)    // skipped by the caller
	rc, err := NewReconciler(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rc.EmailDayCounts(ctx, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC), time.UTC, []string{"12"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"2025-03-01": 4, "2025-03-02": 2, "2025-03-03": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts = %v, want %v", got, want)
	}
}

// emailInserter returns a function that inserts an e-mail with id at an
// RFC 3339 instant, soft-deleted at that instant when deleted is true.
func emailInserter(t *testing.T, pool *pgxpool.Pool, schema string) func(id int64, at string, deleted bool) {
	t.Helper()
	return func(id int64, at string, deleted bool) {
		t.Helper()
		ts, err := time.Parse(time.RFC3339, at)
		if err != nil {
			t.Fatal(err)
		}
		var del any
		if deleted {
			del = ts
		}
		if _, err := pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %s (record_id, subject, email_at, raw, _deleted_at) VALUES ($1, 's', $2, '{}', $3)`, qualified(schema, "emails")), id, ts, del); err != nil {
			t.Fatal(err)
		}
	}
}
