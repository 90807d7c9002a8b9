package sandbox

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSpecPagingExample is rule 4 of the spec: 2971 matching records with
// per_page 20 give last_page 149.
func TestSpecPagingExample(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.Emails = 2971 })
	users := allUsers(s.opts.Users)
	r := commsPost(t, s, `{"domain_id":1,"user_id":`+users+`,"page":1,"per_page":20,"with_message":"0"}`)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	p := decodeComms(t, r.body)
	if p.total != 2971 || p.perPage != 20 || p.currentPage != 1 || p.lastPage != 149 || len(p.keys) != 20 {
		t.Fatalf("got total %d per_page %d current %d last %d rows %d", p.total, p.perPage, p.currentPage, p.lastPage, len(p.keys))
	}
	last := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"page":149,"per_page":20}`).body)
	if len(last.keys) != 11 || last.currentPage != 149 {
		t.Fatalf("last page: %d rows, current %d", len(last.keys), last.currentPage)
	}
	beyond := commsPost(t, s, `{"user_id":`+users+`,"page":150,"per_page":20}`)
	if !strings.Contains(string(beyond.body), `"rows":{},"total":2971,"per_page":20,"current_page":150,"last_page":149`) {
		t.Fatalf("beyond the last page: %s", beyond.body)
	}
}

func TestCommsShape(t *testing.T) {
	s := startSmall(t, nil)
	r := commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`,"per_page":1000}`)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content type %q", ct)
	}
	p := decodeComms(t, r.body)
	if len(p.keys) != 1000 {
		t.Fatalf("%d rows", len(p.keys))
	}
	var prev int64
	seen := map[string]int{}
	for _, k := range p.keys {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil || id <= prev {
			t.Fatalf("row keys not ascending numeric: %s after %d", k, prev)
		}
		prev = id
		rec := p.rows[k]
		email := rec["email"].(map[string]any)
		users := rec["users"].(map[string]any)
		if email["message"] != nil {
			t.Fatalf("message not null without with_message: %v", email["message"])
		}
		switch email["has_attachments"] {
		case nil:
			seen["no-attachments"]++
		case 1.0:
			seen["attachments"]++
		default:
			t.Fatalf("has_attachments %v", email["has_attachments"])
		}
		at, err := time.Parse("2006-01-02T15:04:05.000000Z", email["email_at"].(string))
		if err != nil || at.After(s.Now()) {
			t.Fatalf("email_at %v: %v", email["email_at"], err)
		}
		if _, ok := email["size"].(float64); !ok {
			t.Fatalf("size %v", email["size"])
		}
		for _, f := range []string{"subject", "mailbox_id", "mailbox_thread"} {
			if _, ok := email[f].(string); !ok {
				t.Fatalf("%s missing: %v", f, email)
			}
		}
		if email["brand_id"] == nil {
			seen["no-brand"]++
		} else if _, ok := email["brand_id"].(string); !ok {
			t.Fatalf("brand_id %v", email["brand_id"])
		}
		if email["project_id"] != nil {
			seen["project"]++
		}
		from, ok := users["from"].([]any)
		if !ok || len(from) != 1 {
			t.Fatalf("from %v", users["from"])
		}
		platform := 0
		sender := from[0].(map[string]any)
		if sender["last_name"] == nil {
			seen["outsider-sender"]++
			if !strings.HasSuffix(sender["full_name"].(string), " ") {
				t.Fatalf("outsider full_name without trailing space: %q", sender["full_name"])
			}
		} else if strings.HasSuffix(sender["email"].(string), "@"+AgencyMailDomain) {
			platform++
		}
		for _, role := range []string{"to", "cc", "bcc"} {
			switch v := users[role].(type) {
			case []any:
				if len(v) != 0 {
					t.Fatalf("%s is a non-empty array", role)
				}
				seen["empty-"+role]++
			case map[string]any:
				for key, u := range v {
					id, err := strconv.Atoi(key)
					if err != nil || id < 1 || id > s.opts.Users {
						t.Fatalf("%s keyed by %q", role, key)
					}
					um := u.(map[string]any)
					if um["email"] != s.mail.people[id].email || um["status"] == nil || um["avatar"] == nil {
						t.Fatalf("%s user %s is %v", role, key, um)
					}
					platform++
				}
				seen[role]++
			default:
				t.Fatalf("%s is %T", role, v)
			}
		}
		if platform == 0 {
			t.Fatalf("e-mail %s involves no platform user", k)
		}
		for _, u := range append(from, mapValues(users["to"])...) {
			um := u.(map[string]any)
			switch um["phone"] {
			case nil:
				seen["phone-null"]++
			case "":
				seen["phone-empty"]++
			}
			if um["avatar"] == BlankAvatarURL {
				seen["blank-avatar"]++
			}
		}
		if strings.HasPrefix(email["subject"].(string), "Re: ") {
			seen["reply"]++
		}
	}
	for _, want := range []string{"no-attachments", "attachments", "no-brand", "project", "outsider-sender",
		"empty-cc", "cc", "bcc", "empty-bcc", "phone-null", "phone-empty", "blank-avatar", "reply"} {
		if seen[want] == 0 {
			t.Errorf("no %s in 1000 e-mails (%v)", want, seen)
		}
	}
}

func mapValues(v any) []any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []any
	for _, x := range m {
		out = append(out, x)
	}
	return out
}

func TestCommsWithMessage(t *testing.T) {
	s := startSmall(t, nil)
	for _, wm := range []string{"1", "true"} {
		p := decodeComms(t, commsPost(t, s, `{"user_id":[1,2,3],"per_page":5,"with_message":"`+wm+`"}`).body)
		for _, k := range p.keys {
			msg, ok := p.rows[k]["email"].(map[string]any)["message"].(string)
			if !ok || !strings.HasPrefix(msg, "Bună ziua,") {
				t.Fatalf("with_message %s: message %v", wm, p.rows[k]["email"].(map[string]any)["message"])
			}
		}
	}
	for _, wm := range []string{"0", "false"} {
		p := decodeComms(t, commsPost(t, s, `{"user_id":[1,2,3],"per_page":5,"with_message":"`+wm+`"}`).body)
		for _, k := range p.keys {
			if m := p.rows[k]["email"].(map[string]any)["message"]; m != nil {
				t.Fatalf("with_message %s: message %v", wm, m)
			}
		}
	}
}

// involves reports whether platform user u takes part in a decoded record,
// as a recipient (keyed) or as the sender (matched by address).
func involves(s *Server, rec map[string]any, u int) bool {
	users := rec["users"].(map[string]any)
	for _, role := range []string{"to", "cc", "bcc"} {
		if m, ok := users[role].(map[string]any); ok {
			if _, ok := m[strconv.Itoa(u)]; ok {
				return true
			}
		}
	}
	for _, f := range users["from"].([]any) {
		if f.(map[string]any)["email"] == s.mail.people[u].email {
			return true
		}
	}
	return false
}

func TestCommsUserFilter(t *testing.T) {
	s := startSmall(t, nil)
	all := decodeComms(t, commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`,"per_page":1000}`).body).total
	if all != s.opts.Emails {
		t.Fatalf("all users match %d, want %d", all, s.opts.Emails)
	}
	sum := 0
	for _, u := range []int{3, 17} {
		p := decodeComms(t, commsPost(t, s, `{"user_id":[`+strconv.Itoa(u)+`],"per_page":1000}`).body)
		if p.total == 0 || p.total >= all {
			t.Fatalf("user %d matches %d of %d", u, p.total, all)
		}
		for _, k := range p.keys {
			if !involves(s, p.rows[k], u) {
				t.Fatalf("record %s does not involve user %d", k, u)
			}
		}
		sum += p.total
	}
	both := decodeComms(t, commsPost(t, s, `{"user_id":[3,17,17,"3"],"per_page":1000}`).body)
	if both.total > sum || both.total < sum/2 {
		t.Fatalf("users 3 and 17 match %d, separately %d", both.total, sum)
	}
	if p := decodeComms(t, commsPost(t, s, `{"user_id":[0,100000,-4]}`).body); p.total != 0 || string(p.rawRows) != "{}" || p.lastPage != 0 {
		t.Fatalf("unknown users: %+v", p)
	}
}

func TestCommsDateFilter(t *testing.T) {
	s := startSmall(t, nil)
	users := allUsers(s.opts.Users)
	var total int
	day := s.Now().AddDate(0, 0, -30)
	for k := 0; k < 3; k++ {
		d := day.AddDate(0, 0, k).Format("2006-01-02")
		p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"date_start":"`+d+`","date_end":"`+d+`","per_page":1000}`).body)
		for _, key := range p.keys {
			if at := p.rows[key]["email"].(map[string]any)["email_at"].(string); at[:10] != d {
				t.Fatalf("date %s: record at %s", d, at)
			}
		}
		total += p.total
	}
	from, to := day.Format("2006-01-02"), day.AddDate(0, 0, 2).Format("2006-01-02")
	p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"date_start":"`+from+`","date_end":"`+to+`","per_page":1000}`).body)
	if p.total != total || total == 0 {
		t.Fatalf("three days %d, day by day %d", p.total, total)
	}
	open := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"date_start":"`+from+`"}`).body).total
	before := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"date_end":"`+day.AddDate(0, 0, -1).Format("2006-01-02")+`"}`).body).total
	if open+before != s.opts.Emails {
		t.Fatalf("open ranges %d + %d != %d", open, before, s.opts.Emails)
	}
}

func TestCommsBrandAndDomainFilter(t *testing.T) {
	s := startSmall(t, nil)
	users := allUsers(s.opts.Users)
	b := s.data.brands[2]
	id := strconv.FormatInt(b.id, 10)
	var totals []int
	for _, u := range []string{BrandURLPrefix + id, BrandURLPrefix + id + "/", BrandURLPrefix + id + "/projects?tab=2", "http://other.example/app/brands/" + id} {
		p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"-brand_url":"`+u+`","per_page":1000}`).body)
		if p.total == 0 {
			t.Fatalf("%s matches nothing", u)
		}
		for _, k := range p.keys {
			if got := p.rows[k]["email"].(map[string]any)["brand_id"]; got != id {
				t.Fatalf("%s: record %s has brand %v", u, k, got)
			}
		}
		totals = append(totals, p.total)
	}
	if slices.Min(totals) != slices.Max(totals) {
		t.Fatalf("brand address forms disagree: %v", totals)
	}
	if p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"-brand_url":""}`).body); p.total != s.opts.Emails {
		t.Fatalf("empty -brand_url filtered: %d", p.total)
	}
	if p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"-brand_url":"`+BrandURLPrefix+`999999"}`).body); p.total != 0 {
		t.Fatalf("unknown brand matched %d", p.total)
	}
	if p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"domain_id":2}`).body); p.total != 0 || string(p.rawRows) != "{}" {
		t.Fatalf("other domain matched %d", p.total)
	}
	if p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"domain_id":1}`).body); p.total != s.opts.Emails {
		t.Fatalf("own domain matched %d", p.total)
	}
}

func TestCommsPerPageCapAndDefault(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.MaxPerPage = 250 })
	users := allUsers(s.opts.Users)
	p := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"per_page":1000,"page":2}`).body)
	if p.perPage != 250 || len(p.keys) != 250 || p.lastPage != (s.opts.Emails+249)/250 {
		t.Fatalf("capped page: per_page %d rows %d last %d", p.perPage, len(p.keys), p.lastPage)
	}
	first := decodeComms(t, commsPost(t, s, `{"user_id":`+users+`,"per_page":250,"page":1}`).body)
	if a, b := mustInt(t, first.keys[249]), mustInt(t, p.keys[0]); a >= b {
		t.Fatalf("page 2 does not follow page 1: %s then %s", first.keys[249], p.keys[0])
	}
	if d := decodeComms(t, commsPost(t, s, `{"user_id":[1]}`).body); d.perPage != defaultCommsPerPage {
		t.Fatalf("default per_page %d", d.perPage)
	}
}

func TestOutsidersLookRight(t *testing.T) {
	s := startSmall(t, nil)
	var mixedCase bool
	for _, o := range s.mail.outsiders {
		var v map[string]any
		if err := json.Unmarshal(o.json, &v); err != nil {
			t.Fatal(err)
		}
		if v["last_name"] != nil || !strings.HasSuffix(v["full_name"].(string), " ") || v["status"] != "Activ" {
			t.Fatalf("outsider %s", o.json)
		}
		if p := v["phone"]; p != nil && p != "" {
			t.Fatalf("outsider phone %v", p)
		}
		if o.email != strings.ToLower(o.email) {
			mixedCase = true
		}
	}
	if !mixedCase {
		t.Error("no outsider address with capitals")
	}
	var diacritics bool
	for _, p := range s.mail.people[1:] {
		if strings.ContainsAny(p.full, "ăâîșțĂÂÎȘȚ") {
			diacritics = true
		}
	}
	if !diacritics {
		t.Error("no platform user name with diacritics")
	}
}

func mustInt(t testing.TB, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
