package sandbox

import (
	"strconv"
	"time"
)

// commsStyle is the variants in effect, as the communications writers see
// them (the zero value is the canonical shape).
type commsStyle struct{ variantSet }

var typeNames = [...]string{"", "Primit", "Trimis", "Intern"}

// isBadEmail reports whether e-mail i is one of the deliberately malformed
// records at the given rate.
func (m *mailStore) isBadEmail(i uint32, rate float64) bool {
	return rate > 0 && unitHash(m.seed, tagBad, uint64(i)) < rate
}

// writeEmail writes the {"email":{...},"users":{...}} object of e-mail i.
// scratch is reused for the subject and message text. The constant parts
// are appended as literals: this is the sandbox's hot path.
func (m *mailStore) writeEmail(e *enc, i uint32, c *emailCore, withMessage bool, st commsStyle, bad bool, scratch []byte) []byte {
	m.derive(i, c, st.outsiderRecipients)
	ed := m.edits[i]
	c.applyEdit(ed)
	badKind := -1
	if bad {
		badKind = c.badKind
	}
	e.sep()
	b := appendEmailType(e.b, c.typeID, st)
	b = m.appendEmailLinks(b, c, st, badKind)
	b, scratch = m.appendEmailText(b, i, c, ed, withMessage, st, badKind, scratch)
	b = appendAttachments(b, c, st)
	b = appendEmailSize(b, c.size, st, badKind)
	b = m.appendEmailPlace(b, i, c.root, ed, badKind)
	b = append(b, `},"users":{"from":`...)
	b = m.appendUsers(b, c, st)
	b = append(b, "}}"...)
	e.b = b
	return scratch
}

// nullText is what a missing value is written as: null, or false under
// php-false.
func (st commsStyle) nullText() string {
	if st.phpFalse {
		return "false"
	}
	return "null"
}

// appendEmailType appends the start of an e-mail object up to the key of
// its brand_id: the object's opening, type_id and type_name.
func appendEmailType(b []byte, typeID int, st commsStyle) []byte {
	switch {
	case typeID == 0:
		null := st.nullText()
		b = append(b, `{"email":{"type_id":`...)
		b = append(b, null...)
		b = append(b, `,"type_name":`...)
		b = append(b, null...)
		b = append(b, `,"brand_id":`...)
	case st.phpStrings:
		b = append(b, `{"email":{"type_id":"`...)
		b = strconv.AppendInt(b, int64(typeID), 10)
		b = append(b, `","type_name":"`...)
		b = append(b, typeNames[typeID]...)
		b = append(b, `","brand_id":`...)
	default:
		b = append(b, `{"email":{"type_id":`...)
		b = strconv.AppendInt(b, int64(typeID), 10)
		b = append(b, `,"type_name":"`...)
		b = append(b, typeNames[typeID]...)
		b = append(b, `","brand_id":`...)
	}
	return b
}

// appendEmailLinks appends the value of brand_id (malformed as {"id":N}
// for bad kind 3) and the project_id member.
func (m *mailStore) appendEmailLinks(b []byte, c *emailCore, st commsStyle, badKind int) []byte {
	d := m.data
	switch {
	case badKind == 3:
		id := int64(3)
		if c.brand >= 0 {
			id = d.brands[c.brand].id
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '}')
	case c.brand >= 0:
		b = appendID(b, d.brands[c.brand].id, st.numericIDs)
	default:
		b = append(b, st.nullText()...)
	}
	b = append(b, `,"project_id":`...)
	if c.project >= 0 {
		return appendID(b, d.projects[c.project].id, st.numericIDs)
	}
	return append(b, st.nullText()...)
}

// appendEmailText appends the subject (left out for bad kind 2; an edited
// one replaces the generated one) and the message, text only withMessage.
// It returns b and scratch, which holds the generated text.
func (m *mailStore) appendEmailText(b []byte, i uint32, c *emailCore, ed *emailEdit, withMessage bool, st commsStyle, badKind int, scratch []byte) ([]byte, []byte) {
	if badKind != 2 {
		b = append(b, `,"subject":`...)
		if ed != nil && ed.subject != nil {
			b = appendJSONString(b, *ed.subject)
		} else {
			scratch = m.subject(scratch[:0], i, c)
			b = appendJSONString(b, scratch)
		}
	}
	b = append(b, `,"message":`...)
	if withMessage {
		scratch = m.message(scratch[:0], i, c)
		return appendJSONString(b, scratch), scratch
	}
	return append(b, st.nullText()...), scratch
}

// appendAttachments appends the has_attachments member in the spelling the
// variants ask for.
func appendAttachments(b []byte, c *emailCore, st commsStyle) []byte {
	b = append(b, `,"has_attachments":`...)
	switch {
	case c.attach && st.hasAttachments && c.hasAttachB:
		return append(b, "true"...)
	case c.attach && st.phpStrings:
		return append(b, `"1"`...)
	case c.attach:
		return append(b, '1')
	case st.hasAttachments && c.hasAttachB && st.phpStrings:
		return append(b, `"0"`...)
	case st.hasAttachments && c.hasAttachB:
		return append(b, '0')
	}
	return append(b, st.nullText()...)
}

// appendEmailSize appends the size member: bytes, or kilobytes as text
// such as "12kb" for bad kind 0.
func appendEmailSize(b []byte, size int64, st commsStyle, badKind int) []byte {
	b = append(b, `,"size":`...)
	switch {
	case badKind == 0:
		b = append(b, '"')
		b = strconv.AppendInt(b, size/1024, 10)
		return append(b, `kb"`...)
	case st.phpStrings:
		b = append(b, '"')
		b = strconv.AppendInt(b, size, 10)
		return append(b, '"')
	}
	return strconv.AppendInt(b, size, 10)
}

// appendEmailPlace appends the mailbox ids of e-mail i and of its thread's
// root, its email_at ("yesterday" for bad kind 1; an edited one replaces
// the filing time) and the nested extra member an edit asks for.
func (m *mailStore) appendEmailPlace(b []byte, i, root uint32, ed *emailEdit, badKind int) []byte {
	b = append(b, `,"mailbox_id":"`...)
	b = appendHex16(b, m.mailboxID(i))
	b = append(b, `","mailbox_thread":"`...)
	b = appendHex16(b, m.mailboxID(root))
	b = append(b, `","email_at":"`...)
	switch {
	case badKind == 1:
		b = append(b, "yesterday"...)
	case ed != nil && ed.emailAt != nil:
		b = appendMicros(b, *ed.emailAt)
	default:
		b = appendMicros(b, m.ts[i])
	}
	b = append(b, '"')
	if ed != nil && ed.nesting > 0 {
		b = append(b, `,"extra":`...)
		for range ed.nesting {
			b = append(b, '[')
		}
		for range ed.nesting {
			b = append(b, ']')
		}
	}
	return b
}

// appendUsers appends the values of the users object: from (an array, or
// an object under from-object), then the to, cc and bcc members.
func (m *mailStore) appendUsers(b []byte, c *emailCore, st commsStyle) []byte {
	var sender *person
	if c.fromUser > 0 {
		sender = &m.people[c.fromUser]
	} else {
		sender = &m.outsiders[c.fromOut]
	}
	if st.fromObject {
		b = append(b, '{')
		b = m.appendPersonKey(b, sender)
		b = append(b, sender.rendered(st)...)
		b = append(b, '}')
	} else {
		b = append(b, '[')
		b = append(b, sender.rendered(st)...)
		b = append(b, ']')
	}
	b = append(b, `,"to":`...)
	b = m.appendRecipients(b, c.to, c.outTo, st)
	b = append(b, `,"cc":`...)
	b = m.appendRecipients(b, c.cc, c.outCC, st)
	b = append(b, `,"bcc":`...)
	return m.appendRecipients(b, c.bcc, nil, st)
}

// appendID appends an identifier as a JSON string, or a number when numeric.
func appendID(b []byte, id int64, numeric bool) []byte {
	if numeric {
		return strconv.AppendInt(b, id, 10)
	}
	b = append(b, '"')
	b = strconv.AppendInt(b, id, 10)
	return append(b, '"')
}

// appendMicros appends a Unix time in microseconds as
// 2006-01-02T15:04:05.000000Z (UTC), without going through time.Format.
func appendMicros(b []byte, us int64) []byte {
	if us < 0 {
		return time.UnixMicro(us).UTC().AppendFormat(b, layoutMicros)
	}
	secs, frac := us/1_000_000, us%1_000_000
	days, rem := secs/86400, secs%86400
	// civil-from-days (H. Hinnant), valid for the proleptic Gregorian calendar
	z := days + 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	dd := doy - (153*mp+2)/5 + 1
	mm := mp + 3
	if mm > 12 {
		mm -= 12
	}
	if mm <= 2 {
		y++
	}
	if y > 9999 {
		return time.UnixMicro(us).UTC().AppendFormat(b, layoutMicros)
	}
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mm/10), byte('0'+mm%10), '-', byte('0'+dd/10), byte('0'+dd%10), 'T')
	h, mi, s := rem/3600, rem/60%60, rem%60
	b = append(b, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.')
	for div := int64(100000); div > 0; div /= 10 {
		b = append(b, byte('0'+frac/div%10))
	}
	return append(b, 'Z')
}

// appendPersonKey appends the object key of a person: the platform user
// id, or the lower-cased e-mail address of an outsider.
func (m *mailStore) appendPersonKey(b []byte, p *person) []byte {
	if p.id > 0 {
		b = append(b, '"')
		b = strconv.AppendInt(b, p.id, 10)
		return append(b, '"', ':')
	}
	b = appendJSONString(b, p.emailKey())
	return append(b, ':')
}

func (m *mailStore) appendRecipients(b []byte, users []int64, outs []int, st commsStyle) []byte {
	if len(users)+len(outs) == 0 {
		if st.phpFalse {
			return append(b, "false"...)
		}
		if st.emptyAsObject {
			return append(b, "{}"...)
		}
		return append(b, "[]"...)
	}
	open, close := byte('{'), byte('}')
	if st.recipientsArray {
		open, close = '[', ']'
	}
	b = append(b, open)
	for n, u := range users {
		b = m.appendRecipient(b, n > 0, &m.people[u], st)
	}
	for n, o := range outs {
		b = m.appendRecipient(b, n > 0 || len(users) > 0, &m.outsiders[o], st)
	}
	return append(b, close)
}

// appendRecipient appends one recipient, after a comma unless it is the
// first, keyed unless the recipient lists are arrays.
func (m *mailStore) appendRecipient(b []byte, comma bool, p *person, st commsStyle) []byte {
	if comma {
		b = append(b, ',')
	}
	if !st.recipientsArray {
		b = m.appendPersonKey(b, p)
	}
	return append(b, p.rendered(st)...)
}
