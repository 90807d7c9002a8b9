package transform

import (
	"bytes"
	"context"
	"fmt"
	"testing"

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
