package sandbox

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

func TestUnauthorizedBodyByteForByte(t *testing.T) {
	s := startSmall(t, nil)
	const want = `{"error":{"message":"Invalid authentication","details":["The API key provided is invalid"]}}`
	for _, key := range []string{"", "wrong", s.opts.RevokedKey, s.opts.CommsKey, "Bearer " + s.opts.APIKey} {
		for _, path := range []string{"/v1/brands", "/v1/brands/11", "/v1/finance/invoices", "/v1/nothing"} {
			r := apiGet(t, s, path, key)
			if r.status != http.StatusUnauthorized || string(r.body) != want {
				t.Errorf("key %q %s: %d %q", key, path, r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
		}
	}
	for _, key := range []string{"", "wrong", s.opts.APIKey, s.opts.RevokedKey} {
		r := commsWithKey(t, s, `{"user_id":[1]}`, key)
		if r.status != http.StatusUnauthorized || string(r.body) != want {
			t.Errorf("comms key %q: %d %q", key, r.status, r.body)
		}
	}
}

// TestCurlWrongKey: a request with a wrong key, sent by the real curl when
// it is installed, gets the spec's 401 body byte for byte.
func TestCurlWrongKey(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	s := startSmall(t, nil)
	out, err := exec.Command(curl, "-s", "-H", "Authorization: not-the-key", s.APIURL()+"/v1/brands").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != body401 {
		t.Fatalf("curl got %q", out)
	}
}

func TestForbiddenForForeignKey(t *testing.T) {
	s := startSmall(t, nil)
	brandID := s.data.brands[0].id
	projectID := s.data.projects[0].id
	for _, path := range []string{
		"/v1/brands", pathf("/v1/brands/%d", brandID), pathf("/v1/brands/%d/contacts", brandID),
		"/v1/projects", pathf("/v1/projects/%d", projectID), "/v1/finance/budgets", "/v1/finance/invoices",
		"/v1/finance/collections", "/v1/finance/payments", "/v1/finance/profitability?level=brand", "/v1/finance/summary",
	} {
		r := apiGet(t, s, path, s.opts.ForeignKey)
		if r.status != http.StatusForbidden || string(r.body) != body403 {
			t.Errorf("%s: %d %q", path, r.status, r.body)
		}
	}
	// An id that does not exist is 404 whoever asks.
	if r := apiGet(t, s, "/v1/brands/999999", s.opts.ForeignKey); r.status != http.StatusNotFound || string(r.body) != body404 {
		t.Errorf("foreign unknown brand: %d %q", r.status, r.body)
	}
}

func TestNotFound(t *testing.T) {
	s := startSmall(t, nil)
	for _, path := range []string{
		"/v1/brands/999999", "/v1/brands/abc", "/v1/brands/999999/contacts", "/v1/projects/999999", "/v1/brands/0", "/v1/brands/-1",
		"/v1/projects/x", "/v1/nothing", "/v2/brands", "/", "/v1/finance/refunds", "/v1/brands/11/other",
	} {
		r := get(t, s, path)
		if r.status != http.StatusNotFound || string(r.body) != body404 {
			t.Errorf("%s: %d %q", path, r.status, r.body)
		}
	}
	r := do(t, http.MethodPost, s.CommsURL()+"/workflow/tools/other", map[string]string{"X-Workflow-Key": s.opts.CommsKey}, `{}`)
	if r.status != http.StatusNotFound || string(r.body) != body404 {
		t.Errorf("comms other path: %d %q", r.status, r.body)
	}
}

func TestBadRequestBodies(t *testing.T) {
	s := startSmall(t, nil)
	bad := func(detail string) string {
		return `{"error":{"message":"Bad request","details":["` + strings.ReplaceAll(detail, `"`, `\"`) + `"]}}`
	}
	for path, detail := range map[string]string{
		"/v1/brands?page=0":                      "page must be an integer of at least 1",
		"/v1/brands?page=x":                      "page must be an integer of at least 1",
		"/v1/projects?per_page=0":                "per_page must be an integer of at least 1",
		"/v1/projects?per_page=-5":               "per_page must be an integer of at least 1",
		"/v1/projects?updated_since=2026-13-01":  "updated_since must be a date YYYY-MM-DD",
		"/v1/finance/invoices?updated_since=now": "updated_since must be a date YYYY-MM-DD",
		"/v1/projects?brand_id=abc":              "brand_id must be a numeric id",
		"/v1/finance/profitability?level=agency": "level must be project or brand",
	} {
		r := get(t, s, path)
		if r.status != http.StatusBadRequest || string(r.body) != bad(detail) {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	for body, detail := range map[string]string{
		`{"user_id":[1]`:    "the request body must be a JSON object",
		`[1,2]`:             "the request body must be a JSON object",
		``:                  "the request body must be a JSON object",
		`{}`:                "user_id is required",
		`{"user_id":null}`:  "user_id is required",
		`{"user_id":[]}`:    "user_id must not be empty",
		`{"user_id":"1"}`:   "user_id must be an array of integers",
		`{"user_id":[1.5]}`: "user_id must be an array of integers",
		`{"user_id":[1],"date_start":"2026-02-30"}`:                         "date_start must be a date YYYY-MM-DD",
		`{"user_id":[1],"date_end":"01/02/2026"}`:                           "date_end must be a date YYYY-MM-DD",
		`{"user_id":[1],"date_start":5}`:                                    "date_start must be a date YYYY-MM-DD",
		`{"user_id":[1],"date_start":"2026-02-02","date_end":"2026-02-01"}`: "date_start must not be after date_end",
		`{"user_id":[1],"with_message":"yes"}`:                              `with_message must be one of "0", "1", "true", "false"`,
		`{"user_id":[1],"with_message":1}`:                                  `with_message must be one of "0", "1", "true", "false"`,
		`{"user_id":[1],"page":0}`:                                          "page must be an integer of at least 1",
		`{"user_id":[1],"per_page":0}`:                                      "per_page must be an integer of at least 1",
		`{"user_id":[1],"per_page":"many"}`:                                 "per_page must be an integer of at least 1",
		`{"user_id":[1],"domain_id":"one"}`:                                 "domain_id must be an integer",
		`{"user_id":[1],"-brand_url":"https://x.example/"}`:                 "-brand_url must be a brand address such as https://app.agency.example/brands/42",
		`{"user_id":[1],"-brand_url":7}`:                                    "-brand_url must be a string",
	} {
		r := commsPost(t, s, body)
		if r.status != http.StatusBadRequest || string(r.body) != bad(detail) {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
}

func TestMethodNotAllowed(t *testing.T) {
	s := startSmall(t, nil)
	r := do(t, http.MethodPost, s.APIURL()+"/v1/brands", map[string]string{"Authorization": s.opts.APIKey}, "{}")
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET" ||
		string(r.body) != `{"error":{"message":"Method not allowed","details":["Use GET for this endpoint"]}}` {
		t.Errorf("POST brands: %d %s", r.status, r.body)
	}
	r = do(t, http.MethodGet, s.CommsURL()+CommsPath, map[string]string{"X-Workflow-Key": s.opts.CommsKey}, "")
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET comms: %d %s", r.status, r.body)
	}
}
