package oracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Comms builds the rows of communications records: emails,
// email_recipients, users and the rejects of bad records. Add records in
// the truth's order; a person's attributes are the last known ones.
type Comms struct {
	// Emails, Recipients and Rejects are the rows of emails,
	// email_recipients and rejected_records so far (Columns' layout).
	Emails     [][]any
	Recipients [][]any
	Rejects    [][]any
	users      map[string][]any
	userOrder  []string
}

// NewComms returns an empty Comms.
func NewComms() *Comms { return &Comms{users: map[string][]any{}} }

// Users returns the users rows so far, one per user_key, in first-seen order.
func (c *Comms) Users() [][]any {
	out := make([][]any, len(c.userOrder))
	for i, k := range c.userOrder {
		out[i] = c.users[k]
	}
	return out
}

// Roles of email_recipients, in the order the record lists them.
var roles = []string{"from", "to", "cc", "bcc"}

// Add adds the rows of one communications line of the truth.
func (c *Comms) Add(l Line) error {
	if l.Bad {
		c.Rejects = append(c.Rejects, []any{"communications", l.Key, rawJSON(l.Record)})
		return nil
	}
	if err := c.add(l); err != nil {
		return fmt.Errorf("truth communication %s: %v: %w", l.Key, err, ErrMalformedTruth)
	}
	return nil
}

// person is one participant: its user_key and its users row.
type person struct {
	key string
	row []any
}

func (c *Comms) add(l Line) error {
	id, err := strconv.ParseInt(l.Key, 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("record id %q is not a positive number", l.Key)
	}
	rec, err := objectOf(l.Record)
	if err != nil {
		return err
	}
	e, err := rec.child("email")
	if err != nil || e == nil {
		return fmt.Errorf("no email object (%v)", err)
	}
	var f fields
	subject := f.v(e.kept("subject"))
	at := f.v(e.instant("email_at"))
	size := f.v(e.integer("size"))
	attachments := f.v(e.flag("has_attachments"))
	switch {
	case f.err != nil:
		return f.err
	case subject == nil:
		return fmt.Errorf("no subject")
	case at == nil:
		return fmt.Errorf("no email_at")
	case size != nil && size.(int64) < 0:
		return fmt.Errorf("negative size")
	}
	row := []any{id, f.v(e.integer("type_id")), f.v(e.kept("type_name")), f.v(e.id("brand_id")), f.v(e.id("project_id")),
		subject, f.v(e.kept("message")), attachments, size, f.v(e.text("mailbox_id")), f.v(e.text("mailbox_thread")),
		at, rawJSON(l.Record)}
	if f.err != nil {
		return f.err
	}
	users, err := rec.child("users")
	if err != nil {
		return err
	}
	if users == nil {
		users = object{}
	}
	var people [4][]person
	for i, role := range roles {
		if people[i], err = participants(users[role]); err != nil {
			return fmt.Errorf("users.%s: %w", role, err)
		}
	}
	if len(people[0]) == 0 {
		return fmt.Errorf("no sender")
	}
	c.Emails = append(c.Emails, row)
	for i, role := range roles {
		seen := map[string]bool{}
		for _, p := range people[i] {
			if !seen[p.key] {
				seen[p.key] = true
				c.Recipients = append(c.Recipients, []any{id, role, p.key})
			}
			c.learn(p)
		}
	}
	return nil
}

// learn folds one appearance of a person into the users rows: a known value
// replaces the earlier one, an unknown one keeps it.
func (c *Comms) learn(p person) {
	u, ok := c.users[p.key]
	if !ok {
		c.users[p.key] = slices.Clone(p.row)
		c.userOrder = append(c.userOrder, p.key)
		return
	}
	for i := 1; i < len(u); i++ {
		if p.row[i] != nil {
			u[i] = p.row[i]
		}
	}
}

// participants reads one recipient collection: null or absent (none), an
// array of user objects, an object keyed by platform user id (or, for an
// outsider, the address), or one user object.
func participants(raw json.RawMessage) ([]person, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var out []person
	switch raw[0] {
	case '[':
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		for _, u := range list {
			p, ok, err := participant(u, nil)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, p)
			}
		}
		return out, nil
	case '{':
		keys, values, err := members(raw)
		if err != nil {
			return nil, err
		}
		if len(values) > 0 {
			if v := bytes.TrimSpace(values[0]); len(v) == 0 || (v[0] != '{' && string(v) != "null") {
				p, ok, err := participant(raw, nil) // one user object
				if err != nil || !ok {
					return nil, err
				}
				return []person{p}, nil
			}
		}
		for i, k := range keys {
			var uid *int64
			if n, err := strconv.ParseInt(strings.TrimSpace(k), 10, 64); err == nil {
				uid = &n
			}
			p, ok, err := participant(values[i], uid)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("want an array or object of users, got %.40s", raw)
}

// members returns an object's keys and values in the order written.
func members(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if _, err := d.Token(); err != nil {
		return nil, nil, err
	}
	var keys []string
	var values []json.RawMessage
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, t.(string)), append(values, v)
	}
	return keys, values, nil
}

// participant reads one user object (uid: the platform user id it is keyed
// by); false for null or {}.
func participant(raw json.RawMessage, uid *int64) (person, bool, error) {
	if string(bytes.TrimSpace(raw)) == "null" {
		return person{}, false, nil
	}
	o, err := objectOf(raw)
	if err != nil {
		return person{}, false, err
	}
	if len(o) == 0 {
		return person{}, false, nil
	}
	if uid != nil && *uid <= 0 {
		return person{}, false, fmt.Errorf("user id %d is not positive", *uid)
	}
	var f fields
	email := f.v(o.trimmed("email"))
	var key string
	var platform any
	if uid != nil {
		platform = *uid
	}
	switch {
	case email != nil:
		key = strings.ToLower(email.(string))
		email = key
	case uid != nil:
		key = "id:" + strconv.FormatInt(*uid, 10)
	default:
		return person{}, false, fmt.Errorf("a participant with neither e-mail nor user id")
	}
	row := []any{key, platform, f.v(o.trimmed("first_name")), f.v(o.trimmed("last_name")), f.v(o.trimmed("full_name")),
		email, f.v(o.trimmed("phone")), f.v(o.trimmed("avatar")), f.v(o.trimmed("status"))}
	return person{key: key, row: row}, true, f.err
}
