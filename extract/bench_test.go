package extract

import (
	"testing"
)

// BenchmarkDecodeCommunicationsPage decodes a realistic 1000-row page of the
// communications endpoint (about 1 MB: subjects with escapes, one sender,
// one to three keyed recipients, some cc, people drawn from a pool of 400),
// the largest page the API serves, through the public decoder (which copies
// the records' raw bytes, as the client does).
func BenchmarkDecodeCommunicationsPage(b *testing.B) {
	benchComms(b, genCommsPage(1000, 1, 1, 1000, 2971))
}

// BenchmarkDecodeCommunicationsPageUniquePeople is the worst case of the
// same page: every participant is a different person, so no user object is
// seen twice.
func BenchmarkDecodeCommunicationsPageUniquePeople(b *testing.B) {
	benchComms(b, genCommsPagePool(1000, 1, 1, 1000, 2971, 0))
}

func benchComms(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := DecodeCommunications(body)
		if err != nil || len(p.Records) != 1000 {
			b.Fatalf("decode: %v", err)
		}
	}
	elapsed := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/elapsed, "pages/s")
	b.ReportMetric(float64(b.N)*1000/elapsed, "records/s")
}

// BenchmarkDecodeProjectsPage decodes a 1000-row projects list.
func BenchmarkDecodeProjectsPage(b *testing.B) {
	body := genProjectsPage(1000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := DecodeList[Project](body)
		if err != nil || len(p.Records) != 1000 {
			b.Fatalf("decode: %v", err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
}
