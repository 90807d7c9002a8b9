package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// The streams of a sync. Each keeps its own state in sync_state.
const (
	StreamBrands         = "brands"         // list, details, contacts
	StreamProjects       = "projects"       // list, details
	StreamFinance        = "finance"        // budgets, invoices, collections, payments, profitability, summary
	StreamCommunications = "communications" // e-mails, recipients, users
)

// AllStreams lists every stream in its default order.
var AllStreams = []string{StreamBrands, StreamProjects, StreamFinance, StreamCommunications}

// ParseStreams parses a comma-separated stream selection; empty selects all.
func ParseStreams(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return AllStreams, nil
	}
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(part)
		if !slices.Contains(AllStreams, name) {
			return nil, fmt.Errorf("parse streams: unknown stream %q (want %s)", name, strings.Join(AllStreams, ","))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// declared returns the declaration of the stream named name that records are
// transformed by (Settings.Streams).
func (e *Engine) declared(name string) *stream.Stream {
	for _, s := range e.set.Streams {
		if s.Name == name {
			return s
		}
	}
	s, _ := stream.Lookup(name)
	return s
}

// transform turns records of one endpoint of stream into rows, with the
// page's undecodable records as rejects of rejects.
func (r *run) transform(streamName, endpoint string, params map[string]string, recs []stream.Record,
	rejects string, undecoded []extract.RecordError) transform.Batch {
	decl := r.e.declared(streamName)
	b := transform.Records(transform.Input{Stream: decl, Endpoint: endpoint, Params: params,
		Snapshot: r.serviceDay()}, recs)
	if len(undecoded) > 0 {
		b.Rejects = append(b.Rejects, transform.RecordErrors(rejects, undecoded)...)
	}
	r.fields.observe(decl, endpoint, recs)
	return b
}

// recordsOf returns a page's records for the transform: each as received,
// with the key it was listed under.
func recordsOf(list []extract.Record) []stream.Record {
	out := make([]stream.Record, len(list))
	for i, rec := range list {
		out[i] = stream.Record{Key: rec.Key, Raw: rec.Raw}
	}
	return out
}

// commsBatch transforms a page of communications.
func (r *run) commsBatch(page *extract.Page) transform.Batch {
	return r.transform(StreamCommunications, stream.EndpointCommunications, nil, recordsOf(page.Records),
		stream.RejectCommunications, page.Rejects)
}

// commsIDs lists the record ids of a transformed communications page: its
// e-mails' and its rejected records' (whose key is their record id when it
// is known).
func commsIDs(b *transform.Batch) []int64 {
	var ids []int64
	for _, v := range b.Column("emails", "record_id") {
		if id, ok := v.(int64); ok {
			ids = append(ids, id)
		}
	}
	for _, rj := range b.Rejects {
		if id, err := strconv.ParseInt(rj.Key, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
