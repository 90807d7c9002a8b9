package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// The mail hooks run the communications stream (its declaration names
// them: stream.Stream.Hooks "mail"): the e-mails of a date-windowed list,
// read incrementally from the watermark, backfilled window by window,
// re-read on a rolling schedule and reconciled with the service's totals.
// Their code is the files named mail*.go: this one (the hooks, their
// settings, requests and state), mailranges.go (ranges, increments and
// backfills), mailpages.go (a range's pages), mailrefresh.go and
// mailrefreshplan.go (the rolling re-read), mailverify.go and
// mailrefetch.go (reconciliation and repair), mailboundary.go and
// mailfiling.go (the service's day boundary, records filed far from their
// date) and mailusers.go (the participants). The rest of the engine names
// no stream.

// MailSettings are the settings of the mail hooks: what their requests
// ask, where the history starts, how increments overlap and how the
// history is re-read.
type MailSettings struct {
	// DomainID, UserIDs, BrandURL and WithMessage shape every request of
	// the date-windowed endpoint.
	DomainID    int64
	UserIDs     []int64
	BrandURL    string
	WithMessage string // default "0"
	// StartDate is the first day of the backfill.
	StartDate time.Time
	// Lookback is how far before the watermark an increment starts
	// (default 24h).
	Lookback time.Duration
	// BackfillWindow splits the backfill into date windows of this length
	// (0: one range, the fewest requests).
	BackfillWindow time.Duration
	// RefreshAge is the most time that passes before a day of the history
	// is read in full again (default DefaultCommsRefreshAge): each night
	// re-reads the days read longest ago, an even share (see
	// mailrefreshplan.go).
	RefreshAge time.Duration
	// TZ is the zone of the endpoint's calendar dates: reconciliation
	// counts the warehouse's e-mails per day of it (default UTC).
	TZ *time.Location
}

// withDefaults returns s with its defaults filled in.
func (s MailSettings) withDefaults() MailSettings {
	if s.Lookback == 0 {
		s.Lookback = 24 * time.Hour
	}
	if s.RefreshAge <= 0 {
		s.RefreshAge = DefaultCommsRefreshAge
	}
	if s.TZ == nil {
		s.TZ = time.UTC
	}
	if s.WithMessage == "" {
		s.WithMessage = "0"
	}
	return s
}

// DefaultCommsRefreshAge is SYNC_COMMS_REFRESH_AGE's default: 60 days. At
// the large agency (1 000 000 e-mails, about 1 000 pages for the whole
// history) the nightly share is about 17 pages, which keeps the nightly run
// under 2 % of a 10 000-request quota (see docs/reconciliation.md).
const DefaultCommsRefreshAge = 60 * 24 * time.Hour

// MailRequest asks the mail hooks for a run of their own: a backfill of a
// range, a verification of a range, or a re-read of the days the rolling
// refresh reaches next. The zero value asks for the normal tasks.
type MailRequest struct {
	// Backfill re-fetches this range of e-mails (agencysync backfill).
	Backfill *Range
	// Verify reconciles this range of e-mails with the warehouse
	// (agencysync verify); a zero From is the history's start date
	// (MailSettings.StartDate), a zero To today.
	Verify *Range
	// RefreshNext re-reads the days of the history the refresh would reach
	// next, now (agencysync backfill without a range).
	RefreshNext bool
}

// mailState is what the mail hooks keep for an engine.
type mailState struct {
	recon *load.Reconciler // the e-mails' counts and soft deletes in the warehouse
}

// open makes the reconciler of the e-mails of stream s.
func (mailHooks) open(e *Engine, s *stream.Stream) error {
	recon, err := load.NewReconciler(e.pool, e.set.Schema, s.Name)
	if err != nil {
		return err
	}
	e.mail.recon = recon
	return nil
}

// mailRun is the mail hooks' state in one run, guarded by the run's mu.
type mailRun struct {
	closing  []closedRange // ranges closed by the current task, reconciled after it (mailverify.go)
	verified *VerifyReport // the run's verification, if any
}

// mailHooksName is the name a declaration gives the mail hooks.
const mailHooksName = "mail"

// The tasks of the mail hooks, in their default priority order.
const (
	TaskCommsIncrement Task = "communications-increment" // e-mails since the watermark
	TaskCommsBackfill  Task = "communications-backfill"  // history from AGENCY_COMMS_START_DATE
	TaskCommsRefresh   Task = "communications-refresh"   // re-read the days of the history read longest ago, a nightly share of SYNC_COMMS_REFRESH_AGE
	TaskVerify         Task = "verify"                   // reconcile the whole history with the service, once a day after the backfill
)

// mailHooks implements streamHooks for the communications stream.
type mailHooks struct{}

// tasks: new mail first, the history after the lists and details.
func (mailHooks) tasks() (first, later []Task) {
	return []Task{TaskCommsIncrement}, []Task{TaskCommsBackfill, TaskCommsRefresh, TaskVerify}
}

func (mailHooks) estimate(ctx context.Context, e *Engine) ([]Estimate, error) {
	inc, back, err := e.estimateComms(ctx)
	if err != nil {
		return nil, err
	}
	rf, err := e.refreshEstimate(ctx, false)
	if err != nil {
		return nil, err
	}
	v, err := e.verifyEstimate(ctx, nil)
	if err != nil {
		return nil, err
	}
	return []Estimate{inc, back, rf, v}, nil
}

// takes: a manual backfill, a verification and a refresh of the next days
// are runs of their own, one at a time.
func (mailHooks) takes(req Request) (bool, error) {
	if bf := req.Mail.Backfill; bf != nil && bf.To.Before(bf.From) {
		return false, fmt.Errorf("backfill: range ends (%s) before it starts (%s)", bf.To.Format(time.DateOnly), bf.From.Format(time.DateOnly))
	}
	if req.Mail.RefreshNext && (req.Mail.Backfill != nil || req.Mail.Verify != nil) {
		return false, errors.New("run: a refresh of the next days, a backfill and a verification are separate runs")
	}
	if v := req.Mail.Verify; v != nil {
		if req.Mail.Backfill != nil {
			return false, errors.New("run: backfill and verify are separate runs")
		}
		if !v.To.IsZero() && v.To.Before(v.From) {
			return false, fmt.Errorf("verify: range ends (%s) before it starts (%s)", v.To.Format(time.DateOnly), v.From.Format(time.DateOnly))
		}
	}
	return req.Mail.Backfill != nil || req.Mail.Verify != nil || req.Mail.RefreshNext, nil
}

func (mailHooks) estimateRequest(ctx context.Context, e *Engine, req Request) ([]Estimate, error) {
	var est Estimate
	var err error
	switch {
	case req.Mail.Backfill != nil:
		est = Estimate{Task: TaskCommsBackfill, Requests: 1, Unknown: true,
			Note: fmt.Sprintf("manual backfill %s..%s; the first page tells its size", dateString(req.Mail.Backfill.From), dateString(req.Mail.Backfill.To))}
	case req.Mail.Verify != nil:
		est, err = e.verifyEstimate(ctx, req.Mail.Verify)
	default:
		est, err = e.refreshEstimate(ctx, true)
	}
	if err != nil {
		return nil, err
	}
	return []Estimate{est}, nil
}

func (mailHooks) run(ctx context.Context, r *run, t Task, req Request, log *zap.Logger) error {
	switch {
	case req.Mail.Backfill != nil:
		return r.manualBackfill(ctx, *req.Mail.Backfill, log)
	case req.Mail.Verify != nil:
		return r.verifyRange(ctx, log, *req.Mail.Verify)
	case req.Mail.RefreshNext:
		return r.commsRefresh(ctx, log, true)
	}
	switch t {
	case TaskCommsRefresh:
		return r.commsRefresh(ctx, log, false)
	case TaskVerify:
		return r.verifyTask(ctx, log)
	case TaskCommsIncrement:
		return r.commsIncrement(ctx, log)
	case TaskCommsBackfill:
		return r.commsBackfill(ctx, log)
	}
	return fmt.Errorf("run task: the mail hooks have no task %q", t)
}

// afterTask reconciles the ranges that closed during the task (mailverify.go).
func (mailHooks) afterTask(ctx context.Context, r *run, t Task, req Request, log *zap.Logger, err error) error {
	return r.afterTask(ctx, t, req.Mail.Backfill != nil, log, err)
}

// rereads: the verification re-reads days the run may have synced already.
func (mailHooks) rereads(t Task) bool { return t == TaskVerify }

func (mailHooks) status(ctx context.Context, e *Engine, rep *StatusReport) error {
	var err error
	if rep.Verify, err = e.verifyStatus(ctx); err != nil {
		return err
	}
	rep.Refresh, err = e.refreshStatus(ctx)
	return err
}

// mailDecl is the declaration of the stream the mail hooks run, with its
// date-windowed endpoint.
func (e *Engine) mailDecl() (*stream.Stream, stream.Endpoint) {
	for _, s := range e.set.Streams {
		if s.Hooks == mailHooksName {
			if eps := s.EndpointsOf(stream.KindWindow); len(eps) > 0 {
				return s, eps[0]
			}
			return s, stream.Endpoint{}
		}
	}
	return nil, stream.Endpoint{}
}

// mailStream is the name of the stream the mail hooks run (its
// sync_state stream).
func (e *Engine) mailStream() string {
	if s, _ := e.mailDecl(); s != nil {
		return s.Name
	}
	return ""
}

// commsBatch transforms a page of communications.
func (r *run) commsBatch(page *extract.Page) transform.Batch {
	s, ep := r.e.mailDecl()
	return r.transform(s, ep.Name, nil, recordsOf(page.Records), s.Rejects(ep.Name), page.Rejects)
}

// commsIDs lists the record ids of a transformed communications page: its
// e-mails' and its rejected records' (whose key is their record id when it
// is known).
func commsIDs(b *transform.Batch) []int64 {
	var ids []int64
	for _, v := range b.Column("emails", "record_id") {
		if id, ok := v.(int64); ok {
			ids = append(ids, id)
		}
	}
	for _, rj := range b.Rejects {
		if id, err := strconv.ParseInt(rj.Key, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
