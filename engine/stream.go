package engine

import (
	"encoding/json"
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

// recordsOf returns the raw records of typed records, with the key each was
// listed under.
func recordsOf[T any](list []T, of func(*T) (string, json.RawMessage)) []stream.Record {
	out := make([]stream.Record, len(list))
	for i := range list {
		out[i].Key, out[i].Raw = of(&list[i])
	}
	return out
}

// The raw records of each typed record kind.
func brandRecord(b *extract.Brand) (string, json.RawMessage)     { return string(b.ID), b.Raw }
func contactRecord(c *extract.Contact) (string, json.RawMessage) { return string(c.ID), c.Raw }
func projectRecord(p *extract.Project) (string, json.RawMessage) { return string(p.ID), p.Raw }
func budgetRecord(b *extract.Budget) (string, json.RawMessage)   { return string(b.ID), b.Raw }
func invoiceRecord(v *extract.Invoice) (string, json.RawMessage) { return string(v.ID), v.Raw }
func collectionRecord(c *extract.Collection) (string, json.RawMessage) {
	return string(c.ID), c.Raw
}
func paymentRecord(p *extract.Payment) (string, json.RawMessage) { return string(p.ID), p.Raw }
func profitabilityRecord(p *extract.Profitability) (string, json.RawMessage) {
	return "", p.Raw
}
func summaryRecord(a *extract.AgencySummary) (string, json.RawMessage) { return a.Period, a.Raw }
func commRecord(c *extract.Communication) (string, json.RawMessage) {
	return strconv.FormatInt(c.RecordID, 10), c.Raw
}

// commsBatch transforms a page of communications.
func (r *run) commsBatch(page *extract.Page[extract.Communication]) transform.Batch {
	return r.transform(StreamCommunications, stream.EndpointCommunications, nil, recordsOf(page.Records, commRecord),
		stream.RejectCommunications, page.Rejects)
}
