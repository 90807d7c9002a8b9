package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testAdminToken = "test-admin"

// smallOptions is a quick dataset for tests: limits off unless a test turns
// them on.
func smallOptions() Options {
	o := DefaultOptions()
	o.Brands = 8
	o.ProjectsPerBrand = 4
	o.Users = 40
	o.Emails = 3000
	o.HistoryDays = 120
	o.AdminToken = testAdminToken
	o.NoLimits = true
	return o
}

// startServer builds and starts a sandbox on loopback ports.
func startServer(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatalf("new sandbox: %v", err)
	}
	if err := s.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func startSmall(t testing.TB, mutate func(*Options)) *Server {
	t.Helper()
	o := smallOptions()
	if mutate != nil {
		mutate(&o)
	}
	return startServer(t, o)
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %q: %v", truncateForLog(r.body), err)
	}
	return v
}

func truncateForLog(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

var testClient = &http.Client{Timeout: 30 * time.Second}

func do(t testing.TB, method, url string, header map[string]string, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// apiGet calls the main interface with the given key (path includes /v1).
func apiGet(t testing.TB, s *Server, path, key string) response {
	t.Helper()
	h := map[string]string{"Accept": "application/json"}
	if key != "" {
		h["Authorization"] = key
	}
	return do(t, http.MethodGet, s.APIURL()+path, h, "")
}

// get calls the main interface with this agency's key.
func get(t testing.TB, s *Server, path string) response {
	t.Helper()
	return apiGet(t, s, path, s.opts.APIKey)
}

// commsPost calls the communications endpoint with the comms key.
func commsPost(t testing.TB, s *Server, body string) response {
	t.Helper()
	return commsWithKey(t, s, body, s.opts.CommsKey)
}

func commsWithKey(t testing.TB, s *Server, body, key string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "X-Workflow-Id": "test", "X-Workflow-Execution-Id": "run-1"}
	if key != "" {
		h["X-Workflow-Key"] = key
	}
	return do(t, http.MethodPost, s.CommsURL()+CommsPath, h, body)
}

func adminCall(t testing.TB, s *Server, method, path, body string) response {
	t.Helper()
	return do(t, method, s.APIURL()+"/_sandbox/"+path, map[string]string{"X-Admin-Token": testAdminToken}, body)
}

// allUsers returns `[1,2,...,n]`.
func allUsers(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for u := 1; u <= n; u++ {
		if u > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(u))
	}
	b.WriteByte(']')
	return b.String()
}

// commsPage is a decoded communications answer with rows in received order.
type commsPage struct {
	keys        []string
	rows        map[string]map[string]any
	total       int
	perPage     int
	currentPage int
	lastPage    int
	rawRows     json.RawMessage
}

// decodeComms decodes a communications body, keeping the order of row keys.
func decodeComms(t testing.TB, body []byte) commsPage {
	t.Helper()
	var env struct {
		Data struct {
			Rows        json.RawMessage `json:"rows"`
			Total       int             `json:"total"`
			PerPage     int             `json:"per_page"`
			CurrentPage int             `json:"current_page"`
			LastPage    int             `json:"last_page"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode communications %q: %v", truncateForLog(body), err)
	}
	p := commsPage{total: env.Data.Total, perPage: env.Data.PerPage, currentPage: env.Data.CurrentPage,
		lastPage: env.Data.LastPage, rawRows: env.Data.Rows, rows: map[string]map[string]any{}}
	if bytes.Equal(bytes.TrimSpace(env.Data.Rows), []byte("[]")) {
		return p
	}
	dec := json.NewDecoder(bytes.NewReader(env.Data.Rows))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("rows is not an object: %s", truncateForLog(env.Data.Rows))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		k := tok.(string)
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		p.keys = append(p.keys, k)
		p.rows[k] = rec
	}
	return p
}

// listBody decodes a canonical main list.
type listBody struct {
	Data        []json.RawMessage `json:"data"`
	Total       int               `json:"total"`
	PerPage     int               `json:"per_page"`
	CurrentPage int               `json:"current_page"`
	LastPage    int               `json:"last_page"`
}

func decodeList(t testing.TB, r response) listBody {
	t.Helper()
	return decodeOK[listBody](t, r)
}

// decodeOK decodes the body of a 200 answer into a T, failing the test on
// any other status or a body that does not decode.
func decodeOK[T any](t testing.TB, r response) T {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, truncateForLog(r.body))
	}
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %q as %T: %v", truncateForLog(r.body), v, err)
	}
	return v
}

// getAll fetches every page of a canonical main list.
func getAll(t testing.TB, s *Server, path string) []map[string]any {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var out []map[string]any
	for page := 1; ; page++ {
		l := decodeList(t, get(t, s, path+sep+"per_page=1000&page="+strconv.Itoa(page)))
		for _, raw := range l.Data {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		if l.CurrentPage >= l.LastPage {
			return out
		}
	}
}

func pathf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
