package benchmark

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
)

// QuotaDay is one quota day's requests: the worker's ledger
// (api_quota_usage) and the sandbox's count of the requests it answered
// that day.
type QuotaDay struct {
	Day     string // YYYY-MM-DD, the service's day
	Ledger  int64
	Sandbox int64
}

// DaySpread summarises quota days: the highest day, the average day and
// their ratio, and the days whose ledger and sandbox counts disagree.
type DaySpread struct {
	Highest    QuotaDay
	Average    float64
	Ratio      float64 // highest ÷ average (NaN without days)
	Mismatches []QuotaDay
}

// SpreadOf summarises days by their ledger counts.
func SpreadOf(days []QuotaDay) DaySpread {
	s := DaySpread{Average: math.NaN(), Ratio: math.NaN()}
	if len(days) == 0 {
		return s
	}
	var sum int64
	for i, d := range days {
		sum += d.Ledger
		if i == 0 || d.Ledger > s.Highest.Ledger {
			s.Highest = d
		}
		if d.Ledger != d.Sandbox {
			s.Mismatches = append(s.Mismatches, d)
		}
	}
	s.Average = float64(sum) / float64(len(days))
	s.Ratio = Ratio(float64(s.Highest.Ledger), s.Average)
	return s
}

// dayList formats days as "11-02 133, 11-03 71, …" (ledger counts; a
// sandbox count that differs follows in brackets).
func dayList(days []QuotaDay) string {
	var b bytes.Buffer
	for i, d := range days {
		if i > 0 {
			b.WriteString(", ")
		}
		label := d.Day
		if len(label) == len("2006-01-02") {
			label = label[5:]
		}
		fmt.Fprintf(&b, "%s %d", label, d.Ledger)
		if d.Sandbox != d.Ledger {
			fmt.Fprintf(&b, " [sandbox %d]", d.Sandbox)
		}
	}
	return b.String()
}

// SyncTime is the sync's own time read off agencysync's JSON log: from the
// "sync started" line to the (last) "sync summary" line, both stamped by
// the worker's clock. The summary's "took" field is not used: it is
// measured against the service's clock learnt during the run (its Date
// header), so it is off by the clock difference when the two disagree, as
// they do against a sandbox whose virtual clock was moved. ok is false
// without both lines.
func SyncTime(log []byte) (d time.Duration, ok bool) {
	var started, summary time.Time
	for l := range logLines(log) {
		switch l.Msg {
		case "sync started":
			if started.IsZero() {
				started = l.TS
			}
		case "sync summary":
			summary = l.TS
		}
	}
	if started.IsZero() || summary.IsZero() {
		return 0, false
	}
	return summary.Sub(started), true
}

// syncTook is SyncTime of a worker's log, or its wall time when the log
// lacks the lines.
func syncTook(res *childproc.Result) time.Duration {
	if d, ok := SyncTime(res.Stderr); ok {
		return d
	}
	return res.Wall
}
