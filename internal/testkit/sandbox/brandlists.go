package sandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agencysync/agencysync/stream"
)

// brandList is a list asked per brand that a stream declares and the spec
// does not have (a brand's contacts, which it has, are served by their own
// code): the sandbox serves it from the declaration, so that a stream added
// to stream.All() is served by every sandbox. Each live brand lists one or
// two records (by the parity of its id), each with an id and a value for
// every field the list's table reads (by the column's type).
type brandList struct {
	name   string          // the endpoint's inventory name: Stats.ByEndpoint and the truth name it so
	path   string          // its declared path, "{id}" standing for the brand's id
	fields []stream.Column // the columns its records' fields fill, "id" excepted
}

// brandListsOf returns the lists asked per brand that streams declare and
// routeMain does not route.
func brandListsOf(streams []*stream.Stream) []brandList {
	var out []brandList
	for _, s := range streams {
		for _, ep := range s.EndpointsOf(stream.KindChild) {
			parent, ok := s.Endpoint(ep.Parent)
			if !ok || routeMain(parent.Path).endpoint != epBrands ||
				routeMain(strings.ReplaceAll(ep.Path, "{id}", "1")).endpoint != epUnknown {
				continue
			}
			l := brandList{name: ep.InventoryName(), path: ep.Path}
			if t := s.RecordTable(ep.Name); t != nil {
				for _, c := range t.Columns {
					if c.Field != "" && c.Field != "id" && c.Derived == "" {
						l.fields = append(l.fields, c)
					}
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// ServeDeclaredBrandLists serves, from now on, the lists asked per brand
// that streams declare and the spec does not have, in place of those of
// stream.All() that New serves (a test serves its own declaration so).
func (s *Server) ServeDeclaredBrandLists(streams []*stream.Stream) {
	lists := brandListsOf(streams)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.brandLists = lists
}

// brandListRoute returns the brand list path asks for and the brand's id
// (0 when it is not a number).
func (s *Server) brandListRoute(path string) (brandList, int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, l := range s.brandLists {
		if id, ok := matchPath(l.path, path); ok {
			v, err := strconv.ParseInt(id, 10, 64)
			if err != nil || v < 1 {
				v = 0
			}
			return l, v, true
		}
	}
	return brandList{}, 0, false
}

// handleBrandList answers a request for l of brand id as the contacts of a
// brand are answered: 404 for a brand not listed, 403 for a foreign key.
func (s *Server) handleBrandList(w http.ResponseWriter, e *enc, r *http.Request, l brandList, id int64, a auth) (int, string) {
	return s.answerRecords(w, e, r, l.name, a, func() ([]DeclaredRecord, bool) {
		k, ok := s.data.brandByID[id]
		if !ok || s.data.brands[k].deleted {
			return nil, false
		}
		return l.records(id, s.opts.Start), true
	})
}

// records are the records l lists for brand id: one or two, by the parity
// of the id, dated from start.
func (l brandList) records(id int64, start time.Time) []DeclaredRecord {
	out := make([]DeclaredRecord, 1+id%2)
	for k := range out {
		rid := strconv.FormatInt(id*100+int64(k)+1, 10)
		rec := map[string]any{"id": rid}
		for _, c := range l.fields {
			put(rec, strings.Split(c.Field, "."), fieldValue(c, rid, k, start))
		}
		b, err := json.Marshal(rec)
		if err != nil {
			panic(fmt.Sprintf("sandbox: encode a record of %s: %v", l.name, err))
		}
		out[k] = DeclaredRecord{ID: rid, JSON: b}
	}
	return out
}

// put sets path (a field's dotted path) in rec to v.
func put(rec map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := rec[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			rec[p] = next
		}
		rec = next
	}
	rec[path[len(path)-1]] = v
}

// fieldValue is the value of c in the k-th record (id rid) of a brand list.
func fieldValue(c stream.Column, rid string, k int, start time.Time) any {
	day := start.AddDate(0, 0, -k-1)
	switch c.Type {
	case stream.ID:
		return rid
	case stream.BigInt, stream.Integer:
		return k + 1
	case stream.Numeric:
		return json.Number(strconv.Itoa(k+1) + ".50")
	case stream.Date:
		return day.Format(layoutDate)
	case stream.Month:
		return day.Format("2006-01")
	case stream.Timestamptz:
		return day.Format(time.RFC3339)
	case stream.Boolean:
		return k == 0
	case stream.JSONB:
		return map[string]any{}
	}
	return c.Field + " " + rid
}
