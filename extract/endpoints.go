package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/stream"
)

// ListQuery is what a list is asked with. Zero fields are not sent.
type ListQuery struct {
	// ID is the entity a list asked per entity (stream.KindChild) is asked
	// for: it fills the path's "{id}".
	ID ID
	// Params are further query parameters (profitability's level).
	Params map[string]string
	// UpdatedSince is sent as updated_since, the UTC calendar date YYYY-MM-DD.
	UpdatedSince time.Time
}

// CommsQuery is the request body of the communications endpoint. Zero fields
// are left out of the body, except with_message, page and per_page.
type CommsQuery struct {
	DomainID    int64     // domain_id
	UserIDs     []int64   // user_id: the platform users whose e-mails are listed
	BrandURL    string    // -brand_url
	DateStart   time.Time // date_start, sent as the calendar date of its own location
	DateEnd     time.Time // date_end, likewise
	WithMessage string    // with_message; default "0" (no bodies)
	StartPage   int       // first page to fetch (to resume); default 1
	PerPage     int       // per_page; default Options.PerPage, at most 1000
}

// List lists the records of the list endpoint ep of the main interface (a
// list, or a list asked per entity: q.ID) page by page, as its declared
// paging says.
func (c *Client) List(ctx context.Context, ep string, q ListQuery) iter.Seq2[*Page, error] {
	e, ok := c.endpoint(ep, stream.KindList, stream.KindChild)
	switch {
	case !ok:
		return failed(fmt.Errorf("list %s: not a list endpoint of the main interface", ep))
	case strings.Contains(e.Path, "{id}") && q.ID == "":
		return failed(fmt.Errorf("list %s: empty id", ep))
	}
	v := url.Values{}
	for k, val := range q.Params {
		if val == "" {
			return failed(fmt.Errorf("list %s: empty %s", ep, k))
		}
		v.Set(k, val)
	}
	setSince(v, q.UpdatedSince)
	pages := listPages(c, ctx, ep, fillID(e.Path, q.ID), v)
	if q.ID != "" {
		return pages // a list asked per entity answers 404 when the entity is gone
	}
	return func(yield func(*Page, error) bool) {
		first := true
		for p, err := range pages {
			if first && errors.Is(err, ErrNotFound) {
				// A list itself not found: its address is wrong.
				err = fmt.Errorf("%w (asked %s): the list's address is wrong: check AGENCY_BASE_URL (without /v1) and AGENCY_PATHS=%s=/…",
					err, e.Path, ep)
			}
			first = false
			if !yield(p, err) || err != nil {
				return
			}
		}
	}
}

// Detail fetches one entity of the detail endpoint ep (as the service
// answers it, e.g. a brand's {"brand_info", "general_info", "metadata"}).
// The Record's Key is id.
func (c *Client) Detail(ctx context.Context, ep string, id ID) (Record, error) {
	e, ok := c.endpoint(ep, stream.KindDetail)
	if !ok {
		return Record{}, fmt.Errorf("fetch %s: not a detail endpoint", ep)
	}
	return c.detail(ctx, ep, e.Path, id)
}

// Communications lists the e-mails of q's users page by page, from
// q.StartPage on.
func (c *Client) Communications(ctx context.Context, q CommsQuery) iter.Seq2[*Page, error] {
	return func(yield func(*Page, error) bool) {
		pg := &pager{endpoint: c.window.Name, page: max(q.StartPage, 1), per: c.commsPerPage(q)}
		pg.each(c, yield, func(page, per int) (*Page, uint64, error) {
			return c.commsPage(ctx, q, page, per)
		})
	}
}

// CommunicationsPage fetches one page of the communications listing (page
// 1-based), e.g. to resume from a stored cursor.
func (c *Client) CommunicationsPage(ctx context.Context, q CommsQuery, page int) (*Page, error) {
	p, _, err := c.commsPage(ctx, q, max(page, 1), c.commsPerPage(q))
	return p, err
}

func (c *Client) commsPerPage(q CommsQuery) int {
	if q.PerPage > 0 && q.PerPage <= 1000 {
		return q.PerPage
	}
	return min(c.perPage, c.pagination(c.window.Name).Max)
}

// commsBody is the JSON body of the communications request.
type commsBody struct {
	DomainID    int64   `json:"domain_id,omitempty"`
	UserID      []int64 `json:"user_id,omitempty"`
	BrandURL    string  `json:"-brand_url,omitempty"`
	DateStart   string  `json:"date_start,omitempty"`
	DateEnd     string  `json:"date_end,omitempty"`
	WithMessage string  `json:"with_message"`
	Page        int     `json:"page"`
	PerPage     int     `json:"per_page"`
}

func (c *Client) commsPage(ctx context.Context, q CommsQuery, page, per int) (*Page, uint64, error) {
	what := fmt.Sprintf("fetch %s page %d", c.window.Name, page)
	switch {
	case c.window.Name == "":
		return nil, 0, fmt.Errorf("%s: no date-windowed list is declared", what)
	case c.comms == "":
		return nil, 0, fmt.Errorf("%s: %w: CommsURL is not set", what, ErrNotConfigured)
	}
	b := commsBody{
		DomainID: q.DomainID, UserID: q.UserIDs, BrandURL: q.BrandURL,
		WithMessage: q.WithMessage, Page: page, PerPage: per,
	}
	if b.WithMessage == "" {
		b.WithMessage = "0"
	}
	if !q.DateStart.IsZero() {
		b.DateStart = q.DateStart.Format(time.DateOnly)
	}
	if !q.DateEnd.IsZero() {
		b.DateEnd = q.DateEnd.Format(time.DateOnly)
	}
	body, err := json.Marshal(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: encode body: %w", what, err)
	}
	cl := &call{
		endpoint: c.window.Name, method: http.MethodPost,
		url: c.comms + c.window.Path, body: body, comms: true, page: page, what: what,
	}
	return c.fetchPage(ctx, cl, per)
}

// fetchPage sends cl, a request for page cl.page of a list asking per rows,
// and returns the page split (SplitPage), its rejects redacted and PerPage
// filled, with its body's signature.
func (c *Client) fetchPage(ctx context.Context, cl *call, per int) (*Page, uint64, error) {
	var out *Page
	var sig uint64
	err := c.execute(ctx, cl, func(body []byte) error {
		p, err := splitPage(cl.endpoint, cl.page, body)
		if err != nil {
			return err
		}
		redactRejects(c, p)
		finishPage(p, per)
		out, sig = p, maphash.Bytes(hashSeed, body)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, sig, nil
}

// finishPage fills PerPage when the server did not answer it.
func finishPage(p *Page, per int) {
	if p.PerPage == 0 {
		p.PerPage = per
		if p.Paged && p.LastPage == 0 && p.Total > 0 {
			p.LastPage = (p.Total + per - 1) / per
		}
	}
}

var hashSeed = maphash.MakeSeed()

// pager decides which page follows.
type pager struct {
	endpoint string
	page     int // page to fetch next
	per      int // per_page to ask next
	prevSig  uint64
	seen     bool
	capped   bool
}

// each fetches the listing's pages from pg.page on (fetch asks for one page
// with a per_page and returns it with its body's signature) and yields them
// until advance says the listing is complete, a fetch or advance fails (the
// error yielded last) or yield returns false.
func (pg *pager) each(c *Client, yield func(*Page, error) bool, fetch func(page, per int) (*Page, uint64, error)) {
	for {
		p, sig, err := fetch(pg.page, pg.per)
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(p, nil) {
			return
		}
		more, err := pg.advance(c, p.Number, p.PerPage, p.LastPage, p.Rows(), p.Paged, sig)
		if err != nil {
			yield(nil, err)
			return
		}
		if !more {
			return
		}
	}
}

// advance moves past the page just fetched (asked as pg.page with pg.per):
// more is false when the listing is complete. number, perAnswered, last,
// paged describe the answer; rows counts its rows; sig identifies its body.
func (pg *pager) advance(c *Client, number, perAnswered, last, rows int, paged bool, sig uint64) (more bool, err error) {
	asked := pg.page
	if number != asked {
		return false, fmt.Errorf("fetch %s page %d: %w", pg.endpoint, asked,
			&ResponseError{Endpoint: pg.endpoint, Page: asked, Kind: ErrUnexpectedShape,
				Reason: fmt.Sprintf("asked for page %d, the server answered current_page %d", asked, number)})
	}
	if rows == 0 {
		return false, nil
	}
	eff := pg.per
	if perAnswered > 0 && perAnswered < eff {
		eff = perAnswered
		if !pg.capped {
			pg.capped = true
			c.log.Info("server caps per_page; following it",
				zap.String("endpoint", pg.endpoint), zap.Int("asked", pg.per), zap.Int("answered", perAnswered))
		}
	}
	if paged {
		if number >= last {
			return false, nil
		}
	} else {
		if rows < eff {
			return false, nil
		}
		if pg.seen && sig == pg.prevSig {
			return false, fmt.Errorf("fetch %s page %d: %w", pg.endpoint, asked,
				&ResponseError{Endpoint: pg.endpoint, Page: asked, Kind: ErrUnexpectedShape,
					Reason: fmt.Sprintf("page %d repeats page %d: the server seems to ignore the page parameter", asked, asked-1)})
		}
	}
	pg.prevSig, pg.seen = sig, true
	pg.page++
	pg.per = eff
	return true, nil
}

// fetchList fetches page `page` of a list of the main interface with
// page/per_page (ListPage).
func fetchList(c *Client, ctx context.Context, ep, path string, q url.Values, page, per int) (*Page, uint64, error) {
	v := url.Values{}
	for k, vs := range q {
		v[k] = vs
	}
	v.Set("page", strconv.Itoa(page))
	v.Set("per_page", strconv.Itoa(per))
	cl := &call{
		endpoint: ep, method: http.MethodGet, url: c.base + path + "?" + v.Encode(),
		page: page, what: fmt.Sprintf("fetch %s page %d", ep, page),
	}
	return c.fetchPage(ctx, cl, per)
}

// detail fetches a single-object endpoint.
func (c *Client) detail(ctx context.Context, ep, path string, id ID) (Record, error) {
	what := fmt.Sprintf("fetch %s %s", ep, id)
	switch {
	case id == "":
		return Record{}, fmt.Errorf("fetch %s: empty id", ep)
	case c.base == "":
		return Record{}, fmt.Errorf("%s: %w: BaseURL is not set", what, ErrNotConfigured)
	}
	cl := &call{endpoint: ep, method: http.MethodGet, url: c.base + fillID(path, id), what: what}
	var out Record
	err := c.execute(ctx, cl, func(body []byte) error {
		raw, err := splitObject(ep, body)
		var re *RecordError
		if errors.As(err, &re) {
			re.Key = string(id) // not retried: the same bytes would come back
		}
		out = Record{Key: string(id), Raw: raw}
		return err
	})
	if err != nil {
		return Record{}, err
	}
	return out, nil
}

// fillID puts id into path's "{id}" (escaped; path as it is for "").
func fillID(path string, id ID) string {
	if id == "" {
		return path
	}
	return strings.ReplaceAll(path, "{id}", url.PathEscape(string(id)))
}

func setSince(v url.Values, t time.Time) {
	if !t.IsZero() {
		v.Set("updated_since", t.UTC().Format(time.DateOnly))
	}
}

// failed is an iterator that yields one error.
func failed(err error) iter.Seq2[*Page, error] {
	return func(yield func(*Page, error) bool) { yield(nil, err) }
}
