package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
)

// pagesFor is the number of requests a list of n rows costs at 1000 rows a
// page; an empty list still costs its one request.
func pagesFor(n, perPage int) int {
	if perPage <= 0 {
		perPage = 1000
	}
	return max(1, (n+perPage-1)/perPage)
}

// Plan computes today's plan for the streams without sending a request.
func (e *Engine) Plan(ctx context.Context, streams []string) (Plan, error) {
	if len(streams) == 0 {
		streams = e.streamNames()
	}
	done, err := e.doneByUnfinishedRun(ctx, Request{Streams: streams})
	if err != nil {
		return Plan{}, err
	}
	p, err := e.makePlan(ctx, streams, Request{}, done)
	if err != nil {
		return Plan{}, err
	}
	if p.Rederive, _, err = e.stale(ctx, streams); err != nil {
		return Plan{}, err
	}
	return p, nil
}

func (e *Engine) makePlan(ctx context.Context, streams []string, req Request, done map[Task]bool) (Plan, error) {
	day := e.ledger.Today()
	spent, err := e.ledger.Spent(ctx, day)
	if err != nil {
		return Plan{}, err
	}
	var est []Estimate
	if _, h, _ := e.requestHooks(req); h != nil {
		est, err = h.estimateRequest(ctx, e, req)
	} else {
		est, err = e.estimate(ctx, streams)
	}
	if err != nil {
		return Plan{}, err
	}
	for i := range est {
		est[i].Stream = e.taskStream(est[i].Task)
		if done[est[i].Task] {
			est[i] = Estimate{Task: est[i].Task, Stream: est[i].Stream, Note: "completed today by the unfinished run before this one"}
		}
	}
	return MakePlan(day, e.set.DailyQuota, e.set.QuotaReserve, spent, e.set.Priorities, est), nil
}

// estimate predicts each task's requests from what the warehouse knows:
// stored row counts, due details, cursors and last totals. Every task of
// the streams gets an estimate (a task without one would not run): a
// stream's hooks estimate its tasks, the declarations the others.
func (e *Engine) estimate(ctx context.Context, streams []string) ([]Estimate, error) {
	var out []Estimate
	for _, s := range e.selected(streams) {
		if h := hooksNamed(s.Hooks); h != nil {
			est, err := h.estimate(ctx, e)
			if err != nil {
				return nil, err
			}
			out = append(out, est...)
			continue
		}
		est, err := e.estimateLists(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, est)
	}
	if ent := e.withEntities(streams); len(ent) > 0 {
		d, err := e.estimateDetails(ctx, ent)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	for _, t := range tasksOf(e.selected(streams)) {
		if !slices.ContainsFunc(out, func(est Estimate) bool { return est.Task == t }) {
			return nil, fmt.Errorf("plan: task %s has no estimate: it would not run", t)
		}
	}
	return out, nil
}

// estimateLists is the list task of s: per listing, one request per page
// of its stored rows, or one for an incremental listing read with
// updated_since now.
func (e *Engine) estimateLists(ctx context.Context, s *stream.Stream) (Estimate, error) {
	est := Estimate{Task: Task(s.Name)}
	for _, l := range s.Lists {
		t := s.ListTable(l)
		n, err := e.store.LiveRows(ctx, t.Name, s.ListScope(l))
		if err != nil {
			return est, err
		}
		if len(s.Lists) == 1 {
			est.Note = fmt.Sprintf("%d %s stored", n, t.Name)
		}
		if l.Incremental && n > 0 {
			ls, err := e.loadList(ctx, s.Name, l)
			if err != nil {
				return est, err
			}
			if !e.full(l, ls) {
				est.Requests++ // an updated_since page
				continue
			}
		}
		est.Requests += pagesFor(n, 0)
	}
	if len(s.Lists) > 1 {
		est.Note = fmt.Sprintf("%d lists", len(s.Lists))
	}
	return est, nil
}

// estimateDetails is the details task: per stream, the entities due, each
// costing its detail and a request per child list; unknown on a first sync
// (the lists tell how many).
func (e *Engine) estimateDetails(ctx context.Context, streams []*stream.Stream) (Estimate, error) {
	d := Estimate{Task: TaskDetails}
	for _, s := range streams {
		n, err := e.book.countDue(ctx, e.pool, s.Name, e.set.DetailMaxAge, e.set.Now())
		if err != nil {
			return d, err
		}
		per := len(s.EndpointsOf(stream.KindDetail)) + len(s.EndpointsOf(stream.KindChild))
		d.Requests += n * per
		d.Note += fmt.Sprintf("%d %s due ", n, s.Name)
		_, t, _ := s.Entities()
		stored, err := e.store.LiveRows(ctx, t.Name, nil)
		if err != nil {
			return d, err
		}
		if stored == 0 {
			d.Unknown = true // first sync: the lists tell how many
		}
	}
	if d.Unknown {
		d.Note += "(first sync: the lists tell how many)"
	}
	return d, nil
}

// readState reads the state of stream's partition and decodes its cursor
// into cur (an empty cursor leaves cur as it is). found is false, and cur
// untouched, when the partition has no state yet.
func (e *Engine) readState(ctx context.Context, stream, partition string, cur any) (st load.State, found bool, err error) {
	st, err = e.store.GetState(ctx, stream, partition)
	switch {
	case errors.Is(err, load.ErrNoState):
		return load.State{}, false, nil
	case err != nil:
		return load.State{}, false, err
	}
	if len(st.Cursor) > 0 {
		if err := json.Unmarshal(st.Cursor, cur); err != nil {
			return load.State{}, false, fmt.Errorf("read cursor of %s/%s: %w", stream, partition, err)
		}
	}
	return st, true, nil
}
