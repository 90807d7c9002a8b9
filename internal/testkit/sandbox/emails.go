package sandbox

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// E-mails are never stored. Record i (its index, 0-based, ascending with
// email_at) is derived from (seed, i) whenever it is served; the store keeps
// only what filtering needs: each e-mail's timestamp, its brand, and for each
// platform user the sorted list of e-mails they take part in. At 1 000 000
// e-mails that is about 30 MB.

// emailIDBase is the first possible record id. Record ids grow with the index
// but leave gaps (other domains' records live between them on a real platform).
const emailIDBase = 100000

func emailID(seed int64, i uint32) int64 {
	return emailIDBase + 3*int64(i) + int64(mix64(uint64(seed)^uint64(i)*0x9e3779b97f4a7c15^tagEmailID)%3)
}

// emailIndex maps a record id back to its index; ok is false for ids that no
// e-mail has.
func (m *mailStore) emailIndex(id int64) (uint32, bool) {
	if id < emailIDBase {
		return 0, false
	}
	i := (id - emailIDBase) / 3
	if i >= int64(len(m.ts)) || emailID(m.seed, uint32(i)) != id {
		return 0, false
	}
	if _, g := m.gone[uint32(i)]; g {
		return 0, false
	}
	return uint32(i), true
}

// emailEdit is an admin's late change of an e-mail: a nil subject is
// unchanged, and a recipient list replaces the generated one when its set
// flag is on.
type emailEdit struct {
	subject      *string
	emailAt      *int64 // served email_at in µs, when it differs from the filing time
	nesting      int    // depth of the nested "extra" member; 0 = none
	to, cc, bcc  []int64
	setTo, setCC bool
	setBCC       bool
	// brand and project replace the derived links (indexes, -1 = none)
	// when setLinks is on.
	brand, project int
	setLinks       bool
}

type mailStore struct {
	seed      int64
	users     int
	outsiders []person
	people    []person // platform users, index = id
	data      *dataset

	ts    []int64  // email_at in microseconds since the Unix epoch
	brand []uint16 // brand index + 1; 0 = no brand
	post  [][]uint32
	edits map[uint32]*emailEdit
	gone  map[uint32]uint8 // deleted or hidden e-mails (goneDeleted, goneHidden)

	cacheMu sync.Mutex
	cache   map[string]*matchSet
}

// emailCore is the derived content of one e-mail (everything but the text).
type emailCore struct {
	root       uint32
	brand      int // index, -1 = none
	project    int // index, -1 = none
	template   int
	number     int
	forward    bool
	fromUser   int64 // platform user id; 0 when the sender is an outsider
	fromOut    int   // outsider index when fromUser == 0
	to, cc     []int64
	bcc        []int64
	outTo      []int // outsider recipients (outsider-recipients variant only)
	outCC      []int
	typeID     int // 0 = null
	attach     bool
	size       int64
	bodyLen    int
	buf        [12]int64
	outBuf     [2]int
	badKind    int
	hasAttachB bool // has_attachments variant: use the boolean/zero spelling
}

func newMailStore(o *Options, d *dataset, people, outsiders []person) *mailStore {
	m := &mailStore{
		seed:      o.Seed,
		users:     o.Users,
		outsiders: outsiders,
		people:    people,
		data:      d,
		edits:     map[uint32]*emailEdit{},
		gone:      map[uint32]uint8{},
		cache:     map[string]*matchSet{},
		post:      make([][]uint32, o.Users+1),
	}
	m.ts = genTimestamps(o.Seed, o.Emails, d.histStart, o.Start.UTC())
	m.brand = make([]uint16, 0, len(m.ts))
	var c emailCore
	for i := range m.ts {
		m.index(uint32(i), &c)
	}
	return m
}

// index derives e-mail i's filter data and appends it to the index.
func (m *mailStore) index(i uint32, c *emailCore) {
	m.derive(i, c, false)
	m.brand = append(m.brand, uint16(c.brand+1))
	var seen [16]int64
	n := 0
	add := func(u int64) {
		for _, s := range seen[:n] {
			if s == u {
				return
			}
		}
		if n < len(seen) {
			seen[n] = u
			n++
		}
		m.post[u] = append(m.post[u], i)
	}
	if c.fromUser > 0 {
		add(c.fromUser)
	}
	for _, u := range c.to {
		add(u)
	}
	for _, u := range c.cc {
		add(u)
	}
	for _, u := range c.bcc {
		add(u)
	}
}

// genTimestamps spreads n e-mails over [from, to): busy on working hours
// (Romanian time, UTC+2 as an approximation), quiet at night and on weekends,
// growing over time. The result is strictly ascending.
func genTimestamps(seed int64, n int, from, to time.Time) []int64 {
	ts := make([]int64, n)
	if n == 0 {
		return ts
	}
	hours := int(to.Sub(from) / time.Hour)
	if hours < 1 {
		hours = 1
	}
	cum := make([]float64, hours)
	var total float64
	for h := range hours {
		t := from.Add(time.Duration(h) * time.Hour).Add(2 * time.Hour)
		var w float64
		switch hr := t.Hour(); {
		case hr >= 9 && hr < 18:
			w = 10
		case hr == 8 || hr >= 18 && hr < 21:
			w = 3
		default:
			w = 0.3
		}
		if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
			w *= 0.2
		}
		w *= 0.7 + 0.6*float64(h)/float64(hours)
		total += w
		cum[h] = total
	}
	base := from.UnixMicro()
	h := 0
	prev := int64(math.MinInt64)
	for i := range ts {
		u := unitHash(seed, tagEmailTime, uint64(i))
		p := (float64(i) + u) / float64(n) * total
		for h < hours-1 && cum[h] <= p {
			h++
		}
		lo := 0.0
		if h > 0 {
			lo = cum[h-1]
		}
		frac := (p - lo) / (cum[h] - lo)
		frac = max(0, min(frac, 0.999999))
		t := base + int64(h)*3600_000_000 + int64(frac*3600_000_000)
		if t <= prev {
			t = prev + 1
		}
		ts[i] = t
		prev = t
	}
	return ts
}

// appendEmails adds n e-mails at the clock's now. Their email_at values are
// spread over the minute before now, never before the start of now's UTC day
// nor before the last e-mail; without room for them (the clock exactly at
// midnight, say) they follow max(now, last e-mail) one microsecond apart.
func (m *mailStore) appendEmails(n int, now time.Time) error {
	if len(m.ts)+n > maxEmails {
		return fmt.Errorf("append emails: at most %d e-mails are supported", maxEmails)
	}
	last := int64(math.MinInt64 + 1)
	if len(m.ts) > 0 {
		last = m.ts[len(m.ts)-1]
	}
	nowUS := now.UnixMicro()
	lo := max(last+1, nowUS-60_000_000, dayOf(now).UnixMicro())
	span := nowUS - lo
	var c emailCore
	for k := 1; k <= n; k++ {
		var t int64
		if span >= int64(n) {
			t = lo + span*int64(k)/int64(n)
		} else {
			t = max(last+1, nowUS) + int64(k-1)
		}
		m.ts = append(m.ts, t)
		m.index(uint32(len(m.ts)-1), &c)
	}
	m.invalidate()
	return nil
}

func (m *mailStore) invalidate() {
	m.cacheMu.Lock()
	clear(m.cache)
	m.cacheMu.Unlock()
}

// threadRoot returns the first e-mail of i's conversation: 40% of e-mails
// answer an e-mail up to 30 positions earlier.
func (m *mailStore) threadRoot(i uint32) uint32 {
	j := i
	for range 6 {
		r := newRNG(m.seed, tagThread, uint64(j))
		if !r.chance(0.4) {
			return j
		}
		off := uint32(1 + r.intn(30))
		if off > j {
			return j
		}
		j -= off
	}
	return j
}

func (m *mailStore) pickUser(r *rng, b int, c *emailCore) int64 {
	for range 8 {
		var u int64
		if b >= 0 && r.chance(0.8) {
			team := m.data.brands[b].team
			u = team[r.intn(len(team))]
		} else {
			u = int64(1 + r.intn(m.users))
		}
		if !c.has(u) {
			return u
		}
	}
	return 0
}

func (c *emailCore) has(u int64) bool {
	if c.fromUser == u {
		return true
	}
	return slices.Contains(c.to, u) || slices.Contains(c.cc, u) || slices.Contains(c.bcc, u)
}

// derive fills c with e-mail i's content. outsiderRecipients adds the
// outsiders of the outsider-recipients variant.
func (m *mailStore) derive(i uint32, c *emailCore, outsiderRecipients bool) {
	*c = emailCore{brand: -1, project: -1, buf: c.buf}
	c.root = m.threadRoot(i)
	m.deriveTopic(c)

	r := newRNG(m.seed, tagEmail, uint64(i))
	c.forward = c.root == i && r.chance(0.05)
	incoming := r.chance(0.4)
	c.to, c.cc, c.bcc = c.buf[:0:4], c.buf[4:4:8], c.buf[8:8:12]
	m.pickSender(&r, c, incoming)
	m.pickRecipients(&r, c)
	deriveTraits(&r, c, incoming)

	if outsiderRecipients && !incoming && len(m.outsiders) > 0 {
		m.pickOutsiderRecipients(i, c)
	}
}

// deriveTopic fills in what c's conversation (its root) is about, the same
// for every e-mail of it: the brand and project, the subject template and
// its number.
func (m *mailStore) deriveTopic(c *emailCore) {
	t := newRNG(m.seed, tagTopic, uint64(c.root))
	d := m.data
	if len(d.brands) > 0 && t.chance(0.65) {
		x := t.float() * d.brandCum[len(d.brandCum)-1]
		c.brand = sort.SearchFloat64s(d.brandCum, x)
		if c.brand >= len(d.brands) {
			c.brand = len(d.brands) - 1
		}
		if ps := d.brands[c.brand].projects; len(ps) > 0 && t.chance(0.7) {
			c.project = ps[t.intn(len(ps))]
		}
		c.template = t.intn(len(brandSubjects))
	} else {
		c.template = t.intn(len(plainSubjects))
	}
	c.number = t.between(1, 9999)
}

// pickSender draws c's sender: an outsider of the e-mail's brand (or any
// outsider) for an incoming e-mail, else a platform user.
func (m *mailStore) pickSender(r *rng, c *emailCore, incoming bool) {
	d := m.data
	if incoming {
		if c.brand >= 0 && len(d.brands[c.brand].outsiders) > 0 && r.chance(0.85) {
			os := d.brands[c.brand].outsiders
			c.fromOut = os[r.intn(len(os))]
		} else {
			c.fromOut = r.intn(len(m.outsiders))
		}
		return
	}
	c.fromUser = m.pickUser(r, c.brand, c)
	if c.fromUser == 0 {
		c.fromUser = 1
	}
}

// pickRecipients draws c's platform users in to, cc and bcc, so that every
// e-mail involves at least one platform user.
func (m *mailStore) pickRecipients(r *rng, c *emailCore) {
	nTo := 1
	switch x := r.float(); {
	case x < 0.005:
		nTo = 0
	case x < 0.6:
		nTo = 1
	case x < 0.9:
		nTo = 2
	default:
		nTo = 3
	}
	for range nTo {
		if u := m.pickUser(r, c.brand, c); u > 0 {
			c.to = append(c.to, u)
		}
	}
	if r.chance(0.25) {
		for range r.between(1, 2) {
			if u := m.pickUser(r, c.brand, c); u > 0 {
				c.cc = append(c.cc, u)
			}
		}
	}
	nBCC := 0
	if r.chance(0.08) {
		nBCC = 1
	}
	if len(c.to) == 0 {
		nBCC = r.between(1, 2)
	}
	for range nBCC {
		if u := m.pickUser(r, c.brand, c); u > 0 {
			c.bcc = append(c.bcc, u)
		}
	}
	if c.fromUser == 0 && len(c.to)+len(c.cc)+len(c.bcc) == 0 {
		// every e-mail involves at least one platform user
		c.to = append(c.to, int64(1+r.intn(m.users)))
	}
}

// deriveTraits draws c's type, attachments, size and the way it is
// malformed when it is a bad record.
func deriveTraits(r *rng, c *emailCore, incoming bool) {
	switch x := r.float(); {
	case x < 0.15:
		c.typeID = 0
	case incoming:
		c.typeID = 1
	case c.brand < 0:
		c.typeID = 3
	default:
		c.typeID = 2
	}
	c.attach = r.chance(0.22)
	c.bodyLen = r.between(300, 1400)
	c.size = int64(c.bodyLen) + int64(r.between(1800, 7000))
	if c.attach {
		c.size += int64(math.Exp(r.float()*math.Log(6_000_000/20_000)) * 20_000)
	}
	c.badKind = r.intn(4)
	c.hasAttachB = r.chance(0.5)
}

// pickOutsiderRecipients draws the outsiders in to and cc of e-mail i (the
// outsider-recipients variant), from its brand's outsiders when it has some.
func (m *mailStore) pickOutsiderRecipients(i uint32, c *emailCore) {
	d := m.data
	o := newRNG(m.seed, tagEmailOutsider, uint64(i))
	c.outTo, c.outCC = c.outBuf[:0:1], c.outBuf[1:1:2]
	pool := func() int {
		if c.brand >= 0 && len(d.brands[c.brand].outsiders) > 0 {
			os := d.brands[c.brand].outsiders
			return os[o.intn(len(os))]
		}
		return o.intn(len(m.outsiders))
	}
	if o.chance(0.5) {
		c.outTo = append(c.outTo, pool())
	}
	if o.chance(0.1) {
		c.outCC = append(c.outCC, pool())
	}
}

// applyEdit replaces participants and links by an admin edit's.
func (c *emailCore) applyEdit(ed *emailEdit) {
	if ed == nil {
		return
	}
	if ed.setTo {
		c.to = ed.to
	}
	if ed.setCC {
		c.cc = ed.cc
	}
	if ed.setBCC {
		c.bcc = ed.bcc
	}
	if ed.setLinks {
		c.brand, c.project = ed.brand, ed.project
	}
}

// subject writes e-mail i's generated subject into b.
func (m *mailStore) subject(b []byte, i uint32, c *emailCore) []byte {
	if c.root != i {
		b = append(b, "Re: "...)
	} else if c.forward {
		b = append(b, "Fwd: "...)
	}
	var tpl string
	if c.brand >= 0 {
		tpl = brandSubjects[c.template]
	} else {
		tpl = plainSubjects[c.template]
	}
	for len(tpl) > 0 {
		k := strings.IndexByte(tpl, '{')
		if k < 0 || k+2 >= len(tpl) || tpl[k+2] != '}' {
			b = append(b, tpl...)
			break
		}
		b = append(b, tpl[:k]...)
		switch tpl[k+1] {
		case 'b':
			b = append(b, m.data.brands[c.brand].name...)
		case 'p':
			if c.project >= 0 {
				b = append(b, m.data.projects[c.project].name...)
			} else {
				b = append(b, m.data.brands[c.brand].name...)
			}
		case 'm':
			t := time.UnixMicro(m.ts[c.root]).UTC()
			b = append(b, months[t.Month()-1]...)
		case 'n':
			b = strconv.AppendInt(b, int64(c.number), 10)
		}
		tpl = tpl[k+3:]
	}
	return b
}

// message writes e-mail i's body into b.
func (m *mailStore) message(b []byte, i uint32, c *emailCore) []byte {
	r := newRNG(m.seed, tagEmail, uint64(i)|1<<40)
	b = append(b, "Bună ziua,\n\n"...)
	for k := range r.between(2, 5) {
		if k > 0 {
			b = append(b, ' ')
		}
		b = append(b, pick(&r, messageSentences)...)
	}
	b = append(b, "\n\nO zi bună,\n"...)
	if c.fromUser > 0 {
		b = append(b, m.people[c.fromUser].first...)
	} else {
		b = append(b, m.outsiders[c.fromOut].first...)
	}
	return b
}

func appendHex16(b []byte, v uint64) []byte {
	for s := 60; s >= 0; s -= 4 {
		b = append(b, hexDigits[(v>>uint(s))&0xf])
	}
	return b
}

func (m *mailStore) mailboxID(i uint32) uint64 {
	return mix64(uint64(m.seed)^tagMailbox<<56^uint64(i)) | 1<<60
}

// matchesUsers reports whether e-mail i, after edits, involves one of users.
func (m *mailStore) matchesUsers(i uint32, users map[int64]bool, c *emailCore) bool {
	m.derive(i, c, false)
	c.applyEdit(m.edits[i])
	if users[c.fromUser] {
		return true
	}
	for _, list := range [][]int64{c.to, c.cc, c.bcc} {
		for _, u := range list {
			if users[u] {
				return true
			}
		}
	}
	return false
}

// commsQuery is a normalised communications filter.
type commsQuery struct {
	users    []int64 // sorted, unique
	from, to int64   // email_at bounds in µs: from inclusive, to exclusive
	brand    int     // brand index; -1 = no filter
	none     bool    // nothing can match (other domain, unknown brand)
}

func (q *commsQuery) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|%d|%d|%t|", q.from, q.to, q.brand, q.none)
	for _, u := range q.users {
		b.WriteString(strconv.FormatInt(u, 10))
		b.WriteByte(',')
	}
	return b.String()
}

// matchSet is the ordered list of matching e-mail indexes: either the range
// [lo, hi) or an explicit list.
type matchSet struct {
	isRange bool
	lo, hi  uint32
	list    []uint32
}

func (s *matchSet) len() int {
	if s.isRange {
		return int(s.hi - s.lo)
	}
	return len(s.list)
}

func (s *matchSet) at(k int) uint32 {
	if s.isRange {
		return s.lo + uint32(k)
	}
	return s.list[k]
}

const maxCachedQueries = 32

// match returns the e-mails matching q, ascending; results are cached until
// the next change of the e-mails.
func (m *mailStore) match(q *commsQuery) *matchSet {
	if q.none {
		return &matchSet{isRange: true}
	}
	k := q.key()
	m.cacheMu.Lock()
	if s, ok := m.cache[k]; ok {
		m.cacheMu.Unlock()
		return s
	}
	m.cacheMu.Unlock()
	s := m.compute(q)
	m.cacheMu.Lock()
	if len(m.cache) >= maxCachedQueries {
		clear(m.cache)
	}
	m.cache[k] = s
	m.cacheMu.Unlock()
	return s
}

func (m *mailStore) compute(q *commsQuery) *matchSet {
	s := m.computeAll(q)
	if len(m.gone) == 0 {
		return s
	}
	var list []uint32
	for k := range s.len() {
		if _, g := m.gone[s.at(k)]; !g {
			list = append(list, s.at(k))
		}
	}
	return &matchSet{list: list}
}

// computeAll matches q against every e-mail, gone ones included.
func (m *mailStore) computeAll(q *commsQuery) *matchSet {
	lo := uint32(sort.Search(len(m.ts), func(k int) bool { return m.ts[k] >= q.from }))
	hi := uint32(sort.Search(len(m.ts), func(k int) bool { return m.ts[k] >= q.to }))
	if hi <= lo {
		return &matchSet{isRange: true}
	}
	// The users that exist; every e-mail involves at least one of them.
	valid := q.users[:0:0]
	for _, u := range q.users {
		if u >= 1 && u <= int64(m.users) {
			valid = append(valid, u)
		}
	}
	if len(valid) == 0 {
		return &matchSet{isRange: true}
	}
	if len(valid) == m.users {
		if q.brand < 0 {
			return &matchSet{isRange: true, lo: lo, hi: hi}
		}
		var list []uint32
		want := uint16(q.brand + 1)
		for i := lo; i < hi; i++ {
			if m.brand[i] == want {
				list = append(list, i)
			}
		}
		return &matchSet{list: list}
	}
	n := hi - lo
	bm := make([]uint64, (n+63)/64)
	for _, u := range valid {
		p := m.post[u]
		k := sort.Search(len(p), func(j int) bool { return p[j] >= lo })
		for ; k < len(p) && p[k] < hi; k++ {
			o := p[k] - lo
			bm[o/64] |= 1 << (o % 64)
		}
	}
	if len(m.edits) > 0 {
		set := make(map[int64]bool, len(valid))
		for _, u := range valid {
			set[u] = true
		}
		var c emailCore
		for i := range m.edits {
			if i < lo || i >= hi {
				continue
			}
			o := i - lo
			if m.matchesUsers(i, set, &c) {
				bm[o/64] |= 1 << (o % 64)
			} else {
				bm[o/64] &^= 1 << (o % 64)
			}
		}
	}
	var list []uint32
	want := uint16(q.brand + 1)
	for w, word := range bm {
		for word != 0 {
			b := uint32(bits.TrailingZeros64(word))
			word &= word - 1
			i := lo + uint32(w)*64 + b
			if q.brand >= 0 && m.brand[i] != want {
				continue
			}
			list = append(list, i)
		}
	}
	return &matchSet{list: list}
}
