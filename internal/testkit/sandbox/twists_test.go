package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// truthEmailKeys returns the record ids of the communications truth, in
// truth order, read straight from Server.Truth.
func truthEmailKeys(t *testing.T, s *Server) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Truth(&buf); err != nil {
		t.Fatal(err)
	}
	var keys []string
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l struct {
			Stream, Key string
			Record      json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Stream == "communications" {
			keys = append(keys, l.Key)
		}
	}
	return keys
}

func commsPageOf(t *testing.T, s *Server, users, page, perPage int, extra string) commsPage {
	t.Helper()
	r := commsPost(t, s, fmt.Sprintf(`{"user_id":%s,"page":%d,"per_page":%d%s}`, allUsers(users), page, perPage, extra))
	if r.status != http.StatusOK {
		t.Fatalf("page %d: %d %s", page, r.status, r.body)
	}
	return decodeComms(t, r.body)
}

func TestTwistMaxPerPage(t *testing.T) {
	s := startSmall(t, nil)
	if r := adminCall(t, s, http.MethodPost, "twists", `{"max_per_page":50}`); r.status != http.StatusOK || !strings.Contains(string(r.body), `"max_per_page":50`) {
		t.Fatalf("set max_per_page: %d %s", r.status, r.body)
	}
	p := commsPageOf(t, s, 40, 1, 1000, "")
	if p.perPage != 50 || len(p.keys) != 50 || p.lastPage != (p.total+49)/50 {
		t.Errorf("communications under a cap of 50: per_page %d, %d rows, last_page %d of total %d", p.perPage, len(p.keys), p.lastPage, p.total)
	}
	m := get(t, s, "/v1/projects?per_page=1000").json(t)
	if m["per_page"] != 50.0 || len(m["data"].([]any)) != 32 { // 8 brands × 4 projects, all on the page
		t.Errorf("projects under a cap of 50: per_page %v, %d rows", m["per_page"], len(m["data"].([]any)))
	}
	adminCall(t, s, http.MethodPost, "twists", `{"max_per_page":0}`)
	if p := commsPageOf(t, s, 40, 1, 1000, ""); p.perPage != 1000 {
		t.Errorf("max_per_page 0 should restore the flag's cap, per_page %d", p.perPage)
	}
	adminCall(t, s, http.MethodPost, "twists", `{"fixed_per_page":30}`)
	for _, ask := range []int{10, 1000} {
		if p := commsPageOf(t, s, 40, 2, ask, ""); p.perPage != 30 || len(p.keys) != 30 || p.lastPage != (p.total+29)/30 {
			t.Errorf("fixed_per_page 30, asked %d: per_page %d, %d rows, last_page %d", ask, p.perPage, len(p.keys), p.lastPage)
		}
	}
	if m := get(t, s, "/v1/projects?per_page=5").json(t); m["per_page"] != 30.0 || len(m["data"].([]any)) != 30 {
		t.Errorf("projects under fixed_per_page 30: per_page %v, %d rows", m["per_page"], len(m["data"].([]any)))
	}
	adminCall(t, s, http.MethodPost, "twists", `{"fixed_per_page":0}`)
	if p := commsPageOf(t, s, 40, 1, 10, ""); p.perPage != 10 {
		t.Errorf("fixed_per_page 0 should honour the ask again, per_page %d", p.perPage)
	}
	if r := adminCall(t, s, http.MethodPost, "twists", `{"fixed_per_page":-1}`); r.status != http.StatusBadRequest {
		t.Errorf("fixed_per_page -1: %d %s", r.status, r.body)
	}
	if r := adminCall(t, s, http.MethodPost, "twists", `{"max_per_page":-1}`); r.status != http.StatusBadRequest {
		t.Errorf("max_per_page -1: %d %s", r.status, r.body)
	}
	if r := adminCall(t, s, http.MethodPost, "twists", `{"max_page":5}`); r.status != http.StatusBadRequest {
		t.Errorf("unknown key: %d %s", r.status, r.body)
	}
}

func TestTwistLyingPaging(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.Brands = 3 })
	adminCall(t, s, http.MethodPost, "twists", `{"lying_paging":true}`)
	m := get(t, s, "/v1/brands").json(t)
	if m["total"] != 3.0 || m["last_page"] != 1.0 || len(m["data"].([]any)) != 2 {
		t.Fatalf("lying brands page 1: total %v, last_page %v, %d rows; want 3, 1, 2", m["total"], m["last_page"], len(m["data"].([]any)))
	}
	m2 := get(t, s, "/v1/brands?page=2").json(t)
	rows := m2["data"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["brand_info"].(map[string]any)["id"] != "3" {
		t.Errorf("lying brands page 2 should hold brand 3 alone: %v", rows)
	}
	// With two rows a page: pages 1 and 2 advertised, the third row only on page 3.
	var seen []string
	for pg := 1; pg <= 3; pg++ {
		m := get(t, s, fmt.Sprintf("/v1/brands?per_page=2&page=%d", pg)).json(t)
		if m["last_page"] != 2.0 {
			t.Errorf("per_page 2, page %d: last_page %v, want 2", pg, m["last_page"])
		}
		for _, r := range m["data"].([]any) {
			seen = append(seen, r.(map[string]any)["brand_info"].(map[string]any)["id"].(string))
		}
	}
	if !slices.Equal(seen, []string{"1", "2", "3"}) {
		t.Errorf("per_page 2 over pages 1..3: %v", seen)
	}
	adminCall(t, s, http.MethodPost, "twists", `{"lying_paging":false}`)
	if m := get(t, s, "/v1/brands").json(t); len(m["data"].([]any)) != 3 {
		t.Errorf("lying_paging off: %d rows", len(m["data"].([]any)))
	}
}

func TestTwistCommsPagingMissing(t *testing.T) {
	s := startSmall(t, nil)
	adminCall(t, s, http.MethodPost, "twists", `{"comms_paging_missing":true}`)
	r := commsPost(t, s, fmt.Sprintf(`{"user_id":%s,"per_page":10}`, allUsers(40)))
	var env struct{ Data map[string]json.RawMessage }
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"total", "last_page"} {
		if _, ok := env.Data[k]; ok {
			t.Errorf("%s present with comms_paging_missing", k)
		}
	}
	for _, k := range []string{"rows", "per_page", "current_page"} {
		if _, ok := env.Data[k]; !ok {
			t.Errorf("%s missing with comms_paging_missing", k)
		}
	}
	if p := decodeComms(t, r.body); len(p.keys) != 10 {
		t.Errorf("%d rows, want 10", len(p.keys))
	}
}

func TestTwistEchoKey(t *testing.T) {
	const key = `rel-api-0123456789abcdef+/"key"\with=odd&chars`
	s := startSmall(t, func(o *Options) { o.APIKey = key; o.CommsKey = key + "-comms" })
	adminCall(t, s, http.MethodPost, "twists", `{"echo_key":true}`)
	for _, c := range []struct {
		name string
		r    response
		key  string
	}{
		{"main", get(t, s, "/v1/brands"), key},
		{"comms", commsPost(t, s, `{"user_id":[1]}`), key + "-comms"},
	} {
		if c.r.status != http.StatusBadRequest || !json.Valid(c.r.body) {
			t.Fatalf("%s: %d %s", c.name, c.r.status, c.r.body)
		}
		var body struct {
			Error struct {
				Message string
				Details []string
			}
		}
		if err := json.Unmarshal(c.r.body, &body); err != nil {
			t.Fatal(err)
		}
		d := body.Error.Details[0]
		js, _ := json.Marshal(c.key)
		if body.Error.Message != "Bad request" || strings.Count(d, c.key) != 3 || !strings.Contains(d, url.QueryEscape(c.key)) || !strings.Contains(d, string(js[1:len(js)-1])) {
			t.Errorf("%s: the detail does not echo the key raw ×3, URL-encoded and JSON-escaped: %s", c.name, d)
		}
	}
	// A key without characters JSON escapes sits raw at byte 220 of the body.
	s2 := startSmall(t, func(o *Options) { o.APIKey = "rel-api-0123456789abcdef0123456789" })
	adminCall(t, s2, http.MethodPost, "twists", `{"echo_key":true}`)
	b := get(t, s2, "/v1/brands").body
	if at := bytes.Index(b, []byte("rel-api-0123456789abcdef0123456789")); at != 220 {
		t.Errorf("the first raw copy starts at byte %d, want 220: %s", at, b)
	}
	// A wrong key is still a 401 that echoes nothing.
	if r := apiGet(t, s2, "/v1/brands", "wrong"); r.status != http.StatusUnauthorized {
		t.Errorf("wrong key with echo_key: %d", r.status)
	}
	adminCall(t, s2, http.MethodPost, "twists", `{"echo_key":false}`)
	if r := get(t, s2, "/v1/brands"); r.status != http.StatusOK {
		t.Errorf("echo_key off: %d", r.status)
	}
}

func TestMutationDelete(t *testing.T) {
	s := startSmall(t, nil)
	before := truthEmailKeys(t, s)
	if r := adminCall(t, s, http.MethodPost, "twists/mutate-between-pages", `{"delete":5}`); r.status != http.StatusOK {
		t.Fatalf("arm: %d %s", r.status, r.body)
	}
	commsPageOf(t, s, 40, 1, 1, "") // a count probe does not fire it
	p1 := commsPageOf(t, s, 40, 1, 100, "")
	if !slices.Equal(p1.keys, before[:100]) || p1.total != len(before) {
		t.Fatalf("page 1 should be the first 100 of the truth, total %d", p1.total)
	}
	p2 := commsPageOf(t, s, 40, 2, 100, "")
	// Records 95..99 were deleted after page 1: page 2 starts 5 further on.
	if !slices.Equal(p2.keys, before[105:205]) || p2.total != len(before)-5 {
		t.Errorf("page 2 after deleting 5: first %s (want %s), total %d (want %d)", p2.keys[0], before[105], p2.total, len(before)-5)
	}
	after := truthEmailKeys(t, s)
	want := slices.Concat(before[:95], before[100:])
	if !slices.Equal(after, want) {
		t.Errorf("truth after the mutation: %d records, want %d without records 95..99", len(after), len(want))
	}
	if s.Stats().Emails != len(before)-5 {
		t.Errorf("stats emails %d, want %d", s.Stats().Emails, len(before)-5)
	}
	if r := adminCall(t, s, http.MethodPost, "emails/"+before[97], `{"subject":"x"}`); r.status != http.StatusNotFound {
		t.Errorf("editing a deleted e-mail: %d", r.status)
	}
	// One-shot: page 3 changes nothing more.
	commsPageOf(t, s, 40, 3, 100, "")
	if n := len(truthEmailKeys(t, s)); n != len(want) {
		t.Errorf("the mutation fired twice: %d records", n)
	}
	st := s.TwistsStatus()
	if st.Deleted != 5 || !st.MutationFired || st.Mutation != nil {
		t.Errorf("status after firing: %+v", st)
	}
}

func TestMutationInsert(t *testing.T) {
	s := startSmall(t, nil)
	full := truthEmailKeys(t, s)
	if r := adminCall(t, s, http.MethodPost, "twists/mutate-between-pages", `{"insert":30,"after_pages":2}`); r.status != http.StatusOK {
		t.Fatalf("arm: %d %s", r.status, r.body)
	}
	shown := truthEmailKeys(t, s)
	if len(shown) != len(full)-30 {
		t.Fatalf("armed insert hides %d records, want 30", len(full)-len(shown))
	}
	hidden := map[string]bool{}
	for _, k := range full {
		if !slices.Contains(shown, k) {
			hidden[k] = true
		}
	}
	p1 := commsPageOf(t, s, 40, 1, 100, "")
	p2 := commsPageOf(t, s, 40, 2, 100, "") // the mutation fires with this answer
	if !slices.Equal(p1.keys, shown[:100]) || !slices.Equal(p2.keys, shown[100:200]) || p2.total != len(shown) {
		t.Fatalf("pages 1-2 should follow the truth without the hidden records")
	}
	p3 := commsPageOf(t, s, 40, 3, 100, "")
	if !slices.Equal(p3.keys, full[200:300]) || p3.total != len(full) {
		t.Errorf("page 3 after the insert: first %s (want %s), total %d (want %d)", p3.keys[0], full[200], p3.total, len(full))
	}
	missed := 0
	for _, k := range full[:200] {
		if hidden[k] {
			missed++
		}
	}
	if missed == 0 {
		t.Fatal("no hidden record fell on pages 1-2: the test proves nothing")
	}
	if got := truthEmailKeys(t, s); !slices.Equal(got, full) {
		t.Errorf("truth after the insert: %d records, want %d", len(got), len(full))
	}
	for _, bad := range []string{`{}`, `{"delete":1,"insert":1}`, `{"delete":-1}`, `{"delete":1,"later":2}`} {
		if r := adminCall(t, s, http.MethodPost, "twists/mutate-between-pages", bad); r.status != http.StatusBadRequest {
			t.Errorf("arm %s: %d %s", bad, r.status, r.body)
		}
	}
}

func TestFutureDatedEmail(t *testing.T) {
	s := startSmall(t, nil)
	r := adminCall(t, s, http.MethodPost, "emails", `{"append":1,"email_at":"9999-12-31T00:00:00Z"}`)
	if r.status != http.StatusOK {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	var ans struct {
		FirstID int64 `json:"first_id"`
	}
	if err := json.Unmarshal(r.body, &ans); err != nil {
		t.Fatal(err)
	}
	day := s.Now().Format(layoutDate)
	if s.Now().Hour() == 0 && s.Now().Minute() == 0 {
		day = s.Now().Add(-time.Minute).Format(layoutDate)
	}
	p := commsPageOf(t, s, 40, 1, 1000, fmt.Sprintf(`,"date_start":%q`, day))
	key := fmt.Sprint(ans.FirstID)
	row, ok := p.rows[key]
	if !ok {
		t.Fatalf("the future-dated e-mail %s is not filed on %s: %v", key, day, p.keys)
	}
	if at := row["email"].(map[string]any)["email_at"]; at != "9999-12-31T00:00:00.000000Z" {
		t.Errorf("email_at %v", at)
	}
	if keys := truthEmailKeys(t, s); keys[len(keys)-1] != key {
		t.Errorf("the truth's last record is %s, want %s", keys[len(keys)-1], key)
	}
	if r := adminCall(t, s, http.MethodPost, "emails", `{"append":1,"email_at":"soon"}`); r.status != http.StatusBadRequest {
		t.Errorf("bad email_at: %d", r.status)
	}
}

func TestNestedEmail(t *testing.T) {
	s := startSmall(t, nil)
	keys := truthEmailKeys(t, s)
	id := keys[150]
	if r := adminCall(t, s, http.MethodPost, "emails/"+id, `{"nesting":700}`); r.status != http.StatusOK || !json.Valid(r.body) {
		t.Fatalf("nest: %d %.200s", r.status, r.body)
	}
	r := commsPost(t, s, fmt.Sprintf(`{"user_id":%s,"page":2,"per_page":100}`, allUsers(40)))
	if !json.Valid(r.body) {
		t.Fatal("the page is not valid JSON")
	}
	want := "\"extra\":" + strings.Repeat("[", 700) + strings.Repeat("]", 700) + "}"
	if !bytes.Contains(r.body, []byte(want)) || bytes.Contains(r.body, []byte(strings.Repeat("[", 701))) {
		t.Errorf("the page does not carry one 700-deep member")
	}
	if p := decodeComms(t, r.body); len(p.keys) != 100 || p.keys[50] != id {
		t.Errorf("page 2: %d rows, row 50 %s (want %s)", len(p.keys), p.keys[50], id)
	}
	adminCall(t, s, http.MethodPost, "emails/"+id, `{"nesting":0}`)
	if r := commsPost(t, s, fmt.Sprintf(`{"user_id":%s,"page":2,"per_page":100}`, allUsers(40))); bytes.Contains(r.body, []byte(`"extra"`)) {
		t.Error("nesting 0 kept the member")
	}
	if r := adminCall(t, s, http.MethodPost, "emails/"+id, `{"nesting":-3}`); r.status != http.StatusBadRequest {
		t.Errorf("negative nesting: %d", r.status)
	}
}
