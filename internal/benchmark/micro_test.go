package benchmark

import (
	"strings"
	"testing"
)

const benchOutput = `goos: linux
goarch: amd64
pkg: github.com/agencysync/agencysync/extract
cpu: AMD EPYC 7B13
BenchmarkDecodeCommunicationsPage-2   	      30	  12195433 ns/op	  82.00 MB/s	        82.00 pages/s	     82000 records/s	 2264476 B/op	    5531 allocs/op
BenchmarkDecodeCommunicationsPage-2   	      30	   6802010 ns/op	 147.01 MB/s	       147.0 pages/s	    147012 records/s	 2264293 B/op	    5531 allocs/op
BenchmarkDecodeCommunicationsPage-2   	      30	   9000000 ns/op	 111.11 MB/s	       111.1 pages/s	    111111 records/s	 2264285 B/op	    5531 allocs/op
BenchmarkLoadEmails/default-2         	       1	4404040404 ns/op	         0.5690 ratio	      4387 normalized_emails/s	      7704 rawcopy_emails/s
--- BENCH: BenchmarkLoadEmails/default-2
    bench_test.go:147: server: fsync=on synchronous_commit=on full_page_writes=on
BenchmarkReloadUnchanged-2 1 100 ns/op 0 reload_tuples 0.002 reload/first_WAL
BenchmarkBroken-2 1 abc ns/op
PASS
ok  	github.com/agencysync/agencysync/extract	12.345s
`

func TestParseBenchOutput(t *testing.T) {
	res := ParseBenchOutput([]byte(benchOutput))
	if len(res) != 5 {
		t.Fatalf("got %d results, want 5: %+v", len(res), res)
	}
	first := res[0]
	if first.Name != "BenchmarkDecodeCommunicationsPage" || first.Iterations != 30 ||
		first.Metrics["pages/s"] != 82 || first.Metrics["allocs/op"] != 5531 || first.Metrics["MB/s"] != 82 {
		t.Errorf("first result = %+v", first)
	}
	if r := res[3]; r.Name != "BenchmarkLoadEmails/default" || r.Metrics["ratio"] != 0.569 || r.Metrics["rawcopy_emails/s"] != 7704 {
		t.Errorf("sub-benchmark result = %+v", r)
	}
	if r := res[4]; r.Name != "BenchmarkReloadUnchanged" || r.Metrics["reload/first_WAL"] != 0.002 {
		t.Errorf("unit with a slash = %+v", r)
	}
}

func TestBenchMedians(t *testing.T) {
	m := BenchMedians(ParseBenchOutput([]byte(benchOutput)))
	s, ok := m["BenchmarkDecodeCommunicationsPage"]
	if !ok || s.Runs != 3 {
		t.Fatalf("summary = %+v, want 3 runs", s)
	}
	if s.Median["pages/s"] != 111.1 || s.Median["allocs/op"] != 5531 {
		t.Errorf("medians = %v, want pages/s 111.1, allocs/op 5531", s.Median)
	}
	if v := s.Values["pages/s"]; len(v) != 3 || v[0] != 82 || v[1] != 147 {
		t.Errorf("values kept in run order = %v", v)
	}
}

const libraryOutput = `BenchmarkDecodeLibraries/communications/typed-2     	 300	 4000000 ns/op	 4.000 cpu-ms/page
BenchmarkDecodeLibraries/communications/stdlib-2    	  20	60000000 ns/op	60.00 cpu-ms/page
BenchmarkDecodeLibraries/communications/gjson-split-2	 200	 5000000 ns/op	 5.000 cpu-ms/page
BenchmarkDecodeLibraries/communications/gjson-2     	 100	10000000 ns/op	10.00 cpu-ms/page
BenchmarkDecodeLibraries/communications/typed-2     	 300	 2000000 ns/op	 2.000 cpu-ms/page
BenchmarkDecodeLibraries/communications/stdlib-2    	  20	40000000 ns/op	40.00 cpu-ms/page
BenchmarkDecodeLibraries/communications/gjson-split-2	 200	 3000000 ns/op	 3.000 cpu-ms/page
BenchmarkDecodeLibraries/communications/gjson-2     	 100	 6000000 ns/op	 6.000 cpu-ms/page
BenchmarkDecodeLibraries/communications/typed-2     	 300	 3000000 ns/op	 3.000 cpu-ms/page
BenchmarkDecodeLibraries/communications/stdlib-2    	  20	45000000 ns/op	45.00 cpu-ms/page
BenchmarkDecodeLibraries/communications/gjson-split-2	 200	 4000000 ns/op	 4.000 cpu-ms/page
BenchmarkDecodeLibraries/communications/gjson-2     	 100	 6000000 ns/op	 6.000 cpu-ms/page
`

// TestDecodeLibraryRows: the library comparison reads ms/page per library
// (CPU) and gives each run's ratios, taken within the run.
func TestDecodeLibraryRows(t *testing.T) {
	rows := decodeLibraryRows(BenchMedians(ParseBenchOutput([]byte(libraryOutput))))
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2 (communications, projects)", len(rows))
	}
	c := rows[0]
	if c.ID != "7" || c.Result != "gjson 6.00 ms, encoding/json 45.00 ms (×6.67), typed decoder 3.00 ms (gjson ×2.50)" {
		t.Errorf("communications result %q", c.Result)
	}
	for _, want := range []string{"encoding/json ÷ gjson per run 6.00 / 6.67 / 7.50", "gjson ÷ typed per run 2.50 / 3.00 / 2.00", "gjson splitting alone 5.00 / 3.00 / 4.00 ms",
		"at 10 requests/s (100 ms a request) gjson takes 6.0 %", "at 100 requests/s (10 ms) 60.0 %"} {
		if !strings.Contains(c.Detail, want) {
			t.Errorf("detail %q lacks %q", c.Detail, want)
		}
	}
	if p := rows[1]; p.Result != "not measured" || p.Verdict != Failed {
		t.Errorf("projects row %+v, want not measured", p)
	}
}
