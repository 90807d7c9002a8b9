package benchmark

import (
	"testing"
	"time"
)

func TestRequestSpacing(t *testing.T) {
	log := `{"level":"info","ts":"2026-11-22T02:00:00.000Z","msg":"sync started"}
{"level":"debug","ts":"2026-11-22T02:00:00.060Z","msg":"request","endpoint":"brands","duration":0.05}
{"level":"debug","ts":"2026-11-22T02:00:00.160Z","msg":"request","endpoint":"project","duration":0.04}
{"level":"debug","ts":"2026-11-22T02:00:00.270Z","msg":"request","endpoint":"project","duration":0.05}
not json
{"level":"debug","ts":"2026-11-22T02:00:00.390Z","msg":"request","endpoint":"communications","duration":0.06}
{"level":"debug","ts":"2026-11-22T02:00:00.560Z","msg":"request","endpoint":"communications","duration":0.07}
{"level":"info","ts":"2026-11-22T02:00:00.700Z","msg":"sync summary"}
`
	// Starts: 10, 120, 220, 330, 490 ms.
	s := RequestSpacing([]byte(log))
	want := Spacing{Comms: 135 * time.Millisecond, Other: 105 * time.Millisecond, NComms: 2, NOther: 2,
		FirstAfterStart: 10 * time.Millisecond, LastToSummary: 210 * time.Millisecond, CommsRequestMedian: 70 * time.Millisecond}
	if s != want {
		t.Errorf("RequestSpacing = %+v\nwant %+v", s, want)
	}
	if (RequestSpacing(nil) != Spacing{}) {
		t.Error("RequestSpacing(nil) is not zero")
	}
}
