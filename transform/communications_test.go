package transform

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

const blankAvatar = "https://platform.example/img/avatar-blank.png"

// Participants shaped like the spec's user objects.
const (
	anaUser = `{"first_name":"Ana-Maria","last_name":"Popescu","full_name":"Ana-Maria Popescu","email":"Ana.Popescu@Agentie.ro",
"phone":"0722 123 456","avatar":"https://platform.example/img/u12.png","status":"Activ"}`
	stefanUser = `{"first_name":"Ștefan","last_name":"Ionescu","full_name":"Ștefan Ionescu","email":"stefan.ionescu@agentie.ro",
"phone":"","avatar":"` + blankAvatar + `","status":"Activ"}`
	// an external sender: null last_name, trailing space, empty phone
	externalUser = `{"first_name":"Ioana","last_name":null,"full_name":"Ioana ","email":"ioana@client-brand.ro","phone":"",
"avatar":"` + blankAvatar + `","status":"Activ"}`
)

// comm renders a record keyed by id; from is an array (no ids), the others
// as given (JSON).
func comm(id int64, subject, at, from, to, cc, bcc string, emailExtra string) string {
	return fmt.Sprintf(`%d|{"email":{"type_id":1,"type_name":"Email","brand_id":"42","project_id":null,"subject":%q,
"message":null,"has_attachments":0,"size":5120,"mailbox_id":"18c2f%d","mailbox_thread":"18c2f000","email_at":%q%s},
"users":{"from":%s,"to":%s,"cc":%s,"bcc":%s}}`, id, subject, id, at, emailExtra, from, or(to), or(cc), or(bcc))
}

func or(s string) string {
	if s == "" {
		return "[]"
	}
	return s
}

func comms(t *testing.T, recs ...string) Batch {
	t.Helper()
	return run(t, declared(t, "communications"), stream.EndpointCommunications, nil, time.Time{}, recs...)
}

func TestCommunicationsRows(t *testing.T) {
	c1 := comm(2701, "Ofertă campanie Crăciun", "2024-11-04T08:15:42.123456Z", "["+anaUser+"]", `{"17":`+stefanUser+`}`, "", "", "")
	c1 = strings.Replace(c1, `"has_attachments":0`, `"has_attachments":1`, 1)
	c2 := comm(2702, "Re: Ofertă campanie Crăciun", "2024-11-04T09:01:00.000001Z", "["+externalUser+"]",
		`{"12":`+anaUser+`,"17":`+stefanUser+`}`, `{"17":`+stefanUser+`}`, "", "")
	c2 = strings.Replace(c2, `"size":5120`, `"size":null`, 1)
	c2 = strings.Replace(c2, `"message":null`, `"message":"Bună ziua,\nvă trimit oferta."`, 1)

	out := comms(t, c1, c2)
	if len(out.Rejects) != 0 {
		t.Fatalf("rejects: %+v", out.Rejects)
	}
	emails := rowsOf(out, "emails")
	if len(emails) != 2 {
		t.Fatalf("emails = %d, want 2", len(emails))
	}
	e1 := emails[0]
	if e1["record_id"] != int64(2701) || e1["subject"] != "Ofertă campanie Crăciun" || e1["has_attachments"] != true ||
		e1["size_bytes"] != int64(5120) || e1["brand_id"] != "42" || e1["project_id"] != nil || e1["mailbox_id"] != "18c2f2701" {
		t.Errorf("email 1 = %+v", e1)
	}
	if got := e1["email_at"].(time.Time).Format(time.RFC3339Nano); got != "2024-11-04T08:15:42.123456Z" {
		t.Errorf("email_at = %s: microseconds lost", got)
	}
	if e2 := emails[1]; e2["size_bytes"] != nil || e2["has_attachments"] != false || e2["message"] != "Bună ziua,\nvă trimit oferta." {
		t.Errorf("email 2 = %+v", e2)
	}
	_, body, _ := strings.Cut(c1, "|")
	if string(e1["raw"].(json.RawMessage)) != body {
		t.Errorf("raw = %s, want the record as received", e1["raw"])
	}

	want := []string{
		"2701 from ana.popescu@agentie.ro",
		"2701 to stefan.ionescu@agentie.ro",
		"2702 from ioana@client-brand.ro",
		"2702 to ana.popescu@agentie.ro",
		"2702 to stefan.ionescu@agentie.ro",
		"2702 cc stefan.ionescu@agentie.ro", // the same person in another role is another row
	}
	recips := rowsOf(out, "email_recipients")
	if len(recips) != len(want) {
		t.Fatalf("recipients = %+v", recips)
	}
	for i, w := range want {
		if got := fmt.Sprintf("%v %v %v", recips[i]["record_id"], recips[i]["role"], recips[i]["user_key"]); got != w {
			t.Errorf("recipient %d = %s, want %s", i, got, w)
		}
	}
	if p := out.Rows("email_recipients").Parents; len(p) != 2 || p[0] != int64(2701) || p[1] != int64(2702) {
		t.Errorf("recipients replaced for %v, want every e-mail of the page", p)
	}

	users := map[string]map[string]any{}
	for _, u := range rowsOf(out, "users") {
		k := u["user_key"].(string)
		if _, dup := users[k]; dup {
			t.Errorf("user %s twice in the batch", k)
		}
		users[k] = u
	}
	if len(users) != 3 {
		t.Fatalf("users = %+v", users)
	}
	a := users["ana.popescu@agentie.ro"]
	if a["platform_user_id"] != int64(12) {
		t.Errorf("ana's platform_user_id = %v: not learned from her keyed appearance", a["platform_user_id"])
	}
	if a["email"] != "ana.popescu@agentie.ro" || a["full_name"] != "Ana-Maria Popescu" || a["phone"] != "0722 123 456" {
		t.Errorf("ana = %+v", a)
	}
	s := users["stefan.ionescu@agentie.ro"]
	if s["phone"] != nil || s["first_name"] != "Ștefan" || s["platform_user_id"] != int64(17) || s["avatar_url"] != blankAvatar || s["status"] != "Activ" {
		t.Errorf("stefan = %+v (phone NULL for \"\")", s)
	}
	if x := users["ioana@client-brand.ro"]; x["full_name"] != "Ioana" || x["last_name"] != nil || x["platform_user_id"] != nil || x["phone"] != nil {
		t.Errorf("external = %+v (full_name must be trimmed, last_name and phone NULL)", x)
	}
}

func TestCommunicationsDuplicatesCollapse(t *testing.T) {
	var page []string
	for i := range 300 {
		page = append(page, comm(int64(5000+i), "Raport săptămânal", "2024-11-05T10:00:00Z", "["+anaUser+"]",
			"["+stefanUser+","+stefanUser+"]", "", "", "")) // listed twice in to
	}
	// The same record twice in a page: the last version wins, rows not doubled.
	page = append(page, comm(5000, "Raport săptămânal (corectat)", "2024-11-05T10:00:00Z", "["+anaUser+"]", "", "["+externalUser+"]", "", ""))
	out := comms(t, page...)
	if out.Len("users") != 3 {
		t.Errorf("users = %d, want 3 (one per person however many e-mails)", out.Len("users"))
	}
	emails := rowsOf(out, "emails")
	if len(emails) != 300 {
		t.Fatalf("emails = %d, want 300", len(emails))
	}
	if emails[0]["record_id"] != int64(5000) || emails[0]["subject"] != "Raport săptămânal (corectat)" {
		t.Errorf("repeated record: %+v, want the last version in first position", emails[0])
	}
	if d := out.Coverage.Duplicates; len(d) != 1 || d["emails"] != 1 {
		t.Errorf("duplicates counted %v, want emails: 1", d)
	}
	// The count survives the spool's JSON and adds up across batches.
	var back Batch
	if b, err := json.Marshal(out); err != nil || json.Unmarshal(b, &back) != nil || back.Coverage.Duplicates["emails"] != 1 {
		t.Fatalf("after JSON: %v (%v)", back.Coverage.Duplicates, err)
	}
	back.Append(out)
	if back.Coverage.Duplicates["emails"] != 2 {
		t.Errorf("appended: %v, want emails: 2", back.Coverage.Duplicates)
	}
	if n := out.Len("email_recipients"); n != 2+299*2 {
		t.Errorf("recipients = %d, want %d (one row per person and role)", n, 2+299*2)
	}
	seen := map[string]bool{}
	for _, r := range rowsOf(out, "email_recipients") {
		k := fmt.Sprint(r["record_id"], r["role"], r["user_key"])
		if seen[k] {
			t.Fatalf("recipient %s twice", k)
		}
		seen[k] = true
	}
}

func TestCommunicationsUserKeys(t *testing.T) {
	tests := []struct {
		name, to, want string
	}{
		{"e-mail lower-cased and trimmed", `[{"email":"  Ana.Popescu@AGENTIE.ro "}]`, "ana.popescu@agentie.ro"},
		{"e-mail wins over the id", `{"9":{"email":"x@y.ro"}}`, "x@y.ro"},
		{"id without e-mail", `{"42":{"full_name":"Fără adresă"}}`, "id:42"},
		{"blank e-mail falls back to the id", `{"7":{"email":"  "}}`, "id:7"},
		{"false e-mail falls back to the id", `{"7":{"email":false}}`, "id:7"},
		{"a single user object", `{"email":"Solo@Y.ro","full_name":"Solo"}`, "solo@y.ro"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := comms(t, comm(1, "s", "2024-01-02T03:04:05Z", "["+anaUser+"]", tt.to, "", "", ""))
			if len(out.Rejects) != 0 {
				t.Fatalf("rejected: %s", out.Rejects[0].Error)
			}
			r := rowsOf(out, "email_recipients")
			if len(r) != 2 || r[1]["user_key"] != tt.want {
				t.Errorf("recipients = %+v, want to %s", r, tt.want)
			}
		})
	}
}

// A PHP encoder told to force objects writes a list of users as an object
// keyed "0", "1", …: in any role it is the list, its members without user
// id (0 is never one), identified by e-mail. An object keyed by real ids
// keeps them; a "0" among other keys is no list, and its member is
// rejected for its id as before.
func TestCommunicationsPositionalRecipients(t *testing.T) {
	tests := []struct {
		name              string
		from, to, cc, bcc string
		want              []string // "role user_key platform_user_id" in order
		reject            string   // part of the reason; "" when accepted
	}{
		{name: "sender keyed 0 (the tester's shape)", from: `{"0":` + externalUser + `}`, to: `{"17":` + stefanUser + `}`,
			want: []string{"from ioana@client-brand.ro <nil>", "to stefan.ionescu@agentie.ro 17"}},
		{name: "every role keyed 0..n-1", from: `{"0":` + anaUser + `}`, to: `{"0":` + stefanUser + `,"1":` + externalUser + `}`,
			cc: `{"0":` + externalUser + `}`, bcc: `{"0":` + anaUser + `}`,
			want: []string{"from ana.popescu@agentie.ro <nil>", "to stefan.ionescu@agentie.ro <nil>", "to ioana@client-brand.ro <nil>",
				"cc ioana@client-brand.ro <nil>", "bcc ana.popescu@agentie.ro <nil>"}},
		{name: "positional beside keyed: the id is learned from the keyed one", from: `{"0":` + anaUser + `}`, to: `{"12":` + anaUser + `}`,
			want: []string{"from ana.popescu@agentie.ro 12", "to ana.popescu@agentie.ro 12"}},
		{name: "a null member of a positional list", from: `[` + anaUser + `]`, to: `{"0":` + stefanUser + `,"1":null}`,
			want: []string{"from ana.popescu@agentie.ro <nil>", "to stefan.ionescu@agentie.ro <nil>"}},
		{name: "ten members, keys to 9", from: `[` + anaUser + `]`, to: tenStefans(),
			want: []string{"from ana.popescu@agentie.ro <nil>", "to stefan.ionescu@agentie.ro <nil>"}},
		{name: "keyed by real ids", from: `[` + anaUser + `]`, to: `{"12":` + anaUser + `,"40":` + stefanUser + `}`,
			want: []string{"from ana.popescu@agentie.ro 12", "to ana.popescu@agentie.ro 12", "to stefan.ionescu@agentie.ro 40"}},
		{name: "a positional member without e-mail", from: `[` + anaUser + `]`, to: `{"0":{"first_name":"Mihai","full_name":"Mihai Stan"}}`,
			reject: "to participant 0: neither e-mail nor user id"},
		{name: "0 among real ids", from: `[` + anaUser + `]`, to: `{"0":` + stefanUser + `,"7":` + externalUser + `}`,
			reject: "to participant 0: user id 0 is not a positive number"},
		{name: "0 after a real id", from: `[` + anaUser + `]`, cc: `{"7":` + externalUser + `,"0":` + stefanUser + `}`,
			reject: "cc participant 1: user id 0 is not a positive number"},
		{name: "0 and 1 out of order", from: `[` + anaUser + `]`, bcc: `{"1":` + externalUser + `,"0":` + stefanUser + `}`,
			reject: "bcc participant 1: user id 0 is not a positive number"},
		{name: "a gap after 0", from: `{"0":` + anaUser + `,"2":` + stefanUser + `}`,
			reject: "from participant 0: user id 0 is not a positive number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := comms(t, comm(31, "Ofertă", "2025-12-27T09:30:00.000000Z", tt.from, tt.to, tt.cc, tt.bcc, ""))
			if tt.reject != "" {
				if len(out.Rejects) != 1 || out.Len("emails") != 0 || !strings.Contains(out.Rejects[0].Error, tt.reject) {
					var errs []string
					for _, r := range out.Rejects {
						errs = append(errs, r.Error)
					}
					t.Fatalf("emails = %d, rejects = %q; want the e-mail rejected saying %q", out.Len("emails"), errs, tt.reject)
				}
				return
			}
			if len(out.Rejects) != 0 {
				t.Fatalf("rejected: %s", out.Rejects[0].Error)
			}
			ids := map[any]any{}
			for _, u := range rowsOf(out, "users") {
				ids[u["user_key"]] = u["platform_user_id"]
			}
			var got []string
			for _, r := range rowsOf(out, "email_recipients") {
				got = append(got, fmt.Sprintf("%v %v %v", r["role"], r["user_key"], ids[r["user_key"]]))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("recipients:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// tenStefans is a positional object of ten members ("0" … "9"): the keys
// past one digit are still read in order.
func tenStefans() string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range 10 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":%s`, i, stefanUser)
	}
	return b.String() + "}"
}

func TestCommunicationsIDOnlyUser(t *testing.T) {
	out := comms(t, comm(1, "s", "2024-01-02T03:04:05Z", "["+anaUser+"]", `{"88":{"first_name":"Mihai","full_name":"Mihai Stan "}}`, "", "", ""))
	users := rowsOf(out, "users")
	if len(out.Rejects) != 0 || len(users) != 2 {
		t.Fatalf("out = %+v %+v", users, out.Rejects)
	}
	if u := users[1]; u["user_key"] != "id:88" || u["email"] != nil || u["platform_user_id"] != int64(88) || u["full_name"] != "Mihai Stan" {
		t.Errorf("user = %+v", u)
	}
}

func TestCommunicationsRejects(t *testing.T) {
	good := func(id int64) string {
		return comm(id, "ok", "2024-03-01T12:00:00.5Z", "["+anaUser+"]", `{"17":`+stefanUser+`}`, "", "", "")
	}
	tests := []struct {
		name    string
		mutate  func(string) string
		key     string // "" means a payload hash
		errPart string
	}{
		{"negative record id", func(c string) string { return "-7" + c[1:] }, "-7", "record id"},
		{"missing subject", func(c string) string { return strings.Replace(c, `"subject":"ok",`, "", 1) }, "7", "subject"},
		{"no date", func(c string) string { return strings.Replace(c, `"2024-03-01T12:00:00.5Z"`, `null`, 1) }, "7", "email_at"},
		{"negative size", func(c string) string { return strings.Replace(c, `"size":5120`, `"size":-1`, 1) }, "7", "negative email.size -1"},
		{"no sender", func(c string) string { return strings.Replace(c, `"from":[`+anaUser+`]`, `"from":[]`, 1) }, "7", "sender"},
		{"participant with neither e-mail nor id", func(c string) string {
			return strings.Replace(c, `"cc":[]`, `"cc":[{"first_name":"Anonim","full_name":"Anonim"}]`, 1)
		}, "7", "cc participant 0: neither e-mail nor user id"},
		{"key too long for an index", func(c string) string {
			return strings.Replace(c, `"brand_id":"42"`, `"brand_id":"`+strings.Repeat("9", 3000)+`"`, 1)
		}, "7", "brand_id is 3000 bytes long"},
		{"e-mail too long for an index", func(c string) string {
			return strings.Replace(c, `"bcc":[]`, `"bcc":[{"email":"`+strings.Repeat("x", 2990)+`@agentie.ro"}]`, 1)
		}, "7", "bcc participant 0: e-mail is 3001 bytes"},
		{"non-positive user id", func(c string) string {
			return strings.Replace(c, `{"17":`, `{"-3":`, 1)
		}, "7", "to participant 0: user id -3 is not a positive number"},
		{"user id 0 among real ids", func(c string) string {
			return strings.Replace(c, `{"17":`, `{"17":`+anaUser+`,"0":`, 1)
		}, "7", "to participant 1: user id 0 is not a positive number"},
		{"a wrong type", func(c string) string { return strings.Replace(c, `"size":5120`, `"size":"big"`, 1) }, "7", "email.size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := tt.mutate(good(7))
			out := comms(t, good(6), bad, good(8))
			emails := rowsOf(out, "emails")
			if len(emails) != 2 || emails[0]["record_id"] != int64(6) || emails[1]["record_id"] != int64(8) {
				t.Errorf("the rest of the page must proceed: emails = %+v", emails)
			}
			for _, r := range rowsOf(out, "email_recipients") {
				if r["record_id"] == int64(7) {
					t.Errorf("recipient of the rejected record: %+v", r)
				}
			}
			if len(out.Rejects) != 1 {
				t.Fatalf("rejects = %+v", out.Rejects)
			}
			r := out.Rejects[0]
			if r.Stream != stream.RejectCommunications || !strings.Contains(r.Error, tt.errPart) {
				t.Errorf("reject = %+v, want stream communications and an error about %q", r, tt.errPart)
			}
			if tt.key != "" && r.Key != tt.key {
				t.Errorf("key = %q, want %q", r.Key, tt.key)
			}
			if _, body, _ := strings.Cut(bad, "|"); string(r.Payload) != body {
				t.Errorf("payload = %s, want the record as received", r.Payload)
			}
		})
	}
}

func TestCommunicationsUnstorableText(t *testing.T) {
	c := comm(9, "nul", "2024-03-01T12:00:00Z", "["+anaUser+"]", "", "", "", `,"x":"\ud800"`)
	c = strings.Replace(c, `"subject":"nul"`, `"subject":"nul\u0000byte"`, 1)
	e := rowsOf(comms(t, c), "emails")[0]
	if e["subject"] != "nul\uFFFDbyte" {
		t.Errorf("subject = %q, want NUL replaced", e["subject"])
	}
	raw := e["raw"].(json.RawMessage)
	if strings.Contains(string(raw), `\u0000`) || strings.Contains(string(raw), `\ud800`) || !json.Valid(raw) {
		t.Errorf("raw = %s: PostgreSQL cannot store it", raw)
	}
}

// A body shaped like the spec's listing, through extract's decoder: to as a
// keyed object, cc and bcc as [], has_attachments 1 and null, phone "" and
// null, a trailing-space full_name and a null last_name.
func TestCommunicationsFromSpecShapedBody(t *testing.T) {
	body := `{"data":{"rows":{
"2701":{"email":{"type_id":1,"type_name":"Email","brand_id":42,"project_id":null,"subject":"Ofertă campanie Crăciun","message":null,"has_attachments":1,"size":48213,"mailbox_id":"18c2f1","mailbox_thread":"18c2f0","email_at":"2024-11-04T08:15:42.123456Z"},
 "users":{"from":[{"first_name":"Ioana","last_name":null,"full_name":"Ioana ","email":"Ioana@Client-Brand.ro","phone":"","avatar":"https://platform.example/blank.png","status":"Activ"}],
  "to":{"17":{"first_name":"Ștefan","last_name":"Ionescu","full_name":"Ștefan Ionescu","email":"stefan.ionescu@agentie.ro","phone":null,"avatar":"https://platform.example/blank.png","status":"Activ"}},
  "cc":[],"bcc":[]}},
"2702":{"email":{"type_id":1,"type_name":"Email","brand_id":42,"project_id":7,"subject":"Re: Ofertă","message":null,"has_attachments":null,"size":1200,"mailbox_id":"18c2f2","mailbox_thread":"18c2f0","email_at":"2024-11-04T09:00:00.000001Z"},
 "users":{"from":[{"first_name":"Ștefan","last_name":"Ionescu","full_name":"Ștefan Ionescu","email":"stefan.ionescu@agentie.ro","phone":"","avatar":"https://platform.example/blank.png","status":"Activ"}],
  "to":[],"cc":[],"bcc":{"17":{"first_name":"Ștefan","last_name":"Ionescu","full_name":"Ștefan Ionescu","email":"stefan.ionescu@agentie.ro","phone":"","avatar":"https://platform.example/blank.png","status":"Activ"}}}}
},"total":2,"per_page":20,"current_page":1,"last_page":1}}`
	page, err := extract.SplitPage([]byte(body))
	if err != nil {
		t.Fatalf("split: %v", err)
	}
	var recs []string
	for _, c := range page.Records {
		recs = append(recs, fmt.Sprintf("%s|%s", c.Key, c.Raw))
	}
	out := comms(t, recs...)
	out.Rejects = append(out.Rejects, RecordErrors(stream.RejectCommunications, page.Rejects)...)
	if len(out.Rejects) != 0 || out.Len("emails") != 2 || out.Len("email_recipients") != 4 || out.Len("users") != 2 {
		t.Fatalf("out = %+v", out)
	}
	emails := rowsOf(out, "emails")
	if emails[0]["has_attachments"] != true || emails[1]["has_attachments"] != false {
		t.Errorf("has_attachments = %v, %v; want true (1), false (null)", emails[0]["has_attachments"], emails[1]["has_attachments"])
	}
	if emails[0]["brand_id"] != "42" || emails[0]["project_id"] != nil || emails[1]["project_id"] != "7" {
		t.Errorf("brand/project ids: %+v %+v", emails[0], emails[1])
	}
	if got := emails[1]["email_at"].(time.Time).Format(time.RFC3339Nano); got != "2024-11-04T09:00:00.000001Z" {
		t.Errorf("email_at = %s", got)
	}
	users := rowsOf(out, "users")
	ioana, stefan := users[0], users[1]
	if ioana["user_key"] != "ioana@client-brand.ro" || ioana["full_name"] != "Ioana" || ioana["last_name"] != nil || ioana["phone"] != nil {
		t.Errorf("ioana = %+v", ioana)
	}
	// Ștefan sends 2702 (no id) and receives 2701 and 2702 keyed 17: one row with the id.
	if stefan["user_key"] != "stefan.ionescu@agentie.ro" || stefan["platform_user_id"] != int64(17) || stefan["phone"] != nil {
		t.Errorf("stefan = %+v", stefan)
	}
}

// The mailbox columns take provider-specific names when the neutral ones
// are absent.
func TestCommunicationsMailboxNames(t *testing.T) {
	c := comm(3, "s", "2024-01-02T03:04:05Z", "["+anaUser+"]", "", "", "", `,"gmail_thread_id":"t-9","gmail_id":"m-9","domain_id":"d"`)
	c = strings.Replace(c, `"mailbox_id":"18c2f3","mailbox_thread":"18c2f000",`, ``, 1)
	e := rowsOf(comms(t, c), "emails")[0]
	if e["mailbox_thread"] != "t-9" || e["mailbox_id"] != "m-9" {
		t.Errorf("mailbox = %v / %v, want the provider's", e["mailbox_id"], e["mailbox_thread"])
	}
}
