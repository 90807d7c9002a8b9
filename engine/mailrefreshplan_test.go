package engine

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestRefreshStateMark(t *testing.T) {
	t.Parallel()
	st := &refreshState{Seeded: "2026-01-01"}
	st.mark("2026-01-10", "2026-01-20", "2026-02-01")
	st.mark("2026-01-15", "2026-01-16", "2026-02-02")
	st.mark("2026-01-21", "2026-01-25", "2026-02-01")
	st.mark("2026-01-05", "2026-01-09", "2026-02-01") // joins the span read the same day
	want := "[{2026-01-05 2026-01-14 2026-02-01} {2026-01-15 2026-01-16 2026-02-02} {2026-01-17 2026-01-25 2026-02-01}]"
	if got := fmt.Sprint(st.Reads); got != want {
		t.Errorf("reads %s, want %s", got, want)
	}
	for day, on := range map[string]string{"2026-01-04": "2026-01-01", "2026-01-05": "2026-02-01", "2026-01-15": "2026-02-02",
		"2026-01-16": "2026-02-02", "2026-01-17": "2026-02-01", "2026-01-25": "2026-02-01", "2026-01-26": "2026-01-01"} {
		if got := st.readOn(day); got != on {
			t.Errorf("readOn(%s) = %s, want %s", day, got, on)
		}
	}
	st.mark("2026-01-01", "2026-01-31", "2026-02-03") // covers everything
	if got := fmt.Sprint(st.Reads); got != "[{2026-01-01 2026-01-31 2026-02-03}]" {
		t.Errorf("reads after a covering read %s", got)
	}
}

// largeHistory is the large agency's e-mails per day: about 1 000 000 over
// two years ending on the day before end, busy on weekdays (weekends a
// fifth), growing over time (0.7 to 1.3 of the mean), as the sandbox
// generates them.
func largeHistory(end time.Time, days int) []int {
	w := make([]float64, days)
	sum := 0.0
	for i := range w {
		d := end.AddDate(0, 0, i-days)
		w[i] = 0.7 + 0.6*float64(i)/float64(days)
		if wd := d.Weekday(); wd == time.Saturday || wd == time.Sunday {
			w[i] *= 0.2
		}
		sum += w[i]
	}
	out := make([]int, days)
	for i := range w {
		out[i] = int(math.Round(1_000_000 * w[i] / sum))
	}
	return out
}

// A simulated year of nightly runs over the large agency's history (1 000
// 000 e-mails over two years, 1 370 more a day): every day of the history
// is read again before it is older than SYNC_COMMS_REFRESH_AGE, every night
// reads about its even share — no cliff when the days read by the backfill
// all reach the age — and the night after a missed one catches up. At the
// default age the share is about 17 pages, within the 32 the nightly run's
// 2 % of the quota leaves (docs/reconciliation.md).
func TestRefreshSweepsTheLargeHistoryEvenly(t *testing.T) {
	t.Parallel()
	const (
		nights = 365
		missed = 200 // no run that night
		perDay = 1370
	)
	days := refreshDays(DefaultCommsRefreshAge)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	rows := largeHistory(start, 730)
	first := start.AddDate(0, 0, -730)
	st := &refreshState{Seeded: dateString(start)} // the backfill read everything on the first day
	var pages []int
	for n := 1; n <= nights; n++ {
		today := start.AddDate(0, 0, n)
		rows = append(rows, perDay)
		// The day's increments read yesterday and today.
		st.mark(dateString(today.AddDate(0, 0, -1)), dateString(today), dateString(today))
		if n == missed {
			continue
		}
		var hist []historyDay
		total := 0
		for i, r := range rows {
			d := dateString(first.AddDate(0, 0, i))
			hist = append(hist, historyDay{day: d, read: st.readOn(d), rows: r})
			total += r
		}
		slice := refreshPolicy{days: days, today: dateString(today)}.plan(hist)
		p, _ := refreshPages(hist, slice)
		for _, rg := range slice {
			st.mark(rg.From, rg.To, dateString(today))
		}
		// The even share, overshot by at most the last day taken (a busy
		// day: the largest), one page more for each range after the first.
		shareRows, maxDay := (total+days-1)/days, 0
		for _, r := range rows {
			maxDay = max(maxDay, r)
		}
		limit := (shareRows+maxDay+999)/1000 + len(slice) - 1
		if n == missed+1 {
			limit = (2*shareRows+maxDay+999)/1000 + len(slice) - 1
		}
		if p > limit {
			t.Errorf("night %d: %d pages (%d ranges), more than %d (the even share is %d e-mails)", n, p, len(slice), limit, shareRows)
		}
		if len(slice) > 3 {
			t.Errorf("night %d: the slice is %d ranges, want at most 3 (it should read on in date order)", n, len(slice))
		}
		if n != missed+1 {
			pages = append(pages, p)
		}
		oldest := dateString(today.AddDate(0, 0, -days))
		for _, h := range hist {
			if r := st.readOn(h.day); r <= oldest {
				t.Fatalf("night %d: day %s last read %s, more than %d days ago", n, h.day, r, days)
			}
		}
	}
	lo, hi, sum := math.MaxInt, 0, 0
	for _, p := range pages {
		lo, hi, sum = min(lo, p), max(hi, p), sum+p
	}
	mean := float64(sum) / float64(len(pages))
	t.Logf("pages a night at %d days: %d..%d, mean %.1f", days, lo, hi, mean)
	if float64(hi) > 1.5*mean {
		t.Errorf("the busiest night reads %d pages, more than 1.5 × the mean %.1f", hi, mean)
	}
	if hi > 32 {
		t.Errorf("the busiest night reads %d pages: with the 168 requests of a nightly run without it, more than 2 %% of the quota", hi)
	}
}

// Nothing read today is read again: on the day of a first sync (every day
// just read) the slice is empty, and so is the first sync's cost.
func TestRefreshReadsNothingReadToday(t *testing.T) {
	t.Parallel()
	hist := []historyDay{{"2026-01-01", "2026-03-01", 500}, {"2026-01-02", "2026-03-01", 700}}
	if got := (refreshPolicy{days: 60, today: "2026-03-01"}).plan(hist); len(got) != 0 {
		t.Errorf("slice on the day everything was read: %v", got)
	}
	got := (refreshPolicy{days: 60, today: "2026-03-02"}).plan(hist)
	if fmt.Sprint(got) != "[{2026-01-01 2026-01-01}]" {
		t.Errorf("slice the next day: %v, want the first day (its share: ⌈1 200 ÷ 60⌉ e-mails)", got)
	}
}
