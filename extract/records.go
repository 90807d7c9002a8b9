package extract

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
)

// decoder holds the per-page state of decoding: the scanner and small arenas
// that cut allocations (interned repeated strings, slabs for participants and
// pointer fields). Everything it hands out is owned by the page: nothing is
// reused across pages.
type decoder struct {
	env          scanner  // the document
	s            *scanner // the scanner records read from (== &env)
	cache        [internSlots]string
	arena        []byte
	userIndex    map[uint64]int32 // hash of a user object's first bytes -> people index
	people       []userEntry
	userHits     int
	userCacheOff bool
	parts        []Participant
	partAt       int // start of the participant list being built
	strs         []string
	ints         []int64
	depth        int

	// per communication record
	altID    int64
	altIDSet bool
}

func newDecoder(data []byte) *decoder {
	d := &decoder{}
	d.env.reset(data)
	d.s = &d.env
	return d
}

// arenaChunk is the size of the chunks records' raw bytes are copied into.
const arenaChunk = 32 << 10

// own copies b into the page's arena: records keep raw bytes that do not
// alias the body the caller may reuse.
func (d *decoder) own(b []byte) []byte {
	n := len(b)
	if n > arenaChunk/4 {
		return bytes.Clone(b)
	}
	if cap(d.arena)-len(d.arena) < n {
		d.arena = make([]byte, 0, arenaChunk)
	}
	a := len(d.arena)
	d.arena = append(d.arena, b...)
	return d.arena[a:len(d.arena):len(d.arena)]
}

// internSlots is the size of the direct-mapped string cache of a page.
const internSlots = 1024

// intern returns b as a string (ascii: b is known to be ASCII), sharing repeated short values of the page
// (statuses, avatar URLs, names and addresses of people who write often)
// through a direct-mapped cache: a collision only costs an allocation.
func (d *decoder) intern(b []byte, ascii bool) string {
	n := len(b)
	if n == 0 {
		return ""
	}
	if n > 64 {
		if ascii {
			return string(b)
		}
		return bytesToString(b)
	}
	var h uint64
	if n >= 8 {
		h = binary.LittleEndian.Uint64(b)*0x9E3779B97F4A7C15 ^ binary.LittleEndian.Uint64(b[n-8:])*0xC2B2AE3D27D4EB4F
	} else {
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
		h *= 0x9E3779B97F4A7C15
	}
	h ^= uint64(n) * 0x165667B19E3779F9
	slot := &d.cache[(h>>32)%internSlots]
	if *slot == string(b) {
		return *slot
	}
	var v string
	if ascii {
		v = string(b)
	} else {
		v = bytesToString(b)
	}
	*slot = v
	return v
}

func (d *decoder) strPtr(v string) *string {
	if len(d.strs) == cap(d.strs) {
		d.strs = make([]string, 0, 512)
	}
	d.strs = append(d.strs, v)
	return &d.strs[len(d.strs)-1]
}

func (d *decoder) intPtr(v int64) *int64 {
	if len(d.ints) == cap(d.ints) {
		d.ints = make([]int64, 0, 512)
	}
	d.ints = append(d.ints, v)
	return &d.ints[len(d.ints)-1]
}

// startParts begins a participant list.
func (d *decoder) startParts() { d.partAt = len(d.parts) }

// newPart appends a zero participant to the list being built.
func (d *decoder) newPart() *Participant {
	if len(d.parts) == cap(d.parts) {
		n := len(d.parts) - d.partAt
		ns := make([]Participant, n, max(256, 2*n))
		copy(ns, d.parts[d.partAt:])
		d.parts = ns
		d.partAt = 0
	}
	// Slots beyond len are zero (fresh memory, or zeroed by dropPart): no
	// clearing, hence no write barriers, here.
	d.parts = d.parts[:len(d.parts)+1]
	return &d.parts[len(d.parts)-1]
}

// dropPart removes the last participant (a null element), leaving its slot
// zero for the next newPart.
func (d *decoder) dropPart() {
	d.parts[len(d.parts)-1] = Participant{}
	d.parts = d.parts[:len(d.parts)-1]
}

// endParts returns the list built since startParts (nil when empty), capped
// so that appending to it cannot overwrite a neighbour.
func (d *decoder) endParts() []Participant {
	if len(d.parts) == d.partAt {
		return nil
	}
	return d.parts[d.partAt:len(d.parts):len(d.parts)]
}

// maxWrapDepth bounds nested <thing>_info wrappers.
const maxWrapDepth = 4

// unwrap reports whether the member just read (the n-th key, s.key) is a
// wrapper around the record itself: the record's own wrapper name, or any
// "<thing>_info" object that comes first. The caller then decodes the value
// into the same record.
func (d *decoder) unwrap(n int, name string) bool {
	k := d.s.key
	if string(k) != name && !(n == 1 && bytes.HasSuffix(k, []byte("_info")) && d.s.peek() == '{') {
		return false
	}
	if d.depth >= maxWrapDepth {
		d.s.failShape(shapef("%s: wrappers nested too deep", k))
		return false
	}
	return true
}

// enter opens a record object. It returns false when the value is not an
// object (null or an empty array: nothing to decode) or on error.
func (d *decoder) enter(what string) bool {
	return d.s.enterObject(what)
}

// --- brands -----------------------------------------------------------------

func (b *Brand) decode(d *decoder) bool {
	s := d.s
	if !d.enter("brand") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "id", "brand_id":
			if v := d.id("id"); v != "" {
				b.ID = v
			}
		case "name":
			b.Name = d.str("name")
		case "status":
			b.Status = d.str("status")
		case "date_created":
			b.DateCreated = d.date("date_created")
		case "account_manager":
			b.AccountManager = d.str("account_manager")
		case "projects_count":
			b.ProjectsCount = d.int64p("projects_count")
		case "financial_summary":
			b.FinancialSummary = d.financialSummary()
		default:
			if d.unwrap(n, "brand_info") {
				b.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

func (d *decoder) financialSummary() *FinancialSummary {
	s := d.s
	if !s.enterObject("financial_summary") {
		return nil
	}
	f := &FinancialSummary{}
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "total_budget":
			f.TotalBudget = d.decimal("financial_summary.total_budget")
		case "invoiced":
			f.Invoiced = d.decimal("financial_summary.invoiced")
		case "collected":
			f.Collected = d.decimal("financial_summary.collected")
		case "currency":
			f.Currency = d.str("financial_summary.currency")
		default:
			s.skip()
		}
	}
	return f
}

func (b *Brand) setRaw(raw []byte) { b.Raw = raw }
func (b *Brand) recordKey() string { return string(b.ID) }
func (b *Brand) finish(key string, keyed bool, _ *decoder) error {
	if b.ID == "" && keyed {
		b.ID = ID(key)
	}
	return nil
}

// --- contacts ---------------------------------------------------------------

func (c *Contact) decode(d *decoder) bool {
	s := d.s
	if !d.enter("contact") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "id", "contact_id":
			if v := d.id("id"); v != "" {
				c.ID = v
			}
		case "first_name":
			c.FirstName = d.str("first_name")
		case "last_name":
			c.LastName = d.strp("last_name", true)
		case "full_name":
			c.FullName = d.str("full_name")
		case "email":
			c.Email = d.strp("email", true)
		case "phone":
			c.Phone = d.strp("phone", true)
		case "position":
			c.Position = d.strp("position", true)
		case "is_primary":
			c.IsPrimary = d.boolLoose("is_primary")
		default:
			if d.unwrap(n, "contact_info") {
				c.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

func (c *Contact) setRaw(raw []byte) { c.Raw = raw }
func (c *Contact) recordKey() string { return string(c.ID) }
func (c *Contact) finish(key string, keyed bool, _ *decoder) error {
	if c.ID == "" && keyed {
		c.ID = ID(key)
	}
	return nil
}

// --- projects ---------------------------------------------------------------

func (p *Project) decode(d *decoder) bool {
	s := d.s
	if !d.enter("project") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "id", "project_id":
			if v := d.id("id"); v != "" {
				p.ID = v
			}
		case "brand_id":
			p.BrandID = d.id("brand_id")
		case "name":
			p.Name = d.str("name")
		case "status":
			p.Status = d.str("status")
		case "start_date":
			p.StartDate = d.date("start_date")
		case "deadline":
			p.Deadline = d.date("deadline")
		case "closed_at":
			p.ClosedAt = d.instant("closed_at")
		case "updated_at":
			p.UpdatedAt = d.instant("updated_at")
		case "budget":
			p.Budget = d.money("budget")
		case "team":
			p.Team = d.team()
		case "deliverables":
			p.Deliverables = d.deliverables()
		case "history":
			p.History = d.history()
		default:
			if d.unwrap(n, "project_info") {
				p.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

// money reads {amount, currency}; a bare number or numeric string is taken as
// the amount.
func (d *decoder) money(what string) *Money {
	s := d.s
	switch c := s.peek(); {
	case c == '"' || c == '-' || isDigit(c):
		a := d.decimal(what)
		if a == "" {
			return nil
		}
		return &Money{Amount: a}
	}
	if !s.enterObject(what) {
		return nil
	}
	m := &Money{}
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "amount":
			m.Amount = d.decimal(what + ".amount")
		case "currency":
			m.Currency = d.str(what + ".currency")
		default:
			s.skip()
		}
	}
	return m
}

// collection iterates the elements of an array, or the values of an object
// keyed by id (key passed to fn; nil for arrays). null, [] and {} are empty.
func (d *decoder) collection(what string, fn func(key []byte)) {
	s := d.s
	switch s.peek() {
	case '[':
		s.pos++
		for n := 0; s.arrayNext(&n); {
			if s.null() {
				continue
			}
			fn(nil)
		}
	case '{':
		s.pos++
		for n := 0; s.objectNext(&n); {
			if s.null() {
				continue
			}
			fn(s.key)
		}
	case 'n':
		s.literal("null")
	case 'f': // a PHP encoder's missing value
		s.literal("false")
	case 0:
		s.failSyntax("unexpected end of input")
	default:
		s.failShape(shapef("%s: want an array or an object, got %s", what, kindName(s.peek())))
	}
}

func (d *decoder) team() []TeamMember {
	var out []TeamMember
	d.collection("team", func(key []byte) {
		k := ID(key)
		s := d.s
		if !s.enterObject("team member") {
			return
		}
		m := TeamMember{UserID: k}
		for n := 0; s.objectNext(&n); {
			switch string(s.key) {
			case "user_id", "id":
				if v := d.id("team.user_id"); v != "" {
					m.UserID = v
				}
			case "full_name":
				m.FullName = d.str("team.full_name")
			case "role":
				m.Role = d.str("team.role")
			default:
				s.skip()
			}
		}
		out = append(out, m)
	})
	return out
}

func (d *decoder) deliverables() []Deliverable {
	var out []Deliverable
	d.collection("deliverables", func(key []byte) {
		k := ID(key)
		s := d.s
		if !s.enterObject("deliverable") {
			return
		}
		v := Deliverable{ID: k}
		for n := 0; s.objectNext(&n); {
			switch string(s.key) {
			case "id", "deliverable_id":
				if id := d.id("deliverables.id"); id != "" {
					v.ID = id
				}
			case "name":
				v.Name = d.str("deliverables.name")
			case "due_date":
				v.DueDate = d.date("deliverables.due_date")
			case "status":
				v.Status = d.str("deliverables.status")
			case "delivered_at":
				v.DeliveredAt = d.instant("deliverables.delivered_at")
			default:
				s.skip()
			}
		}
		out = append(out, v)
	})
	return out
}

func (d *decoder) history() []HistoryEntry {
	var out []HistoryEntry
	d.collection("history", func([]byte) {
		s := d.s
		if !s.enterObject("history entry") {
			return
		}
		var h HistoryEntry
		for n := 0; s.objectNext(&n); {
			switch string(s.key) {
			case "at":
				if t := d.instant("history.at"); t != nil {
					h.At = *t
				}
			case "field":
				h.Field = d.str("history.field")
			case "from":
				h.From = d.scalarText("history.from")
			case "to":
				h.To = d.scalarText("history.to")
			case "by_user_id":
				h.ByUserID = d.id("history.by_user_id")
			default:
				s.skip()
			}
		}
		out = append(out, h)
	})
	return out
}

func (p *Project) setRaw(raw []byte) { p.Raw = raw }
func (p *Project) recordKey() string { return string(p.ID) }
func (p *Project) finish(key string, keyed bool, _ *decoder) error {
	if p.ID == "" && keyed {
		p.ID = ID(key)
	}
	return nil
}

// --- finance ----------------------------------------------------------------

func (b *Budget) decode(d *decoder) bool {
	s := d.s
	if !d.enter("budget") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "id", "budget_id":
			if v := d.id("id"); v != "" {
				b.ID = v
			}
		case "project_id":
			b.ProjectID = d.id("project_id")
		case "brand_id":
			b.BrandID = d.id("brand_id")
		case "amount":
			b.Amount = d.decimal("amount")
		case "currency":
			b.Currency = d.str("currency")
		case "period_start":
			b.PeriodStart = d.date("period_start")
		case "period_end":
			b.PeriodEnd = d.date("period_end")
		case "updated_at":
			b.UpdatedAt = d.instant("updated_at")
		default:
			if d.unwrap(n, "budget_info") {
				b.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

func (b *Budget) setRaw(raw []byte) { b.Raw = raw }
func (b *Budget) recordKey() string { return string(b.ID) }
func (b *Budget) finish(key string, keyed bool, _ *decoder) error {
	if b.ID == "" && keyed {
		b.ID = ID(key)
	}
	return nil
}

func (v *Invoice) decode(d *decoder) bool {
	s := d.s
	if !d.enter("invoice") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "id", "invoice_id":
			if id := d.id("id"); id != "" {
				v.ID = id
			}
		case "number":
			v.Number = d.str("number")
		case "project_id":
			v.ProjectID = d.id("project_id")
		case "brand_id":
			v.BrandID = d.id("brand_id")
		case "issue_date":
			v.IssueDate = d.date("issue_date")
		case "due_date":
			v.DueDate = d.date("due_date")
		case "amount":
			v.Amount = d.decimal("amount")
		case "currency":
			v.Currency = d.str("currency")
		case "status":
			v.Status = d.str("status")
		case "updated_at":
			v.UpdatedAt = d.instant("updated_at")
		default:
			if d.unwrap(n, "invoice_info") {
				v.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

func (v *Invoice) setRaw(raw []byte) { v.Raw = raw }
func (v *Invoice) recordKey() string { return string(v.ID) }
func (v *Invoice) finish(key string, keyed bool, _ *decoder) error {
	if v.ID == "" && keyed {
		v.ID = ID(key)
	}
	return nil
}

func (c *Collection) decode(d *decoder) bool {
	s := d.s
	if !d.enter("collection") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "id", "collection_id":
			if v := d.id("id"); v != "" {
				c.ID = v
			}
		case "invoice_id":
			c.InvoiceID = d.id("invoice_id")
		case "collected_on":
			c.CollectedOn = d.date("collected_on")
		case "amount":
			c.Amount = d.decimal("amount")
		case "currency":
			c.Currency = d.str("currency")
		case "updated_at":
			c.UpdatedAt = d.instant("updated_at")
		default:
			if d.unwrap(n, "collection_info") {
				c.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

func (c *Collection) setRaw(raw []byte) { c.Raw = raw }
func (c *Collection) recordKey() string { return string(c.ID) }
func (c *Collection) finish(key string, keyed bool, _ *decoder) error {
	if c.ID == "" && keyed {
		c.ID = ID(key)
	}
	return nil
}

func (p *Payment) decode(d *decoder) bool {
	s := d.s
	if !d.enter("payment") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "id", "payment_id":
			if v := d.id("id"); v != "" {
				p.ID = v
			}
		case "project_id":
			p.ProjectID = d.id("project_id")
		case "brand_id":
			p.BrandID = d.id("brand_id")
		case "payee":
			p.Payee = d.str("payee")
		case "paid_on":
			p.PaidOn = d.date("paid_on")
		case "amount":
			p.Amount = d.decimal("amount")
		case "currency":
			p.Currency = d.str("currency")
		case "status":
			p.Status = d.str("status")
		case "updated_at":
			p.UpdatedAt = d.instant("updated_at")
		default:
			if d.unwrap(n, "payment_info") {
				p.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

func (p *Payment) setRaw(raw []byte) { p.Raw = raw }
func (p *Payment) recordKey() string { return string(p.ID) }
func (p *Payment) finish(key string, keyed bool, _ *decoder) error {
	if p.ID == "" && keyed {
		p.ID = ID(key)
	}
	return nil
}

func (p *Profitability) decode(d *decoder) bool {
	s := d.s
	if !d.enter("profitability") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "level":
			p.Level = d.str("level")
		case "entity_id":
			p.EntityID = d.id("entity_id")
		case "period":
			p.Period = d.str("period")
		case "revenue":
			p.Revenue = d.decimal("revenue")
		case "cost":
			p.Cost = d.decimal("cost")
		case "margin":
			p.Margin = d.decimal("margin")
		case "currency":
			p.Currency = d.str("currency")
		default:
			if d.unwrap(n, "profitability_info") {
				p.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

func (p *Profitability) setRaw(raw []byte) { p.Raw = raw }
func (p *Profitability) recordKey() string {
	return p.Level + ":" + string(p.EntityID) + ":" + p.Period
}
func (p *Profitability) finish(string, bool, *decoder) error { return nil }

func (a *AgencySummary) decode(d *decoder) bool {
	s := d.s
	if !d.enter("summary") {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	for n := 0; s.objectNext(&n); {
		switch string(s.key) {
		case "period":
			a.Period = d.str("period")
		case "total_budget":
			a.TotalBudget = d.decimal("total_budget")
		case "invoiced":
			a.Invoiced = d.decimal("invoiced")
		case "collected":
			a.Collected = d.decimal("collected")
		case "paid":
			a.Paid = d.decimal("paid")
		case "profit":
			a.Profit = d.decimal("profit")
		case "currency":
			a.Currency = d.str("currency")
		default:
			if d.unwrap(n, "summary_info") {
				a.decode(d)
			} else {
				s.skip()
			}
		}
	}
	return true
}

func (a *AgencySummary) setRaw(raw []byte) { a.Raw = raw }
func (a *AgencySummary) recordKey() string { return a.Period }
func (a *AgencySummary) finish(key string, keyed bool, _ *decoder) error {
	if a.Period == "" && keyed {
		a.Period = key
	}
	return nil
}

// --- communications ---------------------------------------------------------

// Keys of the spec's communication record, in the order the service writes
// them (decoding hints; any order is accepted).
var (
	recordKeys = newKeySet("email", "users", "id", "record_id")
	emailKeys  = newKeySet("type_id", "type_name", "brand_id", "project_id", "subject", "message",
		"has_attachments", "size", "mailbox_id", "mailbox_thread", "email_at", "id", "record_id", "mailbox_thread_id")
	usersKeys = newKeySet("from", "to", "cc", "bcc")
	userKeys  = newKeySet("first_name", "last_name", "full_name", "email", "phone", "avatar", "status")
)

func (c *Communication) decode(d *decoder) bool {
	s := d.s
	d.altID, d.altIDSet = 0, false
	if !d.enter("record") {
		return false
	}
	for n := 0; ; {
		switch s.nextKey(&n, recordKeys) {
		case keyEnd:
			return true
		case 0:
			d.email(&c.Email)
		case 1:
			d.users(&c.Users)
		case 2, 3:
			d.recordIDField()
		default:
			s.skip()
		}
	}
}

// recordIDField reads an id carried inside a record (used when rows is an
// array and so has no keys).
func (d *decoder) recordIDField() {
	if v, ok := d.intValue("record id", true); ok {
		d.altID, d.altIDSet = v, true
	}
}

func (d *decoder) email(e *EmailFields) {
	s := d.s
	if !s.enterObject("email") {
		return
	}
	for n := 0; ; {
		switch s.nextKey(&n, emailKeys) {
		case keyEnd:
			return
		case 0:
			e.TypeID = d.int64p("email.type_id")
		case 1:
			e.TypeName = d.strp("email.type_name", true)
		case 2:
			e.BrandID = d.id("email.brand_id")
		case 3:
			e.ProjectID = d.id("email.project_id")
		case 4:
			e.Subject = d.strp("email.subject", false)
		case 5:
			e.Message = d.strp("email.message", false)
		case 6:
			e.HasAttachments = d.boolLoose("email.has_attachments")
		case 7:
			e.Size = d.int64p("email.size")
		case 8:
			e.MailboxID, _ = d.strValue("email.mailbox_id", false)
		case 9, 13:
			e.MailboxThread, _ = d.strValue("email.mailbox_thread", false)
		case 10:
			if t, ok := d.timeValue("email.email_at", false); ok {
				e.EmailAt = t
			}
		case 11, 12:
			d.recordIDField()
		default:
			d.mailboxField(e, s.key)
		}
	}
}

// mailboxField accepts the provider-specific names the spec replaced by
// "mailbox": "<provider>_thread" / "<provider>_thread_id" and a string-valued
// "<provider>_id" fill MailboxThread / MailboxID when the neutral names are
// absent. Anything else is skipped.
func (d *decoder) mailboxField(e *EmailFields, k []byte) {
	s := d.s
	switch {
	case bytes.HasSuffix(k, []byte("_thread")) || bytes.HasSuffix(k, []byte("_thread_id")):
		if v, _ := d.strValue("email."+string(k), false); e.MailboxThread == "" {
			e.MailboxThread = v
		}
	case bytes.HasSuffix(k, []byte("_id")) && s.peek() == '"' && !knownIDField(k):
		if v, _ := d.strValue("email."+string(k), false); e.MailboxID == "" {
			e.MailboxID = v
		}
	default:
		s.skip()
	}
}

func knownIDField(k []byte) bool {
	switch string(k) {
	case "user_id", "domain_id", "thread_id", "message_id", "account_id", "workflow_id", "execution_id":
		return true
	}
	return false
}

func (d *decoder) users(u *Participants) {
	s := d.s
	if !s.enterObject("users") {
		return
	}
	for n := 0; ; {
		switch s.nextKey(&n, usersKeys) {
		case keyEnd:
			return
		case 0:
			u.From = d.participants("users.from")
		case 1:
			u.To = d.participants("users.to")
		case 2:
			u.CC = d.participants("users.cc")
		case 3:
			u.BCC = d.participants("users.bcc")
		default:
			s.skip()
		}
	}
}

// participants reads a recipient collection: [] (none), an array of user
// objects, an object keyed by platform user id, or a single user object.
func (d *decoder) participants(what string) []Participant {
	s := d.s
	switch c := s.peek(); c {
	case '[':
		s.pos++
		d.startParts()
		for n := 0; s.arrayNext(&n); {
			p := d.newPart()
			if !d.participant(p, what) {
				d.dropPart()
			}
		}
		return d.endParts()
	case '{':
		if !d.keyedUsers() {
			d.startParts()
			p := d.newPart()
			if !d.participant(p, what) {
				d.dropPart()
			}
			return d.endParts()
		}
		s.pos++
		d.startParts()
		for n := 0; s.objectNext(&n); {
			var id *int64
			if v, ok, overflow := parseInt64(trimSpace(s.key)); overflow {
				s.failShape(&shapeError{msg: what + ": platform user id " + string(s.key) + " does not fit int64", kind: ErrIDOutOfRange})
				return nil
			} else if ok {
				id = d.intPtr(v)
			}
			p := d.newPart()
			if !d.participant(p, what) {
				d.dropPart()
				continue
			}
			p.PlatformUserID = id
		}
		return d.endParts()
	case 'n':
		s.literal("null")
		return nil
	case 'f': // a PHP encoder's missing value
		s.literal("false")
		return nil
	case 0:
		s.failSyntax("unexpected end of input")
		return nil
	default:
		s.failShape(shapef("%s: want an array or an object of users, got %s", what, kindName(c)))
		return nil
	}
}

// keyedUsers looks ahead at the object at s.pos: it is a map keyed by user id
// when it is empty or its first member's value is an object (or null), and a
// single user object otherwise. The position is left unchanged.
func (d *decoder) keyedUsers() bool {
	s := d.s
	save := s.pos
	s.pos++
	n := 0
	keyed := true
	if s.objectNext(&n) {
		c := s.peek()
		keyed = c == '{' || c == 'n'
	}
	if s.syntax {
		return true // let the caller report the syntax error
	}
	s.err = nil
	s.pos = save
	return keyed
}

// maxUserCache bounds the per-page cache of decoded user objects.
const maxUserCache = 4096

// userEntry is a decoded user object and its bytes; next chains entries
// whose first bytes hash alike (-1 ends the chain).
type userEntry struct {
	raw  []byte
	p    Participant
	next int32
}

// The user cache turns itself off for the rest of a page when, after
// userCacheProbe insertions, fewer than one lookup in four has hit: every
// person is new and the cache would only cost.
const userCacheProbe = 256

// participant decodes one user object into p; false for null or empty.
//
// The same people appear on many records of a page. A JSON value is
// self-delimiting, so when the bytes at the scanner's position begin with the
// complete bytes of a user object already decoded (and validated) on this
// page, the object there is that object: it is copied from a cache instead of
// being scanned again. The cache is indexed by a hash of the object's first
// bytes, with a short chain for objects that begin alike.
func (d *decoder) participant(p *Participant, what string) bool {
	s := d.s
	if d.userCacheOff || s.peek() != '{' {
		return d.participantFields(p, what)
	}
	start := s.pos
	rest := s.data[start:]
	h := maphash.Bytes(hashSeed, rest[:min(len(rest), 96)])
	head, found := d.userIndex[h]
	if found {
		for i := head; i >= 0; i = d.people[i].next {
			e := &d.people[i]
			if len(rest) < len(e.raw) || string(rest[:len(e.raw)]) != string(e.raw) {
				continue
			}
			d.userHits++
			s.pos = start + len(e.raw)
			*p = e.p
			// Fresh pointers: records must not share writable fields.
			if e.p.LastName != nil {
				p.LastName = d.strPtr(*e.p.LastName)
			}
			if e.p.Phone != nil {
				p.Phone = d.strPtr(*e.p.Phone)
			}
			return true
		}
	}
	if !d.participantFields(p, what) || s.err != nil {
		return false
	}
	if d.userIndex == nil {
		d.userIndex = make(map[uint64]int32, 256)
		d.people = make([]userEntry, 0, 256)
	}
	if len(d.people) >= maxUserCache {
		return true
	}
	if !found {
		head = -1
	}
	d.people = append(d.people, userEntry{raw: s.data[start:s.pos], p: *p, next: head})
	d.userIndex[h] = int32(len(d.people) - 1)
	if len(d.people) == userCacheProbe && d.userHits*4 < userCacheProbe {
		d.userCacheOff = true
		d.userIndex, d.people = nil, nil
	}
	return true
}

func (d *decoder) participantFields(p *Participant, what string) bool {
	s := d.s
	if !s.enterObject(what) {
		return false
	}
	for n := 0; ; {
		switch s.nextKey(&n, userKeys) {
		case keyEnd:
			return true
		case 0:
			p.FirstName = d.str("first_name")
		case 1:
			p.LastName = d.strp("last_name", true)
		case 2:
			p.FullName, _ = d.strValue("full_name", false) // per person: the user cache shares these
		case 3:
			p.Email, _ = d.strValue("email", false)
		case 4:
			p.Phone = d.strp("phone", false)
		case 5:
			p.Avatar = d.str("avatar")
		case 6:
			p.Status = d.str("status")
		default:
			s.skip()
		}
	}
}

func (c *Communication) setRaw(raw []byte) { c.Raw = raw }
func (c *Communication) recordKey() string {
	if c.RecordID == 0 {
		return ""
	}
	return itoa(c.RecordID)
}

// finish sets RecordID from the row key (keyed rows) or from an id field
// inside the record (array rows).
func (c *Communication) finish(key string, keyed bool, d *decoder) error {
	if keyed {
		v, ok, overflow := parseInt64(trimSpace([]byte(key)))
		switch {
		case overflow:
			return &shapeError{msg: "record id " + key + " does not fit int64", kind: ErrIDOutOfRange}
		case !ok:
			return shapef("record id %q is not an integer", key)
		}
		c.RecordID = v
		return nil
	}
	if !d.altIDSet {
		return shapef("record has no id (rows is an array and the record carries no id or record_id)")
	}
	c.RecordID = d.altID
	return nil
}
