package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
)

// A field map decides how the stored records are read, not whether the
// service's entities changed. table_mappings keeps, per table of whole
// records, the mapping its rows were derived under; a run that finds a
// table of its streams derived under another one re-derives it from raw
// first (a rebuild: 0 requests, recorded in sync_runs with trigger rebuild),
// which also re-keys the list hashes of the streams' entities in
// detail_state, so that the run's listing finds them unchanged and fetches
// no detail the field map alone would have made due.

// Rederive is a table whose rows were derived under another field map than
// the one in force: the next run re-derives it from raw before its tasks.
type Rederive struct {
	Table  string `json:"table"`
	Stream string `json:"stream"`
	// FieldMap is the table's pairs of the field map in force ("" for none),
	// Was the pairs it was derived under.
	FieldMap string `json:"field_map"`
	Was      string `json:"was"`
}

// tableGroup returns the tables of s derived from the same records as t:
// those filled from an endpoint t is filled from (its child tables, the
// users of the e-mails).
func tableGroup(s *stream.Stream, t *stream.Table) []*stream.Table {
	eps := t.Endpoints
	if len(eps) == 0 {
		for _, e := range s.Endpoints {
			eps = append(eps, e.Name)
		}
	}
	var out []*stream.Table
	for _, u := range s.Tables() {
		if slices.ContainsFunc(eps, u.FillsFrom) {
			out = append(out, u)
		}
	}
	return out
}

// tableMapping fingerprints the source fields of t's columns and of the
// tables derived from the same records, under the declarations of s.
func tableMapping(s *stream.Stream, t *stream.Table) string {
	h := sha256.New()
	for _, u := range tableGroup(s, t) {
		for _, c := range u.Columns {
			fmt.Fprintf(h, "%s.%s=%s|%s;", u.Name, c.Name, c.Field, strings.Join(c.Alternates, "|"))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// tableFieldMap renders the pairs of the field map in force (s) that change
// a column of t's group from its declared field, as AGENCY_FIELD_MAP
// writes them.
func tableFieldMap(s *stream.Stream, t *stream.Table) string {
	def, ok := stream.Lookup(s.Name)
	if !ok {
		return ""
	}
	var pairs []string
	for _, u := range tableGroup(s, t) {
		du, ok := def.Table(u.Name)
		if !ok {
			continue
		}
		for _, c := range u.Columns {
			if dc, ok := du.Column(c.Name); ok && (dc.Field != c.Field || !slices.Equal(dc.Alternates, c.Alternates)) {
				pairs = append(pairs, u.Name+"."+c.Name+"="+c.Field)
			}
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// mappingsOf returns the mapping in force of every table of whole records of
// streams.
func (e *Engine) mappingsOf(streams []string) ([]load.TableMapping, map[string]string) {
	var out []load.TableMapping
	streamOf := map[string]string{}
	for _, name := range streams {
		s := e.declared(name)
		if s == nil {
			continue
		}
		for _, t := range s.Tables() {
			if rebuildable(t) {
				out = append(out, load.TableMapping{Table: t.Name, Mapping: tableMapping(s, t), FieldMap: tableFieldMap(s, t)})
				streamOf[t.Name] = name
			}
		}
	}
	return out, streamOf
}

// stale returns the tables of streams derived under another mapping than
// the one in force; ok are those recorded under it or not recorded at all
// (a table first seen is taken as derived under the mapping in force).
func (e *Engine) stale(ctx context.Context, streams []string) (stale []Rederive, ok []load.TableMapping, err error) {
	recorded, err := e.store.TableMappings(ctx)
	if err != nil {
		return nil, nil, err
	}
	current, streamOf := e.mappingsOf(streams)
	for _, m := range current {
		was, known := recorded[m.Table]
		if known && was.Mapping != m.Mapping {
			stale = append(stale, Rederive{Table: m.Table, Stream: streamOf[m.Table], FieldMap: m.FieldMap, Was: was.FieldMap})
			continue
		}
		ok = append(ok, m)
	}
	return stale, ok, nil
}

// rederive re-derives, before a run's tasks and under its lock, the tables
// of streams derived under another field map, and records the mapping of the
// others. It returns the notes the run keeps (a field map that moves keys:
// the tables stay as they are). An interrupted or failed rebuild stops the
// run before it starts.
func (e *Engine) rederive(ctx context.Context, streams []string) ([]string, error) {
	stale, ok, err := e.stale(ctx, streams)
	if err != nil {
		return nil, err
	}
	if err := e.store.SetTableMappings(ctx, ok); err != nil {
		return nil, err
	}
	if len(stale) == 0 {
		return nil, nil
	}
	rs, isRebuilder := e.store.(rebuildStore)
	if !isRebuilder {
		return nil, errors.New("re-derive tables: the warehouse store cannot read stored records")
	}
	tables := make([]string, len(stale))
	var names []string
	for i, st := range stale {
		tables[i] = st.Table
		if !slices.Contains(names, st.Stream) {
			names = append(names, st.Stream)
		}
		e.log.Info("the field map changed since the table was derived: re-deriving it from raw before the run (0 requests)",
			zap.String("table", st.Table), zap.String("field_map", st.FieldMap), zap.String("was", st.Was))
	}
	res, err := e.rebuildLocked(ctx, rs, names, tables, DefaultRebuildBatch)
	if err != nil {
		return nil, fmt.Errorf("re-derive %s: %w", strings.Join(tables, ", "), err)
	}
	switch {
	case res.Status == StatusSucceeded:
		return nil, nil
	case errors.Is(res.Err, ErrKeyChanged):
		return []string{fmt.Sprintf("the field map changed how %s is read, but it moves stored records to new keys: "+
			"the stored rows were not re-derived (%v)", strings.Join(tables, ", "), res.Err)}, nil
	}
	return nil, fmt.Errorf("re-derive %s: %w", strings.Join(tables, ", "), res.Err)
}
