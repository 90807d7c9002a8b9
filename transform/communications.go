package transform

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agencysync/agencysync/extract"
)

// UserKey identifies a person in users and email_recipients: the e-mail address
// trimmed and lower-cased, or "id:<platform user id>" when there is no address.
// It is "" when the participant has neither (such a record is rejected).
func UserKey(p extract.Participant) string {
	if e := strings.TrimSpace(p.Email); e != "" {
		return strings.ToLower(cleanText(e))
	}
	if p.PlatformUserID != nil {
		return "id:" + strconv.FormatInt(*p.PlatformUserID, 10)
	}
	return ""
}

// Communications turns a page of communication records into emails,
// email_recipients and users rows.
//
// Every participant becomes one users row per user_key in the batch, however
// many e-mails mention it. Its platform_user_id is learned from any appearance
// keyed by a user id, so a platform user who sends (the from list carries no
// ids) and receives is one row; for the other attributes the latest
// appearance with a value wins and a missing value never erases a known one.
// A person listed twice in one role of one e-mail is one recipient row.
//
// A record without a positive id, subject, email_at or sender, with a negative
// size, or with a participant that has neither e-mail nor a positive user id,
// is rejected whole.
func Communications(list []extract.Communication) Batch {
	var records dedup[int64, *commRows]
	var out Batch
	for i := range list {
		c := &list[i]
		r, err := communication(c)
		if err != nil {
			key := ""
			if c.RecordID > 0 {
				key = strconv.FormatInt(c.RecordID, 10)
			}
			out.Rejects = append(out.Rejects, NewReject(StreamCommunications, key, c.Raw, err))
			continue
		}
		records.put(r.email.RecordID, r)
	}

	out.Emails = make([]Email, 0, len(records.rows))
	out.EmailRecipients = make([]EmailRecipient, 0, 4*len(records.rows))
	users := make(map[string]int) // user_key → position in out.Users
	for _, r := range records.rows {
		out.Emails = append(out.Emails, r.email)
		for _, p := range r.people {
			out.EmailRecipients = append(out.EmailRecipients, EmailRecipient{RecordID: r.email.RecordID, Role: p.role, UserKey: p.user.UserKey})
			if j, ok := users[p.user.UserKey]; ok {
				mergeUser(&out.Users[j], &p.user)
				continue
			}
			users[p.user.UserKey] = len(out.Users)
			out.Users = append(out.Users, p.user)
		}
	}
	return out
}

// commRows is one valid communication record: its e-mail row and its
// participants, one per (role, user_key).
type commRows struct {
	email  Email
	people []person
}

type person struct {
	role string
	user User
}

func communication(c *extract.Communication) (*commRows, error) {
	e := &c.Email
	switch {
	case c.RecordID <= 0:
		return nil, fmt.Errorf("record id %d is not a positive number", c.RecordID)
	case e.Subject == nil:
		return nil, errors.New("e-mail without subject")
	case e.EmailAt.IsZero():
		return nil, errors.New("e-mail without email_at")
	case e.Size != nil && *e.Size < 0:
		return nil, fmt.Errorf("negative size %d", *e.Size)
	case len(c.Users.From) == 0:
		return nil, errors.New("e-mail without sender (empty from)")
	}
	if err := keyLengths("brand_id", string(e.BrandID), "project_id", string(e.ProjectID)); err != nil {
		return nil, err
	}
	r := &commRows{email: Email{
		RecordID:       c.RecordID,
		TypeID:         e.TypeID,
		TypeName:       optPtr(e.TypeName),
		BrandID:        optID(e.BrandID),
		ProjectID:      optID(e.ProjectID),
		Subject:        cleanText(*e.Subject),
		Message:        optPtr(e.Message),
		HasAttachments: e.HasAttachments,
		SizeBytes:      e.Size,
		MailboxID:      optText(e.MailboxID),
		MailboxThread:  optText(e.MailboxThread),
		EmailAt:        instant(e.EmailAt),
		Raw:            recordJSON(c.Raw),
	}}
	n := len(c.Users.From) + len(c.Users.To) + len(c.Users.CC) + len(c.Users.BCC)
	r.people = make([]person, 0, n)
	for _, group := range []struct {
		role string
		list []extract.Participant
	}{{RoleFrom, c.Users.From}, {RoleTo, c.Users.To}, {RoleCC, c.Users.CC}, {RoleBCC, c.Users.BCC}} {
		start := len(r.people)
		for i := range group.list {
			u, err := userOf(&group.list[i])
			if err != nil {
				return nil, fmt.Errorf("%s participant %d: %w", group.role, i, err)
			}
			if j := findPerson(r.people[start:], u.UserKey); j >= 0 { // listed twice in this role
				mergeUser(&r.people[start+j].user, &u)
				continue
			}
			r.people = append(r.people, person{role: group.role, user: u})
		}
	}
	return r, nil
}

func findPerson(people []person, key string) int {
	for i := range people {
		if people[i].user.UserKey == key {
			return i
		}
	}
	return -1
}

func userOf(p *extract.Participant) (User, error) {
	if p.PlatformUserID != nil && *p.PlatformUserID <= 0 {
		return User{}, fmt.Errorf("user id %d is not a positive number", *p.PlatformUserID)
	}
	key := UserKey(*p)
	if key == "" {
		return User{}, errors.New("neither e-mail nor user id")
	}
	if err := keyLengths("e-mail", key); err != nil {
		return User{}, err
	}
	u := User{
		UserKey:        key,
		PlatformUserID: p.PlatformUserID,
		FirstName:      optTrim(p.FirstName),
		LastName:       optTrimPtr(p.LastName),
		FullName:       optTrim(p.FullName),
		Phone:          optTrimPtr(p.Phone),
		AvatarURL:      optTrim(p.Avatar),
		Status:         optTrim(p.Status),
	}
	if !strings.HasPrefix(key, "id:") {
		email := key
		u.Email = &email
	}
	return u, nil
}

// mergeUser folds a later appearance of the same person into u: its known
// values win, its unknown ones keep u's.
func mergeUser(u, later *User) {
	pick := func(dst **string, src *string) {
		if src != nil {
			*dst = src
		}
	}
	if later.PlatformUserID != nil {
		u.PlatformUserID = later.PlatformUserID
	}
	pick(&u.FirstName, later.FirstName)
	pick(&u.LastName, later.LastName)
	pick(&u.FullName, later.FullName)
	pick(&u.Email, later.Email)
	pick(&u.Phone, later.Phone)
	pick(&u.AvatarURL, later.AvatarURL)
	pick(&u.Status, later.Status)
}
