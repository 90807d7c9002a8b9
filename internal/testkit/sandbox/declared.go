package sandbox

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// DeclaredList is a list the sandbox serves from given records beside the
// service's own: the endpoint of a stream a test declares itself (a list,
// or a list asked per entity of a parent list), served at its declared
// path, paged and enveloped as every list of the main interface (the
// variants, faults, limits and quota apply to it as to them).
type DeclaredList struct {
	// Name is the endpoint's name; Stats.ByEndpoint counts its requests
	// under it.
	Name string
	// Path is the list's path on the main interface; "{id}" in it stands
	// for the id of the parent entity the list is asked for.
	Path string
	// Records are the records served, in order, by the id that fills
	// "{id}" ("" for a path without one). A parent id absent from it
	// answers 404 (Data not found).
	Records map[string][]DeclaredRecord
}

// DeclaredRecord is one record of a DeclaredList.
type DeclaredRecord struct {
	// ID keys the record in the variants that list records as an object
	// keyed by id.
	ID string
	// JSON is the record exactly as served.
	JSON json.RawMessage
}

// Declare serves l from now on, replacing the list declared at the same
// path (a test changes its records between runs so).
func (s *Server) Declare(l DeclaredList) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.declared = slices.DeleteFunc(s.declared, func(d DeclaredList) bool { return d.Path == l.Path })
	s.declared = append(s.declared, l)
}

// declaredRoute returns the declared list path asks for, with the id its
// "{id}" holds ("" for none).
func (s *Server) declaredRoute(path string) (DeclaredList, string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for _, d := range s.declared {
		tmpl := strings.Split(strings.Trim(d.Path, "/"), "/")
		if len(tmpl) != len(parts) {
			continue
		}
		id, ok := "", true
		for i, seg := range tmpl {
			switch {
			case seg == "{id}":
				v, err := url.PathUnescape(parts[i])
				id, ok = v, ok && err == nil && v != ""
			case seg != parts[i]:
				ok = false
			}
		}
		if ok {
			return d, id, true
		}
	}
	return DeclaredList{}, "", false
}

// handleDeclared answers a request for the declared list d of parent id.
func (s *Server) handleDeclared(w http.ResponseWriter, e *enc, r *http.Request, d DeclaredList, id string, a auth) (int, string) {
	if r.Method != http.MethodGet {
		return methodNotAllowed(w, e, http.MethodGet)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	recs, ok := d.Records[id]
	if !ok {
		return notFound(e)
	}
	if a == authForeign {
		return forbidden(e)
	}
	lp, reason := s.parseList(r.URL.Query(), d.Name)
	if reason != "" {
		return s.badParam(e, reason)
	}
	path := "http://" + r.Host + r.URL.Path
	if reason := s.pagingReason(r, path); reason != "" {
		return s.badParam(e, reason)
	}
	p := s.pagedAs(w, r, page{total: len(recs), perPage: lp.perPage, current: lp.page, lying: s.twists().lyingPaging, path: path})
	writeList(e, s.mainSt, p, "", func(k int) string { return recs[k].ID }, func(e *enc, k int) { e.raw(string(recs[k].JSON)) })
	return http.StatusOK, ctJSON
}
