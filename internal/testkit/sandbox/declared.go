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
	for _, d := range s.declared {
		if id, ok := matchPath(d.Path, path); ok {
			return d, id, true
		}
	}
	return DeclaredList{}, "", false
}

// matchPath reports whether path is the template tmpl, a path whose
// segment "{id}" stands for any id, and returns that id ("" for none).
func matchPath(tmpl, path string) (string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	segs := strings.Split(strings.Trim(tmpl, "/"), "/")
	if len(segs) != len(parts) {
		return "", false
	}
	id := ""
	for i, seg := range segs {
		switch {
		case seg == "{id}":
			v, err := url.PathUnescape(parts[i])
			if err != nil || v == "" {
				return "", false
			}
			id = v
		case seg != parts[i]:
			return "", false
		}
	}
	return id, true
}

// handleDeclared answers a request for the declared list d of parent id.
func (s *Server) handleDeclared(w http.ResponseWriter, e *enc, r *http.Request, d DeclaredList, id string, a auth) (int, string) {
	return s.answerRecords(w, e, r, d.Name, a, func() ([]DeclaredRecord, bool) {
		recs, ok := d.Records[id]
		return recs, ok
	})
}

// answerRecords answers a request for the list name with the records recs
// returns under the read lock (false: the parent the path names is not
// there, 404), paged and enveloped as every main list; a foreign key gets
// 403 on records that are there.
func (s *Server) answerRecords(w http.ResponseWriter, e *enc, r *http.Request, name string, a auth, recsOf func() ([]DeclaredRecord, bool)) (int, string) {
	if r.Method != http.MethodGet {
		return methodNotAllowed(w, e, http.MethodGet)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	recs, ok := recsOf()
	if !ok {
		return notFound(e)
	}
	if a == authForeign {
		return forbidden(e)
	}
	lp, reason := s.parseList(r.URL.Query(), name)
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
