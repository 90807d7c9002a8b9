package benchmark

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/agencysync/agencysync/childproc"
)

// PhaseRate is how fast the worker sent the requests of some endpoints,
// read from its debug log: N requests whose starts span Span, so
// (N − 1) ÷ Span requests a second.
type PhaseRate struct {
	N    int
	Span time.Duration
	// PerSecond is (N − 1) ÷ Span in seconds; NaN with fewer than two
	// requests.
	PerSecond float64
}

// RequestRate reads agencysync's JSON log at debug level and measures the
// rate of the requests to the given endpoints (extract.Endpoint* names):
// each "request" line has its end time and duration, so the request started
// at ts − duration. Retries count as requests, as the rate limiter counts
// them.
func RequestRate(log []byte, endpoints ...string) PhaseRate {
	var starts []time.Time
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var l struct {
			Msg      string    `json:"msg"`
			TS       time.Time `json:"ts"`
			Endpoint string    `json:"endpoint"`
			Duration float64   `json:"duration"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Msg != "request" || !slices.Contains(endpoints, l.Endpoint) {
			continue
		}
		starts = append(starts, l.TS.Add(-time.Duration(l.Duration*float64(time.Second))))
	}
	r := PhaseRate{N: len(starts), PerSecond: math.NaN()}
	if len(starts) < 2 {
		return r
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	r.Span = starts[len(starts)-1].Sub(starts[0])
	if r.Span > 0 {
		r.PerSecond = float64(r.N-1) / r.Span.Seconds()
	}
	return r
}

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
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var l struct {
			Msg string    `json:"msg"`
			TS  time.Time `json:"ts"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
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
