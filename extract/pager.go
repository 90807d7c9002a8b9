package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/stream"
)

// ListEnd is the verdict on a listing, carried by the last page a list
// iterator yields (Page.End). A listing is proven complete when its
// paging fields say so and the rows seen agree with the announced total;
// or when its last page is short and the server honours the page size it
// was asked with (a page of exactly that size was seen, in this listing or
// recorded by an earlier one: PagingMemo); or when one request past the
// end, asked with the page size the server answered, came back empty; or,
// in the cursor style, when its last page names no next page and the
// server was seen naming one when more rows follow.
type ListEnd struct {
	// Proven: the listing is proven complete; Proof says how.
	Proven bool
	Proof  string
	// Reason says why the listing is not proven (empty when Proven).
	Reason string
	// Suggest is the paging to try for the endpoint, as AGENCY_PAGING
	// writes it (e.g. "offset"), when the answers hint at one.
	Suggest string
	// Cap is the page size the server answers at most while asked more
	// and not saying so (a silent cap): the endpoint's max= should be set
	// to it. 0: none seen.
	Cap int
	// Rows is the number of rows the listing saw.
	Rows int
}

// Proofs of a complete listing (ListEnd.Proof).
const (
	ProofFields      = "the paging fields agree with the rows seen"
	ProofShortPage   = "a short last page of a page size the server honours"
	ProofPastEnd     = "an empty page past the end"
	ProofEmpty       = "an empty list"
	ProofCursorEnd   = "the last page names no next page"
	ProofStyleNone   = "paging style none: one answer is the whole list"
	proofCursorProbe = "the server names a next page when more rows follow, and the last page names none"
)

// listPager pages one listing of the main interface under its pagination
// and decides when it is complete and whether that is proven.
type listPager struct {
	c     *Client
	ctx   context.Context
	ep    string
	path  string
	q     url.Values
	pg    stream.Pagination
	key   string
	facts PagingFacts // what earlier listings of the endpoint showed

	// The next request.
	n       int    // requests sent
	page    int    // StylePage: the page number
	next    string // StyleCursor: the token or URL ("": the first page)
	size    int    // the page size
	want    int    // the page size wanted: min(client's, Max)
	probing bool   // the request is the proof past the end

	// What the listing saw.
	seen      int
	total     int
	hasTotal  bool
	prevFirst []byte // the previous page's first record
	prevSig   uint64
	prevShort int  // rows of the previous page when it was short (0: full)
	prevAsked int  // the page size the previous page was asked with
	honoured  int  // the largest page size answered in full
	capped    int  // a silent cap found
	followed  bool // a next page named by an answer was followed
	perPage   bool // an answer carried per_page (the size parameter is per_page)
	named     bool // an answer named a next page
	noted     bool // the honest cap was logged
	mismatch  bool // the listing ended on a sign that the server pages another way
}

// listPages iterates the pages of a list of the main interface, paged as
// the endpoint's pagination in force says; the last page carries the
// verdict (Page.End).
func listPages(c *Client, ctx context.Context, ep, path string, q url.Values) iter.Seq2[*Page, error] {
	return func(yield func(*Page, error) bool) {
		if c.base == "" {
			yield(nil, fmt.Errorf("list %s: %w: BaseURL is not set", ep, ErrNotConfigured))
			return
		}
		pg := c.pagination(ep)
		lp := &listPager{c: c, ctx: ctx, ep: ep, path: path, q: q, pg: pg, key: PagingKey(ep, pg), page: 1}
		lp.facts = c.memo.Facts(lp.key)
		lp.want = min(c.perPage, pg.Max)
		lp.size = lp.want
		for {
			p, sig, err := lp.fetch()
			if err != nil && lp.n > 1 && errors.Is(err, ErrNotFound) {
				// A position past the end that the server calls not found
				// (the spec's 404 "Data not found"): an empty page.
				p, sig, err = lp.emptyPage(), 0, nil
			}
			if err != nil {
				yield(nil, err)
				return
			}
			more := lp.after(p, sig)
			if !more {
				lp.learn()
			}
			if !yield(p, nil) || !more {
				return
			}
		}
	}
}

// pagination is the pagination in force of endpoint ep.
func (c *Client) pagination(ep string) stream.Pagination {
	if e, ok := c.endpoints[ep]; ok && e.Kind() != stream.KindDetail {
		return e.Pagination
	}
	return stream.StyleDefaults(stream.StylePage)
}

// fetch sends the next request.
func (lp *listPager) fetch() (*Page, uint64, error) {
	lp.n++
	target, what, err := lp.target()
	if err != nil {
		return nil, 0, err
	}
	var link string
	n := lp.n
	if lp.pg.Style == stream.StylePage {
		n = lp.page
	}
	cl := &call{endpoint: lp.ep, method: http.MethodGet, url: target, page: n, what: what, link: &link}
	p, sig, err := lp.c.fetchPage(lp.ctx, cl, lp.size)
	if err != nil {
		return nil, 0, err
	}
	if link != "" {
		p.Next = link
	}
	if lp.pg.Style != stream.StylePage {
		p.Number = lp.n
	}
	return p, sig, nil
}

// emptyPage stands for an answer without rows to the request just sent.
func (lp *listPager) emptyPage() *Page {
	p := &Page{Number: lp.n, PerPage: lp.size}
	if lp.pg.Style == stream.StylePage {
		p.Number = lp.page
	}
	return p
}

// target is the next request's URL and how errors name it.
func (lp *listPager) target() (string, string, error) {
	v := url.Values{}
	for k, vs := range lp.q {
		v[k] = vs
	}
	setSize := func() {
		if lp.pg.Size != "" {
			v.Set(lp.pg.Size, strconv.Itoa(lp.size))
		}
	}
	what := fmt.Sprintf("fetch %s page %d", lp.ep, lp.n)
	switch lp.pg.Style {
	case stream.StylePage:
		v.Set(lp.pg.Page, strconv.Itoa(lp.page))
		setSize()
		what = fmt.Sprintf("fetch %s page %d", lp.ep, lp.page)
	case stream.StyleOffset:
		v.Set(lp.pg.Offset, strconv.Itoa(lp.seen))
		setSize()
		what = fmt.Sprintf("fetch %s offset %d", lp.ep, lp.seen)
	case stream.StyleCursor:
		if next := lp.next; next != "" {
			if u, ok := lp.nextURL(next); ok {
				if err := lp.c.sameOrigin(u); err != nil {
					return "", "", fmt.Errorf("%s: %w", what, err)
				}
				return u.String(), what, nil
			}
			v.Set(lp.pg.Cursor, next)
		}
		setSize()
	default:
		setSize()
	}
	return lp.c.base + lp.path + "?" + v.Encode(), what, nil
}

// nextURL reads next as a URL (absolute, or relative to the list's
// address); false for a token.
func (lp *listPager) nextURL(next string) (*url.URL, bool) {
	if !strings.HasPrefix(next, "http://") && !strings.HasPrefix(next, "https://") &&
		!strings.HasPrefix(next, "/") && !strings.HasPrefix(next, "?") {
		return nil, false
	}
	base, err := url.Parse(lp.c.base + lp.path)
	if err != nil {
		return nil, false
	}
	u, err := base.Parse(next)
	if err != nil {
		return nil, false
	}
	return u, true
}

// sameOrigin refuses a next-page URL on another scheme or host than the
// main interface's: the key must not follow it there.
func (c *Client) sameOrigin(u *url.URL) error {
	base, err := url.Parse(c.base)
	if err != nil || u.Scheme != base.Scheme || !strings.EqualFold(u.Host, base.Host) {
		return &ResponseError{Kind: ErrUnexpectedShape,
			Reason: fmt.Sprintf("the next page's address is on %s://%s, not the service's own %s (the key is not sent there)", u.Scheme, u.Host, c.base)}
	}
	return nil
}

// after takes in page p (its body's signature sig) and says whether the
// listing goes on; when it does not, p.End holds the verdict.
func (lp *listPager) after(p *Page, sig uint64) bool {
	asked, probing := lp.size, lp.probing
	lp.probing = false
	r := p.Rows()
	if p.Next != "" {
		lp.named = true
	}
	if lp.pg.Style == stream.StyleCursor && probing {
		return lp.cursorProbe(p, asked)
	}
	if r > 0 && lp.n > 1 && (sig == lp.prevSig || bytes.Equal(p.FirstRaw(), lp.prevFirst)) {
		return lp.styleEnd(p, fmt.Sprintf("the answer repeats the page before it: the server ignores %s", lp.position()), true)
	}
	if lp.pg.Style == stream.StylePage && p.Number != lp.page {
		return lp.styleEnd(p, fmt.Sprintf("asked for page %d, the server answered current_page %d: it ignores %s",
			lp.page, p.Number, lp.position()), true)
	}
	if r > 0 {
		lp.prevFirst, lp.prevSig = bytes.Clone(p.FirstRaw()), sig
	}
	if probing && r > 0 && lp.prevShort > 0 && lp.prevShort < lp.prevAsked && lp.honoured < lp.prevAsked {
		// The short page before this one was not the last: the server
		// answered fewer rows than asked without saying so.
		lp.capped = lp.prevShort
		lp.want = lp.prevShort
		lp.c.log.Warn("the server answers fewer rows than the page size asked for, without saying so; following it",
			zap.String("endpoint", lp.ep), zap.Int("asked", lp.prevAsked), zap.Int("answered", lp.prevShort))
	}
	lp.seen += r
	if p.answered("total") {
		lp.total, lp.hasTotal = max(lp.total, p.Total), true
	}
	eff := lp.answeredSize(p, asked)
	if r > 0 && r == eff {
		lp.honoured = max(lp.honoured, eff)
	}
	lp.prevAsked, lp.prevShort = asked, 0
	if r < eff {
		lp.prevShort = r
	}
	switch lp.pg.Style {
	case stream.StylePage:
		return lp.afterPage(p, r, eff, probing)
	case stream.StyleOffset:
		return lp.afterOffset(p, r, eff, probing)
	case stream.StyleCursor:
		return lp.afterCursor(p, r, eff)
	}
	return lp.afterNone(p, r, asked)
}

// answeredSize is the page size the answer stands for: the per_page it
// answered when below the one asked (a server that says it caps it),
// else the one asked.
func (lp *listPager) answeredSize(p *Page, asked int) int {
	if !p.answered("per_page") || p.PerPage <= 0 {
		return asked
	}
	lp.perPage = true
	if p.PerPage >= asked {
		return asked
	}
	if !lp.noted {
		lp.noted = true
		lp.c.log.Info("server caps per_page; following it",
			zap.String("endpoint", lp.ep), zap.Int("asked", asked), zap.Int("answered", p.PerPage))
	}
	lp.want = min(lp.want, p.PerPage)
	return p.PerPage
}

// afterPage decides the page style's next request.
func (lp *listPager) afterPage(p *Page, r, eff int, probing bool) bool {
	switch {
	case r == 0:
		return lp.endEmpty(p, probing)
	case r > eff:
		return lp.styleEnd(p, fmt.Sprintf("the server answered %d rows for a page of %d: it ignores %s", r, eff, lp.pg.Size), false)
	case p.Paged && p.Number < p.LastPage:
		return lp.advancePage() // more pages announced: a total reached early proves nothing
	case lp.hasTotal && lp.seen >= lp.total:
		return lp.end(p, true, ProofFields, false)
	case r == eff && !lp.hasTotal:
		return lp.advancePage()
	case r < eff && !lp.hasTotal && lp.honours(eff):
		return lp.end(p, true, ProofShortPage, false)
	}
	// A short last page the server's page size does not explain, or
	// paging fields announcing more rows than seen: ask the next position.
	lp.probing = r < eff || lp.hasTotal
	return lp.advancePage()
}

// advancePage asks the position after the rows seen: page seen/size + 1
// with the largest page size up to the one wanted that divides seen.
func (lp *listPager) advancePage() bool {
	z := max(lp.want, 1)
	for lp.seen%z != 0 {
		z--
	}
	lp.size, lp.page = z, lp.seen/z+1
	return true
}

// afterOffset decides the offset style's next request.
func (lp *listPager) afterOffset(p *Page, r, eff int, probing bool) bool {
	switch {
	case r == 0:
		return lp.endEmpty(p, probing)
	case r > eff:
		return lp.styleEnd(p, fmt.Sprintf("the server answered %d rows for a limit of %d: it ignores %s", r, eff, lp.pg.Size), false)
	case lp.hasTotal && lp.seen >= lp.total:
		return lp.end(p, true, ProofFields, false)
	case r == eff:
		lp.size = lp.want
		return true
	case !lp.hasTotal && lp.honours(eff):
		return lp.end(p, true, ProofShortPage, false)
	}
	// A short page the server's page size does not explain, or a total
	// announcing more rows: ask from the rows seen, with the size answered.
	lp.probing, lp.size = true, r
	return true
}

// afterCursor decides the cursor style's next request.
func (lp *listPager) afterCursor(p *Page, r, eff int) bool {
	switch {
	case r == 0:
		// The end, whether or not the empty page names a next one (some
		// servers always do).
		return lp.endEmpty(p, false)
	case r > eff:
		return lp.styleEnd(p, fmt.Sprintf("the server answered %d rows for a page of %d: it ignores %s", r, eff, lp.pg.Size), false)
	case p.Next != "":
		lp.next, lp.followed, lp.size = p.Next, true, lp.want
		return true
	case lp.hasTotal && lp.seen >= lp.total:
		return lp.end(p, true, ProofFields, false)
	case lp.hasTotal:
		return lp.end(p, false, fmt.Sprintf("the service announced %d rows and listed %d, and names no next page", lp.total, lp.seen), false)
	case lp.followed || lp.facts.Cursor:
		return lp.end(p, true, ProofCursorEnd, false)
	case r < eff && lp.honours(eff):
		return lp.end(p, true, ProofShortPage, false)
	case r >= 2 && lp.n == 1:
		// One page without a next: ask it again one row short. A server
		// that pages by cursor then names a next page.
		lp.probing, lp.size, lp.next = true, r-1, ""
		return true
	}
	return lp.styleEnd(p, "the answer names no next page, and nothing shows that the server names one when more rows follow", false)
}

// cursorProbe reads the answer to the first page asked again one row
// short: its rows were seen already.
func (lp *listPager) cursorProbe(p *Page, asked int) bool {
	ok := p.Rows() == asked && p.Next != ""
	p.Records, p.Rejects = nil, nil
	if ok {
		lp.facts.Cursor = true
		return lp.end(p, true, proofCursorProbe, false)
	}
	return lp.styleEnd(p, "asked one row fewer, the server named no next page either: it does not page by cursor", false)
}

// afterNone decides the none style: its one answer is the whole list
// unless its total says otherwise or it fills the page asked for.
func (lp *listPager) afterNone(p *Page, r, asked int) bool {
	switch {
	case lp.hasTotal && lp.seen < lp.total:
		return lp.end(p, false, fmt.Sprintf("the service announced %d rows and answered %d", lp.total, lp.seen), false)
	case lp.hasTotal:
		return lp.end(p, true, ProofFields, false)
	case lp.pg.Size != "" && r >= asked:
		return lp.styleEnd(p, fmt.Sprintf("the one answer fills the page of %d rows asked for: more may exist", asked), false)
	}
	return lp.end(p, true, ProofStyleNone, false)
}

// endEmpty ends the listing on an empty answer asked at the position after
// the rows seen.
func (lp *listPager) endEmpty(p *Page, probing bool) bool {
	switch {
	case lp.hasTotal && lp.seen < lp.total:
		return lp.end(p, false, fmt.Sprintf("the service announced %d rows and listed %d", lp.total, lp.seen), false)
	case lp.seen == 0:
		return lp.end(p, true, ProofEmpty, false)
	case lp.hasTotal:
		return lp.end(p, true, ProofFields, false)
	}
	_ = probing
	return lp.end(p, true, ProofPastEnd, false)
}

// honours reports whether the server was seen answering a page of size
// eff or more in full, in this listing or an earlier one.
func (lp *listPager) honours(eff int) bool {
	return lp.honoured >= eff || lp.facts.Honoured >= eff
}

// styleEnd ends the listing on p, not proven, on a sign that the server
// pages another way than the one in force: the verdict suggests the paging
// the answers hinted at.
func (lp *listPager) styleEnd(p *Page, why string, strip bool) bool {
	lp.mismatch = true
	return lp.end(p, false, why, strip)
}

// end ends the listing on p with a verdict; strip drops p's rows (a page
// that repeats rows seen already).
func (lp *listPager) end(p *Page, proven bool, how string, strip bool) bool {
	if strip {
		p.Records, p.Rejects = nil, nil
	}
	e := &ListEnd{Proven: proven, Rows: lp.seen}
	if lp.capped > 0 && lp.capped < lp.pg.Max {
		e.Cap = lp.capped
	}
	if proven {
		e.Proof = how
	} else {
		e.Reason = how
	}
	if (!proven && lp.mismatch) || e.Cap > 0 {
		e.Suggest = lp.suggest(e.Cap)
	}
	p.End = e
	return false
}

// position names the parameter that moves through the list.
func (lp *listPager) position() string {
	switch lp.pg.Style {
	case stream.StylePage:
		return "the " + lp.pg.Page + " parameter"
	case stream.StyleOffset:
		return "the " + lp.pg.Offset + " parameter"
	case stream.StyleCursor:
		return "the next page it names"
	}
	return "paging"
}

// suggest is the paging to try, from what the answers showed: the cursor
// style when they named a next page, else offset (by per_page when the
// server answers per_page); the style in force with max= for a silent cap.
func (lp *listPager) suggest(capped int) string {
	if capped > 0 {
		p := lp.pg
		p.Max = capped
		return p.String()
	}
	if lp.named && lp.pg.Style != stream.StyleCursor {
		return stream.StyleDefaults(stream.StyleCursor).String()
	}
	if lp.pg.Style == stream.StyleOffset {
		return ""
	}
	o := stream.StyleDefaults(stream.StyleOffset)
	if lp.perPage {
		o.Size = "per_page"
	}
	return o.String()
}

// learn records what the listing showed in the client's memo.
func (lp *listPager) learn() {
	f := PagingFacts{Honoured: lp.honoured, Cursor: lp.facts.Cursor || (lp.followed && lp.pg.Style == stream.StyleCursor)}
	if f != (PagingFacts{}) {
		lp.c.memo.Learn(lp.key, f)
	}
}
