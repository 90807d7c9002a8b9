package extract

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// genUser writes one user object.
func genUser(b *strings.Builder, r *rand.Rand, id int) {
	first := []string{"Ana", "Mihai", "Ioana", "Radu", "Elena", "Dan", "Maria", "Andrei"}[id%8]
	if r.IntN(10) == 0 { // external sender: no last name, trailing space
		fmt.Fprintf(b, `{"first_name":%q,"last_name":null,"full_name":"%s ","email":"ext%d@partner.example.org","phone":null,"avatar":"https://cdn.example.com/avatars/blank.png","status":"Activ"}`, first, first, id)
		return
	}
	last := []string{"Popescu", "Ionescu", "Georgescu", "Dumitru", "Stan"}[id%5]
	phone := `""`
	if id%3 == 0 {
		phone = fmt.Sprintf(`"+40 7%08d"`, id*7919%100000000)
	}
	fmt.Fprintf(b, `{"first_name":%q,"last_name":%q,"full_name":"%s %s","email":"%s.%s%d@agency.example.com","phone":%s,"avatar":"https://cdn.example.com/avatars/blank.png","status":"Activ"}`,
		first, last, first, last, strings.ToLower(first), strings.ToLower(last), id, phone)
}

func genRecipients(b *strings.Builder, r *rand.Rand, n int, pick func() int) {
	if n == 0 {
		b.WriteString("[]")
		return
	}
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		id := pick()
		fmt.Fprintf(b, `"%d":`, id)
		genUser(b, r, id)
	}
	b.WriteByte('}')
}

// genCommsPage returns a realistic communications page of n rows (record ids
// ascending from first), in the canonical shape: the people come from a pool
// of 400 (an agency's users and contacts).
func genCommsPage(n, first, page, perPage, total int) []byte {
	return genCommsPagePool(n, first, page, perPage, total, 400)
}

// genCommsPagePool is genCommsPage with a pool of pool people; pool 0 makes
// every participant of the page a different person.
func genCommsPagePool(n, first, page, perPage, total, pool int) []byte {
	r := rand.New(rand.NewPCG(uint64(first), 42))
	next := 100
	pick := func() int {
		if pool == 0 {
			next++
			return next
		}
		return 100 + r.IntN(pool)
	}
	var b strings.Builder
	b.Grow(n * 1400)
	b.WriteString(`{"data":{"rows":`)
	if n == 0 {
		b.WriteString("[]")
	} else {
		b.WriteByte('{')
	}
	base := time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC)
	for i := range n {
		id := first + i
		if i > 0 {
			b.WriteByte(',')
		}
		at := base.Add(time.Duration(id) * 37 * time.Minute).Add(time.Duration(r.IntN(1e6)) * time.Microsecond)
		att := "null"
		if r.IntN(4) == 0 {
			att = "1"
		}
		brand := "null"
		if r.IntN(3) > 0 {
			brand = fmt.Sprint(10 + r.IntN(40))
		}
		fmt.Fprintf(&b, `"%d":{"email":{"type_id":%d,"type_name":"Email","brand_id":%s,"project_id":null,"subject":"Re: Campaign %d \u2014 weekly report \"Q%d\"","message":null,"has_attachments":%s,"size":%d,"mailbox_id":"18e%013x","mailbox_thread":"18e%013x","email_at":"%s"},"users":{"from":[`,
			id, 1+r.IntN(3), brand, id%97, 1+id%4, att, 2000+r.IntN(200000), id*7919, id/3*7919, at.Format("2006-01-02T15:04:05.000000Z"))
		genUser(&b, r, pick())
		b.WriteString(`],"to":`)
		genRecipients(&b, r, 1+r.IntN(3), pick)
		b.WriteString(`,"cc":`)
		genRecipients(&b, r, r.IntN(3)/2, pick)
		b.WriteString(`,"bcc":[]}}`)
	}
	if n > 0 {
		b.WriteByte('}')
	}
	last := (total + perPage - 1) / perPage
	fmt.Fprintf(&b, `,"total":%d,"per_page":%d,"current_page":%d,"last_page":%d}}`, total, perPage, page, last)
	return []byte(b.String())
}

// genProjectsPage returns a canonical projects list of n rows.
func genProjectsPage(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"project_info":{"id":"%d","brand_id":"%d","name":"Project %d \u00e9","status":"active","start_date":"2024-01-%02d","deadline":"2024-12-31","closed_at":null,"updated_at":"2024-03-01T10:15:30.123456Z","budget":{"amount":%d.50,"currency":"RON"}}}`,
			1000+i, 10+i%40, i, 1+i%28, 1000+i*7)
	}
	fmt.Fprintf(&b, `],"total":%d,"per_page":1000,"current_page":1,"last_page":1}`, n)
	return []byte(b.String())
}
