package benchmark

import (
	"strings"
	"testing"
	"time"
)

// TestStorageRow: figure 9's row divides every size by the e-mails, compares
// lz4 with pglz, and shows the page-grouped alternative and the values each
// method compressed.
func TestStorageRow(t *testing.T) {
	pglz := storageRun{emails: 1000, warehouse: 2_000_000, took: 2 * time.Second, tables: []tableStorage{
		{name: "brands", total: 100_000, raw: 40_000, rawText: 60_000, values: 80, pglz: 40},
		{name: "emails", total: 1_500_000, raw: 1_100_000, rawText: 1_000_000, values: 1000},
	}}
	lz4 := storageRun{emails: 1000, warehouse: 1_800_000, took: 3 * time.Second, tables: []tableStorage{
		{name: "brands", total: 90_000, raw: 45_000, rawText: 60_000, values: 80, lz4: 30, pglz: 10},
		{name: "emails", total: 1_300_000, raw: 900_000, rawText: 1_000_000, values: 1000, lz4: 500},
	}, grouped: map[string]int64{"pglz": 200_000, "lz4": 300_000}}
	r := storageRow("Storage", pglz, lz4)
	if r.ID != "9" || r.Verdict != Info {
		t.Errorf("row %+v", r)
	}
	if want := "lz4 1 800 vs pglz 2 000 B (×0.900); raw 945 vs 1 140 B (as text 1 060)"; r.Result != want {
		t.Errorf("result %q, want %q", r.Result, want)
	}
	for _, want := range []string{
		"warehouse (every table with indexes and TOAST, after VACUUM) 2 000 → 1 800, of which raw and detail_raw 1 140 → 945 (57 % → 52 %; as text 1 060)",
		"emails table 1 500 → 1 300, its raw 1 100 → 900 (as text 1 000)",
		"brands 97.7 KiB → 87.9 KiB (raw 39.1 KiB → 43.9 KiB, as text 58.6 KiB; values compressed: pglz run 40 of 80, lz4 run 30 lz4 + 10 pglz)",
		"per e-mail pglz 200, lz4 300 (vs 1 100 and 900 a row)",
		"pglz 2.0 s, lz4 3.0 s",
	} {
		if !strings.Contains(r.Detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, r.Detail)
		}
	}
	if r := storageRow("Storage", pglz, storageRun{}); r.Result == "" || strings.Contains(r.Detail, "alternative") {
		t.Errorf("without the lz4 run's tables or the alternative: %+v", r)
	}
}
