package sandbox

import (
	"strconv"
	"strings"
)

// Platform-user and outsider constants.
const (
	// BlankAvatarURL is the avatar of every person without a picture.
	BlankAvatarURL = "https://app.agency.example/assets/img/avatar-blank.png"
	// AgencyMailDomain is the e-mail domain of platform users.
	AgencyMailDomain = "agentia-creativa.ro"
	// BrandURLPrefix is the start of the platform's own brand addresses; the
	// segment after "brands" is the brand id (see -brand_url).
	BrandURLPrefix = "https://app.agency.example/brands/"
)

// person is a participant of e-mails: a platform user (id > 0) or an outsider.
type person struct {
	id        int64 // platform user id; 0 for outsiders
	first     string
	last      string
	lastNull  bool
	full      string
	email     string
	phone     string
	phoneNull bool
	avatar    string
	status    string
	json      []byte // the rendered user object
	jsonFalse []byte // the same with false for null (php-false); nil when it has no null
}

func (p *person) render() {
	p.json = p.renderWith(mainStyle{})
	if p.lastNull || p.phoneNull {
		p.jsonFalse = p.renderWith(mainStyle{variantSet{phpFalse: true}})
	}
}

func (p *person) renderWith(st mainStyle) []byte {
	var e enc
	e.open()
	// Every member of a user object is text; last_name and phone may be null.
	for _, m := range []struct {
		key, value string
		null       bool
	}{
		{"first_name", p.first, false},
		{"last_name", p.last, p.lastNull},
		{"full_name", p.full, false},
		{"email", p.email, false},
		{"phone", p.phone, p.phoneNull},
		{"avatar", p.avatar, false},
		{"status", p.status, false},
	} {
		e.key(m.key)
		st.strOrNull(&e, m.value, m.null)
	}
	e.close()
	return e.b
}

// rendered is the user object in the style of the communications answer.
func (p *person) rendered(st commsStyle) []byte {
	if st.phpFalse && p.jsonFalse != nil {
		return p.jsonFalse
	}
	return p.json
}

// emailKey is the lower-cased address, used to key outsiders in variants.
func (p *person) emailKey() string { return strings.ToLower(p.email) }

func romanianPhone(r *rng) string {
	return "+40 7" + strconv.Itoa(r.between(20, 99)) + " " + strconv.Itoa(r.between(100, 999)) + " " + strconv.Itoa(r.between(100, 999))
}

// genPlatformUsers builds platform users 1..n; index 0 is unused.
func genPlatformUsers(seed int64, n int) []person {
	users := make([]person, n+1)
	seen := make(map[string]int, n)
	for id := 1; id <= n; id++ {
		r := newRNG(seed, tagPeople, uint64(id))
		first := firstName(&r)
		last := pick(&r, lastNames)
		local := asciiFold(first) + "." + asciiFold(last)
		local = strings.ReplaceAll(local, "-", "")
		seen[local]++
		if c := seen[local]; c > 1 {
			local += strconv.Itoa(c)
		}
		p := person{
			id:     int64(id),
			first:  first,
			last:   last,
			full:   first + " " + last,
			email:  local + "@" + AgencyMailDomain,
			avatar: BlankAvatarURL,
			status: "Activ",
		}
		p.phone, p.phoneNull = drawPhone(&r, 0.65)
		if r.chance(0.4) {
			p.avatar = "https://cdn.agency.example/avatars/u" + strconv.Itoa(id) + ".jpg"
		}
		if r.chance(0.05) {
			p.status = "Inactiv"
		}
		p.render()
		users[id] = p
	}
	return users
}

var outsiderDomains = []string{"gmail.com", "yahoo.com", "outlook.com", "yahoo.ro"}

// genOutsiders builds n external people. Each is attached to a brand
// (index % brands) so that a brand's e-mails come from its own people.
// Outsiders have last_name null and a full_name with a trailing space.
func genOutsiders(seed int64, n int, brandSlugs []string) []person {
	out := make([]person, n)
	seen := make(map[string]int, n)
	for i := range out {
		r := newRNG(seed, tagOutsider, uint64(i))
		first := firstName(&r)
		last := pick(&r, lastNames)
		var display, local string
		switch x := r.float(); {
		case x < 0.45: // only a first name is known
			display = first
			local = asciiFold(first) + "." + asciiFold(last)
		case x < 0.9: // the whole name sits in first_name
			display = first + " " + last
			local = asciiFold(first) + "." + asciiFold(last)
		default: // a role address
			display = pick(&r, []string{"Contabilitate", "Office", "Marketing", "Recepție"})
			local = pick(&r, []string{"contabilitate", "office", "marketing", "contact"})
		}
		local = strings.ReplaceAll(local, "-", "")
		var domain string
		if len(brandSlugs) > 0 && r.chance(0.6) {
			domain = brandSlugs[i%len(brandSlugs)] + ".ro"
		} else {
			domain = pick(&r, outsiderDomains)
		}
		addr := local + "@" + domain
		seen[addr]++
		if c := seen[addr]; c > 1 {
			addr = local + strconv.Itoa(c) + "@" + domain
		}
		if r.chance(0.1) { // typed with capitals; identity is the lower-cased address
			addr = strings.ToUpper(addr[:1]) + addr[1:]
			if at := strings.IndexByte(addr, '@'); at > 0 && at+1 < len(addr) {
				addr = addr[:at+1] + strings.ToUpper(addr[at+1:at+2]) + addr[at+2:]
			}
		}
		p := person{
			first:    display,
			lastNull: true,
			full:     display + " ",
			email:    addr,
			avatar:   BlankAvatarURL,
			status:   "Activ",
		}
		if r.chance(0.6) {
			p.phoneNull = true
		}
		p.render()
		out[i] = p
	}
	return out
}
