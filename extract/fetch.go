package extract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/agencysync/agencysync/stream"
)

// ListPage fetches page `page` (1-based) of a list endpoint of the main
// interface (a declared endpoint's name), perPage rows asked, with the extra query
// parameters q (for brand_contacts, q's "id" fills the path's {id} and is
// not sent as a parameter), and splits it generically (SplitPage): records
// as received, the envelope named, the paging fields answered. Pacing,
// budget, quota counting, retries and typed errors are those of every call.
func (c *Client) ListPage(ctx context.Context, endpoint string, q url.Values, page, perPage int) (*Page, error) {
	path, v, err := c.listPath(endpoint, q)
	if err != nil {
		return nil, err
	}
	p, _, err := fetchList(c, ctx, endpoint, path, v, max(page, 1), min(max(perPage, 1), 1000))
	return p, err
}

// Object fetches a detail endpoint for id and returns the object as
// received (SplitObject).
func (c *Client) Object(ctx context.Context, endpoint string, id ID) (json.RawMessage, error) {
	e, ok := c.endpoint(endpoint, stream.KindDetail)
	if !ok {
		return nil, fmt.Errorf("fetch %s: not a single-object endpoint", endpoint)
	}
	rec, err := c.detail(ctx, endpoint, e.Path, id)
	return rec.Raw, err
}

// listPath is the path of list endpoint ep with q's "id" in it, and q's
// other parameters.
func (c *Client) listPath(endpoint string, q url.Values) (string, url.Values, error) {
	e, ok := c.endpoint(endpoint, stream.KindList, stream.KindChild)
	if !ok {
		return "", nil, fmt.Errorf("fetch %s: not a list endpoint of the main interface", endpoint)
	}
	if c.base == "" {
		return "", nil, fmt.Errorf("fetch %s: %w: BaseURL is not set", endpoint, ErrNotConfigured)
	}
	v := url.Values{}
	for k, vs := range q {
		if k != "id" {
			v[k] = vs
		}
	}
	return fillID(e.Path, ID(q.Get("id"))), v, nil
}

// CommunicationsRecords fetches page `page` (1-based) of the communications
// listing for q, like ListPage (CommunicationsPage under the name check
// uses).
func (c *Client) CommunicationsRecords(ctx context.Context, q CommsQuery, page int) (*Page, error) {
	return c.CommunicationsPage(ctx, q, page)
}

// PageAsk is one page of a list asked under a pagination: at Page
// (StylePage, 1-based), at Offset (StyleOffset), or at the token or URL an
// earlier answer named (StyleCursor; "" for the first page), Size rows.
type PageAsk struct {
	Paging stream.Pagination
	Page   int
	Offset int
	Next   string
	Size   int
}

// AskPage fetches one page of a list endpoint of the main interface as ask
// says, whatever the endpoint's pagination in force (check probes the
// paging conventions with it); q as ListPage's. The page's Next is the next
// page the answer named (a Link header or the body). Pacing, budget, quota
// counting, retries and typed errors are those of every call.
func (c *Client) AskPage(ctx context.Context, endpoint string, q url.Values, ask PageAsk) (*Page, error) {
	path, v, err := c.listPath(endpoint, q)
	if err != nil {
		return nil, err
	}
	lp := &listPager{c: c, ctx: ctx, ep: endpoint, path: path, q: v, pg: ask.Paging,
		page: max(ask.Page, 1), seen: max(ask.Offset, 0), next: ask.Next, size: min(max(ask.Size, 1), stream.MaxPageSize)}
	p, _, err := lp.fetch()
	return p, err
}
