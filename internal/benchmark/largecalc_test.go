package benchmark

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestSpreadOf(t *testing.T) {
	days := []QuotaDay{{"2026-11-02", 100, 100}, {"2026-11-03", 160, 160}, {"2026-11-04", 40, 41}}
	s := SpreadOf(days)
	if s.Highest.Day != "2026-11-03" || s.Average != 100 || s.Ratio != 1.6 {
		t.Errorf("SpreadOf = %+v, want highest 11-03, average 100, ratio 1.6", s)
	}
	if len(s.Mismatches) != 1 || s.Mismatches[0].Day != "2026-11-04" {
		t.Errorf("mismatches %+v, want 11-04", s.Mismatches)
	}
	if got := dayList(days); got != "11-02 100, 11-03 160, 11-04 40 [sandbox 41]" {
		t.Errorf("dayList = %q", got)
	}
	if s := SpreadOf(nil); !math.IsNaN(s.Ratio) {
		t.Errorf("no days: ratio %v, want NaN", s.Ratio)
	}
}

func TestSyncTime(t *testing.T) {
	// The summary's own "took" is ignored: the log's timestamps are the
	// worker's clock, whatever clock the summary measured with.
	log := `{"level":"info","ts":"2026-11-24T07:52:00.250Z","msg":"sync started"}
{"level":"debug","ts":"2026-11-24T07:52:01.000Z","msg":"request","endpoint":"brands","duration":0.05}
{"level":"info","ts":"2026-11-24T07:52:42.750Z","msg":"sync summary","took":-2015535.515}
`
	if d, ok := SyncTime([]byte(log)); !ok || d != 42500*time.Millisecond {
		t.Errorf("SyncTime = %s, %v; want 42.5s, true", d, ok)
	}
	if _, ok := SyncTime([]byte(`{"level":"info","ts":"2026-11-24T07:52:00Z","msg":"sync started"}`)); ok {
		t.Error("SyncTime without a summary: ok")
	}
}

func TestRefreshRow(t *testing.T) {
	days := []QuotaDay{{"2026-11-02", 190, 190}, {"2026-11-03", 220, 220}, {"2026-11-04", 215, 215}}
	r := refreshRow("f6", days, map[string]int64{"2026-11-02": 18, "2026-11-03": 20, "2026-11-04": 19})
	if r.Result != "18 to 20, mean 19.0 = 0.19 % of the quota" || r.Verdict != Info {
		t.Errorf("refreshRow = %q, %s", r.Result, r.Verdict)
	}
	if !strings.Contains(r.Detail, "11-03 20 of 220") {
		t.Errorf("detail %q lacks the day's share", r.Detail)
	}
}
