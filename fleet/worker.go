package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/extract"
)

// syncWorker is River's worker of sync jobs: one job, one sync of one
// agency through the single-agency path.
type syncWorker struct {
	river.WorkerDefaults[SyncArgs]
	w *worker
}

// Timeout bounds one job: its sync stops at the page in hand and the job is
// snoozed to resume at once (settle).
func (s *syncWorker) Timeout(*river.Job[SyncArgs]) time.Duration { return s.w.set.JobTimeout }

// Work runs one sync of the job's agency, unless the job still has reason
// to wait (a refused key whose files did not change, a quota day that has
// not turned), and turns the run's end into the job's: completed, snoozed
// or retried.
func (s *syncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) error {
	w := s.w
	name := job.Args.Agency
	ag, sched, ok := w.agency(name)
	log := w.log.With(zap.String("agency", name), zap.Int64("job_id", job.ID), zap.Int("attempt", job.Attempt))
	if !ok {
		// A worker that has not yet seen FLEET_FILE change reads it now.
		w.reload(ctx)
		if ag, sched, ok = w.agency(name); !ok {
			if w.fileError() != "" {
				// The file does not read: the agency may be in the version
				// this worker cannot read. Wait for it rather than cancel.
				return w.snooze(ctx, log, name, hold{Reason: holdFile, Note: "FLEET_FILE does not read: " + w.fileError()}, w.set.WatchInterval)
			}
			w.met.outcome(name, "cancelled")
			return river.JobCancel(fmt.Errorf("agency %s is not in FLEET_FILE", name))
		}
	}
	if wait, h, held := w.stillHeld(ctx, log, ag, holdOf(job.JobRow)); held {
		return w.snooze(ctx, log, name, h, wait)
	}
	inst := w.instruments(name)
	w.met.running.WithLabelValues(name).Set(1)
	defer w.met.running.WithLabelValues(name).Set(0)
	log.Info("fleet sync started")
	res, err := w.opts.Agencies.Sync(ctx, name, inst.metrics)
	defer w.setNextRun(name, sched)
	return w.settle(ctx, log, ag, sched, res, err)
}

// stillHeld reports whether a job that waited must wait on: a refused key
// whose files are unchanged (no request is sent), or a spent quota whose
// day has not turned (one keyless request tells).
func (w *worker) stillHeld(ctx context.Context, log *zap.Logger, ag Agency, h hold) (time.Duration, hold, bool) {
	switch h.Reason {
	case holdCredentials:
		if keyStamp(ag.Name, ag.KeyFiles) == h.Stamp {
			return parked, h, true
		}
		log.Info("the agency's key files changed since its key was refused: syncing")
	case holdQuota:
		q, err := w.opts.Agencies.Quota(ctx, ag.Name)
		if err != nil {
			log.Warn("could not read the service's clock; syncing (the run stops at once if the quota is still spent)", zap.Error(err))
			return 0, hold{}, false
		}
		if q.Left <= 0 {
			return w.untilQuotaDay(q), quotaHold(q), true
		}
		log.Info("a new quota day: syncing", zap.String("quota_day", q.Day.Format(time.DateOnly)), zap.Int("quota_left", q.Left))
	}
	return 0, hold{}, false
}

// settle turns a sync's end into the job's.
func (w *worker) settle(ctx context.Context, log *zap.Logger, ag Agency, sched *schedule, res *engine.Result, err error) error {
	name := ag.Name
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped before the sync got under way (opening the warehouse):
		// nothing was half done; any worker takes it again at once.
		log.Info("fleet sync stopped before it began; back to the queue", zap.Error(err))
		return w.snooze(ctx, log, name, hold{}, 0)
	case err != nil:
		w.met.outcome(name, "failed")
		return fmt.Errorf("sync agency %s: %w", name, err)
	}
	switch res.Status {
	case engine.StatusSucceeded:
		w.met.outcome(name, "succeeded")
		log.Info("fleet sync succeeded", zap.String("run_id", res.RunID), zap.Int("requests_used", res.RequestsUsed))
		w.record(ctx, log, hold{})
		return nil
	case engine.StatusSkipped:
		h := hold{Reason: holdLocked, Note: "another process holds the agency's sync lock"}
		return w.snooze(ctx, log, name, h, lockedRetry)
	case engine.StatusPartial:
		return w.settlePartial(ctx, log, ag, sched, res)
	}
	if errors.Is(res.Err, extract.ErrUnauthorized) {
		h := hold{Reason: holdCredentials, Stamp: keyStamp(name, ag.KeyFiles),
			Note: "the service refused the key; the sync waits until the agency's key files change"}
		log.Error("the service refused the agency's key: its syncs wait until its key files change", zap.String("run_id", res.RunID),
			zap.Strings("key_files", ag.KeyFiles))
		return w.snooze(ctx, log, name, h, parked)
	}
	w.met.outcome(name, "failed")
	return fmt.Errorf("sync agency %s: run %s failed: %w", name, res.RunID, res.Err)
}

// settlePartial snoozes a sync that ended partial (exit 75): interrupted
// ones resume at once, quota-stopped ones on the next quota day, the rest at
// the next scheduled moment.
func (w *worker) settlePartial(ctx context.Context, log *zap.Logger, ag Agency, sched *schedule, res *engine.Result) error {
	name := ag.Name
	switch {
	case errors.Is(res.Err, engine.ErrInterrupted):
		why := "the worker is stopping"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "FLEET_JOB_TIMEOUT reached; other agencies waiting go first"
		}
		log.Info("fleet sync interrupted: it resumes from its checkpoint at once, on any worker", zap.String("why", why))
		return w.snooze(ctx, log, name, hold{}, 0)
	case errors.Is(res.Err, extract.ErrBudgetExhausted) || errors.Is(res.Err, extract.ErrDailyQuota):
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		q, err := w.opts.Agencies.Quota(qctx, name)
		if err != nil {
			log.Warn("could not read the service's clock; the quota is read again later", zap.Error(err))
			return w.snooze(ctx, log, name, hold{Reason: holdQuota, Note: "the daily quota is spent"}, w.set.QuotaRecheck)
		}
		return w.snooze(ctx, log, name, quotaHold(q), w.untilQuotaDay(q))
	}
	wait := time.Hour
	if sched != nil {
		wait = time.Until(sched.Next(time.Now()))
	}
	h := hold{Reason: holdIncomplete, Note: "the last run left a range incomplete: " + res.Err.Error()}
	log.Warn("fleet sync ended incomplete; the next scheduled sync fetches the rest", zap.Duration("wait", wait.Round(time.Second)))
	return w.snooze(ctx, log, name, h, wait)
}

func quotaHold(q Quota) hold {
	return hold{Reason: holdQuota, Day: q.Day.Format(time.DateOnly),
		Note: "the daily quota of " + q.Day.Format(time.DateOnly) + " is spent; the sync resumes on the next quota day"}
}

// untilQuotaDay is how long to wait for the next quota day: until it
// starts, read again at least every FLEET_QUOTA_RECHECK (the service's clock
// may move otherwise than this worker's).
func (w *worker) untilQuotaDay(q Quota) time.Duration {
	return max(min(time.Until(q.NextDay)+time.Second, w.set.QuotaRecheck), 0)
}

// snooze records why the job waits and returns River's snooze: the job
// waits d without spending an attempt.
func (w *worker) snooze(ctx context.Context, log *zap.Logger, name string, h hold, d time.Duration) error {
	if h.Reason != "" {
		w.met.outcome(name, "wait_"+h.Reason)
		log.Info("fleet sync waits", zap.String("hold", h.Reason), zap.Duration("wait", d.Round(time.Second)), zap.String("note", h.Note))
	} else {
		w.met.outcome(name, "resumed")
	}
	w.record(ctx, log, h)
	return river.JobSnooze(d)
}

// record keeps h as the job's output (stored with the job's end).
func (w *worker) record(ctx context.Context, log *zap.Logger, h hold) {
	if err := river.RecordOutput(ctx, h); err != nil {
		log.Warn("could not record why the job waits", zap.Error(err))
	}
}

// agencyOf reads the agency of a job row (its arguments).
func agencyOf(j *rivertype.JobRow) string {
	var a SyncArgs
	_ = json.Unmarshal(j.EncodedArgs, &a)
	return a.Agency
}
