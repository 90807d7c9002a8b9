package extract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// listPath is the configured path of a list endpoint of the main interface.
func (c *Client) listPath(endpoint string) (string, bool) {
	switch endpoint {
	case EndpointBrands:
		return c.paths.Brands, true
	case EndpointBrandContacts:
		return c.paths.BrandContacts, true
	case EndpointProjects:
		return c.paths.Projects, true
	case EndpointBudgets:
		return c.paths.Budgets, true
	case EndpointInvoices:
		return c.paths.Invoices, true
	case EndpointCollections:
		return c.paths.Collections, true
	case EndpointPayments:
		return c.paths.Payments, true
	case EndpointProfitability:
		return c.paths.Profitability, true
	case EndpointAgencySummary:
		return c.paths.AgencySummary, true
	}
	return "", false
}

// objectPath is the configured path of a single-object endpoint.
func (c *Client) objectPath(endpoint string) (string, bool) {
	switch endpoint {
	case EndpointBrand:
		return c.paths.Brand, true
	case EndpointProject:
		return c.paths.Project, true
	}
	return "", false
}

// ListPage fetches page `page` (1-based) of a list endpoint of the main
// interface (an Endpoint* name), perPage rows asked, with the extra query
// parameters q (for brand_contacts, q's "id" fills the path's {id} and is
// not sent as a parameter), and splits it generically (SplitPage): records
// as received, the envelope named, the paging fields answered. Pacing,
// budget, quota counting, retries and typed errors are those of every call.
func (c *Client) ListPage(ctx context.Context, endpoint string, q url.Values, page, perPage int) (*Page[Record], error) {
	path, ok := c.listPath(endpoint)
	if !ok {
		return nil, fmt.Errorf("fetch %s: not a list endpoint of the main interface", endpoint)
	}
	if c.base == "" {
		return nil, fmt.Errorf("fetch %s: %w: BaseURL is not set", endpoint, ErrNotConfigured)
	}
	page, perPage = max(page, 1), min(max(perPage, 1), 1000)
	v := url.Values{}
	for k, vs := range q {
		if k != "id" {
			v[k] = vs
		}
	}
	if id := q.Get("id"); id != "" {
		path = fillID(path, ID(id))
	}
	v.Set("page", strconv.Itoa(page))
	v.Set("per_page", strconv.Itoa(perPage))
	cl := &call{
		endpoint: endpoint, method: http.MethodGet, url: c.base + path + "?" + v.Encode(),
		page: page, what: fmt.Sprintf("fetch %s page %d", endpoint, page),
	}
	var out *Page[Record]
	err := c.execute(ctx, cl, func(body []byte) error {
		p, err := splitPage(endpoint, page, body)
		if err != nil {
			return err
		}
		redactRejects(c, p)
		finishPage(p, perPage)
		out = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Object fetches a single-object endpoint (EndpointBrand, EndpointProject)
// for id and returns the object as received (SplitObject).
func (c *Client) Object(ctx context.Context, endpoint string, id ID) (json.RawMessage, error) {
	path, ok := c.objectPath(endpoint)
	if !ok {
		return nil, fmt.Errorf("fetch %s: not a single-object endpoint", endpoint)
	}
	var out json.RawMessage
	err := c.detail(ctx, endpoint, path, id, func(body []byte) error {
		raw, err := splitObject(endpoint, body)
		out = raw
		return err
	})
	return out, err
}

// CommunicationsRecords fetches page `page` (1-based) of the communications
// listing for q and splits it generically (SplitPage), like ListPage.
func (c *Client) CommunicationsRecords(ctx context.Context, q CommsQuery, page int) (*Page[Record], error) {
	page = max(page, 1)
	per := c.commsPerPage(q)
	what := fmt.Sprintf("fetch %s page %d", EndpointCommunications, page)
	if c.comms == "" {
		return nil, fmt.Errorf("%s: %w: CommsURL is not set", what, ErrNotConfigured)
	}
	b := commsBody{DomainID: q.DomainID, UserID: q.UserIDs, BrandURL: q.BrandURL, WithMessage: q.WithMessage, Page: page, PerPage: per}
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
		return nil, fmt.Errorf("%s: encode body: %w", what, err)
	}
	cl := &call{endpoint: EndpointCommunications, method: http.MethodPost,
		url: c.comms + c.paths.Communications, body: body, comms: true, page: page, what: what}
	var out *Page[Record]
	err = c.execute(ctx, cl, func(body []byte) error {
		p, err := splitPage(EndpointCommunications, page, body)
		if err != nil {
			return err
		}
		redactRejects(c, p)
		finishPage(p, per)
		out = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
