package sandbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
)

// CommsPageBody is the body of page `page` of the communications endpoint,
// perPage e-mails a page, for the users 1 to users, as the endpoint answers
// it (served in-process, without a listener): what the decode and transform
// benchmarks read.
func (s *Server) CommsPageBody(users, page, perPage int) ([]byte, error) {
	ids := make([]string, users)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	q := fmt.Sprintf(`{"user_id":[%s],"page":%d,"per_page":%d}`, strings.Join(ids, ","), page, perPage)
	req := httptest.NewRequest(http.MethodPost, CommsPath, strings.NewReader(q))
	req.Header.Set("X-Workflow-Key", s.opts.CommsKey)
	rec := httptest.NewRecorder()
	s.CommsHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("communications page %d: %d %.200s", page, rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes(), nil
}

// DefaultCommsPage is page 2 of the communications endpoint of the default
// sandbox (without limits), 1000 e-mails of its 300 users without bodies:
// the page the worker's CPU benchmarks read.
func DefaultCommsPage() ([]byte, error) {
	o := DefaultOptions()
	o.NoLimits = true
	s, err := New(o)
	if err != nil {
		return nil, err
	}
	return s.CommsPageBody(300, 2, 1000)
}
