package benchmark

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// updateGolden rewrites testdata/*.golden from the current Markdown:
// go test ./internal/benchmark/ -run TestMarkdownGolden -update.
var updateGolden = flag.Bool("update", false, "rewrite the Markdown golden files")

// TestMarkdownGolden renders fixed reports and compares them with the
// BENCHMARKS.md text recorded in testdata, byte for byte.
func TestMarkdownGolden(t *testing.T) {
	machine := Machine{Date: time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC), Commit: "commit abc1234",
		CPU: "Test CPU @ 2.00GHz", Cores: 2, MemoryBytes: 8 << 30, Kernel: "Linux 6.1", GoVersion: "go1.24.0",
		Postgres: "PostgreSQL 17.2", Warehouse: "DATABASE_URL", PostgresCfg: "shared_buffers 128MB",
		LoadStart: "0.20 0.30 0.40", LoadEnd: "0.50 0.60 0.70"}
	rows := []Row{
		{ID: "1", Figure: "Request efficiency", Result: "1.000 (10 / 10)", Target: "1.00", Verdict: Met, Detail: "by endpoint: brands 1"},
		{ID: "8", Figure: "Large agency", Result: "2.5", Target: "≤ 1.5", Verdict: Missed, Detail: "days: 11-02 100"},
		{ID: "11", Figure: "Bombs", Result: "—", Verdict: Failed, Detail: "sandbox: exit 1"},
	}
	steps := []Step{{Name: "micro-benchmarks", Took: 95 * time.Second, OtherCores: 0.05},
		{Name: "pipeline", Took: 40 * time.Second, OtherCores: -1}}
	busy := machine
	busy.Warehouse, busy.LoadStart = "a private cluster started by the harness (warehouse.StartLocal)", "2.50 1.00 0.50"
	earlier := &Report{Machine: busy, Sizes: FullSizes, Runs: 3, Took: 20*time.Minute + 400*time.Millisecond, OtherCores: 0.7,
		Rows: []Row{{ID: "3", Figure: "Pipeline (earlier)", Result: "x", Verdict: Info}}}
	withEarlier := &Report{Machine: machine, Sizes: FullSizes, Runs: 5, Took: 25 * time.Minute, OtherCores: 0.1, Steps: steps,
		Rows: append([]Row{earlier.Rows[0]}, rows...), Earlier: earlier}
	for _, c := range []struct {
		golden string
		report *Report
	}{
		{"markdown_full.golden", &Report{Machine: machine, Sizes: FullSizes, Runs: 3, Took: 24*time.Minute + 31*time.Second, OtherCores: 0.05, Steps: steps, Rows: rows}},
		{"markdown_quick_busy.golden", &Report{Machine: busy, Sizes: QuickSizes, Runs: 4, Took: 3 * time.Minute, OtherCores: 0.9, Steps: steps, Rows: rows}},
		{"markdown_load_unmeasured.golden", &Report{Machine: busy, Sizes: QuickSizes, Runs: 3, Took: time.Minute, OtherCores: -1, Rows: rows[:1]}},
		{"markdown_load_high.golden", &Report{Machine: busy, Sizes: FullSizes, Runs: 3, Took: time.Hour, OtherCores: 0.1, Steps: steps, Rows: rows}},
		{"markdown_earlier.golden", withEarlier},
	} {
		t.Run(c.golden, func(t *testing.T) {
			path := filepath.Join("testdata", c.golden)
			got := c.report.Markdown()
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("Markdown differs from %s (rerun with -update if intended):\n%s", path, got)
			}
		})
	}
}
