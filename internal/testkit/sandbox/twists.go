package sandbox

import (
	"encoding/json"
	"net/url"
	"time"
)

// Twists are adversarial departures from the spec — servers that follow it
// but for one twist — switched at run time through POST /_sandbox/twists
// (the key names are a contract: tests and scripts use them). In a POST,
// absent keys keep their value.
type Twists struct {
	// MaxPerPage caps per_page from now on (both interfaces), as a server
	// whose page size changed between two runs; 0 restores --max-per-page.
	MaxPerPage *int `json:"max_per_page,omitempty"`
	// FixedPerPage makes both interfaces answer pages of exactly this size
	// whatever per_page asks (and answer it as per_page), as a server that
	// ignores the parameter and whose page size changed; 0 turns it off.
	FixedPerPage *int `json:"fixed_per_page,omitempty"`
	// LyingPaging makes every main list leave its last record out of the pages
	// that last_page advertises: total counts it, last_page = ceil(total /
	// per_page), and the record is served alone on page last_page+1.
	LyingPaging *bool `json:"lying_paging,omitempty"`
	// CommsPagingMissing drops total and last_page from communications
	// answers (per_page and current_page stay).
	CommsPagingMissing *bool `json:"comms_paging_missing,omitempty"`
	// EchoKey answers every data request that passes the key check with a
	// 400 whose details echo the request's key raw, URL-encoded and
	// JSON-escaped (see echoKeyBody).
	EchoKey *bool `json:"echo_key,omitempty"`
	// HostileTwists: bodies too large, charsets, keys echoed in records,
	// a refused main key (hostile.go).
	HostileTwists
	// CommsDayOffset moves where the communications endpoint cuts its
	// calendar days, a Go duration within -14h..+14h ("3h": date_start and
	// date_end are days of UTC+3); "0s" restores UTC days.
	CommsDayOffset *string `json:"comms_day_offset,omitempty"`
}

// Mutation arms a one-shot change of the e-mails between two page requests
// of one communications range (POST /_sandbox/twists/mutate-between-pages).
// After the AfterPages-th communications answer from now that has rows, a
// next page (current_page < last_page) and per_page of 2 or more (a
// per_page=1 count probe does not count), before that answer is sent:
//   - Delete: the last Delete records of the pages answered so far (positions
//     to-Delete..to-1 of the request's matching set, to being the end of the
//     answered page) are deleted, so Delete unseen records move back onto
//     pages the client has already read;
//   - Insert: the Insert records hidden when the mutation was armed (spread
//     evenly over all e-mails by position) appear, so older records slide
//     into pages already read and push others forward.
type Mutation struct {
	Delete     int `json:"delete,omitempty"`
	Insert     int `json:"insert,omitempty"`
	AfterPages int `json:"after_pages,omitempty"`
}

// twistState is the run-time twist configuration, guarded by Server.faultMu.
type twistState struct {
	maxPerPage         int
	fixedPerPage       int
	lyingPaging        bool
	commsPagingMissing bool
	echoKey            bool
	hostile            hostileState
	commsDayOffset     time.Duration

	mut      *Mutation // armed mutation, nil when none
	mutPages int       // qualifying pages answered since it was armed
	mutDone  bool      // the last armed mutation has fired
}

// TwistsStatus is what GET/POST /_sandbox/twists answers.
type TwistsStatus struct {
	MaxPerPage         int       `json:"max_per_page"`
	FixedPerPage       int       `json:"fixed_per_page"`
	LyingPaging        bool      `json:"lying_paging"`
	CommsPagingMissing bool      `json:"comms_paging_missing"`
	EchoKey            bool      `json:"echo_key"`
	CommsDayOffset     string    `json:"comms_day_offset"`
	Mutation           *Mutation `json:"mutation"`       // armed and not fired yet, or null
	MutationFired      bool      `json:"mutation_fired"` // the last armed mutation has fired
	Deleted            int       `json:"deleted"`        // e-mails deleted by mutations
	Hidden             int       `json:"hidden"`         // e-mails hidden until an insert fires
	HostileStatus
}

func (s *Server) twists() twistState {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.tw
}

// TwistsStatus returns the twists in effect.
func (s *Server) TwistsStatus() TwistsStatus {
	tw := s.twists()
	st := TwistsStatus{MaxPerPage: tw.maxPerPage, FixedPerPage: tw.fixedPerPage, LyingPaging: tw.lyingPaging, CommsPagingMissing: tw.commsPagingMissing,
		EchoKey: tw.echoKey, CommsDayOffset: tw.commsDayOffset.String(), MutationFired: tw.mutDone, HostileStatus: tw.hostile.status()}
	if tw.mut != nil {
		m := *tw.mut
		st.Mutation = &m
	}
	s.mu.RLock()
	for _, g := range s.mail.gone {
		if g == goneDeleted {
			st.Deleted++
		} else {
			st.Hidden++
		}
	}
	s.mu.RUnlock()
	return st
}

// SetTwists changes the twists that t sets and keeps the others.
func (s *Server) SetTwists(t Twists) error {
	if t.MaxPerPage != nil && *t.MaxPerPage < 0 {
		return invalid("max_per_page must not be negative, got %d", *t.MaxPerPage)
	}
	if t.FixedPerPage != nil && *t.FixedPerPage < 0 {
		return invalid("fixed_per_page must not be negative, got %d", *t.FixedPerPage)
	}
	var offset time.Duration
	if t.CommsDayOffset != nil {
		d, err := time.ParseDuration(*t.CommsDayOffset)
		if err != nil || d < -maxDayOffset || d > maxDayOffset {
			return invalid("comms_day_offset must be a duration within -14h..+14h, got %q", *t.CommsDayOffset)
		}
		offset = d
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	if err := s.tw.hostile.set(t.HostileTwists); err != nil {
		return err
	}
	if t.MaxPerPage != nil {
		s.tw.maxPerPage = *t.MaxPerPage
	}
	if t.FixedPerPage != nil {
		s.tw.fixedPerPage = *t.FixedPerPage
	}
	if t.LyingPaging != nil {
		s.tw.lyingPaging = *t.LyingPaging
	}
	if t.CommsPagingMissing != nil {
		s.tw.commsPagingMissing = *t.CommsPagingMissing
	}
	if t.EchoKey != nil {
		s.tw.echoKey = *t.EchoKey
	}
	if t.CommsDayOffset != nil {
		s.tw.commsDayOffset = offset
	}
	return nil
}

// ArmMutation arms m (replacing an armed one that has not fired). Insert
// hides its records at once: they are not served, nor in the truth, until
// the mutation fires.
func (s *Server) ArmMutation(m Mutation) error {
	if m.Delete < 0 || m.Insert < 0 || m.AfterPages < 0 {
		return invalid("delete, insert and after_pages must not be negative")
	}
	if m.Delete == 0 && m.Insert == 0 {
		return invalid("give delete or insert")
	}
	if m.Delete > 0 && m.Insert > 0 {
		return invalid("give delete or insert, not both")
	}
	if m.AfterPages == 0 {
		m.AfterPages = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mail := s.mail
	if m.Insert > 0 {
		var live []uint32
		for i := range uint32(len(mail.ts)) {
			if _, g := mail.gone[i]; !g {
				live = append(live, i)
			}
		}
		if m.Insert > len(live) {
			return invalid("insert %d: only %d e-mails exist", m.Insert, len(live))
		}
		for k := range m.Insert {
			mail.gone[live[(2*k+1)*len(live)/(2*m.Insert)]] = goneHidden
		}
		mail.invalidate()
	}
	s.faultMu.Lock()
	s.tw.mut, s.tw.mutPages, s.tw.mutDone = &m, 0, false
	s.faultMu.Unlock()
	return nil
}

// gone kinds of mailStore.gone.
const (
	goneDeleted = 1 // deleted by a mutation: never served again
	goneHidden  = 2 // hidden until an insert mutation fires
)

// mutationDue is called (under s.mu's read lock) after a communications
// page [from, to) of set was written; it returns the e-mails to delete (or
// reveal) when the armed mutation fires with this answer.
func (s *Server) mutationDue(set *matchSet, to int, p page) (indexes []uint32, insert, fire bool) {
	if to <= 0 || p.current >= p.lastPage() || p.perPage < 2 {
		return nil, false, false
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	m := s.tw.mut
	if m == nil {
		return nil, false, false
	}
	s.tw.mutPages++
	if s.tw.mutPages < m.AfterPages {
		return nil, false, false
	}
	s.tw.mut, s.tw.mutDone = nil, true
	if m.Insert > 0 {
		return nil, true, true
	}
	for k := max(0, to-m.Delete); k < to; k++ {
		indexes = append(indexes, set.at(k))
	}
	return indexes, false, true
}

// applyMutation deletes indexes, or reveals every hidden e-mail.
func (s *Server) applyMutation(indexes []uint32, insert bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mail := s.mail
	if insert {
		for i, g := range mail.gone {
			if g == goneHidden {
				delete(mail.gone, i)
			}
		}
	}
	for _, i := range indexes {
		mail.gone[i] = goneDeleted
	}
	mail.invalidate()
}

// echoKeyLead is where the echo_key twist's detail text starts: the
// spec's 400 body up to the opening quote of the detail string.
const echoKeyLead = body400Prefix + `"`

// echoKeyRawAt is the body offset of the first raw copy of the key (for
// keys without characters that JSON escapes).
const echoKeyRawAt = 220

// echoKeyBody is the 400 answer of the echo_key twist: its detail quotes
// key three times raw (the first copy at byte echoKeyRawAt of the body),
// then URL-encoded, then as a JSON object {"key":...} (so JSON-escaped).
// With keys of 30 bytes or more, a cut anywhere from byte 220 to 310 of the
// body, or of a message that quotes the body after a prefix of up to 90
// bytes, keeps all or part of a copy of the key.
func echoKeyBody(key string) []byte {
	detail := "The key sent with this request may not read the requested data; the service quotes it so that its owner can recognise it: "
	for len(echoKeyLead)+len(detail) < echoKeyRawAt {
		detail += "."
	}
	js, _ := json.Marshal(map[string]string{"key": key})
	detail += key + " " + key + " " + key + " (URL-encoded: " + url.QueryEscape(key) + "; as JSON: " + string(js) + ")"
	b := append([]byte(body400Prefix), nil...)
	b = appendJSONString(b, detail)
	return append(b, `]}}`...)
}
