package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/spool"
)

// ErrIncomplete means a task did not land everything it set out to and
// could not repair it within the run (a range that ended without its last
// page, a range that kept changing while it was paged, a shortfall against
// the server's total). The gap stays open in the cursor; the run ends
// partial and the next run fetches it again.
var ErrIncomplete = errors.New("incomplete")

// pageStep is one page of a range as the page loop commits it.
type pageStep struct {
	page   *spooledPage
	fresh  int   // rows beyond the highest record id seen before this page (or without an id)
	lastID int64 // highest record id seen in the range after this page
	done   bool  // the page is the range's real last page
}

// pageKey is the spool key of page n of rc's range.
func (r *run) pageKey(rc *rangeCursor, n int) string {
	return r.spool.pageKey(r.commsEndpoint(), r.e.set, rc.From, rc.To, n)
}

// pageKey is the key of a page of a range of the date-windowed endpoint
// window: the range's request (the schema, domain, users, brand, with
// message and dates) and the page number.
func (s *pageSpool) pageKey(window string, set Settings, from, to string, page int) string {
	ids := make([]string, len(set.UserIDs))
	for i, id := range set.UserIDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return spool.Key(window, s.schema, strconv.FormatInt(set.DomainID, 10), strings.Join(ids, ","),
		set.BrandURL, set.WithMessage, from, to, strconv.Itoa(page))
}

// rangeStepBacks bounds the pages re-requested because a range changed
// while it was paged: in a row without a page that brings new records
// (steps), and in all (again, against the furthest page reached). Beyond
// either the range is given up as unstable.
func rangeStepBacks(page int) int { return page + 10 }

func tooManyAgain(again, furthest int) bool { return again > 2*furthest+20 }

// isLastPage is the one rule that closes a range: a page with no rows; with
// paging fields, a page at or past last_page; without them, a page with
// fewer rows than per_page (the page size answered, else the one asked).
func isLastPage(p *spooledPage) bool {
	switch {
	case p.Rows == 0:
		return true
	case p.Paged || p.LastPage > 0:
		return p.Number >= p.LastPage
	default:
		return p.PerPage > 0 && p.Rows < p.PerPage
	}
}

// rangePages yields the pages of a range from start.NextPage (start is the
// producer's own copy of the cursor), each decided to be the last or not.
//
// Records come in ascending record id. When the layout of the range changes
// between two pages — its total (records deleted or inserted meanwhile), or
// the page size between an interrupted run and its resume — records can
// shift across a page boundary. Then the page is asked again at the position
// computed from the records already committed (start.Offset under the page
// size now answered), and the previous page index is re-requested while the
// page's first record id is above the highest id already seen: every record
// is seen at least once; duplicates are harmless (upsert).
func (r *run) rangePages(ctx context.Context, log *zap.Logger, q extract.CommsQuery, start rangeCursor) iter.Seq2[*pageStep, error] {
	return func(yield func(*pageStep, error) bool) {
		page := max(start.NextPage, 1)
		per := start.PerPage // 0: the client's default
		offset := start.Offset
		if offset == 0 && page > 1 && per > 0 {
			offset = (page - 1) * per // a cursor written before offsets were kept
		}
		lastID := start.LastID
		total, haveTotal := start.Total, page > 1 && (start.Total > 0 || start.LastPage > 0)
		unsettled := false         // a layout change not yet resolved by stepping back
		steps := 0                 // re-requests since the last page that brought new records
		again, furthest := 0, page // re-requests in all; the furthest page asked
		// held is the page a step back set aside. When the page before it,
		// asked again, ends exactly at the highest id seen, nothing moved at
		// the pager's position and held is used (reuse) instead of being
		// asked again: mail arriving at the end of a range changes its total
		// on every request without moving anything.
		var held *spooledPage
		reuse := false
		var prevFirst, prevLast int64
		prevIDs := false
		// Pages after the one in hand are fetched ahead, several at a time
		// when the pace calls for it (run.inFlight less the one the page
		// loop's consumer is loading): only within a settled layout, up to
		// the last page the server announced, so they cost no request a
		// sequential pager would not send. When the range changes while it
		// is paged (mail arriving in today's range changes its total on
		// every request), those fetched ahead are dropped — at most depth
		// requests wasted — and the rest of the range is paged one page at
		// a time.
		steady := !r.e.set.NoPrefetch // fetch ahead (the layout never changed)
		ahead := newPagesAhead(ctx)
		defer ahead.stop()
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, fmt.Errorf("page communications: %w", err))
				return
			}
			var p *spooledPage
			spooled := false
			if reuse && held != nil && held.Number == page && held.PerPage == per {
				p, held, reuse = held, nil, false
				total = p.Total // its layout, checked by the page before it
			} else {
				if held != nil && held.Number != page+1 {
					held = nil
				}
				reuse = false
				var err error
				if unsettled {
					steady = false
					ahead.drop()
				}
				if f := ahead.take(page, per); f != nil {
					p, spooled, err = f.wait(ctx)
				} else {
					p, spooled, err = r.commsPage(ctx, log, q, start, page, per, !unsettled)
				}
				if err != nil {
					yield(nil, err)
					return
				}
			}
			if p.Number != page {
				yield(nil, fmt.Errorf("fetch communications page %d: %w", page, &extract.ResponseError{
					Endpoint: r.commsEndpoint(), Page: page, Kind: extract.ErrUnexpectedShape,
					Reason: fmt.Sprintf("asked for page %d, the server answered current_page %d", page, p.Number)}))
				return
			}
			paged := p.Paged || p.LastPage > 0
			// The page size the position was computed under has changed:
			// recompute the page from the records already committed.
			if page > 1 && offset > 0 && per > 0 && p.PerPage > 0 && p.PerPage != per {
				np := offset/p.PerPage + 1
				log.Info("the server's per_page changed within a range; resuming from the records committed",
					zap.Int("per_page_was", per), zap.Int("per_page", p.PerPage), zap.Int("offset", offset), zap.Int("page", np))
				per, unsettled = p.PerPage, true
				steady = false
				ahead.drop()
				if np != page {
					page = np
					if steps, again = steps+1, again+1; steps > rangeStepBacks(page) || tooManyAgain(again, furthest) {
						yield(nil, fmt.Errorf("page communications: the range keeps changing while it is paged: %w", ErrIncomplete))
						return
					}
					continue
				}
			}
			if paged && haveTotal && p.Total != total {
				// A total of -1 is a layout not seen yet (skipHeld): its
				// first page is checked, but nothing changed.
				if total >= 0 {
					log.Info("communications range changed while it was paged; stepping back",
						zap.Int("total_was", total), zap.Int("total", p.Total), zap.Int("page", page))
				}
				unsettled = true
				steady = false
				ahead.drop()
			}
			if paged {
				total, haveTotal = p.Total, true
			}
			if unsettled && page > 1 && lastID > 0 && (p.Rows == 0 || (p.HasIDs && p.FirstID > lastID)) {
				// Records may have moved to an earlier page: step back.
				if p.Rows > 0 {
					held = p
				}
				page--
				if steps, again = steps+1, again+1; steps > rangeStepBacks(page) || tooManyAgain(again, furthest) {
					yield(nil, fmt.Errorf("page communications: the range keeps changing while it is paged: %w", ErrIncomplete))
					return
				}
				continue
			}
			if unsettled && held != nil && p.HasIDs && p.LastID == lastID {
				reuse = true // the page set aside follows this one as it is
			} else {
				held = nil
			}
			unsettled = false
			if !paged && prevIDs && p.HasIDs && p.FirstID == prevFirst && p.LastID == prevLast && p.Rows > 0 {
				yield(nil, fmt.Errorf("fetch communications page %d: %w", page, &extract.ResponseError{
					Endpoint: r.commsEndpoint(), Page: page, Kind: extract.ErrUnexpectedShape,
					Reason: fmt.Sprintf("page %d repeats page %d: the server seems to ignore the page parameter", page, page-1)}))
				return
			}
			if !spooled && r.spool != nil {
				r.spool.put(r.pageKey(&start, page), p)
			}
			st := &pageStep{page: p, done: isLastPage(p), fresh: p.Rows - len(p.IDs)}
			for _, id := range p.IDs {
				if id > lastID {
					st.fresh++
				}
			}
			if p.HasIDs && p.LastID > lastID {
				lastID = p.LastID
			}
			st.lastID = lastID
			if st.fresh > 0 {
				steps = 0
			}
			depth := 0
			if steady {
				depth = min(r.inFlight(true)-1, maxPagesAhead) // as the answer times call for now
			}
			if depth > 0 && !st.done && paged && held == nil && !reuse {
				// The goroutines fetching ahead read values only: not the page
				// handed to the consumer, nor a variable this loop writes.
				aheadPer := p.PerPage
				for k := page + 1; k <= min(page+depth, p.LastPage); k++ {
					key := ""
					if r.spool != nil {
						key = r.pageKey(&start, k)
					}
					ahead.launch(k, aheadPer, r.spool, key, func(ctx context.Context) (*spooledPage, bool, error) {
						return r.commsPage(ctx, log, q, start, k, aheadPer, true)
					})
				}
			}
			if !yield(st, nil) || st.done {
				return
			}
			prevFirst, prevLast, prevIDs = p.FirstID, p.LastID, p.HasIDs
			offset = (p.Number-1)*p.PerPage + p.Rows
			per = p.PerPage
			page++
			furthest = max(furthest, page)
		}
	}
}

// pagesAhead is the communications pages fetched ahead of a range's page
// loop, each by a goroutine of its own that ends before stop returns. Each
// page is spooled as soon as its answer is in (a crash loses only the
// requests in flight), and taken out of the spool again when it is dropped
// (a page fetched under a layout given up must not come back from the
// spool). It is used by the page loop's goroutine only.
type pagesAhead struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	pages  map[int]*pageAhead
}

// pageAhead is one page fetched ahead, asked with per_page per.
type pageAhead struct {
	per  int
	done chan struct{} // closed when p, fromSpool and err are set

	p         *spooledPage
	fromSpool bool // read from the spool a killed run left
	err       error

	sp      *pageSpool
	key     string
	mu      sync.Mutex
	dropped bool // given up: not to be spooled, or to be taken out again
	put     bool // spooled by this fetch
}

func newPagesAhead(ctx context.Context) *pagesAhead {
	a := &pagesAhead{parent: ctx, pages: map[int]*pageAhead{}}
	a.ctx, a.cancel = context.WithCancel(ctx)
	return a
}

// launch fetches page n (asked with per) ahead, unless it is already, and
// spools it under key in sp (nil: no spool).
func (a *pagesAhead) launch(n, per int, sp *pageSpool, key string, fetch func(ctx context.Context) (*spooledPage, bool, error)) {
	if _, ok := a.pages[n]; ok {
		return
	}
	f := &pageAhead{per: per, done: make(chan struct{}), sp: sp, key: key}
	a.pages[n] = f
	ctx := a.ctx
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(f.done)
		defer func() {
			if v := recover(); v != nil {
				f.p, f.fromSpool, f.err = nil, false, panicError(v)
			}
		}()
		f.p, f.fromSpool, f.err = fetch(ctx)
		if f.err != nil || f.fromSpool || sp == nil {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.dropped {
			sp.put(key, f.p)
			f.put = true
		}
	}()
}

// take hands over page n if it was fetched ahead with per (nil otherwise;
// a page fetched with another per is dropped).
func (a *pagesAhead) take(n, per int) *pageAhead {
	f := a.pages[n]
	if f == nil {
		return nil
	}
	delete(a.pages, n)
	if f.per != per {
		f.drop()
		return nil
	}
	return f
}

// wait is the page's answer once it is in, and whether it is in the spool.
func (f *pageAhead) wait(ctx context.Context) (*spooledPage, bool, error) {
	select {
	case <-f.done:
		return f.p, f.fromSpool || f.put, f.err
	case <-ctx.Done():
		return nil, false, fmt.Errorf("fetch communications page ahead: %w", ctx.Err())
	}
}

// drop gives the page up: it is not spooled, or is taken out of the spool.
func (f *pageAhead) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped = true
	if f.put {
		f.sp.drop(f.key)
		f.put = false
	}
}

// drop gives up every page fetched ahead (the range's layout changed, so
// the loop asks for its pages itself again); those in flight are cancelled.
func (a *pagesAhead) drop() {
	if len(a.pages) == 0 {
		return
	}
	a.cancel()
	for _, f := range a.pages {
		f.drop()
	}
	a.pages = map[int]*pageAhead{}
	a.ctx, a.cancel = context.WithCancel(a.parent)
}

// stop gives up the pages not taken and waits for their goroutines: those
// that came in stay spooled (a run that stops keeps what it fetched for the
// next one, as the page in hand).
func (a *pagesAhead) stop() {
	a.cancel()
	a.wg.Wait()
}

// commsPage is page n of the range asked with per_page per: from the spool
// when a killed run left it there (and useSpool), else from the service,
// transformed.
func (r *run) commsPage(ctx context.Context, log *zap.Logger, q extract.CommsQuery, rc rangeCursor, n, per int, useSpool bool) (*spooledPage, bool, error) {
	if sp := r.spool; sp != nil && useSpool {
		p := &spooledPage{}
		if sp.get(r.pageKey(&rc, n), p) && p.Number == n && (per == 0 || p.PerPage == per) {
			log.Info("communications page from the spool", zap.Int("page", n))
			return p, true, nil
		}
	}
	q.PerPage = per
	page, err := r.client.CommunicationsPage(ctx, q, n)
	if err != nil {
		return nil, false, err
	}
	batch := r.commsBatch(page)
	p := &spooledPage{Number: page.Number, PerPage: page.PerPage, Total: page.Total, LastPage: page.LastPage,
		Paged: page.Paged, Rows: page.Rows(), Batch: batch}
	for _, id := range commsIDs(&batch) {
		p.addID(id)
	}
	return p, false, nil
}

// addID records a record id of the page.
func (p *spooledPage) addID(id int64) {
	if id <= 0 {
		return
	}
	p.IDs = append(p.IDs, id)
	if !p.HasIDs || id < p.FirstID {
		p.FirstID = id
	}
	if !p.HasIDs || id > p.LastID {
		p.LastID = id
	}
	p.HasIDs = true
}

// commsEndpoint is the name of the date-windowed endpoint the mail hooks
// page.
func (r *run) commsEndpoint() string {
	_, ep := r.e.mail()
	return ep.Name
}
