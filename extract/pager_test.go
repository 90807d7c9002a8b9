package extract

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// convention is a list server paging one way, over rows with ids 1..rows.
type convention struct {
	rows int
	// pos is what moves through the list: "page" (page), "offset"
	// (offset), "cursor" (a next token in the body, sent back as cursor),
	// "link" (a Link header whose URL carries after=).
	pos string
	// size is the page size parameter the server reads ("" reads none);
	// def is the size without one, limit the most it answers.
	size       string
	def, limit int
	// silent answers per_page as asked even when it answered fewer rows.
	silent bool
	// fields adds total, per_page, current_page and last_page; pageOne
	// answers current_page 1 whatever was asked.
	fields, pageOne bool
}

func (cv *convention) handler(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		size := cv.def
		if cv.size != "" && q.Get(cv.size) != "" {
			size, _ = strconv.Atoi(q.Get(cv.size))
		}
		asked := size
		size = min(size, cv.limit)
		from := 0
		switch cv.pos {
		case "page":
			if p, _ := strconv.Atoi(q.Get("page")); p > 1 {
				from = (p - 1) * size
			}
		case "offset":
			from, _ = strconv.Atoi(q.Get("offset"))
		case "cursor":
			if c := q.Get("cursor"); c != "" {
				from, _ = strconv.Atoi(strings.TrimPrefix(c, "c"))
			}
		case "link":
			from, _ = strconv.Atoi(q.Get("after"))
		}
		to := min(from+size, cv.rows)
		from = min(from, to)
		var b strings.Builder
		for id := from + 1; id <= to; id++ {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"%d","name":"row %d"}`, id, id)
		}
		rows := "[" + b.String() + "]"
		more := to < cv.rows
		if cv.pos == "link" && more {
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?after=%d&per_page=%d>; rel="next", <http://%s%s?after=0>; rel="first"`,
				r.Host, r.URL.Path, to, size, r.Host, r.URL.Path))
		}
		switch {
		case cv.fields:
			per := size
			if cv.silent {
				per = asked
			}
			current := 1
			if !cv.pageOne && per > 0 {
				current = from/per + 1
			}
			last := 0
			if per > 0 {
				last = (cv.rows + per - 1) / per
			}
			writeJSON(w, 200, fmt.Sprintf(`{"data":%s,"total":%d,"per_page":%d,"current_page":%d,"last_page":%d}`, rows, cv.rows, per, current, last))
		case cv.pos == "cursor":
			next := "null"
			if more {
				next = fmt.Sprintf(`"c%d"`, to)
			}
			writeJSON(w, 200, fmt.Sprintf(`{"data":%s,"next":%s}`, rows, next))
		default:
			writeJSON(w, 200, rows)
		}
	}
}

// listWith lists brands from a server following cv, with the client paging
// as pg asks (PerPage per, default 1000).
func listWith(t *testing.T, c *Client, cv convention) (ids []int, pages []*Page) {
	t.Helper()
	for p, err := range c.List(context.Background(), stream.EndpointBrands, ListQuery{}) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		pages = append(pages, p)
		for _, r := range p.Records {
			var id int
			fmt.Sscanf(strings.TrimPrefix(string(r.Raw), `{"id":"`), "%d", &id)
			ids = append(ids, id)
		}
	}
	if len(pages) == 0 || pages[len(pages)-1].End == nil {
		t.Fatalf("the last of %d pages carries no verdict", len(pages))
	}
	return ids, pages
}

// pagedClient is a client whose brands list pages as pg says.
func pagedClient(t *testing.T, base string, pg stream.Pagination, per int) *Client {
	t.Helper()
	streams, err := stream.ApplyPaging(stream.All(), stream.PagingOverrides{stream.EndpointBrands: {
		Style: pg.Style, Page: pg.Page, Size: pg.Size, Offset: pg.Offset, Cursor: pg.Cursor, Max: pg.Max}})
	if err != nil {
		t.Fatal(err)
	}
	o := fastOptions(base, "")
	o.Streams, o.PerPage = streams, per
	return newClient(t, o)
}

func TestListingsUnderEachConvention(t *testing.T) {
	t.Parallel()
	page, offset, cursor, none := stream.StyleDefaults(stream.StylePage), stream.StyleDefaults(stream.StyleOffset),
		stream.StyleDefaults(stream.StyleCursor), stream.StyleDefaults(stream.StyleNone)
	with := func(p stream.Pagination, f func(*stream.Pagination)) stream.Pagination { f(&p); return p }
	template := func(rows int) convention { // bare arrays, limit and offset
		return convention{rows: rows, pos: "offset", size: "limit", def: 10, limit: 100}
	}
	for _, tc := range []struct {
		name     string
		server   convention
		paging   stream.Pagination
		per      int
		rows     int // rows landed (all distinct)
		requests int
		proven   bool
		proof    string // or the reason, in part
		suggest  string
		cap      int
	}{
		{"canonical", convention{rows: 2500, pos: "page", size: "per_page", def: 100, limit: 1000, fields: true}, page, 0, 2500, 3, true, ProofFields, "", 0},
		{"page without fields, last page short", convention{rows: 25, pos: "page", size: "per_page", def: 100, limit: 1000}, page, 10, 25, 3, true, ProofShortPage, "", 0},
		{"page without fields, one short page", convention{rows: 5, pos: "page", size: "per_page", def: 100, limit: 1000}, page, 0, 5, 2, true, ProofPastEnd, "", 0},
		{"empty list", convention{rows: 0, pos: "page", size: "per_page", def: 100, limit: 1000}, page, 0, 0, 1, true, ProofEmpty, "", 0},
		{"template asked by page", template(35), page, 0, 10, 2, false, "ignores the page parameter", "offset", 0},
		{"template asked by offset", template(35), with(offset, func(p *stream.Pagination) { p.Max = 100 }), 0, 35, 2, true, ProofPastEnd, "", 0},
		{"template capping silently", template(250), offset, 0, 250, 3, true, ProofShortPage, "offset:max=100", 100},
		{"cursor asked by page", convention{rows: 150, pos: "cursor", size: "per_page", def: 10, limit: 100}, page, 0, 100, 2, false, "ignores the page parameter", "cursor", 0},
		{"cursor", convention{rows: 150, pos: "cursor", size: "per_page", def: 10, limit: 100}, cursor, 0, 150, 2, true, ProofCursorEnd, "", 0},
		{"cursor, one page", convention{rows: 35, pos: "cursor", size: "per_page", def: 10, limit: 100}, cursor, 0, 35, 2, true, proofCursorProbe, "", 0},
		{"cursor asked of a server without", convention{rows: 35, pos: "page", size: "per_page", def: 10, limit: 100}, cursor, 0, 35, 2, false, "does not page by cursor", "offset", 0},
		{"link header", convention{rows: 250, pos: "link", size: "per_page", def: 30, limit: 100}, cursor, 0, 250, 3, true, ProofCursorEnd, "", 0},
		{"link header asked by page", convention{rows: 250, pos: "link", size: "per_page", def: 30, limit: 100}, page, 0, 100, 2, false, "ignores the page parameter", "cursor", 0},
		{"silent cap", convention{rows: 70, pos: "page", size: "per_page", def: 100, limit: 25, silent: true, fields: true}, page, 0, 70, 3, true, ProofFields, "page:max=25", 25},
		{"silent cap configured", convention{rows: 70, pos: "page", size: "per_page", def: 100, limit: 25, silent: true, fields: true}, with(page, func(p *stream.Pagination) { p.Max = 25 }), 0, 70, 3, true, ProofFields, "", 0},
		{"page ignored", convention{rows: 35, pos: "offset", size: "per_page", def: 15, limit: 20, fields: true, pageOne: true}, page, 0, 20, 2, false, "ignores the page parameter", "offset:size=per_page", 0},
		{"page ignored, offset by per_page", convention{rows: 35, pos: "offset", size: "per_page", def: 15, limit: 20, fields: true, pageOne: true}, with(offset, func(p *stream.Pagination) { p.Size = "per_page" }), 0, 35, 2, true, ProofFields, "", 0},
		{"none", convention{rows: 35, pos: "page", size: "per_page", def: 100, limit: 1000}, none, 0, 35, 1, true, ProofStyleNone, "", 0},
		{"none filling its page", convention{rows: 35, pos: "page", size: "per_page", def: 100, limit: 1000}, with(none, func(p *stream.Pagination) { p.Max = 20 }), 0, 20, 1, false, "fills the page", "offset", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, rec := serve(t, (&tc.server).handler(t))
			c := pagedClient(t, srv.URL, tc.paging, tc.per)
			ids, pages := listWith(t, c, tc.server)
			seen := map[int]bool{}
			for _, id := range ids {
				if seen[id] {
					t.Errorf("row %d landed twice", id)
				}
				seen[id] = true
			}
			end := pages[len(pages)-1].End
			got := end.Proof
			if !end.Proven {
				got = end.Reason
			}
			if len(seen) != tc.rows || rec.count() != tc.requests || end.Proven != tc.proven || !strings.Contains(got, tc.proof) ||
				end.Suggest != tc.suggest || end.Cap != tc.cap {
				t.Errorf("%d rows in %d requests, verdict %+v; want %d rows in %d requests, proven %v (%s), suggest %q, cap %d",
					len(seen), rec.count(), *end, tc.rows, tc.requests, tc.proven, tc.proof, tc.suggest, tc.cap)
				for _, r := range rec.requests() {
					t.Logf("asked %v", r.Query)
				}
			}
		})
	}
}

// TestProofsRestOnWhatEarlierListingsShowed: the page size honoured, or
// the cursor named, by one listing proves the next listing's short page
// without a request past the end.
func TestProofsRestOnWhatEarlierListingsShowed(t *testing.T) {
	t.Parallel()
	t.Run("honoured page size", func(t *testing.T) {
		t.Parallel()
		cv := convention{rows: 25, pos: "page", size: "per_page", def: 100, limit: 1000}
		srv, rec := serve(t, cv.handler(t))
		memo := NewPagingMemo(nil)
		c := pagedClient(t, srv.URL, stream.StyleDefaults(stream.StylePage), 10).WithPagingMemo(memo)
		listWith(t, c, cv) // 10, 10, 5: page size 10 honoured
		learned := memo.Changed()
		if f := learned[PagingKey(stream.EndpointBrands, stream.StyleDefaults(stream.StylePage))]; f.Honoured != 10 {
			t.Fatalf("learned %v", learned)
		}
		cv.rows = 5
		before := rec.count()
		next := pagedClient(t, srv.URL, stream.StyleDefaults(stream.StylePage), 10).WithPagingMemo(NewPagingMemo(learned))
		_, pages := listWith(t, next, cv)
		if end := pages[len(pages)-1].End; !end.Proven || end.Proof != ProofShortPage || rec.count()-before != 1 {
			t.Errorf("a short page after the size was honoured: %+v in %d requests", end, rec.count()-before)
		}
	})
	t.Run("cursor named", func(t *testing.T) {
		t.Parallel()
		cv := convention{rows: 35, pos: "cursor", size: "per_page", def: 10, limit: 100}
		srv, rec := serve(t, cv.handler(t))
		memo := NewPagingMemo(nil)
		c := pagedClient(t, srv.URL, stream.StyleDefaults(stream.StyleCursor), 0).WithPagingMemo(memo)
		listWith(t, c, cv)
		if rec.count() != 2 {
			t.Fatalf("first listing: %d requests", rec.count())
		}
		_, pages := listWith(t, c, cv)
		if end := pages[len(pages)-1].End; !end.Proven || end.Proof != ProofCursorEnd || rec.count() != 3 {
			t.Errorf("second listing: %+v after %d requests in all", end, rec.count())
		}
	})
}

func TestNextPageOnAnotherHostIsRefused(t *testing.T) {
	t.Parallel()
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `<https://elsewhere.example/v1/brands?after=1>; rel="next"`)
		writeJSON(w, 200, `[{"id":"1"}]`)
	})
	c := pagedClient(t, srv.URL, stream.StyleDefaults(stream.StyleCursor), 0)
	var err error
	for _, err = range c.List(context.Background(), stream.EndpointBrands, ListQuery{}) {
		if err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "elsewhere.example") || rec.count() != 1 {
		t.Fatalf("err %v after %d requests", err, rec.count())
	}
}

func TestNextLink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{`<https://a.example/x?page=2>; rel="next", <https://a.example/x?page=9>; rel="last"`}, "https://a.example/x?page=2"},
		{[]string{`<https://a.example/x?page=1>; rel="prev"`, `<https://a.example/x?page=3>; rel=next`}, "https://a.example/x?page=3"},
		{[]string{`</x?after=5>; title="more"; rel="next last"`}, "/x?after=5"},
		{[]string{`<https://a.example/x?page=1>; rel="first"`}, ""},
		{nil, ""},
		{[]string{`garbage`}, ""},
	} {
		if got := nextLink(tc.in); got != tc.want {
			t.Errorf("nextLink(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestAnnouncedPagesAreListedWhateverTheTotal: a server whose total counts
// the rows of the page (not of the list) while last_page announces more
// pages is paged to its last page.
func TestAnnouncedPagesAreListedWhateverTheTotal(t *testing.T) {
	t.Parallel()
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		var rows []string
		for id := (page-1)*10 + 1; id <= page*10 && page <= 3; id++ {
			rows = append(rows, fmt.Sprintf(`{"id":"%d"}`, id))
		}
		writeJSON(w, 200, fmt.Sprintf(`{"data":[%s],"total":%d,"per_page":10,"current_page":%d,"last_page":3}`, strings.Join(rows, ","), len(rows), page))
	})
	c := pagedClient(t, srv.URL, stream.StyleDefaults(stream.StylePage), 10)
	ids, pages := listWith(t, c, convention{})
	if len(ids) != 30 || rec.count() != 3 || !pages[len(pages)-1].End.Proven {
		t.Fatalf("%d rows in %d requests, verdict %+v", len(ids), rec.count(), pages[len(pages)-1].End)
	}
}

// TestCursorChainEndingOnAnEmptyPage: a server that names a next page on
// every answer, the last one empty, is listed whole and proven so.
func TestCursorChainEndingOnAnEmptyPage(t *testing.T) {
	t.Parallel()
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		var rows []string
		for id := from + 1; id <= min(from+10, 25); id++ {
			rows = append(rows, fmt.Sprintf(`{"id":"%d"}`, id))
		}
		writeJSON(w, 200, fmt.Sprintf(`{"data":[%s],"next_cursor":"%d"}`, strings.Join(rows, ","), min(from+10, 25)))
	})
	c := pagedClient(t, srv.URL, stream.StyleDefaults(stream.StyleCursor), 0)
	ids, pages := listWith(t, c, convention{})
	if end := pages[len(pages)-1].End; len(ids) != 25 || rec.count() != 4 || !end.Proven {
		t.Fatalf("%d rows in %d requests, verdict %+v", len(ids), rec.count(), end)
	}
}
