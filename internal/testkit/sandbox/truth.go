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
	tw := &truthWriter{bw: bufio.NewWriterSize(w, 256<<10)}
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, cst := s.truthStyles()
	badRate := s.faultConfig().badRate
	s.truthBrands(tw, st)
	s.truthRecords(tw, st, badRate)
	s.truthEmails(tw, cst, badRate)
	if tw.err != nil {
		return fmt.Errorf("write truth: %w", tw.err)
	}
	if err := tw.bw.Flush(); err != nil {
		return fmt.Errorf("write truth: %w", err)
	}
	return nil
}

// truthWriter writes the lines of the truth through a buffer, keeping the
// first write error; once there is one, further lines are left out.
type truthWriter struct {
	bw  *bufio.Writer
	e   enc
	err error
}

// line writes one record of stream with its key (and brandID unless empty)
// and its bad flag; rec writes the record itself.
func (tw *truthWriter) line(stream, key, brandID string, bad bool, rec func(e *enc)) {
	if tw.err != nil {
		return
	}
	e := &tw.e
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
	rec(e)
	e.b = append(e.b, '}', '\n')
	_, tw.err = tw.bw.Write(e.b)
}

// truthKey is the key of a record with id.
func truthKey(id int64) string { return strconv.FormatInt(id, 10) }

// truthBrands writes the streams of the brands that are not deleted: the
// brands list, the brand details, the contacts and the lists per brand
// served from their declarations.
func (s *Server) truthBrands(tw *truthWriter, st mainStyle) {
	d := s.data
	for _, b := range d.brands {
		if !b.deleted {
			tw.line(streamBrands, truthKey(b.id), "", false, func(e *enc) { d.writeBrandElement(e, b, st) })
		}
	}
	for _, b := range d.brands {
		if !b.deleted {
			tw.line(streamBrandDetails, truthKey(b.id), "", false, func(e *enc) { d.writeBrandDetail(e, b, st) })
		}
	}
	for _, b := range d.brands {
		if b.deleted {
			continue
		}
		for k := range b.contacts {
			c := &b.contacts[k]
			tw.line(streamContacts, truthKey(c.id), truthKey(b.id), false, func(e *enc) { writeContact(e, c, st) })
		}
	}
	for _, l := range s.brandLists {
		for _, b := range d.brands {
			if b.deleted {
				continue
			}
			for _, rec := range l.records(b.id, s.opts.Start) {
				tw.line(l.name, rec.ID, truthKey(b.id), false, func(e *enc) { e.raw(string(rec.JSON)) })
			}
		}
	}
}

// truthRecords writes the projects that are not deleted, the finance
// ledgers (bad at badRate), the profitability rows and the agency summary
// months.
func (s *Server) truthRecords(tw *truthWriter, st mainStyle, badRate float64) {
	d := s.data
	seed := s.opts.Seed
	for _, p := range d.projects {
		if !p.deleted {
			tw.line(streamProjects, truthKey(p.id), "", false, func(e *enc) { d.writeProject(e, p, true, st) })
		}
	}
	for _, l := range d.ledgers() {
		for k := range l.n {
			bad, kind := l.badKind(k, seed, badRate)
			tw.line(l.name, truthKey(l.entry(k).id), "", bad, func(e *enc) { l.write(e, k, st, kind) })
		}
	}
	for k := range d.profit {
		row := &d.profit[k]
		tw.line(streamProfitability, row.key(), "", false, func(e *enc) { writeProfit(e, row, st) })
	}
	for _, m := range d.summaryPeriods(monthIndex(s.Now())) {
		tw.line(streamSummary, periodString(m), "", false, func(e *enc) { writeSummary(e, m, d.summary[m], st) })
	}
}

// truthEmails writes the e-mails that exist (bad at badRate) in the style
// cst, stopping at the first write error.
func (s *Server) truthEmails(tw *truthWriter, cst commsStyle, badRate float64) {
	mail := s.mail
	seed := s.opts.Seed
	var c emailCore
	scratch := make([]byte, 0, 2048)
	for i := range uint32(len(mail.ts)) {
		if _, g := mail.gone[i]; g {
			continue
		}
		bad := mail.isBadEmail(i, badRate)
		tw.line(streamCommunications, truthKey(emailID(seed, i)), "", bad, func(e *enc) {
			scratch = mail.writeEmail(e, i, &c, false, cst, bad, scratch)
		})
		if tw.err != nil {
			break
		}
	}
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
