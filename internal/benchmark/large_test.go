package benchmark

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// TestAddHourly checks that each service day's first hourly run is filed
// as the lookback re-read and the others as hourly runs, those above 2
// requests also in over.
func TestAddHourly(t *testing.T) {
	s := &largeDays{lastDay: "2026-11-02"}
	for _, r := range []sandboxRun{
		{day: "2026-11-02", at: "03:00", requests: 1},
		{day: "2026-11-02", at: "04:00", requests: 3},
		{day: "2026-11-03", at: "00:00", requests: 9}, // the new day's first run
		{day: "2026-11-03", at: "01:00", requests: 2},
	} {
		s.addHourly(r)
	}
	if got := List(s.hourly, func(x float64) string { return Int(int64(x)) }); got != "1 / 3 / 2" {
		t.Errorf("hourly %s, want 1 / 3 / 2", got)
	}
	if strings.Join(s.rereadList, ", ") != "11-03 00:00 9" || len(s.rereads) != 1 {
		t.Errorf("rereads %v %v, want the 11-03 00:00 run alone", s.rereads, s.rereadList)
	}
	if strings.Join(s.over, ", ") != "11-02 04:00 3" {
		t.Errorf("over %v, want the 3-request run", s.over)
	}
	if s.lastDay != "2026-11-03" {
		t.Errorf("last day %s", s.lastDay)
	}
}

// TestHugeOutcomeRow checks the verdict and result of the first sync over
// several quota days.
func TestHugeOutcomeRow(t *testing.T) {
	partial := hugeRun{day: "2026-11-01", code: 75, status: "partial", requests: 95, quotaUsed: 95}
	done := hugeRun{day: "2026-11-02", code: 0, status: "succeeded", requests: 53, quotaUsed: 53}
	failed := hugeRun{day: "2026-11-02", code: 1, status: "failed", requests: 10}
	ledger := map[string]int64{"2026-11-01": 95, "2026-11-02": 53}
	for _, c := range []struct {
		name    string
		out     hugeOutcome
		verdict Verdict
		result  string
	}{
		{"partial then succeeded", hugeOutcome{runs: []hugeRun{partial, done}, complete: true, truthOK: true, truthText: "all equal"},
			Met, "2 runs over 2 quota days: 1 × partial (exit 75), 1 × succeeded (exit 0); warehouse = truth"},
		{"one run only", hugeOutcome{runs: []hugeRun{done}, complete: true, truthOK: true},
			Missed, "1 runs over 1 quota days: 1 × succeeded (exit 0); warehouse = truth"},
		{"truth differs", hugeOutcome{runs: []hugeRun{partial, done}, complete: true, truthText: "emails differ"},
			Missed, "2 runs over 2 quota days: 1 × partial (exit 75), 1 × succeeded (exit 0); warehouse ≠ truth"},
		{"a run failed", hugeOutcome{runs: []hugeRun{partial, failed}, failed: true, truthText: "not compared"},
			Missed, "2 runs over 2 quota days: 1 × failed (exit 1), 1 × partial (exit 75); warehouse ≠ truth"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.out.ledger = ledger
			r := c.out.row("huge", oracle.Minimum{Total: 100}, 100)
			if r.ID != "8" || r.Figure != "huge" || r.Verdict != c.verdict || r.Result != c.result {
				t.Errorf("row %+v, want verdict %s, result %q", r, c.verdict, c.result)
			}
			first := c.out.runs[0]
			if !strings.Contains(r.Detail, fmt.Sprintf("run 1 on %s: exit %d %s, %d requests (ledger %d, sandbox quota used %d",
				first.day, first.code, first.status, first.requests, ledger[first.day], first.quotaUsed)) ||
				!strings.Contains(r.Detail, "AGENCY_DAILY_QUOTA=100 with") {
				t.Errorf("detail %q lacks the first run or the quota", r.Detail)
			}
		})
	}
}
