package engine

import (
	"context"
	"time"
)

// doneByUnfinishedRun lists the list tasks that the previous run completed
// when that run did not finish (it crashed, failed or ran out of budget) and
// began on the current quota day: the next run continues where it stopped
// instead of listing again what it has just listed. The details and the
// tasks of a stream's hooks resume from their own cursors and are never
// skipped. A full
// refresh or a manual backfill skips nothing.
func (e *Engine) doneByUnfinishedRun(ctx context.Context, req Request) (map[Task]bool, error) {
	parts, err := e.listsDoneByUnfinishedRun(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.tasksDone(parts), nil
}

// tasksDone are the list tasks all of whose listings are in parts (as
// listsDoneByUnfinishedRun gives them).
func (e *Engine) tasksDone(parts map[string]bool) map[Task]bool {
	done := map[Task]bool{}
	for _, s := range e.set.Streams {
		if len(s.Lists) == 0 {
			continue
		}
		n := 0
		for _, l := range s.Lists {
			if parts[s.Name+"/"+l.Partition] {
				n++
			}
		}
		done[Task(s.Name)] = n == len(s.Lists)
	}
	return done
}

// listsDoneByUnfinishedRun is doneByUnfinishedRun list by list, as
// "stream/partition": a run killed in the middle of a stream's listings does
// not cost the next run the listings it had completed.
func (e *Engine) listsDoneByUnfinishedRun(ctx context.Context, req Request) (map[string]bool, error) {
	done := map[string]bool{}
	if _, own, _ := e.requestHooks(req); own != nil || len(req.FullRefresh) > 0 {
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
	for _, s := range e.set.Streams {
		if len(s.Lists) == 0 {
			continue
		}
		partitions := make([]string, len(s.Lists))
		for i, l := range s.Lists {
			partitions[i] = l.Partition
		}
		parts, err := e.store.PartitionsSucceededSince(ctx, s.Name, partitions, started)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			done[s.Name+"/"+p] = true
		}
	}
	return done, nil
}
