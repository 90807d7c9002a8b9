package engine

import (
	"syscall"
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
)

// BenchmarkPageCPU measures the worker's CPU for one 1000-e-mail page of the
// default sandbox between its body and the load, as a run spends it: the
// page split into records (extract.SplitPage), the records transformed
// and offered to the run's field inventory (run.transform). "steady" samples as a run does after its first page,
// "every-record" observes every record (the inventory's whole cost).
//
//	go test -run '^$' -bench PageCPU -benchmem ./engine/
func BenchmarkPageCPU(b *testing.B) {
	body := sandboxCommsPage(b)
	s, _ := stream.Lookup("communications")
	for _, c := range []struct {
		name     string
		sampling *[2]int
	}{{"steady", nil}, {"every-record", &[2]int{0, 1}}} {
		b.Run(c.name, func(b *testing.B) {
			r := &run{e: &Engine{set: Settings{Now: time.Now}}, fields: newFieldWatch([]*stream.Stream{s}, c.sampling)}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu0 := benchCPU(b)
			for b.Loop() {
				p, err := extract.SplitPage(body)
				if err != nil || len(p.Records) != 1000 {
					b.Fatalf("split: %v", err)
				}
				out := r.transform(s, stream.EndpointCommunications, nil, recordsOf(p.Records), stream.RejectCommunications, p.Rejects)
				if out.Len("emails") != 1000 {
					b.Fatalf("%d e-mails, %d rejects", out.Len("emails"), len(out.Rejects))
				}
			}
			cpu := benchCPU(b) - cpu0
			b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/page")
			b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/page")
		})
	}
}

// sandboxCommsPage is a 1000-e-mail answer of the default sandbox (no
// bodies), as a run fetches it.
func sandboxCommsPage(b *testing.B) []byte {
	body, err := sandbox.DefaultCommsPage()
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// benchCPU is the CPU time (user and system) the process has used: the
// garbage collector's threads included, time spent waiting for a core not.
func benchCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
