package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agencysync/agencysync/load"
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
		streams = AllStreams
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
	switch backfill := req.Backfill; {
	case backfill != nil:
		est = []Estimate{{Task: TaskCommsBackfill, Requests: 1, Unknown: true,
			Note: fmt.Sprintf("manual backfill %s..%s; the first page tells its size", dateString(backfill.From), dateString(backfill.To))}}
	case req.Verify != nil:
		v, err := e.verifyEstimate(ctx, req.Verify)
		if err != nil {
			return Plan{}, err
		}
		est = []Estimate{v}
	case req.RefreshNext:
		v, err := e.refreshEstimate(ctx, true)
		if err != nil {
			return Plan{}, err
		}
		est = []Estimate{v}
	default:
		if est, err = e.estimate(ctx, streams); err != nil {
			return Plan{}, err
		}
	}
	for i := range est {
		if done[est[i].Task] {
			est[i] = Estimate{Task: est[i].Task, Note: "completed today by the unfinished run before this one"}
		}
	}
	return MakePlan(day, e.set.DailyQuota, e.set.QuotaReserve, spent, e.set.Priorities, est), nil
}

// estimate predicts each task's requests from what the warehouse knows:
// stored row counts, due details, cursors and last totals.
func (e *Engine) estimate(ctx context.Context, streams []string) ([]Estimate, error) {
	var out []Estimate
	has := func(s string) bool { return slices.Contains(streams, s) }
	if has(StreamCommunications) {
		inc, back, err := e.estimateComms(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, inc, back)
		rf, err := e.refreshEstimate(ctx, false)
		if err != nil {
			return nil, err
		}
		out = append(out, rf)
		v, err := e.verifyEstimate(ctx, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if has(StreamBrands) {
		n, err := e.store.LiveRows(ctx, "brands", nil)
		if err != nil {
			return nil, err
		}
		out = append(out, Estimate{Task: TaskBrands, Requests: pagesFor(n, 0), Note: fmt.Sprintf("%d brands stored", n)})
	}
	if has(StreamProjects) {
		n, err := e.store.LiveRows(ctx, "projects", nil)
		if err != nil {
			return nil, err
		}
		out = append(out, Estimate{Task: TaskProjects, Requests: pagesFor(n, 0), Note: fmt.Sprintf("%d projects stored", n)})
	}
	if has(StreamFinance) {
		fin, err := e.estimateFinance(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, fin)
	}
	if has(StreamBrands) || has(StreamProjects) {
		d := Estimate{Task: TaskDetails}
		for _, s := range []string{StreamBrands, StreamProjects} {
			if !has(s) {
				continue
			}
			n, err := e.book.countDue(ctx, e.pool, s, e.set.DetailMaxAge, e.set.Now())
			if err != nil {
				return nil, err
			}
			per := 1
			if s == StreamBrands {
				per = 2 // detail and contacts
			}
			d.Requests += n * per
			d.Note += fmt.Sprintf("%d %s due ", n, s)
			stored, err := e.store.LiveRows(ctx, s, nil)
			if err != nil {
				return nil, err
			}
			if stored == 0 {
				d.Unknown = true // first sync: the lists tell how many
			}
		}
		if d.Unknown {
			d.Note += "(first sync: the lists tell how many)"
		}
		out = append(out, d)
	}
	return out, nil
}

func (e *Engine) estimateComms(ctx context.Context) (inc, back Estimate, err error) {
	inc = Estimate{Task: TaskCommsIncrement}
	back = Estimate{Task: TaskCommsBackfill}
	st, err := e.store.GetState(ctx, StreamCommunications, partComms)
	var cs commsState
	if err == nil {
		cs.watermark = st.Watermark
		if len(st.Cursor) > 0 {
			if err := jsonUnmarshal(st.Cursor, &cs.cur); err != nil {
				return inc, back, err
			}
		}
	} else if !isNoState(err) {
		return inc, back, err
	}
	remaining := func(rc *rangeCursor) (int, bool) {
		if rc.LastPage == 0 {
			return 1, true
		}
		return max(rc.LastPage-rc.NextPage+1, 0), false
	}
	today := utcDate(e.set.Now())
	if rc := cs.cur.Increment; rc != nil {
		n, _ := remaining(rc)
		inc.Requests += n
		inc.Note = fmt.Sprintf("resume %s..%s at page %d; ", rc.From, rc.To, rc.NextPage)
	}
	bf := cs.cur.Backfill
	switch {
	case bf == nil:
		back.Requests, back.Unknown = 1, true
		back.Note = fmt.Sprintf("first backfill from %s; the first page tells its size", dateString(e.set.StartDate))
	case !bf.Done:
		if bf.End < dateString(today) {
			inc.Requests++
			inc.Note += "days after the backfill's end"
		}
		if rc := bf.Current; rc != nil {
			n, unknown := remaining(rc)
			back.Requests, back.Unknown = n, unknown || bf.DoneUntil < bf.End && rc.To < bf.End
			back.Note = fmt.Sprintf("window %s..%s from page %d of %d; backfill to %s", rc.From, rc.To, rc.NextPage, rc.LastPage, bf.End)
		} else {
			back.Requests, back.Unknown = 1, true
			if bf.DoneUntil == "" {
				back.Note = fmt.Sprintf("first window from %s; backfill to %s; the first page tells its size", bf.Start, bf.End)
			} else {
				back.Note = fmt.Sprintf("next window after %s; backfill to %s", bf.DoneUntil, bf.End)
			}
		}
	default:
		if c := cs.cur; c.FullReadOn == dateString(today) && c.LastPerPage > 0 {
			// Read in full today: the next increment starts at the first
			// page that can hold new records (skipHeld).
			n := max(c.LastSkipRequests, 1)
			inc.Requests += n
			inc.Note += fmt.Sprintf("from the first page that can hold new records (the lookback window was read in full today); last time %d request(s)", n)
		} else {
			// The day's first increment re-reads the lookback window whole.
			n := max(c.FullReadPages, c.LastIncrementPages, 1)
			inc.Requests += n
			inc.Note += fmt.Sprintf("the lookback window read in full, once a day: about %d page(s)", n)
		}
		back.Note = "backfill complete"
	}
	return inc, back, nil
}

func (e *Engine) estimateFinance(ctx context.Context) (Estimate, error) {
	est := Estimate{Task: TaskFinance}
	tables := []struct {
		partition, table string
		scope            map[string]any
	}{
		{"budgets", "budgets", nil}, {"invoices", "invoices", nil}, {"collections", "collections", nil}, {"payments", "payments", nil},
		{"profitability.project", "profitability", map[string]any{"level": "project"}}, {"profitability.brand", "profitability", map[string]any{"level": "brand"}},
		{"summary", "agency_finance_summary", nil},
	}
	for _, t := range tables {
		n, err := e.store.LiveRows(ctx, t.table, t.scope)
		if err != nil {
			return est, err
		}
		incremental := t.partition == "budgets" || t.partition == "invoices" || t.partition == "collections" || t.partition == "payments"
		if incremental && n > 0 {
			st, err := e.store.GetState(ctx, StreamFinance, t.partition)
			if err == nil && st.Watermark != nil {
				var cur financeCursor
				_ = jsonUnmarshal(st.Cursor, &cur)
				if cur.FullAt != nil && !cur.UpdatedSinceIgnored && e.set.Now().Sub(*cur.FullAt) < e.financeFullEvery() {
					est.Requests++ // an updated_since page
					continue
				}
			}
		}
		est.Requests += pagesFor(n, 0)
	}
	est.Note = "7 lists"
	return est, nil
}

func jsonUnmarshal(b []byte, v any) error {
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read cursor: %w", err)
	}
	return nil
}

func isNoState(err error) bool { return errors.Is(err, load.ErrNoState) }
