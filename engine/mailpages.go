package engine

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/spool"
)

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
	ids := make([]string, len(set.Mail.UserIDs))
	for i, id := range set.Mail.UserIDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return spool.Key(window, s.schema, strconv.FormatInt(set.Mail.DomainID, 10), strings.Join(ids, ","),
		set.Mail.BrandURL, set.Mail.WithMessage, from, to, strconv.Itoa(page))
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
		rp := newRangePager(ctx, r, log, q, start)
		defer rp.ahead.stop()
		for {
			st, moved, err := rp.next(ctx)
			switch {
			case err != nil:
				yield(nil, err)
				return
			case moved:
				continue
			case !yield(st, nil) || st.done:
				return
			}
			rp.advance(st.page)
		}
	}
}

// rangePager is the state of rangePages: where it asks next, what it has
// seen of the range, and the pages fetched ahead.
type rangePager struct {
	r     *run
	log   *zap.Logger
	q     extract.CommsQuery
	start rangeCursor

	page, per, offset int   // the page asked next, the page size it is asked with, the records before it
	lastID            int64 // the highest record id seen
	total             int   // the total of the layout paged
	haveTotal         bool
	unsettled         bool // a layout change not yet resolved by stepping back
	steps             int  // re-requests since the last page that brought new records
	again, furthest   int  // re-requests in all; the furthest page asked
	// held is the page a step back set aside. When the page before it,
	// asked again, ends exactly at the highest id seen, nothing moved at
	// the pager's position and held is used (reuse) instead of being
	// asked again: mail arriving at the end of a range changes its total
	// on every request without moving anything.
	held                *spooledPage
	reuse               bool
	prevFirst, prevLast int64 // the ids bounding the page before
	prevIDs             bool
	// Pages after the one in hand are fetched ahead, several at a time
	// when the pace calls for it (run.inFlight less the one the page
	// loop's consumer is loading): only within a settled layout, up to
	// the last page the server announced, so they cost no request a
	// sequential pager would not send. When the range changes while it
	// is paged (mail arriving in today's range changes its total on
	// every request), those fetched ahead are dropped — at most depth
	// requests wasted — and the rest of the range is paged one page at
	// a time.
	steady bool // fetch ahead (the layout never changed)
	ahead  *pagesAhead
}

func newRangePager(ctx context.Context, r *run, log *zap.Logger, q extract.CommsQuery, start rangeCursor) *rangePager {
	rp := &rangePager{r: r, log: log, q: q, start: start, page: max(start.NextPage, 1), per: start.PerPage,
		offset: start.Offset, lastID: start.LastID, total: start.Total, steady: !r.e.set.NoPrefetch, ahead: newPagesAhead(ctx)}
	if rp.offset == 0 && rp.page > 1 && rp.per > 0 {
		rp.offset = (rp.page - 1) * rp.per // a cursor written before offsets were kept
	}
	rp.haveTotal = rp.page > 1 && (start.Total > 0 || start.LastPage > 0)
	rp.again, rp.furthest = 0, rp.page
	return rp
}

// next asks the page in turn and decides what it is: a step to hand over,
// moved when the pager moved instead (the layout changed: it asks another
// page first), or an error that ends the range.
func (rp *rangePager) next(ctx context.Context) (st *pageStep, moved bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("page communications: %w", err)
	}
	p, spooled, err := rp.fetch(ctx)
	if err != nil {
		return nil, false, err
	}
	if p.Number != rp.page {
		return nil, false, rp.shapeError(fmt.Sprintf("asked for page %d, the server answered current_page %d", rp.page, p.Number))
	}
	if moved, err := rp.resized(p); moved || err != nil {
		return nil, true, err
	}
	paged := p.Paged || p.LastPage > 0
	rp.retotal(p, paged)
	if rp.unsettled && rp.page > 1 && rp.lastID > 0 && (p.Rows == 0 || (p.HasIDs && p.FirstID > rp.lastID)) {
		// Records may have moved to an earlier page: step back.
		if p.Rows > 0 {
			rp.held = p
		}
		return nil, true, rp.moveTo(rp.page - 1)
	}
	if rp.unsettled && rp.held != nil && p.HasIDs && p.LastID == rp.lastID {
		rp.reuse = true // the page set aside follows this one as it is
	} else {
		rp.held = nil
	}
	rp.unsettled = false
	if !paged && rp.prevIDs && p.HasIDs && p.FirstID == rp.prevFirst && p.LastID == rp.prevLast && p.Rows > 0 {
		return nil, false, rp.shapeError(fmt.Sprintf("page %d repeats page %d: the server seems to ignore the page parameter", rp.page, rp.page-1))
	}
	if !spooled && rp.r.spool != nil {
		rp.r.spool.put(rp.r.pageKey(&rp.start, rp.page), p)
	}
	st = rp.step(p)
	rp.fetchAhead(p, st, paged)
	return st, false, nil
}

// fetch is the page in turn: the page a step back set aside when it
// follows as it is, one fetched ahead, else asked now (from the spool a
// killed run left, unless the layout is unsettled).
func (rp *rangePager) fetch(ctx context.Context) (*spooledPage, bool, error) {
	if rp.reuse && rp.held != nil && rp.held.Number == rp.page && rp.held.PerPage == rp.per {
		p := rp.held
		rp.held, rp.reuse = nil, false
		rp.total = p.Total // its layout, checked by the page before it
		return p, false, nil
	}
	if rp.held != nil && rp.held.Number != rp.page+1 {
		rp.held = nil
	}
	rp.reuse = false
	if rp.unsettled {
		rp.steady = false
		rp.ahead.drop()
	}
	if f := rp.ahead.take(rp.page, rp.per); f != nil {
		return f.wait(ctx)
	}
	return rp.r.commsPage(ctx, rp.log, rp.q, rp.start, rp.page, rp.per, !rp.unsettled)
}

// resized follows a page size that changed since the position was
// computed under it: the page is recomputed from the records already
// committed, and moved says the pager now asks another page.
func (rp *rangePager) resized(p *spooledPage) (moved bool, err error) {
	if rp.page <= 1 || rp.offset <= 0 || rp.per <= 0 || p.PerPage <= 0 || p.PerPage == rp.per {
		return false, nil
	}
	np := rp.offset/p.PerPage + 1
	rp.log.Info("the server's per_page changed within a range; resuming from the records committed",
		zap.Int("per_page_was", rp.per), zap.Int("per_page", p.PerPage), zap.Int("offset", rp.offset), zap.Int("page", np))
	rp.per, rp.unsettled = p.PerPage, true
	rp.steady = false
	rp.ahead.drop()
	if np == rp.page {
		return false, nil
	}
	return true, rp.moveTo(np)
}

// retotal notes the total a paged answer carries: one that differs from
// the layout paged so far unsettles it.
func (rp *rangePager) retotal(p *spooledPage, paged bool) {
	if paged && rp.haveTotal && p.Total != rp.total {
		// A total of -1 is a layout not seen yet (skipHeld): its first
		// page is checked, but nothing changed.
		if rp.total >= 0 {
			rp.log.Info("communications range changed while it was paged; stepping back",
				zap.Int("total_was", rp.total), zap.Int("total", p.Total), zap.Int("page", rp.page))
		}
		rp.unsettled = true
		rp.steady = false
		rp.ahead.drop()
	}
	if paged {
		rp.total, rp.haveTotal = p.Total, true
	}
}

// moveTo makes the pager ask page n again; past the bounds of re-requests
// the range is given up as unstable.
func (rp *rangePager) moveTo(n int) error {
	rp.page = n
	rp.steps, rp.again = rp.steps+1, rp.again+1
	if rp.steps > rangeStepBacks(rp.page) || tooManyAgain(rp.again, rp.furthest) {
		return fmt.Errorf("page communications: the range keeps changing while it is paged: %w", ErrIncomplete)
	}
	return nil
}

// step is the step p makes: whether it is the range's last page, and the
// records beyond the highest id seen before it.
func (rp *rangePager) step(p *spooledPage) *pageStep {
	st := &pageStep{page: p, done: isLastPage(p), fresh: p.Rows - len(p.IDs)}
	for _, id := range p.IDs {
		if id > rp.lastID {
			st.fresh++
		}
	}
	if p.HasIDs && p.LastID > rp.lastID {
		rp.lastID = p.LastID
	}
	st.lastID = rp.lastID
	if st.fresh > 0 {
		rp.steps = 0
	}
	return st
}

// fetchAhead starts fetching the pages after p (as many as the run keeps
// in flight, less the one in hand) when the layout is steady, up to the
// last page announced.
func (rp *rangePager) fetchAhead(p *spooledPage, st *pageStep, paged bool) {
	depth := 0
	if rp.steady {
		depth = min(rp.r.inFlight(true)-1, maxPagesAhead) // as the answer times call for now
	}
	if depth <= 0 || st.done || !paged || rp.held != nil || rp.reuse {
		return
	}
	// The goroutines fetching ahead read values only: not the page handed
	// to the consumer, nor a field the page loop writes.
	r, log, q, start, per := rp.r, rp.log, rp.q, rp.start, p.PerPage
	for k := rp.page + 1; k <= min(rp.page+depth, p.LastPage); k++ {
		key := ""
		if r.spool != nil {
			key = r.pageKey(&start, k)
		}
		rp.ahead.launch(k, per, r.spool, key, func(ctx context.Context) (*spooledPage, bool, error) {
			return r.commsPage(ctx, log, q, start, k, per, true)
		})
	}
}

// advance moves past page p, handed over.
func (rp *rangePager) advance(p *spooledPage) {
	rp.prevFirst, rp.prevLast, rp.prevIDs = p.FirstID, p.LastID, p.HasIDs
	rp.offset = (p.Number-1)*p.PerPage + p.Rows
	rp.per = p.PerPage
	rp.page++
	rp.furthest = max(rp.furthest, rp.page)
}

// shapeError is the error of an answer whose page is not what was asked.
func (rp *rangePager) shapeError(reason string) error {
	return fmt.Errorf("fetch communications page %d: %w", rp.page, &extract.ResponseError{
		Endpoint: rp.r.commsEndpoint(), Page: rp.page, Kind: extract.ErrUnexpectedShape, Reason: reason})
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
	_, ep := r.e.mailDecl()
	return ep.Name
}

// maxPagesAhead caps the pages of a range fetched ahead of the one in
// hand: a page holds up to 1000 e-mails, and the load path, not the fetch,
// is the ceiling of a backfill, so more pages ahead only wait in memory.
const maxPagesAhead = 3
