package stream

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// EndpointCommunications is the communications endpoint's name.
const EndpointCommunications = "communications"

// RejectCommunications is the reject stream of communication records.
const RejectCommunications = "communications"

// Participant roles of email_recipients.role, in the order of users.*.
const (
	RoleFrom = "from"
	RoleTo   = "to"
	RoleCC   = "cc"
	RoleBCC  = "bcc"
)

var commsOnly = []string{EndpointCommunications}

// participantPaths are the paths of each role's participants in a record,
// in role order (Table.Sources).
var participantPaths = []string{"users.from", "users.to", "users.cc", "users.bcc"}

// communications: the e-mails of the configured users, by date window —
// incrementally from the watermark minus the lookback, a backfill walking
// back in time, a rolling re-read and a verification that re-counts past
// days — which the engine's "mail" hooks run. Recipients and users come
// from each record's users object, whose shapes a declaration cannot say:
// the participants hook below lists them.
var communications = &Stream{
	Name: "communications",
	Endpoints: []Endpoint{
		{Name: EndpointCommunications, Path: "/workflow/tools/communications-emails", Paging: PagingWindow, Pagination: windowPaging},
	},
	Main:  "emails",
	Hooks: "mail",
	tables: []*Table{
		{
			// One row per person, folded across appearances: a later known
			// value wins, an unknown one never erases a known one.
			Name: "users", Noun: "participant", Endpoints: commsOnly, Elements: participants,
			Sources: participantPaths, Recurring: true, Merge: true,
			Columns: []Column{
				{Name: "user_key", Derived: DerivedHook, Type: Text, Key: true},
				{Name: "platform_user_id", Derived: DerivedHook, Type: BigInt, Sticky: true},
				{Name: "first_name", Field: "first_name", Type: Text, Trim: true, Sticky: true},
				{Name: "last_name", Field: "last_name", Type: Text, Trim: true, Sticky: true},
				{Name: "full_name", Field: "full_name", Type: Text, Trim: true, Sticky: true},
				{Name: "email", Field: "email", Type: Text, Trim: true, Sticky: true},
				{Name: "phone", Field: "phone", Type: Text, Trim: true, Sticky: true, Sparse: true},
				{Name: "avatar_url", Field: "avatar", Type: Text, Trim: true, Sticky: true},
				{Name: "status", Field: "status", Type: Text, Trim: true, Sticky: true},
			},
		},
		{
			Name: "emails", Noun: "e-mail", Endpoints: commsOnly, ListedKeyWins: true,
			Reject: RejectCommunications, SoftDelete: true,
			Columns: []Column{
				{Name: "record_id", Field: "id", Alternates: []string{"record_id", "email.id", "email.record_id"}, Type: BigInt, Key: true},
				{Name: "type_id", Field: "email.type_id", Type: BigInt},
				{Name: "type_name", Field: "email.type_name", Type: Text, KeepEmpty: true},
				{Name: "brand_id", Field: "email.brand_id", Type: ID},
				{Name: "project_id", Field: "email.project_id", Type: ID},
				{Name: "subject", Field: "email.subject", Type: Text, KeepEmpty: true, Required: true},
				{Name: "message", Field: "email.message", Type: Text, KeepEmpty: true, Sparse: true},
				{Name: "has_attachments", Field: "email.has_attachments", Type: Boolean},
				{Name: "size_bytes", Field: "email.size", Type: BigInt, NonNegative: true},
				{Name: "mailbox_id", Field: "email.mailbox_id", Type: Text},
				{Name: "mailbox_thread", Field: "email.mailbox_thread", Alternates: []string{"email.mailbox_thread_id"}, Type: Text},
				{Name: "email_at", Field: "email.email_at", Type: Timestamptz, Required: true},
				{Name: "raw", Derived: DerivedRecord, Type: JSONB},
			},
			Check: checkEmail,
		},
		{
			// Who sent and received each e-mail: complete per e-mail.
			Name: "email_recipients", Noun: "participant", Parent: "emails", Replace: true,
			Endpoints: commsOnly, Elements: participants,
			Columns: []Column{
				{Name: "record_id", Derived: DerivedParent, Type: BigInt, Key: true},
				{Name: "role", Derived: DerivedHook, Type: Text, Key: true},
				{Name: "user_key", Derived: DerivedHook, Type: Text, Key: true},
			},
		},
	},
}

// checkEmail completes an e-mail row: a positive record id and the mailbox
// columns from provider-specific names ("<provider>_thread",
// "<provider>_thread_id", a string "<provider>_id") when the neutral ones
// are absent.
func checkEmail(rec *View, row Row) error {
	if id, _ := row.Get("record_id").(int64); id <= 0 {
		return fmt.Errorf("record id %d is not a positive number", id)
	}
	email := rec.Object("email")
	if email == nil || (row.Get("mailbox_thread") != nil && row.Get("mailbox_id") != nil) {
		return nil
	}
	var thread, mailbox string
	email.Members(func(k string, v gjson.Result) bool {
		switch {
		case knownEmailField(k):
		case strings.HasSuffix(k, "_thread") || strings.HasSuffix(k, "_thread_id"):
			if thread == "" && (v.Type == gjson.String || v.Type == gjson.Number) {
				thread = scalarText(v)
			}
		case strings.HasSuffix(k, "_id") && v.Type == gjson.String && !knownIDField(k):
			if mailbox == "" {
				mailbox = v.Str
			}
		}
		return true
	})
	if row.Get("mailbox_thread") == nil && thread != "" {
		row.Set("mailbox_thread", CleanText(thread))
	}
	if row.Get("mailbox_id") == nil && mailbox != "" {
		row.Set("mailbox_id", CleanText(mailbox))
	}
	return nil
}

func scalarText(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	return v.Raw
}

func knownEmailField(k string) bool {
	switch k {
	case "type_id", "type_name", "brand_id", "project_id", "subject", "message", "has_attachments", "size",
		"mailbox_id", "mailbox_thread", "email_at", "id", "record_id", "mailbox_thread_id":
		return true
	}
	return false
}

func knownIDField(k string) bool {
	switch k {
	case "user_id", "domain_id", "thread_id", "message_id", "account_id", "workflow_id", "execution_id":
		return true
	}
	return false
}

// participants lists the people of a communication record for
// email_recipients and users: users.from, .to, .cc and .bcc, each an array
// of user objects (or an object keyed "0".."n-1", a PHP encoder's forced
// form of one), an object keyed by platform user id, or a single user
// object ([], {}, null and false: nobody). A person is keyed by the
// lower-cased e-mail address, else by "id:<platform user id>"; one with
// neither, or with a user id that is not a positive number, rejects the
// record, and so does a record without a sender.
func participants(s *Stream, rec *View, scratch *Scratch, yield func(Element)) error {
	var emailCol *Column
	if users, ok := s.Table("users"); ok {
		emailCol, _ = users.Column("email")
	}
	users := rec.Object("users")
	for r, role := range []string{RoleFrom, RoleTo, RoleCC, RoleBCC} {
		i := -1
		err := eachParticipant(users, role, func(raw gjson.Result, key string) error {
			i++
			seen, _ := scratch.Get(raw.Raw)
			u, _ := seen.(*userObject)
			if u == nil {
				u = userObjectOf(emailCol, raw)
				scratch.Put(raw.Raw, u)
			}
			p, err := u.person(key)
			if err != nil {
				return fmt.Errorf("%s participant %d: %w", role, i, err)
			}
			if p.sets[r] == nil {
				p.sets[r] = map[string]any{"role": role, "user_key": p.userKey, "email": p.email, "platform_user_id": p.id}
			}
			yield(Element{View: p.view, Key: key, Same: p, Set: p.sets[r]})
			return nil
		})
		if err != nil {
			return err
		}
		if role == RoleFrom && i < 0 {
			return errors.New("e-mail without sender (empty from)")
		}
	}
	return nil
}

// userObject is what participants works out once per user object text in a
// batch, whatever the key it is met under: a platform user is often listed
// without key as a sender and keyed by user id as a recipient.
type userObject struct {
	view   *View
	email  string    // lower-cased
	err    error     // reading the e-mail failed
	people []*person // one per key it was met under
}

func userObjectOf(emailCol *Column, raw gjson.Result) *userObject {
	u := &userObject{view: viewOf(raw)}
	if emailCol != nil {
		v, err := emailCol.Coerce(u.view.Value(emailCol), "email")
		email, _ := v.(string)
		u.email, u.err = strings.ToLower(email), err
	}
	return u
}

// person is the person of u under key, worked out once (an error is not
// kept: it rejects the record).
func (u *userObject) person(key string) (*person, error) {
	for _, p := range u.people {
		if p.key == key {
			return p, nil
		}
	}
	p, err := u.personOf(key)
	if err != nil {
		return nil, err
	}
	u.people = append(u.people, p)
	return p, nil
}

// person is what participants works out for one user object under one key.
type person struct {
	key     string
	view    *View
	userKey any               // string: boxed once for the Element.Set maps
	email   any               // string, or nil
	id      any               // int64, or nil
	sets    [4]map[string]any // Element.Set per role, made once
}

func (u *userObject) personOf(key string) (*person, error) {
	p := &person{key: key, view: u.view}
	var id int64
	hasID := false
	if key != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(key), 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return nil, fmt.Errorf("platform user id %s does not fit int64", key)
		case err == nil && n <= 0:
			return nil, fmt.Errorf("user id %d is not a positive number", n)
		case err == nil:
			id, hasID = n, true
			p.id = n
		}
	}
	if u.err != nil {
		return nil, u.err
	}
	switch {
	case u.email != "":
		if len(u.email) > MaxKeyBytes {
			return nil, fmt.Errorf("e-mail is %d bytes long, more than the %d a key may have", len(u.email), MaxKeyBytes)
		}
		p.userKey = u.email
		p.email = p.userKey
	case hasID:
		p.userKey = "id:" + strconv.FormatInt(id, 10)
	default:
		return nil, errors.New("neither e-mail nor user id")
	}
	return p, nil
}

// eachParticipant calls fn for each user object of users.<role> (users: the
// record's users object, nil when it has none), with the
// key of a collection keyed by user id ("" otherwise). An object keyed
// "0", "1", … "n-1" in order is a list (a PHP encoder forced to write
// objects: 0 is never a user id), read as the array it stands for. Any
// other object is keyed by user id when it is empty or its first member's
// value is an object (or null); otherwise it is a single user object. The
// list is read in one pass of gjson's ForEach, the first member deciding
// along the way (a first key "0" costs a second pass over the keys).
func eachParticipant(users *View, role string, fn func(p gjson.Result, key string) error) error {
	if users == nil {
		return nil
	}
	v, ok := users.Get(role)
	if !ok || Absent(v) {
		return nil
	}
	array := v.IsArray()
	if !array && !v.IsObject() {
		return fmt.Errorf("users.%s: want an array or an object of users, got %s", role, kind(v))
	}
	var err error
	first, single := true, false
	v.ForEach(func(key, e gjson.Result) bool {
		k := key.Str
		if first && !array {
			first = false
			if array = k == "0" && positional(v); !array {
				if single = !e.IsObject() && e.Type != gjson.Null; single {
					return false
				}
			}
		}
		if array {
			k = ""
		}
		if Absent(e) {
			return true
		}
		if !e.IsObject() {
			err = fmt.Errorf("users.%s: want user objects, got %s", role, kind(e))
			return false
		}
		err = fn(e, k)
		return err == nil
	})
	if single {
		return fn(v, "")
	}
	return err
}

// positional reports whether the object v is keyed "0", "1", … "n-1" in
// order: a list that a PHP encoder told to force objects wrote as one.
func positional(v gjson.Result) bool {
	n := 0
	v.ForEach(func(key, _ gjson.Result) bool {
		if !isIndex(key.Str, n) {
			n = -1
			return false
		}
		n++
		return true
	})
	return n > 0
}

// isIndex reports whether s is the decimal text of n ≥ 0, without sign or
// leading zeros.
func isIndex(s string, n int) bool {
	if s == "" || len(s) > 18 || len(s) > 1 && s[0] == '0' {
		return false
	}
	v, ok := num(s)
	return ok && v == n
}
