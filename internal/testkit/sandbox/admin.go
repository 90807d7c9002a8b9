package sandbox

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound reports an admin call on a record that does not exist.
var ErrNotFound = errors.New("record not found")

// ErrInvalid reports an admin call with invalid arguments.
var ErrInvalid = errors.New("invalid argument")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Amount is a money amount in cents. In JSON it is a number or a string with
// at most two decimals (12, 12.5, "1250.50"); it is never parsed as a float.
type Amount int64

// UnmarshalJSON implements json.Unmarshaler.
func (a *Amount) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if len(s) > 1 && s[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("parse amount: %w", err)
		}
	}
	c, err := parseCents(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*a = Amount(c)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (a Amount) MarshalJSON() ([]byte, error) { return appendCents(nil, int64(a)), nil }

func parseCents(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || len(frac) > 2 || hasDot && frac == "" || strings.Trim(whole+frac, "0123456789") != "" {
		return 0, invalid("amount %q must be a decimal with at most two decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1<<50 {
		return 0, invalid("amount %q is out of range", s)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	c := w*100 + f
	if neg {
		c = -c
	}
	return c, nil
}

// Advance moves the sandbox clock forward by d and returns the new time.
func (s *Server) Advance(d time.Duration) (time.Time, error) {
	if d < 0 {
		return s.Now(), invalid("advance must not be negative")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock.Add(int64(d))
	return s.Now(), nil
}

// SetClock sets the sandbox clock. Setting it back is allowed (e-mails
// appended later still get ids and timestamps after the existing ones).
func (s *Server) SetClock(t time.Time) error {
	if t.IsZero() {
		return invalid("the clock must not be zero")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock.Store(t.UnixNano())
	return nil
}

// SetFaults replaces the fault rates.
func (s *Server) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.fc.faults = f
	return nil
}

// Faults returns the fault rates in effect.
func (s *Server) Faults() Faults { return s.faultConfig().faults }

// SetLatency sets the latency and jitter added to every response.
func (s *Server) SetLatency(latency, jitter time.Duration) error {
	return s.ApplyFaultSettings(FaultSettings{Latency: durPtr(latency), Jitter: durPtr(jitter)})
}

// SetBadRecordRate sets the share of deliberately malformed records.
func (s *Server) SetBadRecordRate(rate float64) error {
	return s.ApplyFaultSettings(FaultSettings{BadRecordRate: &rate})
}

func durPtr(d time.Duration) *string { v := d.String(); return &v }

// FaultSettings returns the run-time fault configuration.
func (s *Server) FaultSettings() FaultSettings { return s.faultConfig().settings() }

// ApplyFaultSettings changes the keys that fs sets and keeps the others;
// nothing changes when a value is invalid.
func (s *Server) ApplyFaultSettings(fs FaultSettings) error {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	c := s.fc
	for _, f := range []struct {
		src *float64
		dst *float64
	}{
		{fs.Err500, &c.faults.Err500}, {fs.HTML502, &c.faults.HTML502}, {fs.Err503, &c.faults.Err503},
		{fs.Truncate, &c.faults.Truncate}, {fs.Slow, &c.faults.Slow}, {fs.Drop, &c.faults.Drop},
		{fs.Spurious429, &c.faults.Spurious429}, {fs.BadRecordRate, &c.badRate},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	for _, f := range []struct {
		name string
		src  *string
		dst  *time.Duration
	}{{"latency", fs.Latency, &c.latency}, {"jitter", fs.Jitter, &c.jitter}, {"slow_delay", fs.SlowDelay, &c.slowDelay}} {
		if f.src == nil {
			continue
		}
		d, err := time.ParseDuration(*f.src)
		if err != nil || d < 0 {
			return invalid("%s must be a non-negative duration such as 250ms, got %q", f.name, *f.src)
		}
		*f.dst = d
	}
	if err := c.faults.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.badRate < 0 || c.badRate > 1 || c.badRate != c.badRate {
		return invalid("bad_record_rate must be within 0..1")
	}
	s.fc = c
	return nil
}

// AppendEmails adds n new e-mails at the sandbox clock's now, with ids above
// every existing one, and returns the first and last new record ids.
func (s *Server) AppendEmails(n int) (first, last int64, err error) { return s.appendEmails(n, nil) }

// AppendEmailsDated appends n e-mails as AppendEmails does (filed at the
// clock's now: date_start/date_end filter on that) whose email_at field says
// emailAt instead, as a sender's wrong clock would (9999-12-31, a month
// ahead).
func (s *Server) AppendEmailsDated(n int, emailAt time.Time) (first, last int64, err error) {
	if emailAt.Year() > 9999 || emailAt.Year() < 1 {
		return 0, 0, invalid("email_at must be an instant within the years 1..9999")
	}
	us := emailAt.UnixMicro()
	return s.appendEmails(n, &us)
}

// appendEmails appends n e-mails; a non-nil emailAt (Unix microseconds)
// replaces their email_at field.
func (s *Server) appendEmails(n int, emailAt *int64) (first, last int64, err error) {
	if n < 1 {
		return 0, 0, invalid("append must be at least 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mail
	start := len(m.ts)
	if err := m.appendEmails(n, s.Now()); err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if emailAt != nil {
		for i := uint32(start); i < uint32(len(m.ts)); i++ {
			m.edits[i] = &emailEdit{emailAt: emailAt}
		}
		m.invalidate()
	}
	return emailID(m.seed, uint32(start)), emailID(m.seed, uint32(len(m.ts)-1)), nil
}

// EmailEdit is a late edit of an existing e-mail, as agency staff make when
// they file mail to a project after the fact. Nil fields are unchanged; the
// day the service files the e-mail under (its filing time, which
// date_start/date_end filter on) never changes. Recipient lists hold
// platform user ids and replace the platform users of that list (an empty
// list empties it).
type EmailEdit struct {
	Subject *string  `json:"subject,omitempty"`
	To      *[]int64 `json:"to,omitempty"`
	CC      *[]int64 `json:"cc,omitempty"`
	BCC     *[]int64 `json:"bcc,omitempty"`
	// BrandID and ProjectID link the e-mail to a brand and a project (0
	// unlinks it). A project alone links its brand too; a brand and a
	// project of another brand are refused. The subject stays what it was.
	BrandID   *int64 `json:"brand_id,omitempty"`
	ProjectID *int64 `json:"project_id,omitempty"`
	// EmailAt is the email_at served from now on (RFC 3339, years 1..9999),
	// as a bogus Date: header would say; the e-mail stays filed where it was.
	EmailAt *string `json:"email_at,omitempty"`
	// Nesting gives the e-mail an extra member "extra" made of that many
	// nested arrays ([[[…]]]): valid JSON nested deeper than decoders that
	// bound their depth accept. 0 removes it.
	Nesting *int `json:"nesting,omitempty"`
}

// maxNesting bounds EmailEdit.Nesting.
const maxNesting = 100_000

// EditEmail applies ed to the e-mail with record id.
func (s *Server) EditEmail(id int64, ed EmailEdit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mail
	i, ok := m.emailIndex(id)
	if !ok {
		return fmt.Errorf("find email %d: %w", id, ErrNotFound)
	}
	cur := m.edits[i]
	next := &emailEdit{}
	if cur != nil {
		*next = *cur
	}
	if ed.Subject != nil {
		v := *ed.Subject
		next.subject = &v
	}
	if ed.Nesting != nil {
		if *ed.Nesting < 0 || *ed.Nesting > maxNesting {
			return invalid("nesting must be within 0..%d, got %d", maxNesting, *ed.Nesting)
		}
		next.nesting = *ed.Nesting
	}
	if ed.EmailAt != nil {
		at, err := time.Parse(time.RFC3339Nano, *ed.EmailAt)
		if err != nil || at.Year() < 1 || at.Year() > 9999 {
			return invalid("email_at must be an RFC 3339 time within the years 1..9999, got %q", *ed.EmailAt)
		}
		us := at.UnixMicro()
		next.emailAt = &us
	}
	if err := s.editLinks(i, next, ed); err != nil {
		return err
	}
	for _, l := range []struct {
		name string
		src  *[]int64
		dst  *[]int64
		set  *bool
	}{{"to", ed.To, &next.to, &next.setTo}, {"cc", ed.CC, &next.cc, &next.setCC}, {"bcc", ed.BCC, &next.bcc, &next.setBCC}} {
		if l.src == nil {
			continue
		}
		list := slices.Clone(*l.src)
		for _, u := range list {
			if u < 1 || u > int64(m.users) {
				return invalid("%s: %d is not a platform user id", l.name, u)
			}
		}
		slices.Sort(list)
		if len(slices.Compact(slices.Clone(list))) != len(list) {
			return invalid("%s lists a user twice", l.name)
		}
		*l.dst, *l.set = list, true
	}
	var c emailCore
	m.derive(i, &c, false)
	c.applyEdit(next)
	if c.fromUser == 0 && len(c.to)+len(c.cc)+len(c.bcc) == 0 {
		return invalid("the e-mail must keep at least one platform user")
	}
	m.edits[i] = next
	m.brand[i] = uint16(c.brand + 1) // the -brand_url filter follows the link
	m.invalidate()
	return nil
}

// editLinks applies the brand and project links of ed to next (e-mail i's
// edit in the making), freezing the subject first so that it does not
// follow the new link.
func (s *Server) editLinks(i uint32, next *emailEdit, ed EmailEdit) error {
	if ed.BrandID == nil && ed.ProjectID == nil {
		return nil
	}
	d, m := s.data, s.mail
	brand, project := -1, -1
	if ed.ProjectID != nil && *ed.ProjectID != 0 {
		k, ok := d.projectByID[*ed.ProjectID]
		if !ok {
			return invalid("project_id %d is not a project", *ed.ProjectID)
		}
		project, brand = k, d.projects[k].brand
	}
	if ed.BrandID != nil && *ed.BrandID != 0 {
		k, ok := d.brandByID[*ed.BrandID]
		if !ok {
			return invalid("brand_id %d is not a brand", *ed.BrandID)
		}
		if project >= 0 && brand != k {
			return invalid("project %d belongs to brand %d, not %d", *ed.ProjectID, d.brands[brand].id, *ed.BrandID)
		}
		brand = k
	}
	var c emailCore
	m.derive(i, &c, false)
	c.applyEdit(next)
	if next.subject == nil {
		subject := string(m.subject(nil, i, &c))
		next.subject = &subject
	}
	if ed.ProjectID == nil && c.project >= 0 && d.projects[c.project].brand == brand {
		project = c.project // a brand link keeps a project of that brand
	}
	next.brand, next.project = brand, project
	next.setLinks = true
	return nil
}

// BrandEdit changes a brand; nil fields are unchanged.
type BrandEdit struct {
	Name             *string               `json:"name,omitempty"`
	Status           *string               `json:"status,omitempty"`
	FinancialSummary *FinancialSummaryEdit `json:"financial_summary,omitempty"`
}

// FinancialSummaryEdit overrides a brand's financial_summary amounts, which
// are otherwise the sums of its finance records. Reset drops earlier
// overrides first.
type FinancialSummaryEdit struct {
	Reset       bool    `json:"reset,omitempty"`
	TotalBudget *Amount `json:"total_budget,omitempty"`
	Invoiced    *Amount `json:"invoiced,omitempty"`
	Collected   *Amount `json:"collected,omitempty"`
}

func (s *Server) brandAt(id int64) (*brand, error) {
	return recordAt(s.data.brands, s.data.brandByID, "brand", id)
}

func (s *Server) projectAt(id int64) (*project, error) {
	return recordAt(s.data.projects, s.data.projectByID, "project", id)
}

// editRecord finds the record of id with at and applies edit to it, under
// s.mu.
func editRecord[T any](s *Server, id int64, at func(int64) (T, error), edit func(T) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := at(id)
	if err != nil {
		return err
	}
	return edit(x)
}

// recordAt returns the record of id in list (indexed by byID), or an
// ErrNotFound naming kind.
func recordAt[T any](list []T, byID map[int64]int, kind string, id int64) (T, error) {
	k, ok := byID[id]
	if !ok {
		var none T
		return none, fmt.Errorf("find %s %d: %w", kind, id, ErrNotFound)
	}
	return list[k], nil
}

// checkNames refuses a name or a status (when given) that is blank.
func checkNames(name, status *string) error {
	if name != nil && strings.TrimSpace(*name) == "" || status != nil && strings.TrimSpace(*status) == "" {
		return invalid("name and status must not be empty")
	}
	return nil
}

// EditBrand applies ed to brand id and bumps its metadata.updated_at.
func (s *Server) EditBrand(id int64, ed BrandEdit) error {
	return editRecord(s, id, s.brandAt, func(b *brand) error {
		if err := checkNames(ed.Name, ed.Status); err != nil {
			return err
		}
		if ed.Name == nil && ed.Status == nil && ed.FinancialSummary == nil {
			return invalid("nothing to change")
		}
		if ed.Name != nil {
			b.name = *ed.Name
		}
		if ed.Status != nil {
			b.status = *ed.Status
		}
		if fs := ed.FinancialSummary; fs != nil {
			if fs.Reset {
				b.fsOverride = [3]*int64{}
			}
			for k, v := range []*Amount{fs.TotalBudget, fs.Invoiced, fs.Collected} {
				if v != nil {
					c := int64(*v)
					b.fsOverride[k] = &c
				}
			}
		}
		b.updatedAt = s.Now()
		return nil
	})
}

// DeleteBrand removes brand id from the brands list; its detail and contacts
// answer 404. Its projects and finance records stay.
func (s *Server) DeleteBrand(id int64) error { return s.setDeleted(true, id, true) }

// RestoreBrand undoes DeleteBrand.
func (s *Server) RestoreBrand(id int64) error { return s.setDeleted(true, id, false) }

// DeleteProject removes project id from the projects list (and its brand's
// projects_count); its detail answers 404. Its finance records stay.
func (s *Server) DeleteProject(id int64) error { return s.setDeleted(false, id, true) }

// RestoreProject undoes DeleteProject.
func (s *Server) RestoreProject(id int64) error { return s.setDeleted(false, id, false) }

// setDeleted sets the deleted mark of brand id (isBrand) or project id; a
// project's brand's projects_count follows.
func (s *Server) setDeleted(isBrand bool, id int64, deleted bool) error {
	if isBrand {
		return editRecord(s, id, s.brandAt, func(b *brand) error { b.deleted = deleted; return nil })
	}
	return editRecord(s, id, s.projectAt, func(p *project) error {
		p.deleted = deleted
		s.data.recompute()
		return nil
	})
}

// ProjectEdit changes a project; nil fields are unchanged. Every change adds
// a history entry and sets updated_at to the clock's now; Touch only bumps
// updated_at.
type ProjectEdit struct {
	Name     *string `json:"name,omitempty"`
	Status   *string `json:"status,omitempty"`
	Deadline *string `json:"deadline,omitempty"` // YYYY-MM-DD
	Touch    bool    `json:"touch,omitempty"`
}

// EditProject applies ed to project id.
func (s *Server) EditProject(id int64, ed ProjectEdit) error {
	return editRecord(s, id, s.projectAt, func(p *project) error {
		if ed.Name == nil && ed.Status == nil && ed.Deadline == nil && !ed.Touch {
			return invalid("nothing to change")
		}
		var deadline time.Time
		if ed.Deadline != nil {
			var err error
			if deadline, err = time.Parse(layoutDate, *ed.Deadline); err != nil {
				return invalid("deadline must be a date YYYY-MM-DD")
			}
		}
		if err := checkNames(ed.Name, ed.Status); err != nil {
			return err
		}
		now := s.Now()
		by := p.team[0].userID
		change := func(field, from, to string) {
			p.history = append(p.history, historyEntry{at: now, field: field, from: from, to: to, by: by})
		}
		if ed.Name != nil && *ed.Name != p.name {
			change("name", p.name, *ed.Name)
			p.name = *ed.Name
		}
		if ed.Status != nil && *ed.Status != p.status {
			change("status", p.status, *ed.Status)
			p.status = *ed.Status
			switch p.status {
			case projectDone, projectCancelled:
				p.closedAt = now
			default:
				p.closedAt = time.Time{}
			}
		}
		if ed.Deadline != nil && !deadline.Equal(p.deadline) {
			change("deadline", p.deadline.Format(layoutDate), deadline.Format(layoutDate))
			p.deadline = deadline
		}
		p.updatedAt = now
		return nil
	})
}

// Finance kinds accepted by EditFinance.
const (
	FinanceBudgets     = "budgets"
	FinanceInvoices    = "invoices"
	FinanceCollections = "collections"
	FinancePayments    = "payments"
)

// FinanceEdit changes a finance record; nil fields are unchanged. Collections
// have no status. updated_at becomes the clock's now (unless KeepUpdatedAt:
// a platform that corrects a record without touching it, which an
// updated_since listing then misses) and every aggregate (brand financial
// summary, profitability, agency summary) follows.
type FinanceEdit struct {
	Amount        *Amount `json:"amount,omitempty"`
	Status        *string `json:"status,omitempty"`
	KeepUpdatedAt bool    `json:"keep_updated_at,omitempty"`
}

// EditFinance applies ed to the finance record id of kind (budgets,
// invoices, collections or payments).
func (s *Server) EditFinance(kind string, id int64, ed FinanceEdit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ed.Amount == nil && ed.Status == nil {
		return invalid("nothing to change")
	}
	if ed.Status != nil && strings.TrimSpace(*ed.Status) == "" {
		return invalid("status must not be empty")
	}
	d := s.data
	l, ok := d.ledger(kind)
	if !ok {
		return invalid("finance kind must be budgets, invoices, collections or payments, got %q", kind)
	}
	k, ok := l.byID[id]
	if !ok {
		return fmt.Errorf("find %s %d: %w", kind, id, ErrNotFound)
	}
	if ed.Status != nil && !l.hasStatus {
		return invalid("%s have no status", kind)
	}
	x := l.entry(k)
	if ed.Amount != nil {
		x.amount = int64(*ed.Amount)
	}
	if ed.Status != nil {
		x.status = *ed.Status
	}
	if !ed.KeepUpdatedAt {
		x.updatedAt = s.Now()
	}
	d.recompute()
	return nil
}

// SpendQuota counts n requests made elsewhere today with the main
// interface's key (the shared scope, or "api" when scopes are separate).
func (s *Server) SpendQuota(n int) error { return s.spend(s.apiLim, n) }

// SpendCommsQuota counts n requests made elsewhere today on the
// communications endpoint's scope (the shared one unless separate).
func (s *Server) SpendCommsQuota(n int) error { return s.spend(s.commsLim, n) }

func (s *Server) spend(l *limiter, n int) error {
	if n < 0 {
		return invalid("spend must not be negative")
	}
	l.spend(s.quotaDay(), int64(n))
	return nil
}

// ResetStats zeroes the request counters (not the quota).
func (s *Server) ResetStats() { s.stats.reset() }

// serveAdmin serves /_sandbox/: see README.md for the paths.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if s.opts.AdminToken == "" {
		writeError(w, http.StatusNotFound, body404)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Admin-Token")), []byte(s.opts.AdminToken)) != 1 {
		writeError(w, http.StatusUnauthorized, body401)
		return
	}
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/_sandbox"), "/"), "/")
	if strings.Join(parts, "/") == "truth" && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		if err := s.Truth(w); err != nil {
			s.log.Debug("truth not fully written")
		}
		return
	}
	var e enc
	switch err := s.adminRoute(&e, r, parts); {
	case err == nil:
		writeBody(w, http.StatusOK, ctJSON, e.b)
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, body404)
	default:
		var b enc
		errorBody(&b, body400Prefix, err.Error())
		writeBody(w, http.StatusBadRequest, ctJSON, b.b)
	}
}

// adminRoute serves the admin path parts (the truth aside) and writes its
// JSON answer into e; an unknown path or record is an ErrNotFound, any other
// error a bad request.
func (s *Server) adminRoute(e *enc, r *http.Request, parts []string) error {
	get, post := r.Method == http.MethodGet, r.Method == http.MethodPost
	route := strings.Join(parts, "/")
	idAt := func(k int) (int64, bool) {
		if k >= len(parts) {
			return 0, false
		}
		v, err := strconv.ParseInt(parts[k], 10, 64)
		return v, err == nil
	}
	switch {
	case route == "stats" && get:
		return writeJSONValue(e, s.Stats())
	case route == "stats/reset" && post:
		s.ResetStats()
		return writeJSONValue(e, s.Stats())
	case route == "faults" && (get || post):
		return adminState(e, r, s.ApplyFaultSettings, func() any { return s.FaultSettings() })
	case route == "clock" && (get || post):
		return adminState(e, r, s.adminClock, func() any { return map[string]string{"now": s.Now().Format(time.RFC3339Nano)} })
	case route == "emails" && post:
		return s.adminAppendEmails(e, r)
	case len(parts) == 2 && parts[0] == "emails" && post:
		if id, ok := idAt(1); ok {
			return adminEdit(s, e, r, streamCommunications, id, s.EditEmail)
		}
		return fmt.Errorf("find email %s: %w", parts[1], ErrNotFound)
	case len(parts) >= 2 && (parts[0] == "brands" || parts[0] == "projects") && post:
		return s.adminEntity(e, r, parts, idAt)
	case len(parts) == 3 && parts[0] == "finance" && post:
		if id, ok := idAt(2); ok {
			return adminEdit(s, e, r, parts[1], id, func(id int64, ed FinanceEdit) error { return s.EditFinance(parts[1], id, ed) })
		}
		return fmt.Errorf("find %s %s: %w", parts[1], parts[2], ErrNotFound)
	case route == "quota" && post:
		return s.adminQuota(e, r)
	case route == "twists" && (get || post):
		return adminState(e, r, s.SetTwists, func() any { return s.TwistsStatus() })
	case route == "twists/mutate-between-pages" && post:
		return adminState(e, r, s.ArmMutation, func() any { return s.TwistsStatus() })
	}
	return fmt.Errorf("route admin path %s: %w", route, ErrNotFound)
}

// adminAppendEmails serves POST /_sandbox/emails: it appends e-mails at the
// clock's now, or at the email_at given, and answers their ids.
func (s *Server) adminAppendEmails(e *enc, r *http.Request) error {
	var req struct {
		Append  int    `json:"append"`
		EmailAt string `json:"email_at"`
	}
	if err := decodeAdmin(r, &req); err != nil {
		return err
	}
	var first, last int64
	var err error
	if req.EmailAt != "" {
		at, perr := time.Parse(time.RFC3339Nano, req.EmailAt)
		if perr != nil {
			return invalid("email_at must be an RFC 3339 time")
		}
		first, last, err = s.AppendEmailsDated(req.Append, at)
	} else {
		first, last, err = s.AppendEmails(req.Append)
	}
	if err != nil {
		return err
	}
	return writeJSONValue(e, map[string]int64{"appended": int64(req.Append), "first_id": first, "last_id": last, "emails": int64(s.Stats().Emails)})
}

// adminQuota serves POST /_sandbox/quota: it counts requests made elsewhere
// today against a limit scope's quota and answers the scope's use.
func (s *Server) adminQuota(e *enc, r *http.Request) error {
	var req struct {
		Spend int    `json:"spend"`
		Scope string `json:"scope"`
	}
	if err := decodeAdmin(r, &req); err != nil {
		return err
	}
	l := s.apiLim
	switch req.Scope {
	case "", "api":
	case "comms":
		l = s.commsLim
	default:
		return invalid(`scope must be "api" or "comms"`)
	}
	if err := s.spend(l, req.Spend); err != nil {
		return err
	}
	d := s.quotaDay()
	return writeJSONValue(e, map[string]any{"scope": l.name, "day": d, "used": l.usage(d), "limit": s.opts.DailyQuota})
}

// clockRequest is the body of POST /_sandbox/clock.
type clockRequest struct {
	Advance string `json:"advance"`
	Set     string `json:"set"`
}

func (s *Server) adminClock(req clockRequest) error {
	advance, set := req.Advance, req.Set
	switch {
	case advance != "" && set != "":
		return invalid("give advance or set, not both")
	case advance != "":
		d, err := time.ParseDuration(advance)
		if err != nil {
			return invalid("advance must be a duration such as 25h")
		}
		_, err = s.Advance(d)
		return err
	case set != "":
		t, err := time.Parse(time.RFC3339Nano, set)
		if err != nil {
			return invalid("set must be an RFC 3339 time")
		}
		return s.SetClock(t)
	}
	return invalid("give advance or set")
}

func (s *Server) adminEntity(e *enc, r *http.Request, parts []string, idAt func(int) (int64, bool)) error {
	id, ok := idAt(1)
	isBrand := parts[0] == "brands"
	if !ok {
		return fmt.Errorf("find %s %s: %w", parts[0], parts[1], ErrNotFound)
	}
	switch {
	case len(parts) == 3 && (parts[2] == "delete" || parts[2] == "restore"):
		del := parts[2] == "delete"
		if err := s.setDeleted(isBrand, id, del); err != nil {
			return err
		}
		return writeJSONValue(e, map[string]any{"id": strconv.FormatInt(id, 10), "deleted": del})
	case len(parts) == 2 && isBrand:
		return adminEdit(s, e, r, streamBrandDetails, id, s.EditBrand)
	case len(parts) == 2:
		return adminEdit(s, e, r, streamProjects, id, s.EditProject)
	}
	return fmt.Errorf("route admin path %s: %w", strings.Join(parts, "/"), ErrNotFound)
}

// adminState answers a settings route: a POST first decodes its body and
// applies it; both methods then answer state().
func adminState[T any](e *enc, r *http.Request, apply func(T) error, state func() any) error {
	if r.Method == http.MethodPost {
		var v T
		if err := decodeAdmin(r, &v); err != nil {
			return err
		}
		if err := apply(v); err != nil {
			return err
		}
	}
	return writeJSONValue(e, state())
}

// adminEdit decodes an edit from r's body, applies it to record id and
// answers the record in its truth form (stream names it).
func adminEdit[T any](s *Server, e *enc, r *http.Request, stream string, id int64, apply func(int64, T) error) error {
	var ed T
	if err := decodeAdmin(r, &ed); err != nil {
		return err
	}
	if err := apply(id, ed); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.writeTruthRecord(e, stream, id)
	return nil
}

// decodeAdmin decodes an admin request body strictly (unknown keys are errors).
func decodeAdmin(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("request body: %v", err)
	}
	return nil
}

func writeJSONValue(e *enc, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode admin answer: %w", err)
	}
	e.b = append(e.b, b...)
	return nil
}
