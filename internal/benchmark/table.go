package benchmark

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Verdict says how a figure compares with its target.
type Verdict string

// Verdicts of a row.
const (
	Met    Verdict = "yes"    // the figure meets its target
	Missed Verdict = "**NO**" // the figure misses its target
	Info   Verdict = "—"      // no target: the figure is informative
	Failed Verdict = "error"  // the figure could not be measured
)

// Check returns Met when ok holds and Missed otherwise; a NaN value (not
// measured) gives Failed.
func Check(value float64, ok bool) Verdict {
	switch {
	case math.IsNaN(value):
		return Failed
	case ok:
		return Met
	}
	return Missed
}

// Row is one line of the results table.
type Row struct {
	// ID numbers the figure, as BENCHMARKS.md does ("1", "8", ...).
	ID string
	// Figure names what is measured.
	Figure string
	// Result is the median, formatted.
	Result string
	// Target is the goal, e.g. "≤ 1.05"; empty for none.
	Target string
	// Verdict compares Result with Target.
	Verdict Verdict
	// Detail gives the runs' values and what the result is made of.
	Detail string
}

// Table renders rows as one Markdown table.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| # | figure | result (median) | target | met | details |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range rows {
		target := r.Target
		if target == "" {
			target = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(r.ID), cell(r.Figure), cell(r.Result),
			cell(target), cell(string(r.Verdict)), cell(r.Detail))
	}
	return b.String()
}

// cell makes s safe inside a Markdown table cell: pipes are escaped and line
// breaks become spaces.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r\n", " ")
	return strings.ReplaceAll(s, "\n", " ")
}

// Int formats n with a space between groups of three digits (1 000 000).
func Int(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Float formats x with the given decimals and digit groups in its integer
// part (12 345.67); NaN prints as "n/a".
func Float(x float64, decimals int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(math.Abs(x), 'f', decimals, 64)
	whole, frac, _ := strings.Cut(s, ".")
	n, _ := strconv.ParseInt(whole, 10, 64)
	out := Int(n)
	if x < 0 && s != strconv.FormatFloat(0, 'f', decimals, 64) {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// Bytes formats a byte count in binary units: B, KiB, MiB, GiB.
func Bytes(n float64) string {
	switch {
	case math.IsNaN(n):
		return "n/a"
	case math.Abs(n) < 1024:
		return Float(n, 0) + " B"
	case math.Abs(n) < 1<<20:
		return Float(n/1024, 1) + " KiB"
	case math.Abs(n) < 1<<30:
		return Float(n/(1<<20), 1) + " MiB"
	}
	return Float(n/(1<<30), 2) + " GiB"
}

// List formats values with f, separated by " / " (the runs of a figure).
func List(xs []float64, f func(float64) string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = f(x)
	}
	return strings.Join(parts, " / ")
}
