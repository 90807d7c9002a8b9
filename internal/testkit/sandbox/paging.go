package sandbox

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The paging variants: the main lists page another way than the spec's
// page/per_page. Each is a list shape (it decides the envelope too), so it
// combines with the variants that change records, not with another shape.
// The data and the truth are the same as without them; only which rows an
// answer holds, and how it says what comes next, change.
const (
	// VariantOffsetPaging is the public documentation template's paging:
	// bare arrays asked with limit and offset, limit 10 when not given and
	// at most 100 (a larger limit answers 100 rows, silently); page and
	// per_page are ignored.
	VariantOffsetPaging = "offset-paging"
	// VariantCursorPaging pages by an opaque token: {"data":[...],
	// "next":"<token>"}, next null on the last page, the token sent back as
	// cursor=; per_page honoured up to 100 (default 10); page ignored.
	VariantCursorPaging = "cursor-paging"
	// VariantLinkPaging pages by RFC 8288 Link headers: bare arrays, and a
	// Link: <…?after=N&per_page=M>; rel="next" header while rows follow;
	// per_page honoured up to 100 (default 30); page ignored.
	VariantLinkPaging = "link-paging"
	// VariantSilentCap answers at most 25 rows a page while echoing the
	// per_page asked for (and a last_page computed from it): the canonical
	// envelope, page honoured.
	VariantSilentCap = "silent-cap"
	// VariantIgnorePage ignores page and answers from the offset parameter
	// (0 when absent): the canonical envelope with current_page always 1,
	// per_page honoured up to 20 and answered as such.
	VariantIgnorePage = "ignore-page"
)

// Sizes of the paging variants.
const (
	offsetDefault, offsetMax = 10, 100
	cursorDefault, cursorMax = 10, 100
	linkDefault, linkMax     = 30, 100
	silentCapRows            = 25
	ignorePageMax            = 20
)

// pagingVariants describes the paging variants, for Variants.
func pagingVariants() []VariantInfo {
	return []VariantInfo{
		{VariantOffsetPaging, fmt.Sprintf("main lists are bare arrays paged by limit and offset (limit %d when not given, at most %d); page and per_page are ignored", offsetDefault, offsetMax)},
		{VariantCursorPaging, fmt.Sprintf(`main lists are {"data":[...],"next":"<token>"|null}, the token sent back as cursor=; per_page up to %d (default %d); page is ignored`, cursorMax, cursorDefault)},
		{VariantLinkPaging, fmt.Sprintf(`main lists are bare arrays with a Link: <…>; rel="next" header while rows follow; per_page up to %d (default %d); page is ignored`, linkMax, linkDefault)},
		{VariantSilentCap, fmt.Sprintf("main lists answer at most %d rows a page while echoing the per_page asked for", silentCapRows)},
		{VariantIgnorePage, fmt.Sprintf("main lists ignore page and answer from offset (current_page always 1); per_page up to %d, answered as such", ignorePageMax)},
	}
}

// PagingSetting is the AGENCY_PAGING under which the worker lists every
// row of a paging variant ("" for the other variants, which page by
// page/per_page).
func PagingSetting(variant string) string {
	switch variant {
	case VariantOffsetPaging:
		return fmt.Sprintf("*=offset:max=%d", offsetMax)
	case VariantCursorPaging:
		return fmt.Sprintf("*=cursor:max=%d", cursorMax)
	case VariantLinkPaging:
		return fmt.Sprintf("*=cursor:max=%d", linkMax)
	case VariantSilentCap:
		return fmt.Sprintf("*=page:max=%d", silentCapRows)
	case VariantIgnorePage:
		return "*=offset:size=per_page"
	}
	return ""
}

// isPagingVariant reports whether name is a paging variant.
func isPagingVariant(name string) bool {
	switch name {
	case VariantOffsetPaging, VariantCursorPaging, VariantLinkPaging, VariantSilentCap, VariantIgnorePage:
		return true
	}
	return false
}

// pagedWindow is one answer of a paging variant: the rows [from, to) of the
// list, and what the answer says of paging.
type pagedWindow struct {
	from, to int
	// perPage and last are the paging fields silent-cap and ignore-page
	// answer (current_page is the page's own).
	perPage, last int
	// next is cursor-paging's token of the next page, link the next
	// page's URL of link-paging ("" on the last page).
	next, link string
}

// pagedWindowOf reads a list request of a paging variant (shape) over a
// list of total rows: the window it answers, or why the request is bad.
// path is the list's address without a query.
func pagedWindowOf(shape string, q url.Values, path string, total int) (*pagedWindow, string) {
	size := func(name string, def, most int) (int, string) {
		v := q.Get(name)
		if v == "" {
			return def, ""
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, name + " must be an integer of at least 1"
		}
		return min(n, most), ""
	}
	position := func(name string) (int, string) {
		v := q.Get(name)
		if v == "" {
			return 0, ""
		}
		n, err := strconv.Atoi(strings.TrimPrefix(v, "cur_"))
		if err != nil || n < 0 || (name == "cursor" && !strings.HasPrefix(v, "cur_")) {
			return 0, name + " is not valid"
		}
		return n, ""
	}
	var w pagedWindow
	var n, from int
	var bad, bad2 string
	switch shape {
	case VariantOffsetPaging:
		n, bad = size("limit", offsetDefault, offsetMax)
		from, bad2 = position("offset")
	case VariantCursorPaging:
		n, bad = size("per_page", cursorDefault, cursorMax)
		from, bad2 = position("cursor")
	case VariantLinkPaging:
		n, bad = size("per_page", linkDefault, linkMax)
		from, bad2 = position("after")
	case VariantSilentCap:
		var pg int
		n, bad = size("per_page", defaultPerPage, 1<<30)
		pg, bad2 = position("page")
		w.perPage, w.last = n, (total+n-1)/n
		from = (max(pg, 1) - 1) * n
		n = min(n, silentCapRows)
	case VariantIgnorePage:
		n, bad = size("per_page", defaultPerPage, ignorePageMax)
		from, bad2 = position("offset")
		w.perPage, w.last = n, (total+n-1)/n
	}
	if bad == "" {
		bad = bad2
	}
	if bad != "" {
		return nil, bad
	}
	w.from, w.to = min(from, total), min(from+n, total)
	if w.to < total {
		switch shape {
		case VariantCursorPaging:
			w.next = "cur_" + strconv.Itoa(w.to)
		case VariantLinkPaging:
			next := url.Values{}
			for k, vs := range q {
				if k != "after" && k != "page" {
					next[k] = vs
				}
			}
			next.Set("after", strconv.Itoa(w.to))
			next.Set("per_page", strconv.Itoa(n))
			w.link = fmt.Sprintf("<%s?%s>; rel=\"next\"", path, next.Encode())
		}
	}
	return &w, ""
}

// pagingReason is why a list request of a paging variant is bad ("" when
// it is not, or no paging variant is served).
func (s *Server) pagingReason(r *http.Request, path string) string {
	if !isPagingVariant(s.vars.listShape) {
		return ""
	}
	_, reason := pagedWindowOf(s.vars.listShape, r.URL.Query(), path, 0)
	return reason
}

// pagedAs is p as a paging variant answers it (p unchanged when none is
// served): its window, and its Link header.
func (s *Server) pagedAs(w http.ResponseWriter, r *http.Request, p page) page {
	if !isPagingVariant(s.vars.listShape) {
		return p
	}
	p.win, _ = pagedWindowOf(s.vars.listShape, r.URL.Query(), p.path, p.total)
	if p.win.link != "" {
		w.Header().Set("Link", p.win.link)
	}
	return p
}

// writePagedList writes a paging variant's page p (its window set) in its
// envelope; elements writes the rows as an array.
func writePagedList(e *enc, st mainStyle, p page, elements func()) {
	w := p.win
	switch st.listShape {
	case VariantOffsetPaging, VariantLinkPaging:
		elements()
	case VariantCursorPaging:
		e.open()
		e.key("data")
		elements()
		e.key("next")
		if w.next == "" {
			e.null()
		} else {
			e.str(w.next)
		}
		e.close()
	default: // silent-cap, ignore-page: the canonical envelope
		current := p.current
		if st.listShape == VariantIgnorePage {
			current = 1
		}
		e.open()
		e.key("data")
		elements()
		e.key("total").num(int64(p.total), st.phpStrings)
		e.key("per_page").num(int64(w.perPage), st.phpStrings)
		e.key("current_page").num(int64(current), st.phpStrings)
		e.key("last_page").num(int64(w.last), st.phpStrings)
		e.close()
	}
}
