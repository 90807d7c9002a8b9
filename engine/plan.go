package engine

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Task is a unit of work the planner allots requests to. Tasks run in
// priority order; each belongs to a stream (the details task to every
// stream with entities). The declarations make the tasks: each stream's
// list task (named as the stream), the details task, and the tasks of a
// stream's hooks (decl.go).
type Task string

// Estimate is what a task is expected to cost.
type Estimate struct {
	Task     Task
	Stream   string // the stream(s) the task belongs to, comma-separated
	Requests int    // expected requests; for an open-ended task, what is known so far
	Unknown  bool   // the cost is not known yet (a first backfill before its first page)
	Note     string // how the figure was reached
}

// PlanItem is one task's share of the day's budget. Tasks run one after the
// other on the run's one budget: a task may use what the tasks before it
// leave, so an open-ended task (Unknown) is allotted its known part and may
// take up to UpTo.
type PlanItem struct {
	Estimate
	Allotted int // requests the task is expected to use in this run
	UpTo     int // the most it may use: what is left at its turn when open-ended, else Allotted
	Deferred int // estimated requests that wait for a later day
	// After names the open-ended task before this one whose size decides
	// whether Allotted holds ("" when none).
	After Task
}

// Plan is the allocation of today's remaining quota to the tasks.
type Plan struct {
	Day        time.Time // quota day
	DailyQuota int
	Reserve    int // requests kept for other users of the key
	Spent      int // requests already spent today (ledger)
	Budget     int // requests this run may send: DailyQuota - Reserve - Spent, at least 0
	Items      []PlanItem
	// Rederive are the tables derived under another field map than the one
	// in force: the run re-derives them from raw before its tasks (0
	// requests), so that the field map makes no detail due.
	Rederive []Rederive
}

// MakePlan allots the day's remaining budget to the estimates in priority
// order, the order the run spends it in. Tasks absent from estimates are not
// planned. A known estimate gets what it needs while the budget lasts. An
// open-ended estimate (Unknown) followed by another one gets its known part
// and may take up to what is left at its turn; the last open-ended one
// takes everything left.
func MakePlan(day time.Time, dailyQuota int, reserveShare float64, spent int, priorities []Task, estimates []Estimate) Plan {
	reserve := int(math.Ceil(float64(dailyQuota) * reserveShare))
	p := Plan{Day: day, DailyQuota: dailyQuota, Reserve: reserve, Spent: spent}
	p.Budget = max(dailyQuota-reserve-spent, 0)
	var ordered []Estimate
	for _, t := range priorities {
		for _, e := range estimates {
			if e.Task == t {
				ordered = append(ordered, e)
			}
		}
	}
	lastUnknown := -1
	for i, e := range ordered {
		if e.Unknown {
			lastUnknown = i
		}
	}
	left := p.Budget
	var after Task
	for i, e := range ordered {
		item := PlanItem{Estimate: e, After: after}
		switch {
		case !e.Unknown:
			item.Allotted = min(e.Requests, left)
			item.Deferred = e.Requests - item.Allotted
			item.UpTo = item.Allotted
		case i == lastUnknown:
			item.Allotted = left
			item.UpTo = left
		default:
			item.Allotted = min(e.Requests, left)
			item.UpTo = left
			after = e.Task
		}
		left -= item.Allotted
		p.Items = append(p.Items, item)
	}
	return p
}

// Estimated is the sum of the known estimates.
func (p Plan) Estimated() int {
	n := 0
	for _, it := range p.Items {
		n += it.Requests
	}
	return n
}

// Allotted is the sum of the allotments.
func (p Plan) Allotted() int {
	n := 0
	for _, it := range p.Items {
		n += it.Allotted
	}
	return n
}

// Print writes the plan as a table.
func (p Plan) Print(w io.Writer) {
	fmt.Fprintf(w, "quota day %s: daily quota %d, reserve %d, spent %d, budget for this run %d\n\n",
		p.Day.Format(time.DateOnly), p.DailyQuota, p.Reserve, p.Spent, p.Budget)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTREAM\tESTIMATED\tALLOTTED\tWAITS FOR TOMORROW\tBASIS")
	for _, it := range p.Items {
		est := fmt.Sprint(it.Requests)
		allotted := fmt.Sprint(it.Allotted)
		waits := fmt.Sprint(it.Deferred)
		if it.Unknown {
			est = fmt.Sprintf("≥%d (unknown)", it.Requests)
			waits = "what the allotment does not cover"
			if it.UpTo > it.Allotted {
				allotted = fmt.Sprintf("%d, up to %d", it.Allotted, it.UpTo)
			}
		}
		note := it.Note
		if it.After != "" && it.Allotted > 0 {
			note = strings.TrimSpace(note + fmt.Sprintf(" (less what %s takes beyond its estimate)", it.After))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.Task, it.Stream, est, allotted, waits, note)
	}
	tw.Flush()
	for _, rd := range p.Rederive {
		fmt.Fprintf(w, "\nbefore its tasks, the run re-derives %s from raw (0 requests): the field map changed (now %q, was %q); "+
			"agencysync rebuild --streams %s does it now\n", rd.Table, rd.FieldMap, rd.Was, rd.Stream)
	}
}
