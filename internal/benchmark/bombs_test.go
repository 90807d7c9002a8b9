package benchmark

import (
	"strings"
	"testing"
)

// TestBombRow: the ratio is taken pair by pair; a bombed run that exits
// otherwise than 1, does not name the setting, or writes other streams'
// tables differently misses the figure whatever its memory.
func TestBombRow(t *testing.T) {
	other := map[string]int64{"brands": 40, "projects": 600}
	withEmails := map[string]int64{"brands": 40, "projects": 600, "emails": 100000, "users": 300}
	normal := []bombRun{{rssKiB: 50000, code: 0, rows: withEmails}, {rssKiB: 60000, rows: withEmails}, {rssKiB: 55000, rows: withEmails}}
	bombed := []bombRun{{rssKiB: 75000, code: 1, rows: other, named: true}, {rssKiB: 60000, code: 1, rows: other, named: true},
		{rssKiB: 66000, code: 1, rows: other, named: true}}
	r := bombRow("f", normal, bombed)
	if r.ID != "11" || r.Verdict != Met || !strings.HasPrefix(r.Result, "×1.20 ") {
		t.Fatalf("row %+v", r)
	}
	bad := append([]bombRun(nil), bombed...)
	bad[1] = bombRun{rssKiB: 60000, code: 1, rows: map[string]int64{"brands": 40}, named: true}
	if r := bombRow("f", normal, bad); r.Verdict != Missed || !strings.Contains(r.Detail, "run 2: other streams wrote") {
		t.Fatalf("a stream that did not land: %+v", r)
	}
	bad[1] = bombRun{rssKiB: 60000, code: 0, rows: other}
	if r := bombRow("f", normal, bad); r.Verdict != Missed {
		t.Fatalf("a bombed run that exited 0: %+v", r)
	}
	big := append([]bombRun(nil), bombed...)
	big[0].rssKiB, big[1].rssKiB, big[2].rssKiB = 150000, 130000, 120000
	if r := bombRow("f", normal, big); r.Verdict != Missed {
		t.Fatalf("ratio over 2: %+v", r)
	}
}
