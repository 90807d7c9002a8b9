package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFaultPick(t *testing.T) {
	f := Faults{Err500: 0.1, HTML502: 0.1, Err503: 0.1, Truncate: 0.1, Slow: 0.1, Drop: 0.1, Spurious429: 0.1}
	for u, want := range map[float64]string{0.05: faultName500, 0.15: faultName502, 0.25: faultName503,
		0.35: faultNameTruncate, 0.45: faultNameSlow, 0.55: faultNameDrop, 0.65: faultName429, 0.75: ""} {
		if got := f.pick(u); got != want {
			t.Errorf("pick(%v) = %q, want %q", u, got, want)
		}
	}
	if err := (Faults{Err500: 0.6, Drop: 0.6}).validate(); err == nil {
		t.Error("rates adding up to 1.2 accepted")
	}
	if err := (Faults{Slow: -0.1}).validate(); err == nil {
		t.Error("negative rate accepted")
	}
}

func TestFaultStatusBodies(t *testing.T) {
	cases := []struct {
		faults Faults
		status int
		check  func(t *testing.T, r response)
	}{
		{Faults{Err500: 1}, 500, func(t *testing.T, r response) {
			if string(r.body) != body500 {
				t.Fatalf("body %q", r.body)
			}
		}},
		{Faults{HTML502: 1}, 502, func(t *testing.T, r response) {
			if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !bytes.Contains(r.body, []byte("<h1>502 Bad Gateway</h1>")) {
				t.Fatalf("502 %q %q", r.header.Get("Content-Type"), r.body)
			}
		}},
		{Faults{Err503: 1}, 503, func(t *testing.T, r response) {
			if string(r.body) != body503 || r.header.Get("Retry-After") != "1" {
				t.Fatalf("503 %q", r.body)
			}
		}},
		{Faults{Spurious429: 1}, 429, func(t *testing.T, r response) {
			if string(r.body) != body429Rate {
				t.Fatalf("429 %q", r.body)
			}
		}},
	}
	for _, c := range cases {
		s := startSmall(t, func(o *Options) { o.Faults = c.faults })
		c.check(t, expectStatus(t, get(t, s, "/v1/brands"), c.status))
		c.check(t, expectStatus(t, commsPost(t, s, `{"user_id":[1]}`), c.status))
	}
}

func expectStatus(t *testing.T, r response, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, truncateForLog(r.body))
	}
	return r
}

func TestFaultTruncate(t *testing.T) {
	clean := startSmall(t, nil)
	s := startSmall(t, func(o *Options) { o.Faults.Truncate = 1 })
	for _, call := range []func(s *Server) response{
		func(s *Server) response { return get(t, s, "/v1/finance/invoices?per_page=50") },
		func(s *Server) response { return commsPost(t, s, `{"user_id":[1,2,3],"per_page":50}`) },
	} {
		full := call(clean).body
		r := expectStatus(t, call(s), http.StatusOK)
		if json.Valid(r.body) || len(r.body) == 0 || len(r.body) >= len(full) || !bytes.HasPrefix(full, r.body) {
			t.Fatalf("truncated body (%d of %d bytes) is not a cut prefix", len(r.body), len(full))
		}
	}
	// Error answers are not truncated.
	if r := get(t, s, "/v1/brands/999999"); string(r.body) != body404 {
		t.Fatalf("404 body %q", r.body)
	}
}

func TestFaultSlow(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.Faults.Slow = 1; o.SlowDelay = 300 * time.Millisecond })
	start := time.Now()
	expectStatus(t, get(t, s, "/v1/brands"), http.StatusOK)
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("slow answer after %v", el)
	}
	// A client that gives up frees the handler at once, and is recorded as
	// aborted: a GET, and a POST whose body the server must take in first
	// (net/http watches the connection only after the body's end).
	if err := s.ApplyFaultSettings(FaultSettings{SlowDelay: durPtr(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	impatient := &http.Client{Timeout: 200 * time.Millisecond}
	for i, req := range []*http.Request{
		mustRequest(t, http.MethodGet, s.APIURL()+"/v1/brands", "", map[string]string{"Authorization": s.opts.APIKey}),
		mustRequest(t, http.MethodPost, s.CommsURL()+CommsPath, `{"user_id":[1]}`, map[string]string{"X-Workflow-Key": s.opts.CommsKey}),
	} {
		if resp, err := impatient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s: answer despite a one-minute delay", req.Method)
		}
		deadline := time.Now().Add(5 * time.Second)
		for s.Stats().Aborted != int64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: handler still waiting: %+v", req.Method, s.Stats())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestFaultDrop(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.Faults.Drop = 1 })
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for _, req := range []*http.Request{
		mustRequest(t, http.MethodGet, s.APIURL()+"/v1/brands", "", map[string]string{"Authorization": s.opts.APIKey}),
		mustRequest(t, http.MethodPost, s.CommsURL()+CommsPath, `{"user_id":[1]}`, map[string]string{"X-Workflow-Key": s.opts.CommsKey}),
	} {
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("got an answer: %d %q", resp.StatusCode, b)
		}
	}
	if st := s.Stats(); st.Dropped != 2 || st.Faults[faultNameDrop] != 2 || len(st.ByStatus) != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func mustRequest(t *testing.T, method, url, body string, header map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return req
}

func TestLatencyAndJitter(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.Latency = 120 * time.Millisecond; o.Jitter = 50 * time.Millisecond })
	for _, call := range []func() response{
		func() response { return get(t, s, "/v1/brands") },
		func() response { return apiGet(t, s, "/v1/brands", "wrong") },
		func() response { return commsPost(t, s, `{"user_id":[1]}`) },
	} {
		start := time.Now()
		call()
		if el := time.Since(start); el < 120*time.Millisecond {
			t.Fatalf("answered after %v", el)
		}
	}
	// The admin API is never delayed.
	if err := s.SetLatency(5*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	adminCall(t, s, http.MethodGet, "stats", "")
	if el := time.Since(start); el >= 5*time.Second {
		t.Fatalf("admin delayed %v", el)
	}
}

func TestFaultRatesMix(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.Faults = Faults{Err500: 0.3, Spurious429: 0.2} })
	counts := map[int]int{}
	for k := 0; k < 300; k++ {
		counts[get(t, s, "/v1/brands?per_page=1").status]++
	}
	if counts[500] < 60 || counts[500] > 120 || counts[429] < 35 || counts[429] > 85 || counts[200] < 110 {
		t.Fatalf("status counts %v", counts)
	}
	st := s.Stats()
	if st.Faults[faultName500] != int64(counts[500]) || st.Spurious429 != int64(counts[429]) || st.RateLimited != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBadRecords(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.BadRecordRate = 1 })
	p := decodeComms(t, commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`,"per_page":400}`).body)
	kinds := map[string]int{}
	for _, k := range p.keys {
		email := p.rows[k]["email"].(map[string]any)
		n := 0
		if sz, ok := email["size"].(string); ok && strings.HasSuffix(sz, "kb") {
			kinds["size"]++
			n++
		}
		if email["email_at"] == "yesterday" {
			kinds["email_at"]++
			n++
		}
		if _, ok := email["subject"]; !ok {
			kinds["subject"]++
			n++
		}
		if _, ok := email["brand_id"].(map[string]any); ok {
			kinds["brand_id"]++
			n++
		}
		if n != 1 {
			t.Fatalf("record %s has %d defects: %v", k, n, email)
		}
	}
	if len(kinds) != 4 {
		t.Fatalf("defect kinds %v", kinds)
	}
	inv := getAll(t, s, "/v1/finance/invoices")
	fkinds := map[string]int{}
	for _, r := range inv {
		switch {
		case r["amount"] == nil:
			fkinds["missing amount"]++
		case isString(r["amount"]):
			fkinds["text amount"]++
		case isObject(r["project_id"]):
			fkinds["object id"]++
		case strings.Contains(r["issue_date"].(string), "/"):
			fkinds["date"]++
		default:
			t.Fatalf("invoice not malformed: %v", r)
		}
	}
	if len(fkinds) != 4 {
		t.Fatalf("finance defect kinds %v", fkinds)
	}

	// At a partial rate the page stays valid JSON and most records are sound.
	s2 := startSmall(t, func(o *Options) { o.BadRecordRate = 0.1 })
	p2 := decodeComms(t, commsPost(t, s2, `{"user_id":`+allUsers(s2.opts.Users)+`,"per_page":1000}`).body)
	bad := 0
	for _, k := range p2.keys {
		email := p2.rows[k]["email"].(map[string]any)
		_, hasSubject := email["subject"]
		_, sizeOK := email["size"].(float64)
		_, brandObj := email["brand_id"].(map[string]any)
		if !hasSubject || !sizeOK || brandObj || email["email_at"] == "yesterday" {
			bad++
		}
	}
	if bad < 50 || bad > 150 {
		t.Fatalf("%d bad records of 1000 at rate 0.1", bad)
	}
}

func isString(v any) bool { _, ok := v.(string); return ok }
func isObject(v any) bool { _, ok := v.(map[string]any); return ok }
