package engine

import (
	"slices"
	"time"
)

// The rolling re-read of the e-mail history. Counts prove that the
// warehouse holds as many e-mails as the service, not that an old e-mail
// was not edited since it was read (linked to a project, given a recipient):
// so every day of the history is read in full again at least once every
// SYNC_COMMS_REFRESH_AGE. Like the detail refresh it is staggered, not a
// cliff: each night re-reads the days read longest ago, as many as hold an
// even share (1/days) of the history's e-mails, and always the days that
// would otherwise pass the age. A day counts as read whenever a range that
// holds it was paged in full (the backfill, an increment, a `backfill`
// range, a re-fetched day, the refresh itself).

// dayRead is a span of days last read in full on run day On.
type dayRead struct {
	From string `json:"from"` // YYYY-MM-DD, inclusive
	To   string `json:"to"`
	On   string `json:"on"`
}

// dayRange is a span of days, YYYY-MM-DD inclusive.
type dayRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// refreshState is the cursor of the communications partition "refresh".
type refreshState struct {
	// Seeded is the run day the refresh started on: a day never read since
	// counts as read then (the history was read before the refresh was kept).
	Seeded string `json:"seeded"`
	// Reads are the days read since, as sorted spans that do not overlap.
	Reads []dayRead `json:"reads,omitempty"`
	// SliceOn is the run day the nightly slice was last planned on; Slice
	// its ranges not read yet, and Current the one being paged.
	SliceOn string       `json:"slice_on,omitempty"`
	Slice   []dayRange   `json:"slice,omitempty"`
	Current *rangeCursor `json:"current,omitempty"`
}

// nextDay is the YYYY-MM-DD after day (day itself when it does not parse).
func nextDay(day string) string {
	d, err := parseDate(day)
	if err != nil {
		return day
	}
	return dateString(d.AddDate(0, 0, 1))
}

// prevDay is the YYYY-MM-DD before day (day itself when it does not parse).
func prevDay(day string) string {
	d, err := parseDate(day)
	if err != nil {
		return day
	}
	return dateString(d.AddDate(0, 0, -1))
}

// mark records the days from..to as read in full on run day on.
func (st *refreshState) mark(from, to, on string) {
	if to < from {
		return
	}
	var out []dayRead
	for _, r := range st.Reads {
		if r.To < from || r.From > to {
			out = append(out, r)
			continue
		}
		if r.From < from {
			out = append(out, dayRead{From: r.From, To: prevDay(from), On: r.On})
		}
		if r.To > to {
			out = append(out, dayRead{From: nextDay(to), To: r.To, On: r.On})
		}
	}
	out = append(out, dayRead{From: from, To: to, On: on})
	slices.SortFunc(out, func(a, b dayRead) int {
		if a.From < b.From {
			return -1
		}
		if a.From > b.From {
			return 1
		}
		return 0
	})
	// Neighbours read on the same day become one span.
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && merged[n-1].On == r.On && nextDay(merged[n-1].To) == r.From {
			merged[n-1].To = r.To
			continue
		}
		merged = append(merged, r)
	}
	st.Reads = merged
}

// readOn is the run day day was last read in full.
func (st *refreshState) readOn(day string) string {
	i, found := slices.BinarySearchFunc(st.Reads, day, func(r dayRead, d string) int {
		switch {
		case r.To < d:
			return -1
		case r.From > d:
			return 1
		}
		return 0
	})
	if found {
		return st.Reads[i].On
	}
	return st.Seeded
}

// historyDay is one day of the history, for planning.
type historyDay struct {
	day  string // YYYY-MM-DD
	read string // the run day it was last read in full
	rows int    // the records the warehouse holds for it
}

// refreshPolicy is how the slices are cut.
type refreshPolicy struct {
	days  int    // SYNC_COMMS_REFRESH_AGE in whole days, at least 1
	today string // the run day
}

// overdue says that a day read on run day read passes the age before the
// next night unless it is read now.
func (p refreshPolicy) overdue(read string) bool {
	t, err := parseDate(p.today)
	if err != nil {
		return true
	}
	return read <= dateString(t.AddDate(0, 0, -p.days))
}

// plan cuts tonight's slice of history (in date order): from the day read
// longest ago (the earliest of them), the days that follow it in date
// order, until they hold an even share, ⌈records ÷ days⌉, of the history's
// records; then on from the next day read longest ago while the share is
// not reached or overdue days remain. Never a day read today. Reading on
// in date order keeps the slice one range most nights (two when it reaches
// the days the increments read and wraps to the start), where taking the
// oldest-read days one by one would scatter it into more ranges every
// cycle, each rounding its pages up.
func (p refreshPolicy) plan(hist []historyDay) []dayRange {
	total := 0
	for _, d := range hist {
		total += d.rows
	}
	share := (total + p.days - 1) / p.days
	eligible := func(i int) bool { return hist[i].read < p.today }
	take := make([]bool, len(hist))
	taken := 0
	for {
		first := -1
		for i := range hist {
			if eligible(i) && !take[i] && (first < 0 || hist[i].read < hist[first].read) {
				first = i
			}
		}
		if first < 0 || taken >= share && !p.overdue(hist[first].read) {
			break
		}
		for j := first; j < len(hist) && eligible(j) && !take[j]; j++ {
			if j > first && taken >= share && !p.overdue(hist[j].read) {
				break
			}
			take[j] = true
			taken += hist[j].rows
		}
	}
	var out []dayRange
	for i := 0; i < len(hist); i++ {
		if !take[i] {
			continue
		}
		j := i
		for j+1 < len(hist) && take[j+1] {
			j++
		}
		out = append(out, dayRange{From: hist[i].day, To: hist[j].day})
		i = j
	}
	return out
}

// refreshDays is SYNC_COMMS_REFRESH_AGE in whole days, at least 1.
func refreshDays(age time.Duration) int { return max(1, int(age/(24*time.Hour))) }
