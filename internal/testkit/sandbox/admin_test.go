package sandbox

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAdminGuard(t *testing.T) {
	off := startSmall(t, func(o *Options) { o.AdminToken = "" })
	r := do(t, http.MethodGet, off.APIURL()+"/_sandbox/stats", map[string]string{"X-Admin-Token": ""}, "")
	if r.status != http.StatusNotFound || string(r.body) != body404 {
		t.Fatalf("disabled admin: %d %q", r.status, r.body)
	}
	s := startSmall(t, nil)
	for _, tok := range []string{"", "nope", s.opts.APIKey} {
		r := do(t, http.MethodGet, s.APIURL()+"/_sandbox/stats", map[string]string{"X-Admin-Token": tok}, "")
		if r.status != http.StatusUnauthorized || string(r.body) != body401 {
			t.Fatalf("token %q: %d %q", tok, r.status, r.body)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "nothing", ""}, {http.MethodDelete, "stats", ""}, {http.MethodPost, "brands/999999", `{"status":"x"}`},
		{http.MethodPost, "projects/abc/delete", ""}, {http.MethodPost, "emails/5", `{"subject":"x"}`},
		{http.MethodPost, "finance/invoices/1", `{"status":"x"}`},
	} {
		if r := adminCall(t, s, c.method, c.path, c.body); r.status != http.StatusNotFound || string(r.body) != body404 {
			t.Errorf("%s %s: %d %q", c.method, c.path, r.status, r.body)
		}
	}
	if r := adminCall(t, s, http.MethodPost, "clock", `{"advance":"1h","extra":1}`); r.status != http.StatusBadRequest ||
		!strings.HasPrefix(string(r.body), `{"error":{"message":"Bad request","details":["invalid argument: request body: json: unknown field`) {
		t.Fatalf("unknown key: %d %s", r.status, r.body)
	}
}

func TestAdminStats(t *testing.T) {
	s := startSmall(t, nil)
	get(t, s, "/v1/brands")
	get(t, s, "/v1/brands")
	get(t, s, "/v1/projects/999999")
	apiGet(t, s, "/v1/brands", "bad")
	apiGet(t, s, "/v1/brands?per_page=1", "") // a worker's keyless clock probe
	commsPost(t, s, `{"user_id":[1]}`)
	var st Stats
	if err := json.Unmarshal(adminCall(t, s, http.MethodGet, "stats", "").body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Requests != 6 || st.Keyless != 1 || st.Keyed() != 5 || st.ByStatus["200"] != 3 || st.ByStatus["404"] != 1 || st.ByStatus["401"] != 2 ||
		st.ByEndpoint["brands"] != 4 || st.ByEndpoint["communications"] != 1 || st.QuotaUsed != 4 ||
		st.Emails != s.opts.Emails || !st.Now.Equal(s.opts.Start) || st.Quota["shared"].Limit != s.opts.DailyQuota {
		t.Fatalf("stats %+v", st)
	}
	raw := adminCall(t, s, http.MethodGet, "stats", "").json(t)
	for _, k := range []string{"requests", "keyless", "by_status", "rate_limited", "quota_exceeded", "quota_used"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("stats lack %s", k)
		}
	}
	var reset Stats
	if err := json.Unmarshal(adminCall(t, s, http.MethodPost, "stats/reset", "").body, &reset); err != nil {
		t.Fatal(err)
	}
	if reset.Requests != 0 || reset.Keyless != 0 || len(reset.ByStatus) != 0 || len(reset.ByEndpoint) != 0 || reset.QuotaUsed != 4 {
		t.Fatalf("after reset %+v", reset)
	}
}

func TestAdminFaults(t *testing.T) {
	s := startSmall(t, nil)
	r := adminCall(t, s, http.MethodPost, "faults", `{"fault_500":1,"latency":"30ms","bad_record_rate":0.5}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	got := r.json(t)
	if got["fault_500"] != 1.0 || got["latency"] != "30ms" || got["fault_drop"] != 0.0 || got["slow_delay"] != s.opts.SlowDelay.String() || got["bad_record_rate"] != 0.5 {
		t.Fatalf("settings %v", got)
	}
	if r := get(t, s, "/v1/brands"); r.status != 500 {
		t.Fatalf("after setting fault_500: %d", r.status)
	}
	// Absent keys keep their values; invalid values change nothing.
	for _, bad := range []string{`{"fault_500":2}`, `{"fault_500":0.5,"fault_503":0.6}`, `{"latency":"soon"}`, `{"jitter":"-1s"}`, `{"bad_record_rate":1.5}`} {
		if r := adminCall(t, s, http.MethodPost, "faults", bad); r.status != http.StatusBadRequest {
			t.Fatalf("%s: %d", bad, r.status)
		}
	}
	if f := s.Faults(); f.Err500 != 1 {
		t.Fatalf("faults changed by invalid calls: %+v", f)
	}
	adminCall(t, s, http.MethodPost, "faults", `{"fault_500":0}`)
	if r := get(t, s, "/v1/brands"); r.status != 200 {
		t.Fatalf("after clearing: %d", r.status)
	}
	if g := adminCall(t, s, http.MethodGet, "faults", "").json(t); g["latency"] != "30ms" {
		t.Fatalf("latency lost: %v", g)
	}
}

func TestAdminClock(t *testing.T) {
	s := startSmall(t, nil)
	r := adminCall(t, s, http.MethodPost, "clock", `{"advance":"25h"}`)
	if r.json(t)["now"] != "2026-11-02T01:00:00Z" || !s.Now().Equal(s.opts.Start.Add(25*time.Hour)) {
		t.Fatalf("advance: %s", r.body)
	}
	r = adminCall(t, s, http.MethodPost, "clock", `{"set":"2027-01-05T10:00:00Z"}`)
	if r.json(t)["now"] != "2027-01-05T10:00:00Z" {
		t.Fatalf("set: %s", r.body)
	}
	if g := adminCall(t, s, http.MethodGet, "clock", "").json(t); g["now"] != "2027-01-05T10:00:00Z" {
		t.Fatalf("get: %v", g)
	}
	for _, bad := range []string{`{"advance":"-1h"}`, `{"advance":"tomorrow"}`, `{"set":"2027-01-05"}`, `{}`, `{"advance":"1h","set":"2027-01-05T10:00:00Z"}`} {
		if r := adminCall(t, s, http.MethodPost, "clock", bad); r.status != http.StatusBadRequest {
			t.Fatalf("%s: %d", bad, r.status)
		}
	}
	// The agency summary has one row per month, up to the clock's month at
	// least (later months when budgets are planned for them).
	s.SetClock(time.Date(2028, 2, 1, 0, 0, 0, 0, time.UTC))
	var periods []string
	for _, row := range getAll(t, s, "/v1/finance/summary") {
		periods = append(periods, row["period"].(string))
	}
	first, _ := time.Parse("2006-01", periods[0])
	for k, p := range periods {
		if want := first.AddDate(0, k, 0).Format("2006-01"); p != want {
			t.Fatalf("period %d is %s, want %s", k, p, want)
		}
	}
	if periods[len(periods)-1] != "2028-02" {
		t.Fatalf("last summary period %s", periods[len(periods)-1])
	}
}

func TestAdminAppendEmails(t *testing.T) {
	s := startSmall(t, nil)
	users := allUsers(s.opts.Users)
	before := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"per_page":1,"page":`+strconv.Itoa(s.opts.Emails)+`}`).body)
	lastID := mustInt(t, before.keys[0])
	adminCall(t, s, http.MethodPost, "clock", `{"advance":"58h"}`)
	r := adminCall(t, s, http.MethodPost, "emails", `{"append":25}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var ans map[string]int64
	_ = json.Unmarshal(r.body, &ans)
	if ans["appended"] != 25 || ans["first_id"] <= lastID || ans["last_id"] <= ans["first_id"] || ans["emails"] != int64(s.opts.Emails+25) {
		t.Fatalf("append answer %v (last id before %d)", ans, lastID)
	}
	today := s.Now().Format("2006-01-02")
	p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"date_start":"`+today+`","per_page":100}`).body)
	if p.total != 25 || p.keys[0] != strconv.FormatInt(ans["first_id"], 10) {
		t.Fatalf("new e-mails on %s: total %d first %v", today, p.total, p.keys)
	}
	for _, k := range p.keys {
		at, _ := time.Parse("2006-01-02T15:04:05.000000Z", p.rows[k]["email"].(map[string]any)["email_at"].(string))
		if at.After(s.Now()) || at.Before(s.Now().Add(-time.Hour)) {
			t.Fatalf("appended e-mail at %v, clock %v", at, s.Now())
		}
	}
	// Appending again without moving the clock still gives later e-mails,
	// and at midnight they stay on the clock's day.
	first2, _, err := s.AppendEmails(3)
	if err != nil || first2 <= ans["last_id"] {
		t.Fatalf("second append: %d %v", first2, err)
	}
	s.SetClock(time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC))
	s.AppendEmails(4)
	midnight := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"date_start":"2026-11-05","date_end":"2026-11-05"}`).body)
	if midnight.total != 4 {
		t.Fatalf("appended at midnight: %d on the clock's day", midnight.total)
	}
	if total := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`}`).body).total; total != s.opts.Emails+32 {
		t.Fatalf("total after appends %d", total)
	}
	if r := adminCall(t, s, http.MethodPost, "emails", `{"append":0}`); r.status != http.StatusBadRequest {
		t.Fatalf("append 0: %d", r.status)
	}
}

func TestAdminEditEmail(t *testing.T) {
	s := startSmall(t, nil)
	p := decodeComms(t, commsPost(t, s, `{"user_id":[7],"per_page":1}`).body)
	id := p.keys[0]
	orig := p.rows[id]["email"].(map[string]any)
	r := adminCall(t, s, http.MethodPost, "emails/"+id, `{"subject":"Subiect corectat ✓","to":[33],"cc":[],"bcc":[34]}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	after := decodeComms(t, commsPost(t, s, `{"user_id":[33],"per_page":1000}`).body)
	rec, ok := after.rows[id]
	if !ok {
		t.Fatal("edited e-mail not found for its new recipient")
	}
	email := rec["email"].(map[string]any)
	users := rec["users"].(map[string]any)
	if email["subject"] != "Subiect corectat ✓" || email["email_at"] != orig["email_at"] || email["mailbox_id"] != orig["mailbox_id"] {
		t.Fatalf("edited email %v", email)
	}
	if to := users["to"].(map[string]any); len(to) != 1 || to["33"] == nil {
		t.Fatalf("to %v", users["to"])
	}
	if cc, ok := users["cc"].([]any); !ok || len(cc) != 0 {
		t.Fatalf("cc %v", users["cc"])
	}
	if bcc := users["bcc"].(map[string]any); bcc["34"] == nil {
		t.Fatalf("bcc %v", users["bcc"])
	}
	var adminRec map[string]any
	_ = json.Unmarshal(r.body, &adminRec)
	if adminRec["email"].(map[string]any)["subject"] != "Subiect corectat ✓" {
		t.Fatalf("admin answer %s", r.body)
	}
	// Unless user 7 sent it, the e-mail no longer matches user 7.
	still := decodeComms(t, commsPost(t, s, `{"user_id":[7],"per_page":1000}`).body)
	_, matched := still.rows[id]
	if matched != involves(s, rec, 7) {
		t.Fatalf("user 7 match %t after edit", matched)
	}
	if still.total != p.total-1 && !matched {
		t.Fatalf("user 7 total %d, before %d", still.total, p.total)
	}
	for _, bad := range []string{`{"to":[0]}`, `{"to":[5,5]}`, `{"to":[99999]}`} {
		if r := adminCall(t, s, http.MethodPost, "emails/"+id, bad); r.status != http.StatusBadRequest {
			t.Fatalf("%s: %d", bad, r.status)
		}
	}
}

func TestAdminBrandEdits(t *testing.T) {
	s := startSmall(t, nil)
	b := s.data.brands[1]
	path := pathf("/v1/brands/%d", b.id)
	before := get(t, s, path).json(t)["brand_info"].(map[string]any)
	adminCall(t, s, http.MethodPost, "clock", `{"advance":"24h"}`)
	r := adminCall(t, s, http.MethodPost, pathf("brands/%d", b.id), `{"status":"Inactiv","financial_summary":{"invoiced":"123.45","collected":99}}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	d := get(t, s, path).json(t)
	info := d["brand_info"].(map[string]any)
	fs := info["financial_summary"].(map[string]any)
	bfs := before["financial_summary"].(map[string]any)
	if info["status"] != "Inactiv" || fs["invoiced"] != 123.45 || fs["collected"] != 99.0 || fs["total_budget"] != bfs["total_budget"] {
		t.Fatalf("after edit %v", info)
	}
	if !strings.Contains(string(get(t, s, path).body), `"invoiced":123.45,"collected":99.00`) {
		t.Fatal("amounts not written with two decimals")
	}
	if d["metadata"].(map[string]any)["updated_at"] != "2026-11-02T00:00:00Z" {
		t.Fatalf("metadata %v", d["metadata"])
	}
	adminCall(t, s, http.MethodPost, pathf("brands/%d", b.id), `{"financial_summary":{"reset":true}}`)
	if fs := get(t, s, path).json(t)["brand_info"].(map[string]any)["financial_summary"]; fs.(map[string]any)["invoiced"] != bfs["invoiced"] {
		t.Fatalf("reset %v", fs)
	}
	if r := adminCall(t, s, http.MethodPost, pathf("brands/%d", b.id), `{"financial_summary":{"invoiced":"1.234"}}`); r.status != http.StatusBadRequest {
		t.Fatalf("three decimals: %d", r.status)
	}

	// delete and restore
	if r := adminCall(t, s, http.MethodPost, pathf("brands/%d/delete", b.id), ""); r.json(t)["deleted"] != true {
		t.Fatalf("delete %s", r.body)
	}
	if r := get(t, s, path); r.status != http.StatusNotFound {
		t.Fatalf("deleted detail %d", r.status)
	}
	if r := get(t, s, path+"/contacts"); r.status != http.StatusNotFound {
		t.Fatalf("deleted contacts %d", r.status)
	}
	for _, el := range getAll(t, s, "/v1/brands") {
		if el["brand_info"].(map[string]any)["id"] == strconv.FormatInt(b.id, 10) {
			t.Fatal("deleted brand listed")
		}
	}
	adminCall(t, s, http.MethodPost, pathf("brands/%d/restore", b.id), "")
	if r := get(t, s, path); r.status != http.StatusOK {
		t.Fatalf("restored detail %d", r.status)
	}
	if n := len(getAll(t, s, "/v1/brands")); n != len(s.data.brands) {
		t.Fatalf("%d brands listed after restore", n)
	}
}

func TestAdminProjectEdits(t *testing.T) {
	s := startSmall(t, nil)
	p := s.data.projects[3]
	b := s.data.brands[p.brand]
	path := pathf("/v1/projects/%d", p.id)
	adminCall(t, s, http.MethodPost, "clock", `{"advance":"72h"}`)
	r := adminCall(t, s, http.MethodPost, pathf("projects/%d", p.id), `{"status":"suspendat","deadline":"2027-03-01"}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	d := get(t, s, path).json(t)
	hist := d["history"].([]any)
	last := hist[len(hist)-1].(map[string]any)
	if d["status"] != "suspendat" || d["deadline"] != "2027-03-01" || d["updated_at"] != "2026-11-04T00:00:00Z" || d["closed_at"] != nil ||
		last["field"] != "deadline" || hist[len(hist)-2].(map[string]any)["to"] != "suspendat" {
		t.Fatalf("after edit %v", d)
	}
	since := decodeList(t, get(t, s, "/v1/projects?updated_since=2026-11-04"))
	if since.Total != 1 {
		t.Fatalf("updated_since after the edit: %d", since.Total)
	}
	adminCall(t, s, http.MethodPost, pathf("projects/%d", p.id), `{"status":"finalizat"}`)
	if d := get(t, s, path).json(t); d["closed_at"] != "2026-11-04T00:00:00Z" {
		t.Fatalf("closed_at %v", d["closed_at"])
	}
	adminCall(t, s, http.MethodPost, "clock", `{"advance":"1h"}`)
	adminCall(t, s, http.MethodPost, pathf("projects/%d", p.id), `{"touch":true}`)
	if d := get(t, s, path).json(t); d["updated_at"] != "2026-11-04T01:00:00Z" {
		t.Fatalf("touch %v", d["updated_at"])
	}
	if r := adminCall(t, s, http.MethodPost, pathf("projects/%d", p.id), `{}`); r.status != http.StatusBadRequest {
		t.Fatalf("empty edit %d", r.status)
	}

	count := func() float64 {
		return get(t, s, pathf("/v1/brands/%d", b.id)).json(t)["brand_info"].(map[string]any)["projects_count"].(float64)
	}
	n := count()
	adminCall(t, s, http.MethodPost, pathf("projects/%d/delete", p.id), "")
	if r := get(t, s, path); r.status != http.StatusNotFound {
		t.Fatalf("deleted project %d", r.status)
	}
	if c := count(); c != n-1 {
		t.Fatalf("projects_count %v after delete, before %v", c, n)
	}
	if l := decodeList(t, get(t, s, "/v1/projects?per_page=1000")); l.Total != len(s.data.projects)-1 {
		t.Fatalf("projects listed %d", l.Total)
	}
	adminCall(t, s, http.MethodPost, pathf("projects/%d/restore", p.id), "")
	if c := count(); c != n {
		t.Fatalf("projects_count %v after restore", c)
	}
}

func TestAdminFinanceEdit(t *testing.T) {
	s := startSmall(t, nil)
	inv := s.data.invoices[len(s.data.invoices)/2]
	for inv.status == invoiceCancelled {
		inv = s.data.invoices[len(s.data.invoices)/2+1]
	}
	b := s.data.brands[s.data.projects[inv.project].brand]
	invoiced := func() int64 {
		r := get(t, s, pathf("/v1/brands/%d", b.id))
		var d struct {
			BrandInfo struct {
				FS struct {
					Invoiced json.Number `json:"invoiced"`
				} `json:"financial_summary"`
			} `json:"brand_info"`
		}
		dec := json.NewDecoder(strings.NewReader(string(r.body)))
		dec.UseNumber()
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		c, err := parseCents(string(d.BrandInfo.FS.Invoiced))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := invoiced()
	adminCall(t, s, http.MethodPost, "clock", `{"advance":"10h"}`)
	r := adminCall(t, s, http.MethodPost, pathf("finance/invoices/%d", inv.id), `{"amount":"1000.01"}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if rec := r.json(t); rec["amount"] != 1000.01 || rec["updated_at"] != "2026-11-01T10:00:00Z" {
		t.Fatalf("edited invoice %v", rec)
	}
	if after := invoiced(); after != before-inv.amount+100001 && inv.amount != 100001 {
		t.Fatalf("brand invoiced %d, before %d", after, before)
	}
	l := decodeList(t, get(t, s, "/v1/finance/invoices?updated_since=2026-11-01"))
	if l.Total != 1 {
		t.Fatalf("invoices updated since the edit: %d", l.Total)
	}
	for _, bad := range []struct{ path, body string }{
		{pathf("finance/collections/%d", s.data.collections[0].id), `{"status":"x"}`},
		{pathf("finance/refunds/%d", inv.id), `{"amount":1}`},
		{pathf("finance/invoices/%d", inv.id), `{"amount":"1,5"}`},
	} {
		if r := adminCall(t, s, http.MethodPost, bad.path, bad.body); r.status != http.StatusBadRequest {
			t.Fatalf("%s %s: %d", bad.path, bad.body, r.status)
		}
	}
}

func TestAdminQuotaSpend(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.NoLimits = false; o.DailyQuota = 10; o.Rate = 1000 })
	r := adminCall(t, s, http.MethodPost, "quota", `{"spend":9}`)
	if g := r.json(t); g["used"] != 9.0 || g["scope"] != "shared" || g["limit"] != 10.0 {
		t.Fatalf("spend %s", r.body)
	}
	if r := get(t, s, "/v1/brands"); r.status != http.StatusOK {
		t.Fatalf("10th request %d", r.status)
	}
	if r := commsPost(t, s, `{"user_id":[1]}`); r.status != http.StatusTooManyRequests {
		t.Fatalf("11th request %d", r.status)
	}
	if r := adminCall(t, s, http.MethodPost, "quota", `{"spend":-1}`); r.status != http.StatusBadRequest {
		t.Fatalf("negative spend %d", r.status)
	}
}
