package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"
)

// periodicID names an agency's periodic job in River.
func periodicID(agency string) string { return "agencysync:" + agency }

// waiting are the states of a job that has not started (or waits again).
var waiting = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled}

// watch inserts the jobs of overdue agencies, then reads FLEET_FILE every
// FLEET_WATCH_INTERVAL and at once on Reload (SIGHUP), and makes parked jobs
// available when their agency's key files changed. It returns when ctx ends.
func (w *worker) watch(ctx context.Context) {
	w.catchUp(ctx, w.names())
	t := time.NewTicker(w.set.WatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.opts.Reload:
			w.log.Info("SIGHUP: reading FLEET_FILE")
		}
		w.reload(ctx)
		w.wakeChangedKeys(ctx)
	}
}

// reload reads FLEET_FILE and applies it; a file that does not read keeps
// the agencies in force (said once per distinct problem).
func (w *worker) reload(ctx context.Context) {
	w.reloading.Lock()
	defer w.reloading.Unlock()
	agencies, err := w.opts.Agencies.Load(ctx)
	w.mu.Lock()
	before := w.fileErr
	if err != nil {
		w.fileErr = err.Error()
	} else {
		w.fileErr = ""
	}
	w.mu.Unlock()
	if err != nil {
		w.met.reloads.WithLabelValues("error").Inc()
		if before != err.Error() {
			w.log.Error("FLEET_FILE not read; the fleet keeps the agencies it has until it reads again", zap.Error(err))
		}
		return
	}
	if before != "" {
		w.log.Info("FLEET_FILE reads again")
	}
	added, err := w.apply(ctx, agencies, true)
	if err != nil {
		w.log.Error("FLEET_FILE not applied", zap.Error(err))
		return
	}
	w.catchUp(ctx, added)
}

// apply makes agencies the ones in force: a periodic job for each (replaced
// when its schedule changed), none for those gone, whose waiting jobs are
// cancelled. It returns the agencies new to this worker.
func (w *worker) apply(ctx context.Context, agencies []Agency, live bool) ([]string, error) {
	next := make(map[string]Agency, len(agencies))
	scheds := make(map[string]*schedule, len(agencies))
	for _, a := range agencies {
		s, err := parseSchedule(a.Schedule, a.Location)
		if err != nil {
			return nil, fmt.Errorf("agency %s: SYNC_SCHEDULE: %w", a.Name, err)
		}
		next[a.Name], scheds[a.Name] = a, s
	}
	w.mu.Lock()
	old, oldScheds := w.agencies, w.scheds
	w.agencies, w.scheds = next, scheds
	w.mu.Unlock()
	w.met.agencies.Set(float64(len(next)))

	var added, rescheduled, removed []string
	for _, name := range slices.Sorted(maps.Keys(scheds)) {
		s := scheds[name]
		if o, ok := oldScheds[name]; ok && o.key() == s.key() {
			continue
		}
		w.client.PeriodicJobs().RemoveByID(periodicID(name))
		construct := func() (river.JobArgs, *river.InsertOpts) { return SyncArgs{Agency: name}, nil }
		if _, err := w.client.PeriodicJobs().AddSafely(river.NewPeriodicJob(s, construct, &river.PeriodicJobOpts{ID: periodicID(name)})); err != nil {
			return nil, fmt.Errorf("schedule agency %s: %w", name, err)
		}
		if _, known := old[name]; known {
			rescheduled = append(rescheduled, name)
		} else {
			added = append(added, name)
		}
		w.setNextRun(name, s)
	}
	for _, name := range slices.Sorted(maps.Keys(old)) {
		if _, ok := next[name]; ok {
			continue
		}
		removed = append(removed, name)
		w.client.PeriodicJobs().RemoveByID(periodicID(name))
		w.dropInstruments(name)
		w.cancelWaiting(ctx, name)
	}
	if live && len(added)+len(rescheduled)+len(removed) > 0 {
		w.met.reloads.WithLabelValues("changed").Inc()
		w.log.Info("FLEET_FILE changed", zap.Strings("added", added), zap.Strings("rescheduled", rescheduled), zap.Strings("removed", removed))
	}
	return added, nil
}

// catchUp inserts a job for each of the named agencies that is overdue:
// never synced, or a scheduled moment has passed since its last run (a
// new agency, a schedule missed while no worker led). The job is unique:
// an agency with a job waiting or running gets no second one.
func (w *worker) catchUp(ctx context.Context, names []string) {
	for _, name := range names {
		_, s, ok := w.agency(name)
		if !ok || ctx.Err() != nil {
			continue
		}
		last, ran, err := w.opts.Agencies.LastRun(ctx, name)
		if err != nil {
			w.log.Warn("could not read the agency's last run; its schedule will start it", zap.String("agency", name), zap.Error(err))
			continue
		}
		if ran && s.Next(last).After(time.Now()) {
			continue
		}
		res, err := w.client.Insert(ctx, SyncArgs{Agency: name}, nil)
		switch {
		case err != nil:
			w.log.Warn("could not queue the agency's overdue sync; its schedule will start it", zap.String("agency", name), zap.Error(err))
		case !res.UniqueSkippedAsDuplicate:
			w.log.Info("agency overdue: sync queued", zap.String("agency", name), zap.Bool("ever_synced", ran), zap.Int64("job_id", res.Job.ID))
		}
	}
}

// cancelWaiting cancels the jobs of an agency removed from FLEET_FILE that
// have not started; a sync under way ends as it would have.
func (w *worker) cancelWaiting(ctx context.Context, name string) {
	jobs, err := w.jobs(ctx, waiting...)
	if err != nil {
		w.log.Warn("could not list the removed agency's jobs; a worker cancels each when it comes due", zap.String("agency", name), zap.Error(err))
		return
	}
	for _, j := range jobs {
		if agencyOf(j) != name {
			continue
		}
		if _, err := w.client.JobCancel(ctx, j.ID); err != nil {
			w.log.Warn("could not cancel the removed agency's job", zap.String("agency", name), zap.Int64("job_id", j.ID), zap.Error(err))
		}
	}
}

// wakeChangedKeys makes the parked job of each agency whose key was
// refused available again once its key files' contents changed.
func (w *worker) wakeChangedKeys(ctx context.Context) {
	res, err := w.client.JobList(ctx, river.NewJobListParams().Kinds(jobKind).States(rivertype.JobStateScheduled).
		Metadata(`{"output":{"hold":"`+holdCredentials+`"}}`).First(10000))
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("could not list the jobs waiting for a new key", zap.Error(err))
		}
		return
	}
	for _, j := range res.Jobs {
		name := agencyOf(j)
		ag, _, ok := w.agency(name)
		if !ok || keyStamp(name, ag.KeyFiles) == holdOf(j).Stamp {
			continue
		}
		if _, err := w.client.JobRetry(ctx, j.ID); err != nil {
			w.log.Warn("could not resume the agency whose key files changed", zap.String("agency", name), zap.Error(err))
			continue
		}
		w.log.Info("the agency's key files changed: its sync resumes", zap.String("agency", name), zap.Int64("job_id", j.ID))
	}
}

// jobs lists the fleet's jobs in the given states (at most one per agency
// in the waiting and running states, by uniqueness).
func (w *worker) jobs(ctx context.Context, states ...rivertype.JobState) ([]*rivertype.JobRow, error) {
	res, err := w.client.JobList(ctx, river.NewJobListParams().Kinds(jobKind).States(states...).First(10000))
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return res.Jobs, nil
}
