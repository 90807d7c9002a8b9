package benchmark

import (
	"strings"
	"testing"
	"time"
)

// TestPipelineRowsSayWhatTheyInclude checks figure 3's two rows: the same
// runs' raw COPY divides both the sync's own rate (took) and the whole
// process's (wall time), and each row says which it is.
func TestPipelineRowsSayWhatTheyInclude(t *testing.T) {
	run := func(took, wall time.Duration, raw float64) pipelineRun {
		return pipelineRun{workerRate: 100_000 / took.Seconds(), wholeRate: 100_000 / wall.Seconds(), rawRate: raw,
			took: took, wall: wall}
	}
	runs := []pipelineRun{
		run(2*time.Second, 2500*time.Millisecond, 100_000), // 0.5 and 0.4
		run(4*time.Second, 5*time.Second, 50_000),          // 0.5 and 0.4
		run(1*time.Second, 2*time.Second, 80_000),          // 1.25 and 0.625
	}
	rows := pipelineRows("own", "whole", runs, false)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	own, whole := rows[0], rows[1]
	if own.ID != "3" || whole.ID != "3" || own.Figure != "own" || whole.Figure != "whole" {
		t.Fatalf("rows %+v, %+v", own, whole)
	}
	if !strings.HasPrefix(own.Result, "0.50 (") || own.Verdict != Check(0.5, true) {
		t.Errorf("own time: %q %q, want the median 0.50, met", own.Result, own.Verdict)
	}
	if !strings.HasPrefix(whole.Result, "0.40 (") || whole.Verdict != Check(0.4, false) {
		t.Errorf("whole process: %q %q, want the median 0.40, missed", whole.Result, whole.Verdict)
	}
	for _, want := range []string{"ratio per run 0.500 / 0.500 / 1.250", "sync started to sync summary", "not process start or migration"} {
		if !strings.Contains(own.Detail, want) {
			t.Errorf("own-time detail lacks %q: %s", want, own.Detail)
		}
	}
	for _, want := range []string{"ratio per run 0.400 / 0.400 / 0.625", "wall time", "schema migration",
		"process wall time per run 2.50 / 5.00 / 2.00 s, of which outside the sync's took 0.50 / 1.00 / 1.00 s",
		"raw COPY e-mails/s per run (the oracle's rows of the ground truth; row encoding and COPY, one transaction per 1000) 100 000 / 50 000 / 80 000"} {
		if !strings.Contains(whole.Detail, want) {
			t.Errorf("whole-process detail lacks %q: %s", want, whole.Detail)
		}
	}
}
