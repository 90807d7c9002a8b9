package inventory

import (
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// commsPageBody returns a 1000-row communications answer of the default
// sandbox (no bodies), as the pipeline benchmark fetches it.
func commsPageBody(tb testing.TB) []byte {
	tb.Helper()
	body, err := sandbox.DefaultCommsPage()
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

var comms, _ = stream.Lookup("communications")

func decodeTransform(tb testing.TB, body []byte) []extract.Record {
	p, err := extract.SplitPage(body)
	if err != nil {
		tb.Fatal(err)
	}
	recs := make([]stream.Record, len(p.Records))
	for i, c := range p.Records {
		recs[i] = stream.Record{Key: c.Key, Raw: c.Raw}
	}
	_ = transform.Records(transform.Input{Stream: comms, Endpoint: stream.EndpointCommunications}, recs)
	return p.Records
}

// BenchmarkPipelinePage decodes and transforms a 1000-row communications page.
func BenchmarkPipelinePage(b *testing.B) {
	body := commsPageBody(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		decodeTransform(b, body)
	}
}

// BenchmarkObservePage offers the 1000 records of that page to an Observer
// that has seen pages before (a run's steady state: its sample).
func BenchmarkObservePage(b *testing.B) {
	body := commsPageBody(b)
	recs := decodeTransform(b, body)
	o := NewObserver("communications")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		for i := range recs {
			o.Observe(recs[i].Raw)
		}
	}
}

// BenchmarkObserveFirstPage offers them to a new Observer (a run's first
// page: SampleFirst records more).
func BenchmarkObserveFirstPage(b *testing.B) {
	body := commsPageBody(b)
	recs := decodeTransform(b, body)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		o := NewObserver("communications")
		for i := range recs {
			o.Observe(recs[i].Raw)
		}
	}
}

// BenchmarkObserveAll observes every record of the page (no sampling).
func BenchmarkObserveAll(b *testing.B) {
	body := commsPageBody(b)
	recs := decodeTransform(b, body)
	o := NewObserver("communications")
	o.SetSampling(0, 1)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		for i := range recs {
			o.Observe(recs[i].Raw)
		}
	}
}

// TestObserveCost: the inventory of a 1000-row communications page costs at
// most 3 % of decoding and transforming it, on a run's first page as in its
// steady state. Both are timed in this process in interleaved rounds and the
// fastest round of each counts, so that other work on the machine (which
// only ever slows a round down) does not decide the ratio.
func TestObserveCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a timing ratio: run without -short and without -race")
	}
	body := commsPageBody(t)
	recs := decodeTransform(t, body)
	steadyObs := NewObserver("communications")
	allObs := NewObserver("communications")
	allObs.SetSampling(0, 1)
	const rounds, perRound = 7, 10
	best := map[string]time.Duration{}
	timeIt := func(name string, f func()) {
		start := time.Now()
		for range perRound {
			f()
		}
		d := time.Since(start) / perRound
		if b, ok := best[name]; !ok || d < b {
			best[name] = d
		}
	}
	observe := func(o *Observer) {
		for i := range recs {
			o.Observe(recs[i].Raw)
		}
	}
	for range rounds {
		timeIt("pipeline", func() { decodeTransform(t, body) })
		timeIt("steady", func() { observe(steadyObs) })
		timeIt("first", func() { observe(NewObserver("communications")) })
		timeIt("all", func() { observe(allObs) })
	}
	p := float64(best["pipeline"])
	pct := func(k string) float64 { return 100 * float64(best[k]) / p }
	t.Logf("decode+transform %s/page; inventory: steady %s (%.2f %%), first page %s (%.2f %%), every record %s (%.1f %%)",
		best["pipeline"], best["steady"], pct("steady"), best["first"], pct("first"), best["all"], pct("all"))
	for _, k := range []string{"steady", "first"} {
		if pct(k) > 3 {
			t.Errorf("%s: the inventory costs %.2f %% of decode+transform, more than 3 %%", k, pct(k))
		}
	}
}
