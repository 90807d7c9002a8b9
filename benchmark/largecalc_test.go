package benchmark

import (
	"math"
	"testing"
	"time"
)

func TestRequestRate(t *testing.T) {
	// Starts (ts − duration): project 0.100, project 0.110 (out of order in
	// the log: concurrent requests end in any order), brand 0.130,
	// communications 0.140 (not counted), project 0.150.
	log := `{"level":"info","ts":"2026-11-22T02:00:00.000Z","msg":"sync started"}
{"level":"debug","ts":"2026-11-22T02:00:00.170Z","msg":"request","endpoint":"project","duration":0.06}
{"level":"debug","ts":"2026-11-22T02:00:00.150Z","msg":"request","endpoint":"project","duration":0.05}
not json
{"level":"debug","ts":"2026-11-22T02:00:00.180Z","msg":"request","endpoint":"brand","duration":0.05}
{"level":"debug","ts":"2026-11-22T02:00:00.200Z","msg":"request","endpoint":"communications","duration":0.06}
{"level":"debug","ts":"2026-11-22T02:00:00.190Z","msg":"other","endpoint":"project","duration":0.01}
{"level":"debug","ts":"2026-11-22T02:00:00.200Z","msg":"request","endpoint":"project","duration":0.05}
`
	r := RequestRate([]byte(log), "project", "brand")
	if r.N != 4 || r.Span != 50*time.Millisecond || math.Abs(r.PerSecond-60) > 1e-9 {
		t.Errorf("RequestRate = %+v, want 4 requests over 50ms = 60/s", r)
	}
	if r := RequestRate([]byte(log), "communications"); r.N != 1 || !math.IsNaN(r.PerSecond) {
		t.Errorf("one request: %+v, want N 1 and no rate", r)
	}
}

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
