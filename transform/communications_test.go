package transform

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
)

func ptr[T any](v T) *T { return &v }

const blankAvatar = "https://platform.example/img/avatar-blank.png"

// Participants shaped like the spec's user objects.
func ana(id *int64) extract.Participant { // a platform user; the from list carries no id
	return extract.Participant{PlatformUserID: id, FirstName: "Ana-Maria", LastName: ptr("Popescu"),
		FullName: "Ana-Maria Popescu", Email: "Ana.Popescu@Agentie.ro", Phone: ptr("0722 123 456"),
		Avatar: "https://platform.example/img/u12.png", Status: "Activ"}
}

func stefan(id *int64) extract.Participant {
	return extract.Participant{PlatformUserID: id, FirstName: "Ștefan", LastName: ptr("Ionescu"),
		FullName: "Ștefan Ionescu", Email: "stefan.ionescu@agentie.ro", Phone: ptr(""), Avatar: blankAvatar,
		Status: "Activ"}
}

func external() extract.Participant { // an external sender: null last_name, trailing space, empty phone
	return extract.Participant{FirstName: "Ioana", LastName: nil, FullName: "Ioana ",
		Email: "ioana@client-brand.ro", Phone: ptr(""), Avatar: blankAvatar, Status: "Activ"}
}

func comm(id int64, subject string, at string, from []extract.Participant, to, cc, bcc []extract.Participant) extract.Communication {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		panic(err)
	}
	raw, _ := json.Marshal(map[string]any{"email": map[string]any{"subject": subject, "email_at": at}})
	return extract.Communication{
		RecordID: id,
		Email: extract.EmailFields{
			TypeID: ptr(int64(1)), TypeName: ptr("Email"), BrandID: "42", ProjectID: "", Subject: &subject,
			HasAttachments: false, Size: ptr(int64(5120)), MailboxID: "18c2f" + strconv.FormatInt(id, 10),
			MailboxThread: "18c2f000", EmailAt: t,
		},
		Users: extract.Participants{From: from, To: to, CC: cc, BCC: bcc},
		Raw:   raw,
	}
}

func TestCommunicationsRows(t *testing.T) {
	c1 := comm(2701, "Ofertă campanie Crăciun", "2024-11-04T08:15:42.123456Z",
		[]extract.Participant{ana(nil)}, []extract.Participant{stefan(ptr(int64(17)))}, nil, nil)
	c1.Email.HasAttachments = true
	c2 := comm(2702, "Re: Ofertă campanie Crăciun", "2024-11-04T09:01:00.000001Z",
		[]extract.Participant{external()},
		[]extract.Participant{ana(ptr(int64(12))), stefan(ptr(int64(17)))},
		[]extract.Participant{stefan(ptr(int64(17)))}, nil)
	c2.Email.Size = nil
	c2.Email.Message = ptr("Bună ziua,\nvă trimit oferta.")

	out := Communications([]extract.Communication{c1, c2})
	if len(out.Rejects) != 0 {
		t.Fatalf("rejects: %+v", out.Rejects)
	}
	if len(out.Emails) != 2 {
		t.Fatalf("emails = %d, want 2", len(out.Emails))
	}
	e1 := out.Emails[0]
	if e1.RecordID != 2701 || e1.Subject != "Ofertă campanie Crăciun" || !e1.HasAttachments ||
		*e1.SizeBytes != 5120 || *e1.BrandID != "42" || e1.ProjectID != nil || *e1.MailboxID != "18c2f2701" {
		t.Errorf("email 1 = %+v", e1)
	}
	if got := e1.EmailAt.Format(time.RFC3339Nano); got != "2024-11-04T08:15:42.123456Z" {
		t.Errorf("email_at = %s: microseconds lost", got)
	}
	if out.Emails[1].SizeBytes != nil || out.Emails[1].HasAttachments || *out.Emails[1].Message != "Bună ziua,\nvă trimit oferta." {
		t.Errorf("email 2 = %+v", out.Emails[1])
	}
	if string(out.Emails[0].Raw) != string(c1.Raw) {
		t.Errorf("raw = %s, want the record as received", out.Emails[0].Raw)
	}

	wantRecipients := []EmailRecipient{
		{2701, RoleFrom, "ana.popescu@agentie.ro"},
		{2701, RoleTo, "stefan.ionescu@agentie.ro"},
		{2702, RoleFrom, "ioana@client-brand.ro"},
		{2702, RoleTo, "ana.popescu@agentie.ro"},
		{2702, RoleTo, "stefan.ionescu@agentie.ro"},
		{2702, RoleCC, "stefan.ionescu@agentie.ro"}, // the same person in another role is another row
	}
	if len(out.EmailRecipients) != len(wantRecipients) {
		t.Fatalf("recipients = %+v", out.EmailRecipients)
	}
	for i, w := range wantRecipients {
		if out.EmailRecipients[i] != w {
			t.Errorf("recipient %d = %+v, want %+v", i, out.EmailRecipients[i], w)
		}
	}

	users := map[string]User{}
	for _, u := range out.Users {
		if _, dup := users[u.UserKey]; dup {
			t.Errorf("user %s twice in the batch", u.UserKey)
		}
		users[u.UserKey] = u
	}
	if len(users) != 3 {
		t.Fatalf("users = %+v", out.Users)
	}
	a := users["ana.popescu@agentie.ro"]
	if a.PlatformUserID == nil || *a.PlatformUserID != 12 {
		t.Errorf("ana's platform_user_id = %v: not learned from her keyed appearance", a.PlatformUserID)
	}
	if *a.Email != "ana.popescu@agentie.ro" || *a.FullName != "Ana-Maria Popescu" || *a.Phone != "0722 123 456" {
		t.Errorf("ana = %+v", a)
	}
	s := users["stefan.ionescu@agentie.ro"]
	if s.Phone != nil {
		t.Errorf("stefan's phone = %q, want NULL for \"\"", *s.Phone)
	}
	if *s.FirstName != "Ștefan" || *s.PlatformUserID != 17 || *s.AvatarURL != blankAvatar || *s.Status != "Activ" {
		t.Errorf("stefan = %+v", s)
	}
	x := users["ioana@client-brand.ro"]
	if *x.FullName != "Ioana" || x.LastName != nil || x.PlatformUserID != nil || x.Phone != nil {
		t.Errorf("external = %+v (full_name must be trimmed, last_name and phone NULL)", x)
	}
}

func TestCommunicationsDuplicatesCollapse(t *testing.T) {
	var page []extract.Communication
	for i := range 300 {
		page = append(page, comm(int64(5000+i), "Raport săptămânal", "2024-11-05T10:00:00Z",
			[]extract.Participant{ana(nil)},
			[]extract.Participant{stefan(ptr(int64(17))), stefan(ptr(int64(17)))}, // listed twice in to
			nil, nil))
	}
	// The same record twice in a page: the last version wins, rows not doubled.
	again := comm(5000, "Raport săptămânal (corectat)", "2024-11-05T10:00:00Z",
		[]extract.Participant{ana(nil)}, nil, []extract.Participant{external()}, nil)
	page = append(page, again)

	out := Communications(page)
	if len(out.Users) != 3 {
		t.Errorf("users = %d, want 3 (one per person however many e-mails)", len(out.Users))
	}
	if len(out.Emails) != 300 {
		t.Fatalf("emails = %d, want 300", len(out.Emails))
	}
	if out.Emails[0].RecordID != 5000 || out.Emails[0].Subject != "Raport săptămânal (corectat)" {
		t.Errorf("repeated record: %+v, want the last version in first position", out.Emails[0])
	}
	if len(out.EmailRecipients) != 2+299*2 {
		t.Errorf("recipients = %d, want %d (one row per person and role)", len(out.EmailRecipients), 2+299*2)
	}
	seen := map[EmailRecipient]bool{}
	for _, r := range out.EmailRecipients {
		if seen[r] {
			t.Fatalf("recipient %+v twice", r)
		}
		seen[r] = true
	}
}

func TestCommunicationsUserKeys(t *testing.T) {
	tests := []struct {
		name string
		p    extract.Participant
		want string
	}{
		{"e-mail lower-cased and trimmed", extract.Participant{Email: "  Ana.Popescu@AGENTIE.ro "}, "ana.popescu@agentie.ro"},
		{"e-mail wins over the id", extract.Participant{Email: "x@y.ro", PlatformUserID: ptr(int64(9))}, "x@y.ro"},
		{"id without e-mail", extract.Participant{PlatformUserID: ptr(int64(42))}, "id:42"},
		{"blank e-mail falls back to the id", extract.Participant{Email: "  ", PlatformUserID: ptr(int64(7))}, "id:7"},
		{"neither", extract.Participant{FullName: "Nobody"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UserKey(tt.p); got != tt.want {
				t.Errorf("UserKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCommunicationsIDOnlyUser(t *testing.T) {
	noMail := extract.Participant{PlatformUserID: ptr(int64(88)), FirstName: "Mihai", FullName: "Mihai Stan "}
	out := Communications([]extract.Communication{comm(1, "s", "2024-01-02T03:04:05Z",
		[]extract.Participant{ana(nil)}, []extract.Participant{noMail}, nil, nil)})
	if len(out.Rejects) != 0 || len(out.Users) != 2 {
		t.Fatalf("out = %+v", out)
	}
	u := out.Users[1]
	if u.UserKey != "id:88" || u.Email != nil || *u.PlatformUserID != 88 || *u.FullName != "Mihai Stan" {
		t.Errorf("user = %+v", u)
	}
}

func TestCommunicationsRejects(t *testing.T) {
	good := func(id int64) extract.Communication {
		return comm(id, "ok", "2024-03-01T12:00:00.5Z", []extract.Participant{ana(nil)},
			[]extract.Participant{stefan(ptr(int64(17)))}, nil, nil)
	}
	tests := []struct {
		name    string
		mutate  func(c *extract.Communication)
		key     string // "" means a payload hash
		errPart string
	}{
		{"missing record id", func(c *extract.Communication) { c.RecordID = 0 }, "", "record id"},
		{"missing subject", func(c *extract.Communication) { c.Email.Subject = nil }, "7", "subject"},
		{"zero date", func(c *extract.Communication) { c.Email.EmailAt = time.Time{} }, "7", "email_at"},
		{"negative size", func(c *extract.Communication) { c.Email.Size = ptr(int64(-1)) }, "7", "negative size"},
		{"no sender", func(c *extract.Communication) { c.Users.From = nil }, "7", "sender"},
		{"participant with neither e-mail nor id", func(c *extract.Communication) {
			c.Users.CC = []extract.Participant{{FirstName: "Anonim", FullName: "Anonim"}}
		}, "7", "cc participant 0: neither e-mail nor user id"},
		{"key too long for an index", func(c *extract.Communication) {
			c.Email.BrandID = extract.ID(strings.Repeat("9", 3000))
		}, "7", "brand_id is 3000 bytes long"},
		{"e-mail too long for an index", func(c *extract.Communication) {
			c.Users.BCC = []extract.Participant{{Email: strings.Repeat("x", 2990) + "@agentie.ro"}}
		}, "7", "bcc participant 0: e-mail is 3001 bytes"},
		{"non-positive user id", func(c *extract.Communication) {
			c.Users.To = []extract.Participant{{PlatformUserID: ptr(int64(0)), FirstName: "Zero"}}
		}, "7", "to participant 0: user id 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := good(7)
			tt.mutate(&bad)
			out := Communications([]extract.Communication{good(6), bad, good(8)})
			if len(out.Emails) != 2 || out.Emails[0].RecordID != 6 || out.Emails[1].RecordID != 8 {
				t.Errorf("the rest of the page must proceed: emails = %+v", out.Emails)
			}
			for _, r := range out.EmailRecipients {
				if r.RecordID == 7 {
					t.Errorf("recipient of the rejected record: %+v", r)
				}
			}
			if len(out.Rejects) != 1 {
				t.Fatalf("rejects = %+v", out.Rejects)
			}
			r := out.Rejects[0]
			if r.Stream != StreamCommunications || !strings.Contains(r.Error, tt.errPart) {
				t.Errorf("reject = %+v, want stream communications and an error about %q", r, tt.errPart)
			}
			if tt.key != "" && r.Key != tt.key {
				t.Errorf("key = %q, want %q", r.Key, tt.key)
			}
			if tt.key == "" && !strings.HasPrefix(r.Key, "sha256:") {
				t.Errorf("key = %q, want a payload hash", r.Key)
			}
			if string(r.Payload) != string(bad.Raw) {
				t.Errorf("payload = %s, want the record as received", r.Payload)
			}
		})
	}
}

func TestCommunicationsUnstorableText(t *testing.T) {
	c := comm(9, "nul\x00byte", "2024-03-01T12:00:00Z", []extract.Participant{ana(nil)}, nil, nil, nil)
	c.Raw = json.RawMessage(`{"email":{"subject":"nul\u0000byte","x":"\ud800"}}`)
	out := Communications([]extract.Communication{c})
	e := out.Emails[0]
	if strings.ContainsRune(e.Subject, 0) || e.Subject != "nul\uFFFDbyte" {
		t.Errorf("subject = %q, want NUL replaced", e.Subject)
	}
	if strings.Contains(string(e.Raw), `\u0000`) || strings.Contains(string(e.Raw), `\ud800`) || !json.Valid(e.Raw) {
		t.Errorf("raw = %s: PostgreSQL cannot store it", e.Raw)
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
	page, err := extract.DecodeCommunications([]byte(body))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	out := Communications(page.Records)
	out.Rejects = append(out.Rejects, RecordErrors(StreamCommunications, page.Rejects)...)
	if len(out.Rejects) != 0 || len(out.Emails) != 2 || len(out.EmailRecipients) != 4 || len(out.Users) != 2 {
		t.Fatalf("out = %+v", out)
	}
	if !out.Emails[0].HasAttachments || out.Emails[1].HasAttachments {
		t.Errorf("has_attachments = %v, %v; want true (1), false (null)", out.Emails[0].HasAttachments, out.Emails[1].HasAttachments)
	}
	if *out.Emails[0].BrandID != "42" || out.Emails[0].ProjectID != nil || *out.Emails[1].ProjectID != "7" {
		t.Errorf("brand/project ids: %+v %+v", out.Emails[0], out.Emails[1])
	}
	if got := out.Emails[1].EmailAt.Format(time.RFC3339Nano); got != "2024-11-04T09:00:00.000001Z" {
		t.Errorf("email_at = %s", got)
	}
	ioana, stefan := out.Users[0], out.Users[1]
	if ioana.UserKey != "ioana@client-brand.ro" || *ioana.FullName != "Ioana" || ioana.LastName != nil || ioana.Phone != nil {
		t.Errorf("ioana = %+v", ioana)
	}
	// Ștefan sends 2702 (no id) and receives 2701 and 2702 keyed 17: one row with the id.
	if stefan.UserKey != "stefan.ionescu@agentie.ro" || stefan.PlatformUserID == nil || *stefan.PlatformUserID != 17 || stefan.Phone != nil {
		t.Errorf("stefan = %+v", stefan)
	}
}
