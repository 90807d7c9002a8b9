package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestBarProgress(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	b := NewBar(&buf)
	b.now = func() time.Time { return now }
	b.Update("communications", 0, 10)
	now = now.Add(4 * time.Second)
	b.Update("communications", 4, 10)
	b.Update("brands.list", 1, 0)
	out := buf.String()
	for _, want := range []string{"4/10 pages", "ETA 6s", "[############", "brands.list", "1 pages"} {
		if !strings.Contains(out, want) {
			t.Errorf("bar output lacks %q:\n%q", want, out)
		}
	}
	// Redraws move the cursor up over the bars already drawn.
	if !strings.Contains(out, "\x1b[1A") {
		t.Errorf("no redraw in place: %q", out)
	}
}

func TestLogProgressThrottles(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	now := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	p := NewLog(zap.New(core), 10*time.Second)
	p.now = func() time.Time { return now }
	for i := 1; i <= 20; i++ {
		now = now.Add(time.Second)
		p.Update("communications", i, 20)
	}
	// First update, one per 10 s, and the last: 1 + 1 + 1.
	if n := logs.Len(); n != 3 {
		t.Fatalf("%d progress lines, want 3", n)
	}
	last := logs.All()[2].ContextMap()
	if last["pages_done"] != int64(20) || last["stream"] != "communications" {
		t.Errorf("last line %v", last)
	}
}
