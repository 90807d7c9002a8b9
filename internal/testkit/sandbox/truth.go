package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// Truth stream names, in the order Truth writes them.
const (
	streamBrands         = "brands"
	streamBrandDetails   = "brand_details"
	streamContacts       = "contacts"
	streamProjects       = "projects"
	streamBudgets        = FinanceBudgets
	streamInvoices       = FinanceInvoices
	streamCollections    = FinanceCollections
	streamPayments       = FinancePayments
	streamProfitability  = "profitability"
	streamSummary        = "summary"
	streamCommunications = "communications"
)

// truthStyles are the canonical shapes; only the outsider-recipients variant,
// which changes content rather than shape, carries over.
func (s *Server) truthStyles() (mainStyle, commsStyle) {
	return mainStyle{}, commsStyle{variantSet{outsiderRecipients: s.vars.outsiderRecipients}}
}

// Truth writes the complete current dataset as JSON lines, one record per
// line: {"stream":S,"key":K,"bad":B,"record":R} (contacts, and the records
// of the lists per brand served from their declarations, whose S is the
// list's inventory name, also carry "brand_id"). R is the record as the API serves it in canonical shapes;
// B is true for records made malformed by the bad-record rate. Deleted
// brands and projects are left out. The order is stable: streams as listed
// in the README, records by id (profitability by level, entity, period).
func (s *Server) Truth(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.data
	st, cst := s.truthStyles()
	seed, badRate := s.opts.Seed, s.faultConfig().badRate
	var e enc
	var werr error
	line := func(stream, key, brandID string, bad bool, rec func(e *enc)) {
		if werr != nil {
			return
		}
		e.b = append(e.b[:0], `{"stream":"`...)
		e.b = append(e.b, stream...)
		e.b = append(e.b, `","key":`...)
		e.b = appendJSONString(e.b, key)
		if brandID != "" {
			e.b = append(e.b, `,"brand_id":`...)
			e.b = appendJSONString(e.b, brandID)
		}
		e.b = append(e.b, `,"bad":`...)
		e.b = strconv.AppendBool(e.b, bad)
		e.b = append(e.b, `,"record":`...)
		rec(&e)
		e.b = append(e.b, '}', '\n')
		_, werr = bw.Write(e.b)
	}
	key := func(id int64) string { return strconv.FormatInt(id, 10) }
	for _, b := range d.brands {
		if !b.deleted {
			line(streamBrands, key(b.id), "", false, func(e *enc) { d.writeBrandElement(e, b, st) })
		}
	}
	for _, b := range d.brands {
		if !b.deleted {
			line(streamBrandDetails, key(b.id), "", false, func(e *enc) { d.writeBrandDetail(e, b, st) })
		}
	}
	for _, b := range d.brands {
		if b.deleted {
			continue
		}
		for k := range b.contacts {
			c := &b.contacts[k]
			line(streamContacts, key(c.id), key(b.id), false, func(e *enc) { writeContact(e, c, st) })
		}
	}
	for _, l := range s.brandLists {
		for _, b := range d.brands {
			if b.deleted {
				continue
			}
			for _, rec := range l.records(b.id, s.opts.Start) {
				line(l.name, rec.ID, key(b.id), false, func(e *enc) { e.raw(string(rec.JSON)) })
			}
		}
	}
	for _, p := range d.projects {
		if !p.deleted {
			line(streamProjects, key(p.id), "", false, func(e *enc) { d.writeProject(e, p, true, st) })
		}
	}
	for _, l := range d.ledgers() {
		for k := range l.n {
			bad, kind := l.badKind(k, seed, badRate)
			line(l.name, key(l.entry(k).id), "", bad, func(e *enc) { l.write(e, k, st, kind) })
		}
	}
	for k := range d.profit {
		row := &d.profit[k]
		line(streamProfitability, row.key(), "", false, func(e *enc) { writeProfit(e, row, st) })
	}
	for _, m := range d.summaryPeriods(monthIndex(s.Now())) {
		line(streamSummary, periodString(m), "", false, func(e *enc) { writeSummary(e, m, d.summary[m], st) })
	}
	mail := s.mail
	var c emailCore
	scratch := make([]byte, 0, 2048)
	for i := range uint32(len(mail.ts)) {
		if _, g := mail.gone[i]; g {
			continue
		}
		bad := mail.isBadEmail(i, badRate)
		line(streamCommunications, key(emailID(seed, i)), "", bad, func(e *enc) {
			scratch = mail.writeEmail(e, i, &c, false, cst, bad, scratch)
		})
		if werr != nil {
			break
		}
	}
	if werr != nil {
		return fmt.Errorf("write truth: %w", werr)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write truth: %w", err)
	}
	return nil
}

// writeTruthRecord writes one record of stream in its canonical truth form
// (deleted records included), for admin answers. The caller holds s.mu.
func (s *Server) writeTruthRecord(e *enc, stream string, id int64) {
	d := s.data
	st, cst := s.truthStyles()
	seed, badRate := s.opts.Seed, s.faultConfig().badRate
	switch stream {
	case streamBrandDetails:
		if k, ok := d.brandByID[id]; ok {
			d.writeBrandDetail(e, d.brands[k], st)
			return
		}
	case streamProjects:
		if k, ok := d.projectByID[id]; ok {
			d.writeProject(e, d.projects[k], true, st)
			return
		}
	case streamBudgets, streamInvoices, streamCollections, streamPayments:
		l, _ := d.ledger(stream)
		if k, ok := l.byID[id]; ok {
			l.writeRecord(e, k, st, seed, badRate)
			return
		}
	case streamCommunications:
		if i, ok := s.mail.emailIndex(id); ok {
			var c emailCore
			s.mail.writeEmail(e, i, &c, false, cst, s.mail.isBadEmail(i, badRate), nil)
			return
		}
	}
	e.raw("null")
}
