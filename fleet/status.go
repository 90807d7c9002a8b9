package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/warehouse"
)

// Agency states in fleet status.
const (
	StateIdle     = "idle"     // no job: the next scheduled moment starts one
	StateQueued   = "queued"   // a job waits for a free worker
	StateRunning  = "running"  // a worker syncs it now
	StateWaiting  = "waiting"  // snoozed: its quota day, the next schedule, a held lock
	StateHeld     = "held"     // its key was refused: waits for its key files to change
	StateRetrying = "retrying" // its last attempt failed; River tries again at NextRun
)

// AgencyStatus is one agency in fleet status.
type AgencyStatus struct {
	Agency   string `json:"agency"`
	Schema   string `json:"schema"`
	Schedule string `json:"schedule"`
	// State is one of idle, queued, running, waiting, held, retrying.
	State string `json:"state"`
	// Hold says why a waiting or held agency waits (quota, credentials,
	// locked, incomplete); Note says it in words.
	Hold string `json:"hold,omitempty"`
	Note string `json:"note,omitempty"`
	// Worker is the worker syncing it (running), or the last one that
	// tried (retrying).
	Worker  string     `json:"worker,omitempty"`
	JobID   int64      `json:"job_id,omitempty"`
	Since   *time.Time `json:"since,omitempty"`    // when the running attempt started
	NextRun *time.Time `json:"next_run,omitempty"` // nil while held
	// LastRun is its newest run that was not skipped (sync_runs).
	LastRun    *Run   `json:"last_run,omitempty"`
	QuotaDay   string `json:"quota_day,omitempty"`
	QuotaSpent int    `json:"quota_spent"`
	QuotaLeft  int    `json:"quota_left"`
	// LagSeconds is the largest lag of its streams (sync_freshness).
	LagSeconds *float64 `json:"lag_seconds,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// Error says why its warehouse could not be read (the rest may lack).
	Error string `json:"error,omitempty"`
}

// Run is one run of sync_runs, in brief.
type Run struct {
	RunID        string     `json:"run_id"`
	Status       string     `json:"status"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	RequestsUsed int        `json:"requests_used"`
	Error        string     `json:"error,omitempty"`
}

// Report is fleet status: every agency of FLEET_FILE.
type Report struct {
	Schema      string         `json:"fleet_schema"`
	GeneratedAt time.Time      `json:"generated_at"`
	Agencies    []AgencyStatus `json:"agencies"`
	// Workers are the workers syncing an agency now.
	Workers []string `json:"workers"`
	// FileError is the last problem reading FLEET_FILE, if the worker
	// serving the report kept older agencies because of it.
	FileError string `json:"file_error,omitempty"`
}

// Reporter reads fleet status from the job queue and each agency's warehouse.
type Reporter struct {
	client   *river.Client[pgx.Tx]
	agencies Agencies
	schema   string
}

// NewReporter reads the queue of schema through pool (no job is worked).
func NewReporter(pool *pgxpool.Pool, schema string, agencies Agencies) (*Reporter, error) {
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("open job queue %s: %w", schema, err)
	}
	return &Reporter{client: c, agencies: agencies, schema: schema}, nil
}

// sortAgencies orders agencies by name.
func sortAgencies(list []Agency) {
	slices.SortFunc(list, func(a, b Agency) int { return strings.Compare(a.Name, b.Name) })
}

// Report reads the status of every agency of list.
func (r *Reporter) Report(ctx context.Context, list []Agency) (*Report, error) {
	return report(ctx, r.client, r.agencies, r.schema, list)
}

func report(ctx context.Context, c *river.Client[pgx.Tx], agencies Agencies, schema string, list []Agency) (*Report, error) {
	res, err := c.JobList(ctx, river.NewJobListParams().Kinds(jobKind).
		States(append(slices.Clone(waiting), rivertype.JobStateRunning)...).First(10000))
	if err != nil {
		return nil, fmt.Errorf("read the job queue: %w", err)
	}
	jobs := map[string]*rivertype.JobRow{}
	for _, j := range res.Jobs {
		jobs[agencyOf(j)] = j
	}
	now := time.Now()
	rep := &Report{Schema: schema, GeneratedAt: now.UTC(), Workers: []string{}}
	for _, a := range list {
		st := AgencyStatus{Agency: a.Name, Schema: a.Schema, Schedule: a.Schedule + " " + a.Location.String()}
		jobState(&st, jobs[a.Name], a, now)
		if st.State == StateRunning && !slices.Contains(rep.Workers, st.Worker) {
			rep.Workers = append(rep.Workers, st.Worker)
		}
		warehouseState(ctx, &st, agencies, a.Name)
		rep.Agencies = append(rep.Agencies, st)
	}
	slices.Sort(rep.Workers)
	return rep, nil
}

// jobState fills what the agency's job (nil: none) says.
func jobState(st *AgencyStatus, j *rivertype.JobRow, a Agency, now time.Time) {
	next := func(t time.Time) { t = t.UTC(); st.NextRun = &t }
	if j == nil {
		st.State = StateIdle
		if s, err := parseSchedule(a.Schedule, a.Location); err == nil {
			next(s.Next(now))
		}
		return
	}
	st.JobID = j.ID
	h := holdOf(j)
	switch j.State {
	case rivertype.JobStateRunning:
		st.State = StateRunning
		if n := len(j.AttemptedBy); n > 0 {
			st.Worker = j.AttemptedBy[n-1]
		}
		if j.AttemptedAt != nil {
			t := j.AttemptedAt.UTC()
			st.Since = &t
		}
	case rivertype.JobStateRetryable:
		st.State = StateRetrying
		if n := len(j.AttemptedBy); n > 0 {
			st.Worker = j.AttemptedBy[n-1]
		}
		if n := len(j.Errors); n > 0 {
			st.Note = j.Errors[n-1].Error
		}
		next(j.ScheduledAt)
	default: // available, pending, scheduled: a short snooze waits as available
		switch h.Reason {
		case holdCredentials:
			st.State, st.Hold, st.Note = StateHeld, h.Reason, h.Note
			st.Warnings = append(st.Warnings, h.Note+" ("+strings.Join(a.KeyFiles, ", ")+")")
		case "":
			st.State = StateQueued
			next(j.ScheduledAt)
		default:
			st.State, st.Hold, st.Note = StateWaiting, h.Reason, h.Note
			next(j.ScheduledAt)
		}
	}
}

// warehouseState fills what the agency's warehouse says: its last run,
// quota, lag and warnings.
func warehouseState(ctx context.Context, st *AgencyStatus, agencies Agencies, name string) {
	rep, err := agencies.Status(ctx, name, 20)
	switch {
	case errors.Is(err, warehouse.ErrMigrationsPending):
		// Never synced: its first sync creates the schema (status creates
		// nothing).
		if st.Note == "" {
			st.Note = "never synced: its warehouse schema is not created yet"
		}
		return
	case err != nil:
		st.Error = err.Error()
		return
	}
	st.QuotaDay, st.QuotaSpent, st.QuotaLeft = rep.QuotaDay, rep.QuotaSpent, rep.QuotaLeft
	for _, s := range rep.Streams {
		if s.LagSeconds != nil && (st.LagSeconds == nil || *s.LagSeconds > *st.LagSeconds) {
			st.LagSeconds = s.LagSeconds
		}
	}
	for _, r := range rep.Runs {
		if r.Status != string(engine.StatusSkipped) && r.Status != "running" {
			st.LastRun = &Run{RunID: r.RunID, Status: r.Status, StartedAt: r.StartedAt.UTC(), FinishedAt: r.FinishedAt,
				RequestsUsed: r.RequestsUsed, Error: r.Error}
			break
		}
	}
	if r := st.LastRun; r != nil && r.Status != string(engine.StatusSucceeded) && r.Error != "" {
		st.Warnings = append(st.Warnings, fmt.Sprintf("last run %s: %s", r.Status, r.Error))
	}
	if rep.Warnings != nil {
		for _, w := range rep.Warnings.Warnings {
			what := w.Column
			if what == "" {
				what = w.Field
			}
			st.Warnings = append(st.Warnings, fmt.Sprintf("%s %s %s: %d of %d records", w.Stream, w.Kind, what, w.Count, w.Records))
		}
	}
}

// Print writes the report as a table, one agency a line, then each
// agency's warnings.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "fleet %s at %s; workers syncing: %s\n", r.Schema, r.GeneratedAt.Format(time.RFC3339), orNone(strings.Join(r.Workers, ", ")))
	if r.FileError != "" {
		fmt.Fprintf(w, "FLEET_FILE: %s (the agencies below are those read before)\n", r.FileError)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENCY\tSTATE\tWORKER\tLAST RUN\tNEXT RUN\tQUOTA USED\tLAG")
	for _, a := range r.Agencies {
		state := a.State
		if a.Hold != "" {
			state += " (" + a.Hold + ")"
		}
		last := "never"
		if a.LastRun != nil {
			last = a.LastRun.Status + " " + a.LastRun.StartedAt.UTC().Format("2006-01-02 15:04")
		}
		next := "when its key files change"
		if a.NextRun != nil {
			next = a.NextRun.Format("2006-01-02 15:04")
		} else if a.State != StateHeld {
			next = "—"
		}
		quota := "—"
		if a.QuotaDay != "" {
			quota = fmt.Sprintf("%d (%d left on %s)", a.QuotaSpent, a.QuotaLeft, a.QuotaDay)
		}
		lag := "—"
		if a.LagSeconds != nil {
			lag = (time.Duration(*a.LagSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Agency, state, orNone(a.Worker), last, next, quota, lag)
	}
	_ = tw.Flush()
	for _, a := range r.Agencies {
		if a.Error != "" {
			fmt.Fprintf(w, "%s: warehouse not read: %s\n", a.Agency, a.Error)
		}
		for _, x := range a.Warnings {
			fmt.Fprintf(w, "%s: %s\n", a.Agency, x)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
