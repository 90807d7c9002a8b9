package engine

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agencysync/agencysync/load"
)

// StreamStatus is one stream's health, for `agencysync status`.
type StreamStatus struct {
	Stream      string     `json:"stream"`
	Watermark   *time.Time `json:"watermark,omitempty"`
	LastSuccess *time.Time `json:"last_success,omitempty"` // sync_freshness.last_success_at (load.Store.Freshness)
	LagSeconds  *float64   `json:"lag_seconds,omitempty"`  // sync_freshness.lag, rounded to the second
	Rows        int64      `json:"rows"`                   // rows of its main table, soft-deleted excluded
	Rejected    int64      `json:"rejected"`               // rejected_records of the stream
	InProgress  bool       `json:"in_progress"`            // a range or listing waits to be resumed
}

// RunSummary is one row of sync_runs (load.RunSummary).
type RunSummary = load.RunSummary

// StatusReport is what `agencysync status` prints.
type StatusReport struct {
	Schema     string         `json:"schema"`
	QuotaDay   string         `json:"quota_day"`
	QuotaSpent int            `json:"quota_spent"`
	QuotaLeft  int            `json:"quota_left"` // after the reserve
	Streams    []StreamStatus `json:"streams"`
	// Verify is the reconciliation of communications with the service
	// (sync_state, stream communications, partition verify).
	Verify *VerifyStatus `json:"verify,omitempty"`
	Runs   []RunSummary  `json:"runs"`
}

// Status reads the warehouse's sync state: per stream the watermark, last
// success, lag, rows and rejects; today's quota; the last runs.
func (e *Engine) Status(ctx context.Context, lastRuns int) (*StatusReport, error) {
	day := e.ledger.Today()
	spent, err := e.ledger.Spent(ctx, day)
	if err != nil {
		return nil, err
	}
	plan := MakePlan(day, e.set.DailyQuota, e.set.QuotaReserve, spent, nil, nil)
	rep := &StatusReport{Schema: e.set.Schema, QuotaDay: day.Format(time.DateOnly), QuotaSpent: spent, QuotaLeft: plan.Budget}
	main := map[string]string{StreamBrands: "brands", StreamProjects: "projects", StreamFinance: "invoices", StreamCommunications: "emails"}
	fresh, err := e.store.Freshness(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range AllStreams {
		ss := StreamStatus{Stream: s}
		for _, f := range fresh {
			if f.Stream != s {
				continue
			}
			ss.Watermark, ss.LastSuccess = f.Watermark, f.LastSuccessAt
			if f.Lag != nil {
				lag := math.Round(f.Lag.Seconds())
				ss.LagSeconds = &lag
			}
		}
		if ss.InProgress, err = e.store.StreamInProgress(ctx, s); err != nil {
			return nil, err
		}
		n, err := e.store.LiveRows(ctx, main[s], nil)
		if err != nil {
			return nil, err
		}
		ss.Rows = int64(n)
		if ss.Rejected, err = e.store.RejectedCount(ctx, s); err != nil {
			return nil, err
		}
		rep.Streams = append(rep.Streams, ss)
	}
	if rep.Verify, err = e.verifyStatus(ctx); err != nil {
		return nil, err
	}
	if rep.Runs, err = e.store.RecentRuns(ctx, lastRuns); err != nil {
		return nil, err
	}
	return rep, nil
}

// Print writes the report as tables.
func (rep *StatusReport) Print(w io.Writer) {
	fmt.Fprintf(w, "warehouse schema %s — quota day %s: %d requests spent, %d left\n\n", rep.Schema, rep.QuotaDay, rep.QuotaSpent, rep.QuotaLeft)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tWATERMARK\tLAST SUCCESS\tLAG\tROWS\tREJECTED\tRESUMES")
	for _, s := range rep.Streams {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%v\n", s.Stream, fmtTime(s.Watermark), fmtTime(s.LastSuccess), fmtLag(s.LagSeconds), s.Rows, s.Rejected, s.InProgress)
	}
	tw.Flush()
	if v := rep.Verify; v != nil {
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
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tTRIGGER\tSTATUS\tSTARTED\tTOOK\tREQUESTS\tROWS\tREJECTED\tERROR")
	for _, r := range rep.Runs {
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
	if len(rep.Runs) > 0 && len(rep.Runs[0].StreamsDetail) > 0 {
		r := rep.Runs[0]
		fmt.Fprintf(w, "\nlast run %s by task:\n", r.RunID[:8])
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tSTREAM\tREQUESTS\tRECORDS READ\tTOOK\tRANGES FETCHED")
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
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", t, d.Stream, d.Requests, d.RecordsRead, took, cmp.Or(strings.Join(ranges, ", "), "—"))
		}
		tw.Flush()
	}
}

// taskOrder is a task's place in the default priorities (unknown names last).
func taskOrder(name string) int {
	if i := slices.Index(DefaultPriorities, Task(name)); i >= 0 {
		return i
	}
	return len(DefaultPriorities)
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
