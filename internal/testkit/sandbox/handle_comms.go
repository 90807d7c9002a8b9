package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultCommsPerPage is per_page when a communications request does not say
// (the spec's example uses 20).
const defaultCommsPerPage = 20

// maxCommsBody bounds the communications request body.
const maxCommsBody = 1 << 20

// commsRequest is a validated communications request.
type commsRequest struct {
	query       commsQuery
	withMessage bool
	page        int
	perPage     int
}

// jsonInt reads an integer given as a JSON number or a numeric JSON string.
func jsonInt(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 1 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		raw = []byte(strings.TrimSpace(s))
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	return v, err == nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonString reads an optional JSON string; null counts as absent.
func jsonString(raw json.RawMessage) (string, bool) {
	if raw == nil || isNull(raw) {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// brandIDFromURL finds the id that follows the "brands" segment of a brand
// address such as https://app.agency.example/brands/42/overview.
func brandIDFromURL(s string) (int64, bool) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return 0, false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	for k := 0; k+1 < len(parts); k++ {
		if parts[k] == "brands" {
			id, err := strconv.ParseInt(parts[k+1], 10, 64)
			return id, err == nil && id > 0
		}
	}
	return 0, false
}

// parseComms validates a request body; the reason is empty when valid.
func (s *Server) parseComms(body []byte) (commsRequest, string) {
	var req commsRequest
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return req, "the request body must be a JSON object"
	}
	q := &req.query
	q.brand = -1
	q.from, q.to = math.MinInt64, math.MaxInt64
	if reason := parseCommsUsers(raw, q); reason != "" {
		return req, reason
	}
	if reason := s.parseCommsScope(raw, q); reason != "" {
		return req, reason
	}
	if reason := s.parseCommsDates(raw, q); reason != "" {
		return req, reason
	}
	if reason := parseWithMessage(raw, &req); reason != "" {
		return req, reason
	}
	if reason := s.parseCommsPaging(raw, &req); reason != "" {
		return req, reason
	}
	return req, ""
}

// parseCommsUsers reads the required user_id, an array of integers, into
// q's sorted users without duplicates; the reason is empty when valid.
func parseCommsUsers(raw map[string]json.RawMessage, q *commsQuery) string {
	ur, ok := raw["user_id"]
	if !ok || isNull(ur) {
		return "user_id is required"
	}
	var items []json.RawMessage
	if json.Unmarshal(ur, &items) != nil {
		return "user_id must be an array of integers"
	}
	if len(items) == 0 {
		return "user_id must not be empty"
	}
	for _, it := range items {
		v, ok := jsonInt(it)
		if !ok {
			return "user_id must be an array of integers"
		}
		q.users = append(q.users, v)
	}
	slices.Sort(q.users)
	q.users = slices.Compact(q.users)
	return ""
}

// parseCommsScope reads the optional domain_id and -brand_url into q: another
// domain, or a brand that does not exist, matches nothing. The reason is
// empty when valid.
func (s *Server) parseCommsScope(raw map[string]json.RawMessage, q *commsQuery) string {
	if v, ok := raw["domain_id"]; ok && !isNull(v) {
		id, ok := jsonInt(v)
		if !ok {
			return "domain_id must be an integer"
		}
		if id != s.opts.DomainID {
			q.none = true
		}
	}
	brandURL, ok := jsonString(raw["-brand_url"])
	if !ok {
		return "-brand_url must be a string"
	}
	if brandURL != "" {
		id, ok := brandIDFromURL(brandURL)
		if !ok {
			return "-brand_url must be a brand address such as " + BrandURLPrefix + "42"
		}
		if k, found := s.data.brandByID[id]; found {
			q.brand = k
		} else {
			q.none = true
		}
	}
	return ""
}

// parseCommsDates reads the optional date_start and date_end into q's range
// of microseconds, the days cut where the comms day offset says; the reason
// is empty when valid.
func (s *Server) parseCommsDates(raw map[string]json.RawMessage, q *commsQuery) string {
	var start, end time.Time
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"date_start", &start}, {"date_end", &end}} {
		v, ok := jsonString(raw[f.name])
		if !ok {
			return f.name + " must be a date YYYY-MM-DD"
		}
		if v == "" {
			continue
		}
		t, err := time.Parse(layoutDate, v)
		if err != nil {
			return f.name + " must be a date YYYY-MM-DD"
		}
		*f.dst = t
	}
	// The days are those of UTC+offset: day D starts at D 00:00 - offset.
	offset := s.twists().commsDayOffset.Microseconds()
	if !start.IsZero() {
		q.from = start.UnixMicro() - offset
	}
	if !end.IsZero() {
		q.to = end.AddDate(0, 0, 1).UnixMicro() - offset
	}
	if !start.IsZero() && !end.IsZero() && start.After(end) {
		return "date_start must not be after date_end"
	}
	return ""
}

// parseWithMessage reads the optional with_message flag into req; the reason
// is empty when valid.
func parseWithMessage(raw map[string]json.RawMessage, req *commsRequest) string {
	wm, ok := jsonString(raw["with_message"])
	switch {
	case !ok:
		return `with_message must be one of "0", "1", "true", "false"`
	case wm == "" || wm == "0" || wm == "false":
	case wm == "1" || wm == "true":
		req.withMessage = true
	default:
		return `with_message must be one of "0", "1", "true", "false"`
	}
	return ""
}

// parseCommsPaging reads the optional page and per_page into req, per_page
// as the sandbox answers it; the reason is empty when valid.
func (s *Server) parseCommsPaging(raw map[string]json.RawMessage, req *commsRequest) string {
	req.page, req.perPage = 1, defaultCommsPerPage
	if v, ok := raw["page"]; ok && !isNull(v) {
		n, ok := jsonInt(v)
		if !ok || n < 1 || n > math.MaxInt32 {
			return "page must be an integer of at least 1"
		}
		req.page = int(n)
	}
	if v, ok := raw["per_page"]; ok && !isNull(v) {
		n, ok := jsonInt(v)
		if !ok || n < 1 || n > math.MaxInt32 {
			return "per_page must be an integer of at least 1"
		}
		req.perPage = int(n)
	}
	req.perPage = s.answeredPerPage(req.perPage)
	return ""
}

// pendingMutation is a mutation that fires once the answer in hand is
// written: it is applied before the answer is sent.
type pendingMutation struct {
	indexes []uint32
	insert  bool
}

func (s *Server) handleComms(e *enc, r *http.Request) (int, string, *pendingMutation) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxCommsBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			st, ct := s.badParam(e, "the request body is too large")
			return st, ct, nil
		}
		st, ct := s.badParam(e, "the request body could not be read")
		return st, ct, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	req, reason := s.parseComms(body)
	if reason != "" {
		st, ct := s.badParam(e, reason)
		return st, ct, nil
	}
	m := s.mail
	set := m.match(&req.query)
	p := page{total: set.len(), perPage: req.perPage, current: req.page}
	from, to := p.bounds()
	st := s.commsSt
	badRate := s.faultConfig().badRate
	e.b = append(e.b, `{"data":{"rows":`...)
	if from == to {
		if st.emptyRowsArray || st.phpEmptyArray {
			e.b = append(e.b, "[]"...)
		} else {
			e.b = append(e.b, "{}"...)
		}
	} else {
		e.open()
		var c emailCore
		scratch := make([]byte, 0, 2048)
		for k := from; k < to; k++ {
			i := set.at(k)
			e.keyInt(emailID(m.seed, i))
			scratch = m.writeEmail(e, i, &c, req.withMessage, st, m.isBadEmail(i, badRate), scratch)
		}
		e.close()
	}
	if s.twists().commsPagingMissing {
		e.key("per_page").num(int64(p.perPage), st.phpStrings)
		e.key("current_page").num(int64(p.current), st.phpStrings)
	} else {
		writePaging(e, p, st.phpStrings)
	}
	e.b = append(e.b, "}}"...)
	var pm *pendingMutation
	if idx, insert, fire := s.mutationDue(set, to, p); fire {
		pm = &pendingMutation{indexes: idx, insert: insert}
	}
	return http.StatusOK, ctText, pm
}
