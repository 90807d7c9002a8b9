package benchmark

import (
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
