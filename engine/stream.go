package engine

import (
	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// transform turns records of one endpoint of stream s into rows, with the
// page's undecodable records as rejects of rejects. The field inventory
// observes the records through the views the transform read them by.
func (r *run) transform(s *stream.Stream, endpoint string, params map[string]string, recs []stream.Record,
	rejects string, undecoded []extract.RecordError) transform.Batch {
	views := make([]*stream.View, 0, len(recs))
	b := transform.Records(transform.Input{Stream: s, Endpoint: endpoint, Params: params,
		Snapshot: r.serviceDay(), Read: func(v *stream.View) { views = append(views, v) }}, recs)
	if len(undecoded) > 0 {
		b.Rejects = append(b.Rejects, transform.RecordErrors(rejects, undecoded)...)
	}
	r.fields.observe(s, endpoint, views)
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
