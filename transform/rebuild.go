package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agencysync/agencysync/stream"
)

// ErrNotRebuildable is wrapped by Rebuild's error for a table that does not
// hold whole records of the stream (a child table, a table of people, a
// table of another stream).
var ErrNotRebuildable = errors.New("table does not hold the stream's records")

// Stored is a record as the warehouse keeps it, for a rebuild.
type Stored struct {
	// Key holds the stored row's key columns as text, by name (brand_id,
	// level, record_id, …): they give the record its listed key and the
	// request parameters it was fetched with.
	Key map[string]string
	// Raw holds the stored raw JSON by column name ("raw" for the list
	// record, "detail_raw" for the detail); a missing or NULL one is skipped.
	Raw map[string]json.RawMessage
}

// Rebuild re-derives, from stored raw records, the rows a sync that
// received them would have made with the declarations of s (under the
// current field map): the rows of table (a table of whole records: brands,
// projects, invoices, emails, …), of its child tables and of the tables the
// stream's hooks fill. Each raw column is read as a record of the endpoint
// that column is filled from; the list record comes before the detail, as a
// sync writes them, so load keeps the list's raw and the detail's values.
// A detail is read with the stored list record as its base
// (stream.Record.Base), as the sync's details task reads it: a field the
// detail leaves out keeps the list's value, and a replaced child table
// whose array it leaves out is not replaced. snapshot is the day for
// snapshot tables. A stored record that no longer fits the declarations
// becomes a Reject; Rebuild sends no request.
func Rebuild(s *stream.Stream, table string, stored []Stored, snapshot time.Time) (Batch, error) {
	t, ok := s.Table(table)
	if !ok || t.Parent != "" || t.Elements != nil {
		return Batch{}, fmt.Errorf("rebuild %s of stream %s: %w", table, s.Name, ErrNotRebuildable)
	}
	var sources []source
	for _, c := range t.Columns {
		if c.Derived != stream.DerivedRecord {
			continue
		}
		eps := c.Endpoints
		if len(eps) == 0 {
			eps = t.Endpoints
		}
		if len(eps) == 0 {
			return Batch{}, fmt.Errorf("rebuild %s: column %s fills from no endpoint", table, c.Name)
		}
		sources = append(sources, source{column: c.Name, endpoint: eps[0]})
	}
	// The base of a detail's records: the column of the list's.
	for i := range sources {
		if ep, ok := s.Endpoint(sources[i].endpoint); !ok || ep.Kind() != stream.KindDetail {
			continue
		}
		for _, o := range sources {
			if ep, ok := s.Endpoint(o.endpoint); ok && ep.Kind() == stream.KindList {
				sources[i].base = o.column
				break
			}
		}
	}
	key := t.Key()[0].Name
	var out Batch
	for _, src := range sources {
		groups := map[string]*group{}
		var order []string
		for _, st := range stored {
			raw := st.Raw[src.column]
			if len(raw) == 0 || string(raw) == "null" {
				continue
			}
			params := paramsOf(t, st.Key)
			gk := fmt.Sprint(params)
			g := groups[gk]
			if g == nil {
				g = &group{params: params}
				groups[gk] = g
				order = append(order, gk)
			}
			rec := stream.Record{Key: st.Key[key], Raw: raw}
			if b := st.Raw[src.base]; src.base != "" && len(b) > 0 && string(b) != "null" {
				rec.Base = b
			}
			g.recs = append(g.recs, rec)
		}
		for _, gk := range order {
			g := groups[gk]
			out.Append(Records(Input{Stream: s, Endpoint: src.endpoint, Params: g.params, Snapshot: snapshot}, g.recs))
		}
	}
	return out, nil
}

// source is a column of stored records, read as records of endpoint; base
// names the column of their Stored.Raw that is their Record.Base ("" none).
type source struct{ column, endpoint, base string }

type group struct {
	params map[string]string
	recs   []stream.Record
}

// paramsOf is the request parameters of a stored record: the key columns
// that a request parameter fills.
func paramsOf(t *stream.Table, key map[string]string) map[string]string {
	var out map[string]string
	for _, c := range t.Columns {
		if c.Param == "" || key[c.Name] == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[c.Param] = key[c.Name]
	}
	return out
}
