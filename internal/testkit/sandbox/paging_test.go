package sandbox

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// projectIDs are the ids of the projects list's rows on one answer, and
// the answer's paging fields when it has an envelope.
func projectIDs(t *testing.T, r response) (ids []int, env map[string]any) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var rows []map[string]any
	if strings.HasPrefix(string(r.body), "[") {
		if err := json.Unmarshal(r.body, &rows); err != nil {
			t.Fatal(err)
		}
	} else {
		env = r.json(t)
		raw, _ := json.Marshal(env["data"])
		if err := json.Unmarshal(raw, &rows); err != nil {
			t.Fatal(err)
		}
	}
	for _, row := range rows {
		id, _ := strconv.Atoi(fmt.Sprint(row["id"]))
		ids = append(ids, id)
	}
	return ids, env
}

// wantAll checks that ids are the projects 1..n in order.
func wantAll(t *testing.T, ids []int, n int) {
	t.Helper()
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("walked %v, want 1..%d once each", ids, n)
	}
}

var linkNext = regexp.MustCompile(`<([^>]*)>; rel="next"`)

func TestPagingVariants(t *testing.T) {
	t.Parallel()
	t.Run(VariantOffsetPaging, func(t *testing.T) {
		t.Parallel()
		s := startSmall(t, withVariants(VariantOffsetPaging))
		n := len(s.data.projects)
		first, _ := projectIDs(t, get(t, s, "/v1/projects?page=2&per_page=1000"))
		if len(first) != offsetDefault || first[0] != 1 {
			t.Fatalf("page and per_page must be ignored (limit %d from 0): %v", offsetDefault, first)
		}
		if big, _ := projectIDs(t, get(t, s, "/v1/projects?limit=1000")); len(big) != min(n, offsetMax) {
			t.Fatalf("limit=1000 answered %d rows, want at most %d", len(big), offsetMax)
		}
		var all []int
		for off := 0; ; off += 7 {
			ids, env := projectIDs(t, get(t, s, fmt.Sprintf("/v1/projects?limit=7&offset=%d", off)))
			if env != nil {
				t.Fatalf("not a bare array: %v", env)
			}
			all = append(all, ids...)
			if len(ids) < 7 {
				break
			}
		}
		wantAll(t, all, n)
	})
	t.Run(VariantCursorPaging, func(t *testing.T) {
		t.Parallel()
		s := startSmall(t, withVariants(VariantCursorPaging))
		var all []int
		q := "/v1/projects?per_page=5&page=3"
		for q != "" {
			ids, env := projectIDs(t, get(t, s, q))
			all = append(all, ids...)
			q = ""
			if next, ok := env["next"].(string); ok {
				q = "/v1/projects?per_page=5&cursor=" + url.QueryEscape(next)
			} else if env["next"] != nil {
				t.Fatalf("next %v", env["next"])
			}
		}
		wantAll(t, all, len(s.data.projects))
		if r := get(t, s, "/v1/projects?cursor=bogus"); r.status != 400 {
			t.Errorf("a bad cursor answered %d", r.status)
		}
	})
	t.Run(VariantLinkPaging, func(t *testing.T) {
		t.Parallel()
		s := startSmall(t, withVariants(VariantLinkPaging))
		var all []int
		q := "/v1/projects?per_page=6&page=9"
		for q != "" {
			r := get(t, s, q)
			ids, _ := projectIDs(t, r)
			all = append(all, ids...)
			q = ""
			if m := linkNext.FindStringSubmatch(r.header.Get("Link")); m != nil {
				u, err := url.Parse(m[1])
				if err != nil || u.Query().Get("page") != "" {
					t.Fatalf("next link %q", m[1])
				}
				q = u.RequestURI()
			}
		}
		wantAll(t, all, len(s.data.projects))
	})
	t.Run(VariantSilentCap, func(t *testing.T) {
		t.Parallel()
		s := startSmall(t, func(o *Options) { o.Variants = []string{VariantSilentCap}; o.ProjectsPerBrand = 10 })
		n := len(s.data.projects)
		ids, env := projectIDs(t, get(t, s, "/v1/projects?per_page=1000"))
		if len(ids) != silentCapRows || env["per_page"] != 1000.0 || env["last_page"] != 1.0 || env["total"] != float64(n) {
			t.Fatalf("%d rows under %v", len(ids), env)
		}
		var all []int
		for p := 1; ; p++ {
			ids, _ := projectIDs(t, get(t, s, fmt.Sprintf("/v1/projects?per_page=%d&page=%d", silentCapRows, p)))
			all = append(all, ids...)
			if len(ids) < silentCapRows {
				break
			}
		}
		wantAll(t, all, n)
	})
	t.Run(VariantIgnorePage, func(t *testing.T) {
		t.Parallel()
		s := startSmall(t, withVariants(VariantIgnorePage))
		n := len(s.data.projects)
		p1, env := projectIDs(t, get(t, s, "/v1/projects?page=1&per_page=1000"))
		p2, env2 := projectIDs(t, get(t, s, "/v1/projects?page=2&per_page=1000"))
		if !slices.Equal(p1, p2) || len(p1) != ignorePageMax || env["per_page"] != float64(ignorePageMax) || env2["current_page"] != 1.0 {
			t.Fatalf("page 1 %v, page 2 %v (%v)", p1, p2, env2)
		}
		var all []int
		for off := 0; off < n; off += ignorePageMax {
			ids, _ := projectIDs(t, get(t, s, fmt.Sprintf("/v1/projects?per_page=1000&offset=%d", off)))
			all = append(all, ids...)
		}
		wantAll(t, all, n)
	})
}
