package benchmark

import (
	"strings"
	"testing"
)

// TestMicroRowsMissingBenchmarks: a benchmark that reported renders its row,
// one that did not renders a failed row naming it, in the figures' order.
func TestMicroRowsMissingBenchmarks(t *testing.T) {
	m := BenchMedians(ParseBenchOutput([]byte(benchOutput)))
	rows := append(decodeRows(m), loadRows(m, 20000)...)
	want := []struct {
		figure  string
		verdict Verdict
		result  string
	}{
		{"Decode: a 1000-row communications page split into records (extract.SplitPage)", Info, "111 pages/s, 111.1 MB/s, 5 531 allocs/op"},
		{"Decode: the same page, every participant a different person", Failed, "not measured"},
		{"Decode: a 1000-row projects page split into records (extract.SplitPage)", Failed, "not measured"},
		{"Load: CommitPage ÷ raw COPY into unlogged tables, e-mails/s", Met, "0.57 (4 387 vs 7 704 e-mails/s)"},
		{"Load: the same with SyncCommit (each page waits for its WAL flush)", Failed, "not measured"},
		{"Load: reloading unchanged pages, tuples written and WAL", Met, "0 tuples, WAL 0 B (0.002 of the first load)"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.ID != "7" || r.Figure != w.figure || r.Verdict != w.verdict || r.Result != w.result {
			t.Errorf("row %d = %+v, want figure %q, verdict %s, result %q", i, r, w.figure, w.verdict, w.result)
		}
		if w.verdict == Failed && !strings.HasSuffix(r.Detail, " did not report") {
			t.Errorf("row %d detail %q does not name the missing benchmark", i, r.Detail)
		}
	}
}
