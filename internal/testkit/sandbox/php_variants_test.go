package sandbox

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// walkJSON calls f for every scalar value of v with its path.
func walkJSON(path string, v any, f func(path string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			walkJSON(path+"."+k, c, f)
		}
	case []any:
		for _, c := range x {
			walkJSON(path+"[]", c, f)
		}
	default:
		f(path, v)
	}
}

// truthRecords returns the truth's records of one stream by key.
func truthRecords(t *testing.T, s *Server, stream string) map[string]map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Truth(&buf); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var l struct {
			Stream string         `json:"stream"`
			Key    string         `json:"key"`
			Record map[string]any `json:"record"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatal(err)
		}
		if l.Stream == stream {
			out[l.Key] = l.Record
		}
	}
	return out
}

func truthBytes(t *testing.T, s *Server) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Truth(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// shapeVariants are the variants that change how answers are shaped (PHP
// habits, renamed fields), not what they hold: each must leave the truth
// alone.
var shapeVariants = []string{VariantRenamedFields, VariantPHPFalse, VariantPHPStrings, VariantPHPEmptyArray,
	VariantPHPPaginator, VariantPHPResource, VariantPHP422, VariantPHP}

func TestVariantsKeepTheTruth(t *testing.T) {
	canonical := truthBytes(t, startSmall(t, func(o *Options) { o.BadRecordRate = 0.05 }))
	for _, v := range shapeVariants {
		t.Run(v, func(t *testing.T) {
			got := truthBytes(t, startSmall(t, func(o *Options) { o.BadRecordRate = 0.05; o.Variants = []string{v} }))
			if !bytes.Equal(got, canonical) {
				t.Fatalf("variant %s changed the truth (%d bytes vs %d)", v, len(got), len(canonical))
			}
		})
	}
}

func TestVariantRenamedFields(t *testing.T) {
	s := startSmall(t, withVariants(VariantRenamedFields))
	truth := truthRecords(t, s, streamProjects)
	projects := getAll(t, s, "/v1/projects")
	if len(projects) != len(truth) || len(projects) == 0 {
		t.Fatalf("%d projects served, truth has %d", len(projects), len(truth))
	}
	for _, p := range projects {
		want := truth[p["id"].(string)]
		for _, gone := range []string{"name", "status", "deadline", "budget", "start_date"} {
			if _, ok := p[gone]; ok {
				t.Fatalf("project %v still has %q", p["id"], gone)
			}
		}
		budget := want["budget"].(map[string]any)
		for renamed, canonical := range map[string]any{
			"title": want["name"], "state": want["status"], "due_date": want["deadline"], "starts_on": want["start_date"],
			"budget_total": budget["amount"], "budget_currency": budget["currency"], "closed_at": want["closed_at"],
		} {
			if p[renamed] != canonical {
				t.Fatalf("project %v: %s = %v, truth says %v", p["id"], renamed, p[renamed], canonical)
			}
		}
	}
	detail := get(t, s, "/v1/projects/1").json(t)
	if detail["title"] == nil || detail["name"] != nil || detail["team"] == nil {
		t.Fatalf("project detail not renamed: %v", detail)
	}
	contacts := getAll(t, s, "/v1/brands/1/contacts")
	if len(contacts) == 0 {
		t.Fatal("no contacts")
	}
	for _, c := range contacts {
		if _, ok := c["first_name"]; ok {
			t.Fatalf("contact keeps first_name: %v", c)
		}
		for _, k := range []string{"firstname", "lastname", "job_title", "primary", "full_name", "email"} {
			if _, ok := c[k]; !ok {
				t.Fatalf("contact lacks %s: %v", k, c)
			}
		}
	}
	invoices := getAll(t, s, "/v1/finance/invoices")
	itruth := truthRecords(t, s, streamInvoices)
	for _, inv := range invoices {
		want := itruth[inv["id"].(string)]
		if inv["invoice_no"] != want["number"] || inv["issued_on"] != want["issue_date"] ||
			inv["total"] != want["amount"] || inv["payment_due"] != want["due_date"] || inv["amount"] != nil {
			t.Fatalf("invoice %v = %v, truth %v", inv["id"], inv, want)
		}
	}
	// Budgets keep their canonical names.
	if b := getAll(t, s, "/v1/finance/budgets"); len(b) == 0 || b[0]["amount"] == nil {
		t.Fatalf("budgets renamed: %v", b[:min(1, len(b))])
	}
}

func TestVariantPHPFalse(t *testing.T) {
	s := startSmall(t, withVariants(VariantPHPFalse))
	counts := map[string]int{}
	noNull := func(where string, v any) {
		walkJSON("", v, func(path string, x any) {
			if x == nil {
				t.Fatalf("%s: null at %s under php-false", where, path)
			}
			if x == false {
				counts[path]++
			}
		})
	}
	for _, p := range getAll(t, s, "/v1/projects") {
		noNull("projects", p)
	}
	for id := 1; id <= 8; id++ {
		noNull("project detail", get(t, s, pathf("/v1/projects/%d", id)).json(t))
		noNull("contacts", decodeAny(t, get(t, s, pathf("/v1/brands/%d/contacts?per_page=1000", id))))
	}
	body := commsPost(t, s, `{"user_id":`+allUsers(40)+`,"per_page":1000}`)
	noNull("communications", decodeAny(t, body))
	for _, path := range []string{
		".closed_at",                         // a timestamp
		"[].delivered_at", ".history[].from", // a nested timestamp and string
		".data[].last_name", ".data[].phone", // contact strings
		".data.rows.*.email.type_id",          // a number
		".data.rows.*.email.project_id",       // an id
		".data.rows.*.users.from[].last_name", // an outsider's last name
		".data.rows.*.users.cc",               // an empty recipient object
		".data.rows.*.email.has_attachments",  // a flag
	} {
		found := 0
		for p, n := range counts {
			if pathMatches(path, p) {
				found += n
			}
		}
		if found == 0 {
			t.Errorf("no false at %s; false seen at %v", path, counts)
		}
	}
	// The canonical server writes null where this one writes false.
	canon := startSmall(t, nil)
	cb := commsPost(t, canon, `{"user_id":`+allUsers(40)+`,"per_page":1000}`).body
	if !bytes.Contains(cb, []byte(`"last_name":null`)) || bytes.Contains(body.body, []byte(`"last_name":null`)) ||
		!bytes.Contains(body.body, []byte(`"last_name":false`)) {
		t.Fatal("outsider last_name is not false under php-false")
	}
	if got, want := strings.Count(string(body.body), "false"), strings.Count(string(cb), "null"); got < want {
		t.Fatalf("%d false for %d null of the canonical answer", got, want)
	}
}

// pathMatches matches a walkJSON path against a pattern where "*" stands for
// one key and a leading "[]" or "." matches any prefix.
func pathMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "."), strings.Split(path, ".")
	if len(xs) < len(ps) {
		return false
	}
	xs = xs[len(xs)-len(ps):]
	for i := range ps {
		if ps[i] == "*" || ps[i] == xs[i] || i == 0 && strings.HasSuffix(xs[i], ps[i]) {
			continue
		}
		return false
	}
	return true
}

func TestVariantPHPStrings(t *testing.T) {
	s := startSmall(t, withVariants(VariantPHPStrings))
	canon := startSmall(t, nil)
	stringsOnly := func(where string, v any) {
		walkJSON("", v, func(path string, x any) {
			switch x.(type) {
			case float64, bool:
				t.Fatalf("%s: %v at %s is not a string under php-strings", where, x, path)
			}
		})
	}
	for _, path := range []string{"/v1/brands?per_page=3", "/v1/projects?per_page=5", "/v1/brands/1/contacts",
		"/v1/finance/invoices?per_page=5", "/v1/finance/budgets?per_page=5", "/v1/finance/profitability?per_page=5",
		"/v1/finance/summary?per_page=5"} {
		got, want := get(t, s, path), get(t, canon, path)
		stringsOnly(path, decodeAny(t, got))
		// Same numbers, written as strings.
		if g, w := stripQuotesAroundNumbers(got.body), stripQuotesAroundNumbers(want.body); !bytes.Equal(g, w) {
			t.Fatalf("%s differs beyond quoting:\n%s\n%s", path, truncateForLog(g), truncateForLog(w))
		}
	}
	l := get(t, s, "/v1/projects?per_page=5&page=2").json(t)
	if l["total"] != "32" || l["per_page"] != "5" || l["current_page"] != "2" || l["last_page"] != "7" {
		t.Fatalf("paging fields %v %v %v %v", l["total"], l["per_page"], l["current_page"], l["last_page"])
	}
	c := get(t, s, "/v1/brands/1/contacts").json(t)["data"].([]any)[0].(map[string]any)
	if p := c["is_primary"]; p != "1" && p != "0" {
		t.Fatalf("is_primary = %#v", p)
	}
	body := commsPost(t, s, `{"user_id":`+allUsers(40)+`,"per_page":200}`)
	v := decodeAny(t, body)
	var sizes, flags int
	walkJSON("", v, func(path string, x any) {
		if _, ok := x.(float64); ok {
			t.Fatalf("number at %s", path)
		}
		if strings.HasSuffix(path, ".size") {
			sizes++
		}
		if strings.HasSuffix(path, ".has_attachments") && x == "1" {
			flags++
		}
	})
	d := v.(map[string]any)["data"].(map[string]any)
	if sizes != 200 || flags == 0 || d["total"] != "3000" || d["last_page"] != "15" {
		t.Fatalf("sizes %d, flags %d, paging %v/%v", sizes, flags, d["total"], d["last_page"])
	}
}

// stripQuotesAroundNumbers turns "123", "-1.50", "1" and "0" back into
// numbers and booleans as the canonical answer writes them, for comparison.
func stripQuotesAroundNumbers(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] == '"' {
			j := i + 1
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == '-') {
				j++
			}
			if j < len(b) && b[j] == '"' && j > i+1 && i > 0 && b[i-1] == ':' {
				key := keyBefore(b, i-1)
				switch {
				case key == "is_primary" && b[i+1] == '1':
					out = append(out, "true"...)
				case key == "is_primary" && b[i+1] == '0':
					out = append(out, "false"...)
				case key == "id" || strings.HasSuffix(key, "_id") || key == "period" || strings.HasSuffix(key, "_date") ||
					key == "date_created" || key == "period_start" || key == "period_end" || key == "paid_on" || key == "collected_on":
					out = append(out, b[i:j+1]...)
				default:
					out = append(out, b[i+1:j]...)
				}
				i = j
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}

// keyBefore returns the JSON key that ends just before the colon at i.
func keyBefore(b []byte, colon int) string {
	end := colon - 1
	if end < 0 || b[end] != '"' {
		return ""
	}
	start := bytes.LastIndexByte(b[:end], '"')
	if start < 0 {
		return ""
	}
	return string(b[start+1 : end])
}

func TestVariantPHPEmptyArray(t *testing.T) {
	s := startSmall(t, withVariants(VariantPHPEmptyArray))
	p := get(t, s, "/v1/projects/1")
	if !bytes.Contains(p.body, []byte(`"custom_fields":[]`)) {
		t.Fatalf("project without custom_fields []: %s", truncateForLog(p.body))
	}
	if b := get(t, s, "/v1/brands?per_page=1"); !bytes.Contains(b.body, []byte(`"custom_fields":[]`)) {
		t.Fatalf("brand without custom_fields []: %s", truncateForLog(b.body))
	}
	empty := commsPost(t, s, `{"user_id":[1],"date_start":"1990-01-01","date_end":"1990-01-02"}`)
	if !bytes.HasPrefix(empty.body, []byte(`{"data":{"rows":[],`)) {
		t.Fatalf("empty communications rows: %s", empty.body)
	}
	rs := startSmall(t, withVariants(VariantPHPEmptyArray, VariantRowsShape))
	if b := get(t, rs, "/v1/projects?page=99"); !bytes.HasPrefix(b.body, []byte(`{"data":{"rows":[],`)) {
		t.Fatalf("empty keyed rows: %s", b.body)
	}
	// The canonical answer has no custom_fields at all.
	if b := get(t, startSmall(t, nil), "/v1/projects/1"); bytes.Contains(b.body, []byte("custom_fields")) {
		t.Fatal("canonical project has custom_fields")
	}
}

func TestVariantPHPPaginator(t *testing.T) {
	s := startSmall(t, withVariants(VariantPHPPaginator))
	m := get(t, s, "/v1/projects?per_page=5&page=2").json(t)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"current_page", "data", "first_page_url", "from", "last_page", "last_page_url", "links",
		"next_page_url", "path", "per_page", "prev_page_url", "to", "total"}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	base := s.APIURL() + "/v1/projects"
	if m["current_page"] != 2.0 || m["from"] != 6.0 || m["to"] != 10.0 || m["total"] != 32.0 || m["last_page"] != 7.0 ||
		m["per_page"] != 5.0 || m["path"] != base || m["first_page_url"] != base+"?page=1" ||
		m["next_page_url"] != base+"?page=3" || m["prev_page_url"] != base+"?page=1" || m["last_page_url"] != base+"?page=7" {
		t.Fatalf("paginator fields %v", m)
	}
	if d := m["data"].([]any); len(d) != 5 || d[0].(map[string]any)["id"] != "6" {
		t.Fatalf("data %v", d)
	}
	links := m["links"].([]any)
	if first := links[0].(map[string]any); first["label"] != "&laquo; Previous" || first["url"] != base+"?page=1" {
		t.Fatalf("links %v", links)
	}
	last := get(t, s, "/v1/projects?per_page=5&page=7").json(t)
	if last["next_page_url"] != nil || last["to"] != 32.0 {
		t.Fatalf("last page %v %v", last["next_page_url"], last["to"])
	}
	past := get(t, s, "/v1/projects?per_page=5&page=9").json(t)
	if past["from"] != nil || past["to"] != nil || len(past["data"].([]any)) != 0 {
		t.Fatalf("past the end: %v", past)
	}
}

func TestVariantPHPResource(t *testing.T) {
	s := startSmall(t, withVariants(VariantPHPResource, VariantPHPStrings))
	m := get(t, s, "/v1/finance/budgets?per_page=10").json(t)
	links, meta := m["links"].(map[string]any), m["meta"].(map[string]any)
	base := s.APIURL() + "/v1/finance/budgets"
	if links["first"] != base+"?page=1" || links["prev"] != nil || links["next"] != base+"?page=2" {
		t.Fatalf("links %v", links)
	}
	if meta["current_page"] != "1" || meta["from"] != "1" || meta["to"] != "10" || meta["per_page"] != "10" ||
		meta["path"] != base || meta["total"] == nil || meta["last_page"] == nil || meta["links"] == nil {
		t.Fatalf("meta %v", meta)
	}
	if _, ok := m["total"]; ok {
		t.Fatal("paging fields beside data in the resource envelope")
	}
	if len(m["data"].([]any)) != 10 {
		t.Fatalf("data %v", m["data"])
	}
}

func TestVariantPHP422(t *testing.T) {
	s := startSmall(t, withVariants(VariantPHP422))
	canon := startSmall(t, nil)
	for _, tc := range []struct {
		name, field string
		call        func(s *Server) response
	}{
		{"per_page", "per_page", func(s *Server) response { return get(t, s, "/v1/projects?per_page=abc") }},
		{"updated_since", "updated_since", func(s *Server) response { return get(t, s, "/v1/finance/invoices?updated_since=yesterday") }},
		{"level", "level", func(s *Server) response { return get(t, s, "/v1/finance/profitability?level=team") }},
		{"user_id", "user_id", func(s *Server) response { return commsPost(t, s, `{"per_page":5}`) }},
		{"body", "body", func(s *Server) response { return commsPost(t, s, `[1,2]`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := tc.call(canon); r.status != http.StatusBadRequest {
				t.Fatalf("canonical status %d", r.status)
			}
			r := tc.call(s)
			if r.status != http.StatusUnprocessableEntity || r.header.Get("Content-Type") != ctJSON {
				t.Fatalf("status %d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			var body struct {
				Message string              `json:"message"`
				Errors  map[string][]string `json:"errors"`
			}
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatal(err)
			}
			if body.Message == "" || len(body.Errors) != 1 || len(body.Errors[tc.field]) != 1 || body.Errors[tc.field][0] != body.Message {
				t.Fatalf("422 body %s", r.body)
			}
		})
	}
	// Other errors keep the spec's bodies.
	if r := get(t, s, "/v1/projects/99999"); r.status != http.StatusNotFound || string(r.body) != body404 {
		t.Fatalf("404 under php-422: %d %s", r.status, r.body)
	}
}

func TestVariantPHPAll(t *testing.T) {
	s := startSmall(t, withVariants(VariantPHP))
	m := get(t, s, "/v1/projects?per_page=5").json(t)
	if m["next_page_url"] == nil || m["total"] != "32" {
		t.Fatalf("php list envelope %v", m)
	}
	if r := get(t, s, "/v1/projects?page=0"); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d", r.status)
	}
	body := commsPost(t, s, `{"user_id":`+allUsers(40)+`,"per_page":100}`).body
	if !bytes.Contains(body, []byte(`"last_name":false`)) || !bytes.Contains(body, []byte(`"total":"3000"`)) {
		t.Fatalf("php communications: %s", truncateForLog(body))
	}
	for _, other := range []string{VariantMetaPaging, VariantPHPResource} {
		o := smallOptions()
		o.Variants = []string{VariantPHP, other}
		if _, err := New(o); err == nil {
			t.Errorf("php with %s accepted", other)
		}
	}
}
