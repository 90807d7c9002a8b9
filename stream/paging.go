package stream

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// PageStyle is how a list endpoint pages.
type PageStyle string

// Paging styles.
const (
	// StylePage asks pages by number (1-based) and a page size:
	// ?page=2&per_page=1000. The canonical style of the service's spec.
	StylePage PageStyle = "page"
	// StyleOffset asks rows from an offset (0-based) and a limit:
	// ?offset=1000&limit=1000.
	StyleOffset PageStyle = "offset"
	// StyleCursor follows what each answer says comes next: a token
	// (sent back in the Cursor parameter), a next-page URL in the body
	// (a paginator's next_page_url), or an RFC 8288 Link header with
	// rel="next". The first page is asked without a cursor.
	StyleCursor PageStyle = "cursor"
	// StyleNone asks once: the one answer is the whole list.
	StyleNone PageStyle = "none"
)

// Styles lists the paging styles in the order check probes them.
func Styles() []PageStyle { return []PageStyle{StylePage, StyleOffset, StyleCursor, StyleNone} }

// MaxPageSize is the service's limit of rows per request, the largest page
// size asked for by default.
const MaxPageSize = 1000

// Pagination is how a list endpoint pages: its style, the names of the
// parameters it takes and the largest page size it accepts. The
// declarations carry each endpoint's defaults; AGENCY_PAGING (and the field
// map file's paging:) override them through ApplyPaging.
type Pagination struct {
	// Style is the paging style.
	Style PageStyle
	// Page is the page number's parameter (StylePage).
	Page string
	// Size is the page size's parameter; "" sends none.
	Size string
	// Offset is the offset's parameter (StyleOffset).
	Offset string
	// Cursor is the parameter a cursor token is sent back in
	// (StyleCursor); a next-page URL is followed as given.
	Cursor string
	// Max is the largest page size asked for (1..MaxPageSize).
	Max int
	// Fixed: only Max may be overridden (the communications endpoint,
	// whose page and per_page travel in its request body as the spec says).
	Fixed bool
}

// StyleDefaults is the pagination of style with its usual parameter
// names and the largest page size: page/per_page, offset/limit,
// cursor/per_page, and none asking per_page.
func StyleDefaults(style PageStyle) Pagination {
	p := Pagination{Style: style, Max: MaxPageSize}
	switch style {
	case StylePage:
		p.Page, p.Size = "page", "per_page"
	case StyleOffset:
		p.Offset, p.Size = "offset", "limit"
	case StyleCursor:
		p.Cursor, p.Size = "cursor", "per_page"
	case StyleNone:
		p.Size = "per_page"
	}
	return p
}

// listPaging is the declared pagination of a list of the main interface.
var listPaging = StyleDefaults(StylePage)

// windowPaging is the communications endpoint's: page and per_page in the
// request body, only its page size settable.
var windowPaging = func() Pagination {
	p := StyleDefaults(StylePage)
	p.Fixed = true
	return p
}()

// String renders p as AGENCY_PAGING writes it: the style, then the options
// that differ from the style's defaults ("offset:size=per_page:max=100").
func (p Pagination) String() string {
	def := StyleDefaults(p.Style)
	out := string(p.Style)
	for _, o := range []struct{ name, v, d string }{
		{"page", p.Page, def.Page}, {"size", p.Size, def.Size}, {"offset", p.Offset, def.Offset}, {"cursor", p.Cursor, def.Cursor},
	} {
		if o.v != o.d {
			out += ":" + o.name + "=" + o.v
		}
	}
	if p.Max != def.Max {
		out += fmt.Sprintf(":max=%d", p.Max)
	}
	return out
}

// ErrPaging is wrapped by the errors of PagingOverrides.Validate and
// ApplyPaging.
var ErrPaging = errors.New("paging override")

// PagingOverride is one endpoint's entry of AGENCY_PAGING: a style and the
// options it names. Empty names and a zero Max keep the style's defaults
// (and the declaration's Max when the style does not change).
type PagingOverride struct {
	Style                      PageStyle
	Page, Size, Offset, Cursor string
	Max                        int
}

// PagingOverrides maps an endpoint name (as AGENCY_PATHS spells it), or
// "*" for every list of the main interface, to its override. A named
// endpoint's entry wins over "*".
type PagingOverrides map[string]PagingOverride

// AllLists is the PagingOverrides key of every list of the main interface.
const AllLists = "*"

// Validate checks o against the declarations: known list endpoints (or
// "*"), known styles, options that the style takes, page sizes within
// 1..MaxPageSize, and only a page size for an endpoint whose paging is
// fixed.
func (o PagingOverrides) Validate() error {
	_, err := ApplyPaging(All(), o)
	return err
}

// ApplyPaging returns copies of streams whose endpoints page as o says.
// The streams themselves are not changed.
func ApplyPaging(streams []*Stream, o PagingOverrides) ([]*Stream, error) {
	names := map[string]bool{AllLists: true}
	out := make([]*Stream, len(streams))
	for i, s := range streams {
		out[i] = s.clone()
		for k := range out[i].Endpoints {
			ep := &out[i].Endpoints[k]
			if ep.Paging == PagingDetail {
				continue
			}
			names[ep.Name] = true
			ov, ok := o[ep.Name]
			if !ok && ep.Paging == PagingList {
				ov, ok = o[AllLists]
			}
			if !ok {
				continue
			}
			p, err := ep.Pagination.override(ov)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ep.Name, err)
			}
			ep.Pagination = p
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o)) {
		if !names[name] {
			var lists []string
			for n := range names {
				if n != AllLists {
					lists = append(lists, n)
				}
			}
			sort.Strings(lists)
			return nil, fmt.Errorf("%q is not a list endpoint (lists: %s, or * for all of the main interface): %w",
				name, strings.Join(lists, ","), ErrPaging)
		}
	}
	return out, nil
}

// override returns p changed by o.
func (p Pagination) override(o PagingOverride) (Pagination, error) {
	if !slices.Contains(Styles(), o.Style) {
		return p, fmt.Errorf("style %q is not one of page, offset, cursor, none: %w", o.Style, ErrPaging)
	}
	if o.Max < 0 || o.Max > MaxPageSize {
		return p, fmt.Errorf("max=%d is outside 1..%d: %w", o.Max, MaxPageSize, ErrPaging)
	}
	if p.Fixed {
		if o.Style != p.Style || o.Page != "" || o.Size != "" || o.Offset != "" || o.Cursor != "" {
			return p, fmt.Errorf("its paging is fixed by the spec (%s); only max= may be set: %w", p.Style, ErrPaging)
		}
		if o.Max > 0 {
			p.Max = o.Max
		}
		return p, nil
	}
	n := StyleDefaults(o.Style)
	if o.Style == p.Style {
		n.Max = p.Max
	}
	for _, opt := range []struct {
		name string
		v    string
		dst  *string
		ok   bool
	}{
		{"page", o.Page, &n.Page, o.Style == StylePage},
		{"size", o.Size, &n.Size, true},
		{"offset", o.Offset, &n.Offset, o.Style == StyleOffset},
		{"cursor", o.Cursor, &n.Cursor, o.Style == StyleCursor},
	} {
		if opt.v == "" {
			continue
		}
		if !opt.ok {
			return p, fmt.Errorf("%s= does not apply to style %s: %w", opt.name, o.Style, ErrPaging)
		}
		*opt.dst = opt.v
	}
	if o.Max > 0 {
		n.Max = o.Max
	}
	return n, nil
}

// Lists returns the names of the endpoints that page: every list of the
// main interface, then those whose paging is fixed (communications), in
// declaration order.
func Lists() (lists, fixed []string) {
	for _, s := range all {
		for _, ep := range s.Endpoints {
			switch {
			case ep.Paging == PagingDetail:
			case ep.Pagination.Fixed:
				fixed = append(fixed, ep.Name)
			default:
				lists = append(lists, ep.Name)
			}
		}
	}
	return lists, fixed
}

// LookupEndpoint returns the endpoint named name of streams.
func LookupEndpoint(streams []*Stream, name string) (Endpoint, bool) {
	for _, s := range streams {
		if ep, ok := s.Endpoint(name); ok {
			return ep, true
		}
	}
	return Endpoint{}, false
}
