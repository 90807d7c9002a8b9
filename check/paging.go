package check

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// Paging is what check found of a list's paging (Endpoint.Paging).
type Paging struct {
	// Configured is the paging in force, as AGENCY_PAGING writes it.
	Configured string `json:"configured"`
	// Honoured: the server pages as configured (as far as the list's rows
	// let the check tell).
	Honoured bool `json:"honoured"`
	// Found is the paging the server honours, when not the configured one.
	Found string `json:"found,omitempty"`
	// Max is the largest page size the server answers, when that showed.
	Max int `json:"max,omitempty"`
	// Setting is the exact setting to use, AGENCY_PAGING=<endpoint>=<found>.
	Setting string `json:"setting,omitempty"`
	// Requests are the requests the paging test sent beyond the page of
	// one row (each counted in the quota).
	Requests int `json:"requests"`
	// Note says what showed it.
	Note string `json:"note,omitempty"`
}

// Requests the paging test may send for one list: its own paging (the page
// of one row included), and each other paging it probes (a style under a
// size parameter: at most five).
const (
	PagingRequests = 4
	PerStyle       = 2
)

// probeLimit bounds the requests of a list's paging test beyond its page
// of one row.
const probeLimit = PagingRequests - 1 + 5*PerStyle

// OutcomePaging is an endpoint (and a check) whose list does not page as
// configured.
const OutcomePaging = "paging"

// pagingProbe tests one list's paging.
type pagingProbe struct {
	r     *run
	ep    stream.Endpoint
	e     *Endpoint
	q     url.Values
	cfg   stream.Pagination
	first *extract.Page // the page of one row under the configured paging
	out   *Paging
}

// firstAsk is the page of one row under p, and how the report names it.
func firstAsk(p stream.Pagination) (extract.PageAsk, string) {
	a := extract.PageAsk{Paging: p, Page: 1, Size: 1}
	size := ""
	if p.Size != "" {
		size = ", " + p.Size + " 1"
	}
	switch p.Style {
	case stream.StylePage:
		return a, p.Page + " 1" + size
	case stream.StyleOffset:
		return a, p.Offset + " 0" + size
	}
	return a, "first page" + size
}

// probePaging tests the paging of list ep from its page of one row (first)
// and records it on e; a list that does not page as configured makes e's
// outcome OutcomePaging (unless it failed otherwise).
func (r *run) probePaging(ctx context.Context, ep stream.Endpoint, q url.Values, first *extract.Page, e *Endpoint) {
	pp := &pagingProbe{r: r, ep: ep, e: e, q: q, cfg: ep.Pagination, first: first, out: &Paging{Configured: ep.Pagination.String()}}
	e.Paging = pp.out
	pp.run(ctx)
	if !pp.out.Honoured && e.Outcome == OutcomeOK {
		e.Outcome = OutcomePaging
	}
}

func (pp *pagingProbe) run(ctx context.Context) {
	out := pp.out
	switch {
	case pp.first.Rows() == 0:
		out.Honoured, out.Note = true, "an empty list: its paging cannot be tested"
		return
	case pp.cfg.Style == stream.StyleNone:
		pp.testNone(ctx)
		return
	}
	why, err := pp.testOwn(ctx)
	switch {
	case err != nil:
		out.Note = "the paging test stopped: " + err.Error()
		out.Honoured = true // not disproven; the run proves each listing anyway
		return
	case why == "":
		out.Honoured = true
		return
	}
	out.Note = why
	if out.Found == "" {
		pp.probeOthers(ctx)
	}
	if out.Found != "" {
		out.Setting = "AGENCY_PAGING=" + pp.ep.Name + "=" + out.Found
	}
}

// ask sends one request of the paging test.
func (pp *pagingProbe) ask(ctx context.Context, a extract.PageAsk) (*extract.Page, error) {
	var p *extract.Page
	err := pp.r.sendLimited(pp.ep.Name+"#paging", probeLimit, pp.e, func(c *extract.Client) error {
		var err error
		p, err = c.AskPage(ctx, pp.ep.Name, pp.q, a)
		return err
	})
	if err == nil {
		pp.out.Requests++
	}
	return p, err
}

// total is the list's total as the page of one row answered it (-1: not
// answered).
func (pp *pagingProbe) total() int {
	for _, f := range pp.first.PagingFields {
		if f == "total" {
			return pp.first.Total
		}
	}
	return -1
}

// testOwn tests the configured paging: the page of one row, the second
// position (a row of its own), and for page and offset the largest page
// size, which a server may cap without saying so. It returns why the
// server does not page so ("" when it does).
func (pp *pagingProbe) testOwn(ctx context.Context) (string, error) {
	a, cfg, total := pp.first, pp.cfg, pp.total()
	if n := a.Rows(); n > 1 {
		return fmt.Sprintf("asked for 1 row, the server answered %d: it ignores %s", n, orNone(cfg.Size)), nil
	}
	if cfg.Style == stream.StylePage && a.Number != 1 {
		return fmt.Sprintf("asked for page 1, the server answered current_page %d", a.Number), nil
	}
	if total >= 0 && total <= 1 {
		pp.out.Note = "a list of one row: its paging cannot be tested further"
		return "", nil
	}
	second := extract.PageAsk{Paging: cfg, Page: 2, Offset: 1, Size: 1}
	if cfg.Style == stream.StyleCursor {
		if a.Next == "" {
			if total > 1 {
				return fmt.Sprintf("the answer names no next page although the list has %d rows", total), nil
			}
			pp.out.Note = "one row and no next page named: a list of one row, or a server that does not page by cursor"
			return "", nil
		}
		second.Next = a.Next
	}
	b, err := pp.ask(ctx, second)
	if err != nil {
		return "", err
	}
	switch {
	case b.Rows() == 0 && total > 1:
		return fmt.Sprintf("the second row's position came back empty although the list has %d rows", total), nil
	case b.Rows() == 0:
		pp.out.Note = "a list of one row: its paging cannot be tested further"
		return "", nil
	case b.Rows() > 1:
		return fmt.Sprintf("asked for 1 row at the second position, the server answered %d: it ignores %s", b.Rows(), orNone(cfg.Size)), nil
	case bytes.Equal(b.FirstRaw(), a.FirstRaw()):
		return "the second position repeats the first row: the server ignores " + position(cfg), nil
	case cfg.Style == stream.StylePage && b.Number != 2:
		return fmt.Sprintf("asked for page 2, the server answered current_page %d: it ignores %s", b.Number, position(cfg)), nil
	case cfg.Style == stream.StyleCursor:
		return "", nil
	}
	return pp.testMax(ctx, total)
}

// testMax asks the first position with the largest page size configured:
// fewer rows than the list holds, without an answered per_page that says
// so, is a silent cap (the setting to use then names max=).
func (pp *pagingProbe) testMax(ctx context.Context, total int) (string, error) {
	cfg := pp.cfg
	c, err := pp.ask(ctx, extract.PageAsk{Paging: cfg, Page: 1, Size: cfg.Max})
	if err != nil {
		return "", err
	}
	n := c.Rows()
	if answeredPerPage(c) && c.PerPage < cfg.Max {
		pp.out.Max = c.PerPage // said so: the run follows it
		return "", nil
	}
	want := cfg.Max
	if total >= 0 {
		want = min(want, total)
	}
	if n == 0 || n >= want {
		return "", nil
	}
	if total < 0 {
		// No total: one row further tells the list's end from a cap.
		d, err := pp.ask(ctx, extract.PageAsk{Paging: cfg, Page: n + 1, Offset: n, Size: 1})
		if err != nil {
			return "", err
		}
		if d.Rows() == 0 || bytes.Equal(d.FirstRaw(), c.FirstRaw()) {
			return "", nil
		}
	}
	capped := cfg
	capped.Max = n
	pp.out.Max, pp.out.Found = n, capped.String()
	return fmt.Sprintf("asked for %d rows, the server answered %d of a longer list without saying so: it caps pages at %d", cfg.Max, n, n), nil
}

// testNone asks the configured none paging once with its page size: an
// answer that holds the total it announces, or fewer rows than asked, is
// the whole list.
func (pp *pagingProbe) testNone(ctx context.Context) {
	c, err := pp.ask(ctx, extract.PageAsk{Paging: pp.cfg, Size: pp.cfg.Max})
	out := pp.out
	switch {
	case err != nil:
		out.Honoured, out.Note = true, "the paging test stopped: "+err.Error()
	case answeredTotal(c) && c.Rows() < c.Total:
		out.Note = fmt.Sprintf("the one answer holds %d of the %d rows it announces", c.Rows(), c.Total)
	case !answeredTotal(c) && pp.cfg.Size != "" && c.Rows() >= pp.cfg.Max:
		out.Note = fmt.Sprintf("the one answer fills the page of %d rows asked for: more may exist", pp.cfg.Max)
	default:
		out.Honoured = true
	}
}

// probeOthers tries the other pagings, PerStyle requests each at most:
// each style under the size parameter the page of one row showed the
// server reads, or, when it showed none, under limit and per_page; cursor
// first when the first answer named a next page, else offset, page, cursor.
// It notes the first the server honours.
func (pp *pagingProbe) probeOthers(ctx context.Context) {
	styles := []stream.PageStyle{stream.StyleOffset, stream.StylePage, stream.StyleCursor}
	if pp.first.Next != "" {
		styles = []stream.PageStyle{stream.StyleCursor, stream.StyleOffset, stream.StylePage}
	}
	sizes := []string{"limit", "per_page"}
	if pp.first.Rows() == 1 && pp.cfg.Size != "" {
		sizes = []string{pp.cfg.Size} // a page of one row: the server reads it
	}
	for _, style := range styles {
		for _, size := range sizes {
			p := stream.StyleDefaults(style)
			p.Size, p.Max = size, pp.cfg.Max
			if p.Style == pp.cfg.Style && p.Size == pp.cfg.Size {
				continue
			}
			ok, capped, err := pp.try(ctx, p)
			if err != nil {
				pp.out.Note += "; the paging probe stopped: " + err.Error()
				return
			}
			if ok {
				p.Max = stream.MaxPageSize
				if capped > 0 {
					p.Max, pp.out.Max = capped, capped
				}
				pp.out.Found = p.String()
				return
			}
		}
	}
	if t := pp.total(); t > 0 && pp.first.Rows() >= t {
		pp.out.Found = stream.StyleDefaults(stream.StyleNone).String()
		pp.out.Note += fmt.Sprintf("; the one answer held all %d rows", t)
		return
	}
	pp.out.Note += "; none of the paging styles page, offset and cursor is honoured"
}

// try tests style p with at most PerStyle requests: whether the server
// pages so, and the page size it caps at when that showed.
func (pp *pagingProbe) try(ctx context.Context, p stream.Pagination) (ok bool, capped int, err error) {
	switch p.Style {
	case stream.StyleOffset:
		// The first position at the largest size, then one row after what
		// it answered: a row of its own there shows the offset is read,
		// and that the first answer was capped.
		a, err := pp.ask(ctx, extract.PageAsk{Paging: p, Offset: 0, Size: p.Max})
		if err != nil || a.Rows() == 0 {
			return false, 0, err
		}
		b, err := pp.ask(ctx, extract.PageAsk{Paging: p, Offset: a.Rows(), Size: 1})
		if err != nil {
			return false, 0, err
		}
		if b.Rows() == 0 {
			return true, 0, nil
		}
		if holds(a, b.FirstRaw()) {
			return false, 0, nil
		}
		if a.Rows() < p.Max && !(answeredPerPage(a) && a.PerPage < p.Max) {
			capped = a.Rows()
		}
		return true, capped, nil
	case stream.StylePage:
		a, err := pp.ask(ctx, extract.PageAsk{Paging: p, Page: 1, Size: 1})
		if err != nil || a.Rows() != 1 {
			return false, 0, err
		}
		b, err := pp.ask(ctx, extract.PageAsk{Paging: p, Page: 2, Size: 1})
		if err != nil {
			return false, 0, err
		}
		return b.Rows() == 1 && !bytes.Equal(a.FirstRaw(), b.FirstRaw()) && b.Number == 2, 0, nil
	case stream.StyleCursor:
		a := pp.first
		if a.Next == "" {
			var err error
			if a, err = pp.ask(ctx, extract.PageAsk{Paging: p, Size: 1}); err != nil || a.Next == "" {
				return false, 0, err
			}
		}
		b, err := pp.ask(ctx, extract.PageAsk{Paging: p, Next: a.Next, Size: 1})
		if err != nil {
			return false, 0, err
		}
		return b.Rows() > 0 && !holds(a, b.FirstRaw()), 0, nil
	}
	return false, 0, nil
}

// pagingSetting is the AGENCY_PAGING value that makes every list page as
// the server does, from the endpoints' tests: "*=<found>" (with the
// smallest max shown) when every list that does not page as configured
// found the same paging and those that do are configured so already; else
// one entry per list whose paging is not honoured. "" when nothing is to
// set.
func pagingSetting(eps []Endpoint) string {
	found := map[string]string{} // endpoint → found
	var honoured []string        // the configured paging of lists found honoured
	for _, e := range eps {
		switch {
		case e.Paging == nil:
		case e.Paging.Honoured:
			honoured = append(honoured, e.Paging.Configured)
		case e.Paging.Found != "":
			found[e.Endpoint] = e.Paging.Found
		}
	}
	if len(found) == 0 {
		return ""
	}
	bases := map[string]int{} // found without max → the smallest max shown
	for _, f := range found {
		base, m := splitMax(f)
		if cur, ok := bases[base]; !ok || (m > 0 && (cur == 0 || m < cur)) {
			bases[base] = m
		}
	}
	if len(bases) == 1 {
		for base, m := range bases {
			same := true
			for _, h := range honoured {
				if b, _ := splitMax(h); b != base {
					same = false
				}
			}
			if !same {
				break
			}
			if m > 0 {
				return fmt.Sprintf("*=%s:max=%d", base, m)
			}
			return "*=" + base
		}
	}
	var parts []string
	for _, ep := range slices.Sorted(maps.Keys(found)) {
		parts = append(parts, ep+"="+found[ep])
	}
	return strings.Join(parts, ",")
}

// splitMax splits ":max=N" off a paging's text.
func splitMax(p string) (string, int) {
	i := strings.Index(p, ":max=")
	if i < 0 {
		return p, 0
	}
	var n int
	fmt.Sscanf(p[i+len(":max="):], "%d", &n)
	return p[:i], n
}

func answeredPerPage(p *extract.Page) bool {
	return slices.Contains(p.PagingFields, "per_page") && p.PerPage > 0
}

func answeredTotal(p *extract.Page) bool { return slices.Contains(p.PagingFields, "total") }

// holds reports whether one of p's rows is raw.
func holds(p *extract.Page, raw []byte) bool {
	for _, r := range p.Records {
		if bytes.Equal(r.Raw, raw) {
			return true
		}
	}
	for _, r := range p.Rejects {
		if bytes.Equal(r.Raw, raw) {
			return true
		}
	}
	return false
}

// position names the parameter of p that moves through the list.
func position(p stream.Pagination) string {
	switch p.Style {
	case stream.StylePage:
		return "the " + p.Page + " parameter"
	case stream.StyleOffset:
		return "the " + p.Offset + " parameter"
	}
	return "the next page it names"
}

func orNone(size string) string {
	if size == "" {
		return "the page size"
	}
	return "the " + size + " parameter"
}
