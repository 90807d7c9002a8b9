package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/agencysync/agencysync/load"
)

// A service that cuts its calendar days at another offset than
// AGENCY_COMMS_TZ's files the e-mails near midnight under a neighbouring
// day: the day totals then disagree with the warehouse's although nothing
// is missing. The reconciliation recognises it by counting the warehouse's
// records per quarter hour and trying every offset within -12h..+14h: an
// offset under whose days every service total it knows equals the
// warehouse's count explains the difference, and is named (with the zone
// to set) instead of bisecting down to every day.

// knownTotal is a span of days whose total at the service the
// reconciliation knows (a count request, the rest of a parent's count, or a
// span paged in full with a stable total).
type knownTotal struct {
	a, b  time.Time
	total int
}

// Offsets tried, in quarter hours from UTC.
const (
	minOffset = -12 * time.Hour
	maxOffset = 14 * time.Hour
)

// minBoundaryEvidence is how many distinct day boundaries must move records
// under an offset before the bisection stops on it: a real gap could be
// mimicked by the records near one midnight, not by those near three.
const minBoundaryEvidence = 3

// Boundary is the day boundary under which the service's totals agree with
// the warehouse's counts (VerifyReport.Boundary).
type Boundary struct {
	// Low and High are the lowest and highest UTC offsets (±HH:MM) that
	// explain every total known; Offset is the one suggested.
	Low    string `json:"low"`
	High   string `json:"high"`
	Offset string `json:"offset"`
	// Zone is an IANA zone at Offset to set AGENCY_COMMS_TZ to ("" for an
	// offset that is not a whole hour).
	Zone string `json:"zone,omitempty"`
	// Configured is AGENCY_COMMS_TZ.
	Configured string `json:"configured"`
}

// Advice says what to set, for notes and the report's summary.
func (b *Boundary) Advice() string {
	rng := "UTC" + b.Offset
	if b.Low != b.High {
		rng = fmt.Sprintf("UTC%s (any offset from UTC%s to UTC%s explains the totals known; a longer verification narrows it)", b.Offset, b.Low, b.High)
	}
	set := "set AGENCY_COMMS_TZ to a zone at UTC" + b.Offset
	if b.Zone != "" {
		set = "set AGENCY_COMMS_TZ=" + b.Zone
	}
	return fmt.Sprintf("the service cuts its days at %s, not in AGENCY_COMMS_TZ=%s: its day totals agree with the warehouse's there; %s", rng, b.Configured, set)
}

// formatOffset writes o as ±HH:MM.
func formatOffset(o time.Duration) string {
	sign := "+"
	if o < 0 {
		sign, o = "-", -o
	}
	return fmt.Sprintf("%s%02d:%02d", sign, int(o/time.Hour), int(o%time.Hour/time.Minute))
}

// zoneAt is an IANA zone at the whole-hour offset o ("" otherwise): UTC, or
// Etc/GMT∓h, whose sign POSIX inverts.
func zoneAt(o time.Duration) string {
	switch {
	case o%time.Hour != 0:
		return ""
	case o == 0:
		return "UTC"
	case o > 0:
		return "Etc/GMT-" + strconv.Itoa(int(o/time.Hour))
	}
	return "Etc/GMT+" + strconv.Itoa(int(-o/time.Hour))
}

// quarterModel is what the warehouse holds around from..to, per quarter
// hour, to count any span of days under any whole-quarter offset.
type quarterModel struct {
	start time.Time      // the first quarter
	sums  []int          // sums[i]: records in the quarters before i
	fixed map[string]int // records counted on a day whatever the offset (undated rejects, records filed far)
}

// quarterModel reads the warehouse around from..to (calendar dates).
func (e *Engine) quarterModel(ctx context.Context, from, to time.Time, vs *verifyState) (*quarterModel, error) {
	start := utcDate(from).Add(-maxOffset)
	end := utcDate(to).AddDate(0, 0, 1).Add(-minOffset)
	rejects, emails := vs.filedKeys()
	qs, err := e.mail.recon.EmailQuarterCounts(ctx, start, end, append(vs.undatedKeys(), rejects...))
	if err != nil {
		return nil, err
	}
	m := &quarterModel{start: start, fixed: map[string]int{}}
	for day, keys := range vs.Undated {
		m.fixed[day] += len(keys)
	}
	held, err := e.heldFiled(ctx, emails, vs)
	if err != nil {
		return nil, err
	}
	for _, h := range held {
		if h.live && !h.at.Before(start) && h.at.Before(end) {
			qs[int(h.at.Sub(start)/load.Quarter)]--
		}
		m.fixed[h.on]++
	}
	m.sums = make([]int, len(qs)+1)
	for i, n := range qs {
		m.sums[i+1] = m.sums[i] + n
	}
	return m, nil
}

// at is the records held before instant t (within the model's window).
func (m *quarterModel) at(t time.Time) int {
	i := int(t.Sub(m.start) / load.Quarter)
	return m.sums[max(0, min(i, len(m.sums)-1))]
}

// count is the warehouse's count of the days a..b cut at UTC+off.
func (m *quarterModel) count(a, b time.Time, off time.Duration) int {
	n := m.at(utcDate(b).AddDate(0, 0, 1).Add(-off)) - m.at(utcDate(a).Add(-off))
	for d := utcDate(a); !d.After(b); d = d.AddDate(0, 0, 1) {
		n += m.fixed[dateString(d)]
	}
	return n
}

// evidence counts the distinct day boundaries of spans across which
// cutting at UTC+off instead of UTC moves records.
func (m *quarterModel) evidence(spans []knownTotal, off time.Duration) int {
	seen := map[time.Time]bool{}
	n := 0
	for _, s := range spans {
		for _, b := range []time.Time{utcDate(s.a), utcDate(s.b).AddDate(0, 0, 1)} {
			if seen[b] {
				continue
			}
			seen[b] = true
			if m.at(b) != m.at(b.Add(-off)) {
				n++
			}
		}
	}
	return n
}

// explain finds the offsets that allows admits (the records a re-fetched
// span returned lie on its days) under which every known total equals the
// warehouse's count, and the one to suggest: the whole hour nearest the
// middle of them, else their middle. Nil when none does, or when the
// configured zone cuts days at one of them (nothing to explain).
func (m *quarterModel) explain(spans []knownTotal, configured *time.Location, allows func(time.Duration) bool) (*Boundary, time.Duration) {
	var agree []time.Duration
	for off := minOffset; off <= maxOffset; off += load.Quarter {
		ok := allows(off)
		for _, s := range spans {
			if m.count(s.a, s.b, off) != s.total {
				ok = false
				break
			}
		}
		if ok {
			agree = append(agree, off)
		}
	}
	if len(agree) == 0 {
		return nil, 0
	}
	for _, off := range agree {
		if fixedZone(configured, spans, off) {
			return nil, 0
		}
	}
	mid := agree[len(agree)/2]
	pick := mid
	best := time.Duration(-1)
	for _, off := range agree {
		if off%time.Hour != 0 {
			continue
		}
		if d := (off - mid).Abs(); best < 0 || d < best {
			pick, best = off, d
		}
	}
	return &Boundary{Low: formatOffset(agree[0]), High: formatOffset(agree[len(agree)-1]), Offset: formatOffset(pick),
		Zone: zoneAt(pick), Configured: configured.String()}, pick
}

// fixedZone says that loc is at offset off on the first day of every span.
func fixedZone(loc *time.Location, spans []knownTotal, off time.Duration) bool {
	for _, s := range spans {
		_, secs := time.Date(s.a.Year(), s.a.Month(), s.a.Day(), 0, 0, 0, 0, loc).Zone()
		if time.Duration(secs)*time.Second != off {
			return false
		}
	}
	return true
}
