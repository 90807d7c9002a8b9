// Package report prints what `agencysync status` reads from the warehouse
// (engine.StatusReport) as tables for a terminal.
package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/inventory"
)

// Status writes the report of `agencysync status` as tables: the streams,
// the last verification, the last runs, what the last run's tasks did (the
// rows each changed, by table: the nightly re-read's edits of old e-mails
// among them) and the last run's coverage warnings (one line each).
func Status(w io.Writer, rep *engine.StatusReport) {
	fmt.Fprintf(w, "warehouse schema %s — quota day %s: %d requests spent, %d left\n\n", rep.Schema, rep.QuotaDay, rep.QuotaSpent, rep.QuotaLeft)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tWATERMARK\tLAST SUCCESS\tLAG\tROWS\tREJECTED\tRESUMES")
	for _, s := range rep.Streams {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%v\n", s.Stream, fmtTime(s.Watermark), fmtTime(s.LastSuccess), fmtLag(s.LagSeconds), s.Rows, s.Rejected, s.InProgress)
	}
	tw.Flush()
	pendingRebuilds(w, rep)
	verifyLines(w, rep.Verify)
	if rf := rep.Refresh; rf != nil {
		refreshLine(w, rf)
	}
	runsTable(w, rep.Runs)
	if ws := rep.Warnings; ws != nil {
		fmt.Fprintln(w)
		// A write error shows in the output it failed to write.
		_ = inventory.FormatWarnings(w, ws.RunID, ws.Warnings)
	}
}

// pendingRebuilds says which tables wait for a rebuild: interrupted ones,
// and those derived under another field map.
func pendingRebuilds(w io.Writer, rep *engine.StatusReport) {
	for _, rb := range rep.Rebuilds {
		fmt.Fprintf(w, "\nrebuild of %s unfinished (%s; last progress %s): run `agencysync rebuild --streams %s` to finish it",
			rb.Table, rb.Stage, rb.LastProgress.UTC().Format("2006-01-02 15:04:05"), rb.Stream)
	}
	for _, rd := range rep.Rederive {
		fmt.Fprintf(w, "\n%s was derived under another field map (%q, now %q): the next run re-derives it from raw first (0 requests), "+
			"or run `agencysync rebuild --streams %s`", rd.Table, rd.Was, rd.FieldMap, rd.Stream)
	}
	if len(rep.Rebuilds)+len(rep.Rederive) > 0 {
		fmt.Fprintln(w)
	}
}

// verifyLines says when the warehouse was last reconciled with the service.
func verifyLines(w io.Writer, v *engine.VerifyStatus) {
	if v != nil {
		fmt.Fprintln(w)
		switch {
		case v.Last == nil:
			fmt.Fprintln(w, "verify: the warehouse was never reconciled with the service (agencysync verify; the planner's verify task runs once a day after the backfill)")
		default:
			fmt.Fprintf(w, "verify: last %s: %s\n", v.Last.At.UTC().Format("2006-01-02 15:04:05"), v.Last.Summary())
		}
		if v.LastProvedAt != nil {
			fmt.Fprintf(w, "verify: last proved equal %s\n", v.LastProvedAt.UTC().Format("2006-01-02 15:04:05"))
		}
		if d := v.LastDifference; d != nil && (v.Last == nil || d.Closing || !d.At.Equal(v.Last.At)) {
			kind := "verification"
			if d.Closing {
				kind = "closing range"
			}
			fmt.Fprintf(w, "verify: last difference (%s) %s: %s\n", kind, d.At.UTC().Format("2006-01-02 15:04:05"), d.Summary())
		}
	}
}

// runsTable prints the last runs, why the last one ended warning, and what
// its tasks did.
func runsTable(w io.Writer, runs []engine.RunSummary) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tTRIGGER\tSTATUS\tSTARTED\tTOOK\tREQUESTS\tROWS\tREJECTED\tERROR")
	for _, r := range runs {
		took := "—"
		if r.FinishedAt != nil {
			took = r.FinishedAt.Sub(r.StartedAt).Round(time.Second).String()
		}
		rows := 0
		for _, n := range r.RowsByTable {
			rows += n
		}
		msg := r.Error
		if len(msg) > 80 {
			msg = msg[:77] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.RunID[:8], r.Trigger, r.Status, r.StartedAt.UTC().Format("2006-01-02 15:04:05"), took, r.RequestsUsed, rows, r.Rejected, msg)
	}
	tw.Flush()
	if len(runs) > 0 {
		lastRunNote(w, runs[0])
	}
	if len(runs) > 0 && len(runs[0].StreamsDetail) > 0 {
		lastRunTasks(w, runs[0])
	}
}

// lastRunNote says why the last run ended warning, and what it resolved.
func lastRunNote(w io.Writer, r engine.RunSummary) {
	if r.Status == string(engine.StatusWarning) {
		fmt.Fprintf(w, "\nlast run %s ended warning: everything asked was synced, but it needs a look —", r.RunID[:8])
		if r.OpenRejects > 0 {
			fmt.Fprintf(w, " %d open rejects in its streams (REJECTED above; rejected_records);", r.OpenRejects)
		}
		fmt.Fprintln(w, " its coverage warnings are below, its notes in the ERROR column (SYNC_FAIL_ON makes such a run exit 1)")
	}
	if r.RejectsResolved > 0 {
		fmt.Fprintf(w, "last run %s resolved %d earlier rejects: their records landed\n", r.RunID[:8], r.RejectsResolved)
	}
}

// lastRunTasks writes what each task of run r did: requests, records read,
// rows changed by table, time taken and the e-mail ranges fetched.
func lastRunTasks(w io.Writer, r engine.RunSummary) {
	fmt.Fprintf(w, "\nlast run %s by task:\n", r.RunID[:8])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTREAM\tREQUESTS\tRECORDS READ\tROWS CHANGED\tTOOK\tRANGES FETCHED")
	tasks := make([]string, 0, len(r.StreamsDetail))
	for t := range r.StreamsDetail {
		tasks = append(tasks, t)
	}
	slices.SortFunc(tasks, func(a, b string) int { return cmp.Compare(taskOrder(a), taskOrder(b)) })
	for _, t := range tasks {
		d := r.StreamsDetail[t]
		var ranges []string
		for _, rg := range d.Ranges {
			s := fmt.Sprintf("%s..%s (%d pages, %d records)", rg.From, rg.To, rg.Pages, rg.Records)
			if !rg.Complete {
				s += " unfinished"
			}
			ranges = append(ranges, s)
		}
		took := (time.Duration(d.DurationSeconds * float64(time.Second))).Round(time.Millisecond)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", t, d.Stream, d.Requests, d.RecordsRead, changedRows(d.Changed), took,
			cmp.Or(strings.Join(ranges, ", "), "—"))
	}
	tw.Flush()
}

// refreshLine writes the rolling re-read's state: the most an old e-mail
// can age, the day read longest ago and what of the last slice is left.
func refreshLine(w io.Writer, rf *engine.RefreshStatus) {
	fmt.Fprintf(w, "refresh: every day of the e-mail history is read in full again within %d days (SYNC_COMMS_REFRESH_AGE)", rf.MaxAgeDays)
	if rf.OldestDay != "" {
		fmt.Fprintf(w, "; read longest ago: %s, on %s", rf.OldestDay, rf.OldestReadOn)
	}
	if len(rf.Pending) > 0 {
		fmt.Fprintf(w, "; %d range(s) of the slice of %s still to read", len(rf.Pending), rf.SliceOn)
	}
	fmt.Fprintln(w)
}

// changedRows writes a task's rows changed by table ("emails 3, users 1"),
// tables in name order; "—" when none.
func changedRows(c map[string]int64) string {
	tables := slices.Sorted(maps.Keys(c))
	parts := make([]string, 0, len(tables))
	for _, t := range tables {
		parts = append(parts, fmt.Sprintf("%s %d", t, c[t]))
	}
	return cmp.Or(strings.Join(parts, ", "), "—")
}

// taskOrder is a task's place in the default priorities (unknown names last).
func taskOrder(name string) int {
	if i := slices.Index(engine.DefaultPriorities, engine.Task(name)); i >= 0 {
		return i
	}
	return len(engine.DefaultPriorities)
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func fmtLag(s *float64) string {
	if s == nil {
		return "—"
	}
	return (time.Duration(*s) * time.Second).String()
}
