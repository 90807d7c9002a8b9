package extract

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func mustSplit(t *testing.T, body string) *Page {
	t.Helper()
	p, err := SplitPage([]byte(body))
	if err != nil {
		t.Fatalf("split %.200s: %v", body, err)
	}
	return p
}

// raws lists a page's records' raw bytes as strings.
func raws(p *Page) []string {
	out := make([]string, len(p.Records))
	for i, r := range p.Records {
		out[i] = string(r.Raw)
	}
	return out
}

// TestSplitPageVariants: every tolerated envelope yields the same two
// records, byte for byte as received, and the paging fields it carries.
func TestSplitPageVariants(t *testing.T) {
	brand := `{"id":"1","name":"Acme","status":"active","date_created":"2023-01-05","account_manager":"Ana","projects_count":3,"financial_summary":{"total_budget":"1000.00","invoiced":250.5,"collected":0,"currency":"EUR"}}`
	brand2 := `{"id":2,"name":"Beta","financial_summary":[]}`
	wrapped := `{"brand_info":` + brand + `}`
	wrapped2 := `{"brand_info":` + brand2 + `}`
	plain := []string{brand, brand2}
	wrappedBoth := []string{wrapped, wrapped2}
	laravelTail := `"first_page_url":"https://api.example/v1/brands?page=1","from":1,"last_page":3,"last_page_url":"https://api.example/v1/brands?page=3",` +
		`"links":[{"url":null,"label":"&laquo; Previous","active":false},{"url":"https://api.example/v1/brands?page=1","label":"1","active":true}],` +
		`"next_page_url":"https://api.example/v1/brands?page=2","path":"https://api.example/v1/brands","per_page":2,"prev_page_url":null,"to":2,"total":6`
	cases := []struct {
		name                     string
		body                     string
		want                     []string
		keys                     []string
		paged                    bool
		total, per, number, last int
	}{
		{"canonical", `{"data":[` + wrapped + `,` + wrapped2 + `],"total":2,"per_page":1000,"current_page":1,"last_page":1}`, wrappedBoth, nil, true, 2, 1000, 1, 1},
		{"bare array", `[` + brand + `,` + brand2 + `]`, plain, nil, false, 0, 0, 1, 0},
		{"bare array wrapped", `[` + wrapped + `,` + wrapped2 + `]`, wrappedBoth, nil, false, 0, 0, 1, 0},
		{"data without paging", `{"data":[` + brand + `,` + brand2 + `]}`, plain, nil, false, 0, 0, 1, 0},
		{"paging under meta", `{"data":[` + brand + `,` + brand2 + `],"meta":{"total":2,"per_page":50,"current_page":1,"last_page":1}}`, plain, nil, true, 2, 50, 1, 1},
		{"paging under pagination as strings", `{"data":[` + brand + `,` + brand2 + `],"pagination":{"total":"2","per_page":"50","current_page":"1","last_page":"1"}}`, plain, nil, true, 2, 50, 1, 1},
		{"paging under meta.pagination", `{"data":[` + brand + `,` + brand2 + `],"meta":{"pagination":{"total":2,"per_page":50,"current_page":1}}}`, plain, nil, true, 2, 50, 1, 1},
		{"paging as strings beside data", `{"data":[` + brand + `,` + brand2 + `],"total":"6","per_page":" 2 ","current_page":"2","last_page":"3"}`, plain, nil, true, 6, 2, 2, 3},
		{"PHP paginator", `{"current_page":2,"data":[` + brand + `,` + brand2 + `],` + laravelTail + `}`, plain, nil, true, 6, 2, 2, 3},
		{"PHP resource: meta and links", `{"data":[` + brand + `,` + brand2 + `],"links":{"first":"https://api.example/v1/brands?page=1","last":"https://api.example/v1/brands?page=3","prev":"https://api.example/v1/brands?page=1","next":null},` +
			`"meta":{"current_page":2,"from":3,"last_page":3,"links":[{"url":null,"label":"1","active":false}],"path":"https://api.example/v1/brands","per_page":2,"to":4,"total":6}}`, plain, nil, true, 6, 2, 2, 3},
		{"meta as [] and paging false", `{"data":[` + brand + `,` + brand2 + `],"meta":[],"pagination":false,"total":false,"last_page":null}`, plain, nil, false, 0, 0, 1, 0},
		{"total only: last page derived", `{"data":[` + brand + `,` + brand2 + `],"total":5,"per_page":2}`, plain, nil, true, 5, 2, 1, 3},
		{"comms-like rows array", `{"data":{"rows":[` + brand + `,` + brand2 + `],"total":2,"per_page":50,"current_page":1,"last_page":1}}`, plain, nil, true, 2, 50, 1, 1},
		{"comms-like rows keyed", `{"data":{"rows":{"1":` + brand + `,"2":` + brand2 + `},"total":2,"per_page":50,"current_page":1,"last_page":1}}`, plain, []string{"1", "2"}, true, 2, 50, 1, 1},
		{"data keyed by id", `{"data":{"1":` + wrapped + `,"2":` + wrapped2 + `}}`, wrappedBoth, []string{"1", "2"}, false, 0, 0, 1, 0},
		{"other wrapper name", `[{"company_info":` + brand + `},{"company_info":` + brand2 + `}]`, []string{`{"company_info":` + brand + `}`, `{"company_info":` + brand2 + `}`}, nil, false, 0, 0, 1, 0},
		{"whitespace and BOM", "\xEF\xBB\xBF\n [ " + brand + " ,\n\t" + brand2 + " ] \n", plain, nil, false, 0, 0, 1, 0},
		{"error null beside data", `{"error":null,"data":[` + brand + `,` + brand2 + `]}`, plain, nil, false, 0, 0, 1, 0},
		{"error false and [] beside data", `{"error":false,"data":[` + brand + `,` + brand2 + `],"errors":[]}`, plain, nil, false, 0, 0, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustSplit(t, c.body)
			if got := raws(p); len(p.Rejects) != 0 || strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("records\n%s\nwant\n%s\nrejects %v", strings.Join(got, "\n"), strings.Join(c.want, "\n"), p.Rejects)
			}
			for i, r := range p.Records {
				want := ""
				if c.keys != nil {
					want = c.keys[i]
				}
				if r.Key != want {
					t.Errorf("record %d key %q, want %q", i, r.Key, want)
				}
			}
			if p.Paged != c.paged || p.Total != c.total || p.PerPage != c.per || p.Number != c.number || p.LastPage != c.last {
				t.Errorf("paging %+v, want paged %v total %d per %d number %d last %d", *p, c.paged, c.total, c.per, c.number, c.last)
			}
			if p.Bytes != len(c.body) {
				t.Errorf("bytes %d, want %d", p.Bytes, len(c.body))
			}
		})
	}
}

// TestSplitPageEmpty: every way of writing no rows is an empty page.
func TestSplitPageEmpty(t *testing.T) {
	for _, empty := range []string{`[]`, `{}`, `{"data":[]}`, `{"data":{}}`, `{"data":null}`, `{"data":false}`,
		`{"data":{"rows":[]}}`, `{"data":{"rows":{}}}`, `{"data":{"rows":null,"total":0}}`, `{"data":{"rows":false}}`,
		`{"data":[],"total":0,"per_page":1000,"current_page":1,"last_page":0}`,
		`{"data":{"rows":[],"total":"0","per_page":"20","current_page":"1","last_page":"0"}}`} {
		p := mustSplit(t, empty)
		if p.Rows() != 0 {
			t.Errorf("%s: %+v", empty, p)
		}
	}
}

// TestSplitPageCommunications: the canonical communications page keeps its
// rows' order and keys, and each record's bytes as received.
func TestSplitPageCommunications(t *testing.T) {
	p := mustSplit(t, commsCanonical)
	if len(p.Records) != 2 || p.Records[0].Key != "101" || p.Records[1].Key != "102" {
		t.Fatalf("records %+v", p.Records)
	}
	if !p.Paged || p.Total != 2 || p.PerPage != 20 || p.Number != 1 || p.LastPage != 1 {
		t.Errorf("paging %+v", p)
	}
	for _, r := range p.Records {
		if !strings.Contains(commsCanonical, `"`+r.Key+`":`+string(r.Raw)) {
			t.Errorf("record %s is not its bytes as received: %s", r.Key, r.Raw)
		}
	}
	if !strings.HasPrefix(string(p.Records[1].Raw), `{"email":{"type_id":null`) || !strings.HasSuffix(string(p.Records[1].Raw), `"bcc":{}}}`) {
		t.Errorf("raw b %s", p.Records[1].Raw)
	}
	// A generated page: 1000 keyed rows, ids ascending.
	p = mustSplit(t, string(genCommsPage(1000, 5001, 3, 1000, 4500)))
	if len(p.Records) != 1000 || p.Number != 3 || p.LastPage != 5 || p.Total != 4500 {
		t.Fatalf("generated page: %d records, paging %d/%d total %d", len(p.Records), p.Number, p.LastPage, p.Total)
	}
	for i, r := range p.Records {
		if r.Key != strconv.Itoa(5001+i) || !json.Valid(r.Raw) {
			t.Fatalf("record %d: key %s", i, r.Key)
		}
	}
}

// TestSplitPageRejectsRecordsAlone: a row that is not an object is
// rejected with its bytes and a key; the rest of the page proceeds.
func TestSplitPageRejectsRecordsAlone(t *testing.T) {
	p := mustSplit(t, `{"data":[{"id":1,"amount":"12.5"},null,"x",{"project_info":{"id":"p-9"}},[1,2],{"id":5}]}`)
	if got := raws(p); strings.Join(got, " ") != `{"id":1,"amount":"12.5"} {"project_info":{"id":"p-9"}} {"id":5}` {
		t.Fatalf("records %v", got)
	}
	want := []struct{ key, raw, msg string }{
		{"#1", `null`, "record: want an object, got null"},
		{"#2", `"x"`, "record: want an object, got string"},
		{"#4", `[1,2]`, "record: want an object, got array"},
	}
	if len(p.Rejects) != len(want) {
		t.Fatalf("rejects %v", p.Rejects)
	}
	for i, w := range want {
		r := p.Rejects[i]
		if r.Key != w.key || string(r.Raw) != w.raw || !strings.Contains(r.Error(), w.msg) || !errors.Is(&r, ErrInvalidRecord) {
			t.Errorf("reject %d: key %q raw %s err %v", i, r.Key, r.Raw, r.Err)
		}
	}
	// Keyed rows: the key names the reject.
	p = mustSplit(t, `{"data":{"rows":{"7":{"email":{}},"8":[]}}}`)
	if len(p.Records) != 1 || len(p.Rejects) != 1 || p.Rejects[0].Key != "8" {
		t.Fatalf("keyed: %+v", p)
	}
}

// TestSplitPageBadBodies: a body that is not JSON, or JSON of a shape the
// splitter does not know, fails the page with a typed error saying why.
func TestSplitPageBadBodies(t *testing.T) {
	cases := []struct {
		name string
		body string
		kind error
		text string
	}{
		{"empty", ``, ErrMalformedResponse, "empty body"},
		{"whitespace", " \n", ErrMalformedResponse, "empty body"},
		{"html", "<!DOCTYPE html><html><body>502 Bad Gateway</body></html>", ErrMalformedResponse, "HTML page where JSON was expected"},
		{"garbage", "Service Unavailable", ErrMalformedResponse, "not JSON"},
		{"truncated", `{"data":{"rows":{"1":{"email":{"subject":"Hel`, ErrMalformedResponse, "truncated JSON"},
		{"truncated array", `[{"id":1},`, ErrMalformedResponse, "truncated JSON"},
		{"trailing comma", `[{"id":1},]`, ErrMalformedResponse, "invalid JSON"},
		{"trailing data", `[] []`, ErrMalformedResponse, "after top-level value"},
		{"control char", "[{\"name\":\"a\x01b\"}]", ErrMalformedResponse, "in string literal"},
		{"leading zero", `{"data":[{"id":01}]}`, ErrMalformedResponse, "invalid JSON"},
		{"missing comma", `{"data":[{"id":1}] "total":1}`, ErrMalformedResponse, "invalid JSON"},
		{"rows wrong type", `{"data":{"rows":"none"}}`, ErrUnexpectedShape, "rows: want an object or an array, got string"},
		{"data wrong type", `{"data":42}`, ErrUnexpectedShape, "data: want an object or an array, got number"},
		{"scalar", `"hello"`, ErrUnexpectedShape, "response is a JSON string"},
		{"null", `null`, ErrUnexpectedShape, "response is a JSON null"},
		{"no data", `{"items":[1,2]}`, ErrUnexpectedShape, `no data or rows (keys "items")`},
		{"data without rows", `{"data":{"items":[1]}}`, ErrUnexpectedShape, "data object has no rows"},
		{"paging not an integer", `{"data":[],"total":"many"}`, ErrUnexpectedShape, `total: want an integer, got "many"`},
		{"paging a fraction", `{"data":[],"per_page":10.5}`, ErrUnexpectedShape, `per_page: want an integer, got "10.5"`},
		{"paging an object", `{"data":[],"last_page":{}}`, ErrUnexpectedShape, "last_page: want an integer, got object"},
		{"paging out of range", `{"data":[],"total":-1}`, ErrUnexpectedShape, "total: -1 out of range"},
		{"deep nesting unterminated", `[` + strings.Repeat(`[`, 100000), ErrMalformedResponse, "truncated JSON"},
		{"deep nesting broken", `{"debug":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 19999) + `},"data":[]}`, ErrMalformedResponse, "invalid JSON"},
		{"deep nesting, trailing data", `[` + nested(20000, true) + `] x`, ErrMalformedResponse, "invalid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := SplitPage([]byte(c.body))
			if p != nil || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("err = %v, want %v containing %q", err, c.kind, c.text)
			}
		})
	}
}

// TestSplitPageErrorObjectIn200: an error object in a 200 is an *APIError
// of the documented message's class.
func TestSplitPageErrorObjectIn200(t *testing.T) {
	cases := []struct {
		body    string
		kind    error
		message string
		details []string
	}{
		{`{"error":{"message":"Daily quota exceeded","details":["You have exceeded the allowed daily requests"]}}`, ErrDailyQuota, "Daily quota exceeded", []string{"You have exceeded the allowed daily requests"}},
		{`{"error":{"message":"Rate limit exceeded","details":["x"]}}`, ErrRateLimited, "Rate limit exceeded", []string{"x"}},
		{`{"error":{"message":"Invalid authentication","details":["The API key provided is invalid"]}}`, ErrUnauthorized, "Invalid authentication", []string{"The API key provided is invalid"}},
		{`{"error":{"message":"Something odd","details":"one string"}}`, ErrErrorResponse, "Something odd", []string{"one string"}},
		{`{"error":{"message":"Odd","details":[1,{"a":2}]},"data":[]}`, ErrErrorResponse, "Odd", []string{"1", `{"a":2}`}},
		{`{"error":"plain text"}`, ErrErrorResponse, "plain text", nil},
	}
	for _, c := range cases {
		_, err := SplitPage([]byte(c.body))
		var ae *APIError
		if !errors.Is(err, c.kind) || !errors.As(err, &ae) || ae.Status != 200 || ae.Message != c.message ||
			strings.Join(ae.Details, "|") != strings.Join(c.details, "|") {
			t.Errorf("%s: %v", c.body, err)
		}
	}
}

// TestSplitPageDoesNotAliasBody: the records survive the caller reusing
// its buffer.
func TestSplitPageDoesNotAliasBody(t *testing.T) {
	body := []byte(commsCanonical)
	p, err := SplitPage(body)
	if err != nil {
		t.Fatal(err)
	}
	before := string(p.Records[0].Raw)
	for i := range body {
		body[i] = 'X'
	}
	if string(p.Records[0].Raw) != before {
		t.Error("records alias the caller's buffer")
	}
}

// TestSplitPageDepth: a record nested deeper than maxDepth below its top is
// rejected alone (ErrTooDeep, with its key and bytes); one at the limit, or
// at the 700 levels of the issue that jsonb stores, is kept; an envelope
// member the splitter does not keep may be nested at any depth.
func TestSplitPageDepth(t *testing.T) {
	for _, arrays := range []bool{false, true} {
		p := mustSplit(t, string(commsPageWithNested(t, maxDepth+700, arrays)))
		if len(p.Records) != 9 || len(p.Rejects) != 1 {
			t.Fatalf("arrays=%v: %d records, %d rejects, want 9 and 1", arrays, len(p.Records), len(p.Rejects))
		}
		rj := p.Rejects[0]
		if rj.Key != "5" || !errors.Is(&rj, ErrTooDeep) || !errors.Is(&rj, ErrInvalidRecord) || !strings.Contains(rj.Error(), "nested deeper than") ||
			!strings.Contains(string(rj.Raw), `"extra":`) || !json.Valid(rj.Raw) {
			t.Fatalf("arrays=%v: reject %s: %v", arrays, rj.Key, rj.Error())
		}
	}
	for _, levels := range []int{700, maxDepth} {
		p := mustSplit(t, string(commsPageWithNested(t, levels, false)))
		if len(p.Records) != 10 || len(p.Rejects) != 0 || !strings.Contains(string(p.Records[4].Raw), nested(levels, false)) {
			t.Fatalf("%d levels: %d records, %d rejects", levels, len(p.Records), len(p.Rejects))
		}
	}
	deep := nested(maxDepth+1, false)
	p := mustSplit(t, `{"data":[{"id":1,"name":"A"},{"id":2,"name":"B","meta":`+deep+`},{"brand_info":{"id":"b3","meta":`+deep+`}},{"id":4,"name":"C"}],"total":4,"per_page":1000,"current_page":1,"last_page":1}`)
	if len(p.Records) != 2 || len(p.Rejects) != 2 || p.Rejects[0].Key != "2" || p.Rejects[1].Key != "b3" || !errors.Is(&p.Rejects[0], ErrTooDeep) {
		t.Fatalf("list: %d records, rejects %v", len(p.Records), p.Rejects)
	}
	p = mustSplit(t, `{"debug":`+nested(50000, true)+`,"data":[{"id":1,"name":"A"}],"total":1,"last_page":1}`)
	if len(p.Records) != 1 || len(p.Rejects) != 0 || !p.Paged {
		t.Fatalf("deep envelope member: %+v", p)
	}
}

// TestSplitObject: a detail body yields its object as received, unwrapped
// from {"data": ...} only; error objects, empty objects, scalars and bodies
// that are not JSON are typed errors.
func TestSplitObject(t *testing.T) {
	project := `{"project_info":{"id":77,"brand_id":"1","name":"Site","team":[{"user_id":5,"role":"lead"}],"deliverables":{"d1":{"name":"Design"}},"history":[]}}`
	brand := `{"brand_info":{"id":"3","name":"Acme"},"general_info":{"site":"x"},"metadata":{"k":[1,2]}}`
	for _, c := range []struct{ body, want string }{
		{project, project},
		{`{"data":` + project + `}`, project},
		{" \n{ \"data\" : " + brand + " } \n", brand},
		{brand + "\n", brand},
		{`{"id":"4","name":"Bare"}`, `{"id":"4","name":"Bare"}`},
		{`{"data":[],"id":5}`, `{"data":[],"id":5}`},
		{`{"error":null,"id":6}`, `{"error":null,"id":6}`},
		{`{"id":7,"custom":` + nested(maxDepth, false) + `}`, `{"id":7,"custom":` + nested(maxDepth, false) + `}`},
	} {
		body := []byte(c.body)
		raw, err := SplitObject(body)
		if err != nil || string(raw) != c.want {
			t.Errorf("%.80s: %v, raw %.80s", c.body, err, raw)
			continue
		}
		for i := range body {
			body[i] = 'X'
		}
		if string(raw) != c.want {
			t.Errorf("%.80s: raw aliases the body", c.want)
		}
	}
	for _, c := range []struct {
		body string
		kind error
		text string
	}{
		{`{}`, ErrUnexpectedShape, "empty object where a record was expected"},
		{`{"data":{}}`, ErrUnexpectedShape, "empty object where a record was expected"},
		{`[{"id":1}]`, ErrUnexpectedShape, "response is a JSON array, want an object"},
		{`"x"`, ErrUnexpectedShape, "response is a JSON string, want an object"},
		{`{"id":1`, ErrMalformedResponse, "truncated JSON"},
		{`<html>`, ErrMalformedResponse, "HTML page"},
		{errBody("Data not found", "The requested data does not exist."), ErrNotFound, "Data not found"},
		{`{"id":7,"custom":` + nested(maxDepth+1, false) + `}`, ErrTooDeep, "nested deeper than"},
	} {
		_, err := SplitObject([]byte(c.body))
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%.60s: %v, want %v containing %q", c.body, err, c.kind, c.text)
		}
	}
}
