package benchmark

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestMergeEarlier(t *testing.T) {
	earlier := &Report{Runs: 3, Sizes: FullSizes, Took: 20 * time.Minute, OtherCores: 0.5,
		Machine: Machine{Commit: "commit aaa", Date: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC), LoadStart: "3.00 2.00 1.00"},
		Rows:    []Row{{ID: "1", Figure: "one (old)"}, {ID: "8", Figure: "eight (old)"}, {ID: "3", Figure: "three (old)"}}}
	var buf bytes.Buffer
	if err := earlier.Save(&buf); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadReport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	now := &Report{Runs: 3, Sizes: FullSizes, Machine: Machine{Commit: "commit bbb", Date: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)},
		Rows: []Row{{ID: "8", Figure: "eight (new)"}}}
	now.MergeEarlier(loaded)
	var figs []string
	for _, r := range now.Rows {
		figs = append(figs, r.Figure)
	}
	if got := strings.Join(figs, ", "); got != "one (old), three (old), eight (new)" {
		t.Errorf("merged rows %q, want the earlier 1 and 3 and the new 8, in figure order", got)
	}
	md := now.Markdown()
	for _, want := range []string{"commit bbb", "commit aaa", "Figures 1, 3 come from a separate session"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if _, err := LoadReport(strings.NewReader("not json")); err == nil {
		t.Error("LoadReport of garbage: no error")
	}
}

func TestKeepSeparateSections(t *testing.T) {
	old := "# agencysync benchmarks\n\n## Results\n\nold table\n\n## Views (measured separately)\n\nviews table\n\n## Storage (measured separately)\n\nbytes\n"
	got := KeepSeparateSections(old, "# agencysync benchmarks\n\n## Results\n\nnew table\n")
	want := "# agencysync benchmarks\n\n## Results\n\nnew table\n\n## Views (measured separately)\n\nviews table\n\n## Storage (measured separately)\n\nbytes\n"
	if got != want {
		t.Errorf("KeepSeparateSections =\n%s\nwant\n%s", got, want)
	}
	if got := KeepSeparateSections("# old\n\n## Results\n\nx\n", "new\n"); got != "new\n" {
		t.Errorf("without separate sections: %q, want the new text alone", got)
	}
}
