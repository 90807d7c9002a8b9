package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// The mail hooks run the communications stream (its declaration names
// them: stream.Stream.Hooks "mail"): the e-mails of a date-windowed list,
// read incrementally from the watermark, backfilled window by window,
// re-read on a rolling schedule and reconciled with the service's totals.
// Their code is this file and comms.go, commspages.go, refresh.go,
// refreshplan.go, refetch.go, boundary.go, filing.go, verify.go and
// users.go.

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
	if bf := req.Backfill; bf != nil && bf.To.Before(bf.From) {
		return false, fmt.Errorf("backfill: range ends (%s) before it starts (%s)", bf.To.Format(time.DateOnly), bf.From.Format(time.DateOnly))
	}
	if req.RefreshNext && (req.Backfill != nil || req.Verify != nil) {
		return false, errors.New("run: a refresh of the next days, a backfill and a verification are separate runs")
	}
	if v := req.Verify; v != nil {
		if req.Backfill != nil {
			return false, errors.New("run: backfill and verify are separate runs")
		}
		if !v.To.IsZero() && v.To.Before(v.From) {
			return false, fmt.Errorf("verify: range ends (%s) before it starts (%s)", v.To.Format(time.DateOnly), v.From.Format(time.DateOnly))
		}
	}
	return req.Backfill != nil || req.Verify != nil || req.RefreshNext, nil
}

func (mailHooks) estimateRequest(ctx context.Context, e *Engine, req Request) ([]Estimate, error) {
	var est Estimate
	var err error
	switch {
	case req.Backfill != nil:
		est = Estimate{Task: TaskCommsBackfill, Requests: 1, Unknown: true,
			Note: fmt.Sprintf("manual backfill %s..%s; the first page tells its size", dateString(req.Backfill.From), dateString(req.Backfill.To))}
	case req.Verify != nil:
		est, err = e.verifyEstimate(ctx, req.Verify)
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
	case req.Backfill != nil:
		return r.manualBackfill(ctx, *req.Backfill, log)
	case req.Verify != nil:
		return r.verifyRange(ctx, log, *req.Verify)
	case req.RefreshNext:
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

// afterTask reconciles the ranges that closed during the task (verify.go).
func (mailHooks) afterTask(ctx context.Context, r *run, t Task, req Request, log *zap.Logger, err error) error {
	return r.afterTask(ctx, t, req.Backfill != nil, log, err)
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

// mail is the declaration of the stream the mail hooks run, with its
// date-windowed endpoint.
func (e *Engine) mail() (*stream.Stream, stream.Endpoint) {
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
	if s, _ := e.mail(); s != nil {
		return s.Name
	}
	return ""
}

// commsBatch transforms a page of communications.
func (r *run) commsBatch(page *extract.Page) transform.Batch {
	s, ep := r.e.mail()
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
