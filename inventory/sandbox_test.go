package inventory

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// sandboxCall sends one request to s (made with o) in process, a POST to
// the communications interface, anything else to the main one, and returns
// the body of its answer, which must be 200.
func sandboxCall(t *testing.T, s *sandbox.Server, o sandbox.Options, method, path, body string) []byte {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", o.APIKey)
	req.Header.Set("X-Workflow-Key", o.CommsKey)
	rec := httptest.NewRecorder()
	if method == http.MethodPost {
		s.CommsHandler().ServeHTTP(rec, req)
	} else {
		s.APIHandler().ServeHTTP(rec, req)
	}
	if rec.Code != http.StatusOK {
		t.Fatalf("%s %s: %d %.200s", method, path, rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes()
}

// sandboxProjects returns the raw project records of a sandbox with the
// given variants.
func sandboxProjects(t *testing.T, variants ...string) [][]byte {
	t.Helper()
	o := sandbox.DefaultOptions()
	o.Brands, o.ProjectsPerBrand, o.Emails, o.NoLimits, o.Variants = 8, 4, 10, true, variants
	s, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	body := sandboxCall(t, s, o, http.MethodGet, "/v1/projects?per_page=1000", "")
	var l struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &l); err != nil || len(l.Data) == 0 {
		t.Fatalf("projects: %v %.200s", err, body)
	}
	out := make([][]byte, len(l.Data))
	for i, r := range l.Data {
		out[i] = r
	}
	return out
}

// sandboxRecords returns the raw records of the default sandbox (with the
// given variants) per stream: e-mails, the project list, project details
// and brand details.
func sandboxRecords(t *testing.T, variants ...string) map[string][][]byte {
	t.Helper()
	o := sandbox.DefaultOptions()
	o.NoLimits, o.Variants = true, variants
	s, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) []byte { return sandboxCall(t, s, o, method, path, body) }
	out := map[string][][]byte{}
	users := make([]string, o.Users)
	for u := range users {
		users[u] = strconv.Itoa(u + 1)
	}
	for page := 1; ; page++ {
		var env struct {
			Data struct {
				Rows json.RawMessage `json:"rows"`
			} `json:"data"`
		}
		b := call(http.MethodPost, sandbox.CommsPath, `{"user_id":[`+strings.Join(users, ",")+`],"page":`+strconv.Itoa(page)+`,"per_page":1000}`)
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		var rows map[string]json.RawMessage
		if string(env.Data.Rows) == "[]" { // an empty page under php-empty-array
			break
		}
		if err := json.Unmarshal(env.Data.Rows, &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			out["communications"] = append(out["communications"], r)
		}
	}
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(call(http.MethodGet, "/v1/projects?per_page=1000", ""), &list); err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Data {
		out["projects"] = append(out["projects"], r)
		var p struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(r, &p); err != nil {
			t.Fatal(err)
		}
		out["project_details"] = append(out["project_details"], call(http.MethodGet, "/v1/projects/"+p.ID, ""))
	}
	for b := 1; b <= o.Brands; b++ {
		out["brand_details"] = append(out["brand_details"], call(http.MethodGet, "/v1/brands/"+strconv.Itoa(b), ""))
	}
	return out
}

// TestSampleSeesEveryField: on the default sandbox (20 000 e-mails, 600
// projects, 40 brands) the sampled inventory of one run finds every path
// that observing every record finds, so source_fields lists every field the
// sandbox serves. A type that only a few records carry (an empty users.to,
// [] in 0.5 % of e-mails) may take several runs: sampled types are a subset
// of the true ones, and a dozen runs (each sampling at its own random phase)
// find them all.
func TestSampleSeesEveryField(t *testing.T) {
	for _, variants := range [][]string{nil, {sandbox.VariantPHP}} {
		t.Run(strings.Join(append([]string{"canonical"}, variants...), "+"), func(t *testing.T) {
			recs := sandboxRecords(t, variants...)
			full := New()
			full.SetSampling(0, 1)
			runs := make([]*Inventory, 12)
			for i := range runs {
				runs[i] = New()
			}
			for stream, rs := range recs {
				for _, r := range rs {
					full.Observe(stream, r)
					for _, inv := range runs {
						inv.Observe(stream, r)
					}
				}
			}
			want := full.Fields(nil)
			union := map[string]typeSet{}
			for i, inv := range runs {
				got := map[string]Field{}
				for _, f := range inv.Fields(nil) {
					got[f.Stream+" "+f.Path] = f
					union[f.Stream+" "+f.Path] |= typeSetOf(f.Types)
				}
				for _, f := range want {
					g, ok := got[f.Stream+" "+f.Path]
					switch {
					case !ok:
						t.Errorf("run %d: %s %s (in %d of %d records) not sampled", i, f.Stream, f.Path, f.Count, full.Records(f.Stream))
					case typeSetOf(g.Types)&^typeSetOf(f.Types) != 0:
						t.Errorf("run %d: %s %s: sampled types %v, all %v", i, f.Stream, f.Path, g.Types, f.Types)
					}
				}
				if len(got) != len(want) {
					t.Errorf("run %d: %d fields sampled, %d in all", i, len(got), len(want))
				}
			}
			for _, f := range want {
				if u := union[f.Stream+" "+f.Path]; u != typeSetOf(f.Types) {
					t.Errorf("%s %s: %d runs saw types %v, all %v", f.Stream, f.Path, len(runs), u.names(), f.Types)
				}
			}
			t.Logf("%d fields; records observed per run: communications %d of %d, projects %d of %d",
				len(want), runs[0].Records("communications"), len(recs["communications"]),
				runs[0].Records("projects"), len(recs["projects"]))
			if variants != nil {
				php := typeSet(union["communications users.from[].last_name"])
				if php&tBoolean == 0 || php&tNull != 0 {
					t.Errorf("php last_name types %v", php.names())
				}
			}
		})
	}
}
