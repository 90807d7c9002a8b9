package transform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
)

func benchBody(b *testing.B) []byte {
	o := sandbox.DefaultOptions()
	o.Seed, o.Users, o.Emails, o.HistoryDays, o.NoLimits = 3, 300, 1000, 30, true
	sb, err := sandbox.New(o)
	if err != nil {
		b.Fatal(err)
	}
	if err := sb.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	cl, _ := extract.New(extract.Options{BaseURL: sb.APIURL(), APIKey: o.APIKey, CommsURL: sb.CommsURL(), CommsKey: o.CommsKey, RateLimit: 1000})
	users := make([]int64, o.Users)
	for i := range users {
		users[i] = int64(i + 1)
	}
	p, err := cl.CommunicationsPage(context.Background(), extract.CommsQuery{DomainID: 1, UserIDs: users,
		DateStart: o.Start.AddDate(0, 0, -40), DateEnd: o.Start.AddDate(0, 0, 1), PerPage: 1000}, 1)
	if err != nil || len(p.Records) != 1000 {
		b.Fatalf("page: %v %d", err, len(p.Records))
	}
	var body bytes.Buffer
	body.WriteString(`{"data":{"rows":{`)
	for i, c := range p.Records {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, "%q:%s", c.Key, c.Raw)
	}
	body.WriteString(`},"total":1000,"per_page":1000,"current_page":1,"last_page":1}}`)
	return body.Bytes()
}

// Worker CPU of a 1000-e-mail page before the load: decode plus transform.

func BenchmarkCommsPageGeneric(b *testing.B) {
	body := benchBody(b)
	s, _ := stream.Lookup("communications")
	b.ResetTimer()
	for b.Loop() {
		p, _ := extract.SplitPage(body)
		recs := make([]stream.Record, len(p.Records))
		for i, c := range p.Records {
			recs[i] = stream.Record{Key: c.Key, Raw: c.Raw}
		}
		Records(Input{Stream: s, Endpoint: stream.EndpointCommunications}, recs)
	}
}

func BenchmarkCommsTransformGeneric(b *testing.B) {
	body := benchBody(b)
	p, _ := extract.SplitPage(body)
	s, _ := stream.Lookup("communications")
	recs := make([]stream.Record, len(p.Records))
	for i, c := range p.Records {
		recs[i] = stream.Record{Key: c.Key, Raw: c.Raw}
	}
	b.ResetTimer()
	for b.Loop() {
		Records(Input{Stream: s, Endpoint: stream.EndpointCommunications}, recs)
	}
}

// The benchmarks below measure the worker's CPU for one page before the
// load, through the path the engine takes once extract hands over raw
// records: extract.SplitPage, then Records. Each reports the process's CPU
// time a page (getrusage: the garbage collector's threads included, time
// spent waiting for a core excluded — the fair figure on a shared machine)
// besides the wall time.
//
//	go test -run '^$' -bench 'RecordsCommunicationsPage|RecordsProjectsPage' -benchmem ./transform/

// BenchmarkRecordsCommunicationsPage splits and transforms a 1000-e-mail
// sandbox page ("page" sub-benchmark) and transforms its records alone
// ("transform").
func BenchmarkRecordsCommunicationsPage(b *testing.B) {
	body := benchBody(b)
	s, _ := stream.Lookup("communications")
	benchRecords(b, body, Input{Stream: s, Endpoint: stream.EndpointCommunications}, "emails")
}

// BenchmarkRecordsProjectsPage does the same for a 1000-project page of the
// sandbox's projects list.
func BenchmarkRecordsProjectsPage(b *testing.B) {
	o := sandbox.DefaultOptions()
	o.Brands, o.ProjectsPerBrand, o.NoLimits = 50, 20, true
	sb, err := sandbox.New(o)
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/projects?page=1&per_page=1000", nil)
	req.Header.Set("Authorization", o.APIKey)
	rec := httptest.NewRecorder()
	sb.APIHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("projects page: %d %.200s", rec.Code, rec.Body.String())
	}
	s, _ := stream.Lookup("projects")
	benchRecords(b, rec.Body.Bytes(), Input{Stream: s, Endpoint: stream.EndpointProjects}, "projects")
}

func benchRecords(b *testing.B, body []byte, in Input, table string) {
	split := func(b *testing.B) []stream.Record {
		p, err := extract.SplitPage(body)
		if err != nil || len(p.Records) != 1000 {
			b.Fatalf("split: %v (%d records)", err, len(p.Records))
		}
		recs := make([]stream.Record, len(p.Records))
		for i, r := range p.Records {
			recs[i] = stream.Record{Key: r.Key, Raw: r.Raw}
		}
		return recs
	}
	check := func(b *testing.B, out Batch) {
		if len(out.Rejects) != 0 || out.Len(table) != 1000 {
			b.Fatalf("%d %s rows, %d rejects (%v)", out.Len(table), table, len(out.Rejects), out.Rejects)
		}
	}
	b.Run("page", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		cpu0 := processCPU(b)
		for b.Loop() {
			check(b, Records(in, split(b)))
		}
		reportCPU(b, processCPU(b)-cpu0)
	})
	b.Run("transform", func(b *testing.B) {
		recs := split(b)
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := processCPU(b)
		for b.Loop() {
			check(b, Records(in, recs))
		}
		reportCPU(b, processCPU(b)-cpu0)
	})
}

func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/page")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/page")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBatchJSONCommunicationsPage encodes the batch of a 1000-e-mail
// sandbox page, as the page spool writes it, two ways in one run: through
// encoding/json's Encoder ("encoder": it calls MarshalJSON, then re-scans and
// compacts its output) and by AppendJSON into a reused buffer ("append":
// what the spool does).
//
//	go test -run '^$' -bench BatchJSONCommunicationsPage -benchmem ./transform/
func BenchmarkBatchJSONCommunicationsPage(b *testing.B) {
	s, _ := stream.Lookup("communications")
	p, err := extract.SplitPage(benchBody(b))
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]stream.Record, len(p.Records))
	for i, r := range p.Records {
		recs[i] = stream.Record{Key: r.Key, Raw: r.Raw}
	}
	batch := Records(Input{Stream: s, Endpoint: stream.EndpointCommunications}, recs)
	if batch.Len("emails") != 1000 {
		b.Fatalf("%d e-mails", batch.Len("emails"))
	}
	b.Run("encoder", func(b *testing.B) {
		var buf bytes.Buffer
		b.ReportAllocs()
		cpu0 := processCPU(b)
		for b.Loop() {
			buf.Reset()
			if err := json.NewEncoder(&buf).Encode(batch); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
		reportCPU(b, processCPU(b)-cpu0)
	})
	b.Run("append", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		cpu0 := processCPU(b)
		for b.Loop() {
			if buf, err = batch.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
		reportCPU(b, processCPU(b)-cpu0)
	})
}
