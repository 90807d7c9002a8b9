package benchmark

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLogLinesReadEveryJSONLine: the JSON lines of a worker's log come in
// order, a long one included; text lines and torn JSON are passed over; a
// request's start is its answer's time less its duration.
func TestLogLinesReadEveryJSONLine(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // beyond bufio's default 64 KiB token
	log := strings.Join([]string{
		`{"level":"info","ts":"2026-03-01T10:00:00Z","msg":"sync started"}`,
		`panic: not JSON`,
		`{"level":"debug","ts":"2026-03-01T10:00:01.5Z","msg":"request","endpoint":"communications","duration":0.25}`,
		`{"level":"debug","ts":"2026-03-01T10:00:02Z","msg":"req`,
		`{"level":"info","ts":"2026-03-01T10:00:03Z","msg":"note","detail":"` + long + `"}`,
		`{"level":"info","ts":"2026-03-01T10:00:04Z","msg":"sync summary"}`,
	}, "\n")
	var msgs []string
	var starts []time.Time
	for l := range logLines([]byte(log)) {
		msgs = append(msgs, l.Msg)
		starts = append(starts, l.start())
	}
	if want := []string{"sync started", "request", "note", "sync summary"}; !slices.Equal(msgs, want) {
		t.Fatalf("messages %q, want %q", msgs, want)
	}
	if want := time.Date(2026, 3, 1, 10, 0, 1, 250_000_000, time.UTC); !starts[1].Equal(want) {
		t.Errorf("request start %s, want %s", starts[1], want)
	}
}
