package report

import (
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/load"
)

func ptr[T any](v T) *T { return &v }

// assertStatus prints rep as status does and asserts that the output holds
// each of want and none of not.
func assertStatus(t *testing.T, rep *engine.StatusReport, want, not []string) {
	t.Helper()
	var b strings.Builder
	Status(&b, rep)
	out := b.String()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	for _, n := range not {
		if strings.Contains(out, n) {
			t.Errorf("output holds %q:\n%s", n, out)
		}
	}
}

// TestStatusTables prints realistic reports and checks what an operator
// reads in them: stream rows, the verification lines, the runs (errors cut
// at 80 characters) and the last run's tasks in priority order.
func TestStatusTables(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	finished := started.Add(95 * time.Second)
	wm := time.Date(2026, 11, 24, 1, 58, 12, 0, time.UTC)
	long := "communications: fetch communications 2026-11-01..2026-11-24 page 3: HTTP 502 Bad Gateway from the service after 5 attempts"
	full := &engine.StatusReport{Schema: "agency", QuotaDay: "2026-11-24", QuotaSpent: 312, QuotaLeft: 9188,
		Streams: []engine.StreamStatus{
			{Stream: "brands", Watermark: &wm, LastSuccess: &finished, LagSeconds: ptr(3600.0), Rows: 40, Rejected: 1},
			{Stream: "communications", Rows: 125000, InProgress: true},
		},
		Verify: &engine.VerifyStatus{
			Last:           &engine.VerifyReport{From: "2026-01-01", To: "2026-11-23", Zone: "UTC", ServiceTotal: 125000, WarehouseTotal: 125000, Proved: true, At: finished},
			LastProvedAt:   &finished,
			LastDifference: &engine.VerifyReport{From: "2026-11-20", To: "2026-11-20", Zone: "UTC", Closing: true, ServiceTotal: 50, WarehouseTotal: 48, At: started},
		},
		Runs: []load.RunSummary{
			{RunID: "0f3c2a9e-1111-2222-3333-444455556666", Trigger: "serve", Status: "failed", StartedAt: started, FinishedAt: &finished,
				RequestsUsed: 312, Rejected: 2, RowsByTable: map[string]int{"emails": 900, "email_recipients": 2100}, Error: long,
				StreamsDetail: map[string]load.TaskDetail{
					"details":                  {Stream: "brands,projects", Requests: 12, RecordsRead: 12, DurationSeconds: 1.5},
					"communications-increment": {Stream: "communications", Requests: 300, RecordsRead: 900, DurationSeconds: 90, Ranges: []load.RangeFetched{{From: "2026-11-01", To: "2026-11-24", Pages: 2, Records: 900}}},
					"legacy-task":              {Stream: "communications", Requests: 0},
					"communications-refresh": {Stream: "communications", Requests: 18, RecordsRead: 17400, DurationSeconds: 4,
						Ranges:  []load.RangeFetched{{From: "2025-01-01", To: "2025-01-12", Pages: 18, Records: 17400, Complete: true}},
						Changed: map[string]int64{"emails": 3, "email_recipients": 4}},
				}},
		},
	}
	full.Refresh = &engine.RefreshStatus{MaxAgeDays: 60, OldestDay: "2026-01-13", OldestReadOn: "2026-09-30", SliceOn: "2026-11-24"}
	empty := &engine.StatusReport{Schema: "fresh", QuotaDay: "2026-11-24", QuotaLeft: 9500, Verify: &engine.VerifyStatus{}}
	for _, c := range []struct {
		name      string
		rep       *engine.StatusReport
		want, not []string
	}{
		{"a warehouse with a failed run", full, []string{
			"warehouse schema agency — quota day 2026-11-24: 312 requests spent, 9188 left",
			"brands", "2026-11-24 01:58:12", "1h0m0s", "125000", "true",
			"verify: last 2026-11-24 02:01:35: 2026-01-01..2026-11-23 (UTC): service 125000, warehouse 125000 e-mails; equal",
			"verify: last proved equal 2026-11-24 02:01:35",
			"verify: last difference (closing range) 2026-11-24 02:00:00",
			"0f3c2a9e", "serve", "failed", "1m35s", "3000", long[:77] + "...",
			"last run 0f3c2a9e by task:", "2026-11-01..2026-11-24 (2 pages, 900 records) unfinished",
			"email_recipients 4, emails 3",
			"refresh: every day of the e-mail history is read in full again within 60 days (SYNC_COMMS_REFRESH_AGE); read longest ago: 2026-01-13, on 2026-09-30",
		}, []string{long}},
		{"a warehouse never synced", empty, []string{
			"warehouse schema fresh — quota day 2026-11-24: 0 requests spent, 9500 left",
			"verify: the warehouse was never reconciled with the service",
		}, []string{"last run", "verify: last proved", "rebuild"}},
		{"a rebuild interrupted", &engine.StatusReport{Schema: "agency", QuotaDay: "2026-11-24",
			Rebuilds: []engine.RebuildPending{
				{Table: "projects", Stream: "projects", Stage: engine.RebuildStageRecords, LastProgress: started},
				{Table: "emails", Stream: "communications", Stage: engine.RebuildStageRejected, LastProgress: finished},
			}}, []string{
			"rebuild of projects unfinished (stored records; last progress 2026-11-24 02:00:00): run `agencysync rebuild --streams projects` to finish it",
			"rebuild of emails unfinished (rejected records; last progress 2026-11-24 02:01:35): run `agencysync rebuild --streams communications` to finish it",
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			assertStatus(t, c.rep, c.want, c.not)
		})
	}
	// Tasks follow the default priorities; unknown names come last.
	var b strings.Builder
	Status(&b, full)
	out := b.String()
	if i, j, k := strings.Index(out, "\ncommunications-increment "), strings.Index(out, "\ndetails "), strings.Index(out, "\nlegacy-task "); i < 0 || j < 0 || k < 0 || !(i < j && j < k) {
		t.Errorf("tasks out of priority order (communications-increment %d, details %d, unknown %d):\n%s", i, j, k, out)
	}
}
