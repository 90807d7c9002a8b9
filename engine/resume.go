package engine

import (
	"context"
	"time"
)

// listPartitions are the sync_state partitions a list task completes.
var listPartitions = map[Task]struct {
	stream     string
	partitions []string
}{
	TaskBrands:   {StreamBrands, []string{"list"}},
	TaskProjects: {StreamProjects, []string{"list"}},
	TaskFinance:  {StreamFinance, []string{"budgets", "invoices", "collections", "payments", "profitability.project", "profitability.brand", "summary"}},
}

// doneByUnfinishedRun lists the list tasks that the previous run completed
// when that run did not finish (it crashed, failed or ran out of budget) and
// began on the current quota day: the next run continues where it stopped
// instead of listing again what it has just listed. Communications and
// details resume from their own cursors and are never skipped. A full
// refresh or a manual backfill skips nothing.
func (e *Engine) doneByUnfinishedRun(ctx context.Context, req Request) (map[Task]bool, error) {
	parts, err := e.listsDoneByUnfinishedRun(ctx, req)
	if err != nil {
		return nil, err
	}
	return tasksDone(parts), nil
}

// tasksDone are the list tasks all of whose lists are in parts (as
// listsDoneByUnfinishedRun gives them).
func tasksDone(parts map[string]bool) map[Task]bool {
	done := map[Task]bool{}
	for task, lp := range listPartitions {
		n := 0
		for _, p := range lp.partitions {
			if parts[lp.stream+"/"+p] {
				n++
			}
		}
		done[task] = n == len(lp.partitions)
	}
	return done
}

// listsDoneByUnfinishedRun is doneByUnfinishedRun list by list, as
// "stream/partition": a run killed in the middle of the finance lists does
// not cost the next run the lists it had completed.
func (e *Engine) listsDoneByUnfinishedRun(ctx context.Context, req Request) (map[string]bool, error) {
	done := map[string]bool{}
	if req.Backfill != nil || len(req.FullRefresh) > 0 {
		return done, nil
	}
	// The unfinished runs since the last succeeded one (a "running" row while
	// this process holds the lock is a run that died), oldest first: lists
	// completed by any of them that began today count, not only by the last
	// one — which may have skipped them itself because of its predecessor.
	starts, err := e.store.UnfinishedRunStarts(ctx)
	if err != nil {
		return nil, err
	}
	var started time.Time
	for _, s := range starts {
		if e.ledger.Day(e.serviceTime(s)).Equal(e.ledger.Today()) {
			started = s
			break
		}
	}
	if started.IsZero() {
		return done, nil
	}
	for _, lp := range listPartitions {
		parts, err := e.store.PartitionsSucceededSince(ctx, lp.stream, lp.partitions, started)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			done[lp.stream+"/"+p] = true
		}
	}
	return done, nil
}
