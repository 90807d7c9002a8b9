package check

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// Outcomes of a check and of each endpoint.
const (
	OutcomeOK           = "ok"
	OutcomeMismatch     = "mismatch"     // a mapped field is missing or does not parse
	OutcomeFailed       = "failed"       // the request failed (network, 5xx, an unknown shape, ...)
	OutcomeUnauthorized = "unauthorized" // 401: the key was refused
	OutcomeForbidden    = "forbidden"    // 403: the key has no access to the endpoint
	OutcomeSkipped      = "skipped"      // not asked (budget spent, key refused before, no id to ask for)
	OutcomeBudget       = "budget"       // the check as a whole: the day's budget stopped it
)

// PerEndpoint is the most requests the check sends to one endpoint.
const PerEndpoint = 2

// ErrBudgetSpent is the error of an endpoint left unasked because the day's
// request budget is spent.
var ErrBudgetSpent = errors.New("today's request budget is spent")

// Report is the result of a check (see the package documentation for its
// JSON shape).
type Report struct {
	Outcome   string     `json:"outcome"`
	Requests  int        `json:"requests"`
	Budget    int        `json:"budget"`
	Endpoints []Endpoint `json:"endpoints"`
	// PagingSetting is the AGENCY_PAGING value that makes the lists page
	// as the server does ("" when they do, or nothing was found).
	PagingSetting string `json:"paging_setting,omitempty"`
}

// Endpoint is what one request kind showed.
type Endpoint struct {
	Stream       string        `json:"stream"`
	Endpoint     string        `json:"endpoint"`
	Request      string        `json:"request"`
	Outcome      string        `json:"outcome"`
	Status       int           `json:"status"`
	Requests     int           `json:"requests"`
	Error        string        `json:"error,omitempty"`
	Envelope     string        `json:"envelope,omitempty"`
	PagingFields []string      `json:"paging_fields"`
	Records      int           `json:"records"`
	Columns      []ColumnCheck `json:"columns"`
	Unmapped     []Field       `json:"unmapped"`
	Problems     []string      `json:"problems,omitempty"`
	Note         string        `json:"note,omitempty"`
	// Paging is what the check found of a list's paging (the first request
	// kind of each list).
	Paging *Paging `json:"paging,omitempty"`

	err error // the request's error, for Report.Err
}

// ColumnCheck is one mapped column and its source field in the record.
type ColumnCheck struct {
	Column     string   `json:"column"`
	Field      string   `json:"field"`
	Type       string   `json:"type"`
	State      string   `json:"state"`
	JSONType   string   `json:"json_type,omitempty"`
	Candidates []string `json:"candidates,omitempty"`
	Problem    string   `json:"problem,omitempty"`
}

// Field is an unmapped source field with the JSON types it came in.
type Field struct {
	Path  string   `json:"path"`
	Types []string `json:"json_types"`
}

// Column states.
const (
	StatePresent   = "present"
	StateNull      = "null"
	StateMissing   = "missing"
	StateUnparsed  = "unparsed"
	StateFromKey   = "from_key"
	StateFromParam = "from_param"
	StateFromHook  = "from_hook"
	StateNotSeen   = "not_seen"
)

// Failed reports whether the column fails the check.
func (c ColumnCheck) Failed() bool { return c.State == StateMissing || c.State == StateUnparsed }

// Err returns the error that decides the check's exit: the first refused
// key (errors.Is extract.ErrUnauthorized), else the first unreachable host
// (extract.ErrUnreachable), else nil. Other outcomes are read from Outcome.
func (r *Report) Err() error {
	for _, kind := range []error{extract.ErrUnauthorized, extract.ErrUnreachable} {
		for _, e := range r.Endpoints {
			if e.err != nil && e.Outcome != OutcomeSkipped && errors.Is(e.err, kind) {
				return e.err
			}
		}
	}
	return nil
}

// Failing is the number of mapped columns that fail (missing or unparsed).
func (r *Report) Failing() int {
	n := 0
	for _, e := range r.Endpoints {
		for _, c := range e.Columns {
			if c.Failed() {
				n++
			}
		}
	}
	return n
}

// Count is the number of endpoints whose outcome is outcome.
func (r *Report) Count(outcome string) int {
	n := 0
	for _, e := range r.Endpoints {
		if e.Outcome == outcome {
			n++
		}
	}
	return n
}

// Tally counts the requests the client sends and keeps the last HTTP status
// per endpoint; its Observe is the client's Options.Hook. Safe for
// concurrent use.
type Tally struct {
	mu     sync.Mutex
	count  map[string]int
	status map[string]int
}

// NewTally returns an empty Tally.
func NewTally() *Tally { return &Tally{count: map[string]int{}, status: map[string]int{}} }

// Observe notes one request (an attempt) of the client; an attempt that
// never left the machine (no connection to the host) is not a request.
func (t *Tally) Observe(info extract.RequestInfo) {
	if info.Unsent {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count[info.Endpoint]++
	t.status[info.Endpoint] = info.Status
}

func (t *Tally) get(endpoint string) (count, status int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count[endpoint], t.status[endpoint]
}

// Options are what a check runs with.
type Options struct {
	// Client sends the requests; it counts each in the quota ledger. Its
	// Options.Hook must be Tally.Observe.
	Client *extract.Client
	// Tally is the client's hook.
	Tally *Tally
	// Streams are the declarations in force (stream.Apply under the field
	// map), in the order they are checked.
	Streams []*stream.Stream
	// Comms is the communications request (domain, users); the date window
	// is the check's.
	Comms extract.CommsQuery
	// Today is the service's calendar day; the e-mails of the 30 days up
	// to it are asked first.
	Today time.Time
	// Since is where the e-mail history starts (AGENCY_COMMS_START_DATE):
	// the second, wider window when the recent one is empty; zero: a year.
	Since time.Time
	// Budget is the requests the day still allows; negative: unlimited.
	Budget int
	// Logger; nil logs nothing.
	Logger *zap.Logger
}

// run is one check under way.
type run struct {
	o       Options
	log     *zap.Logger
	rep     *Report
	used    int               // requests sent
	spent   map[string]int    // requests per endpoint
	refused map[bool]string   // per interface (comms): why it is not asked any more (a refused key, an unreachable host)
	ids     map[string]string // per stream: the first record's id
	// pagingTested are the lists whose paging was tested (on their first
	// request kind).
	pagingTested map[string]bool
}

// Run checks the streams of o and returns the report. Its error is for the
// check itself (a request failing is in the report).
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Client == nil || o.Tally == nil {
		return nil, errors.New("run check: want a client and its tally")
	}
	r := &run{o: o, log: o.Logger, rep: &Report{Budget: o.Budget}, spent: map[string]int{}, refused: map[bool]string{}, ids: map[string]string{},
		pagingTested: map[string]bool{}}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	for _, s := range o.Streams {
		for _, ep := range s.Endpoints {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("run check: %w", err)
			}
			r.endpoint(ctx, s, ep)
		}
	}
	r.rep.Requests = r.used
	r.rep.Outcome = outcome(r.rep.Endpoints)
	r.rep.PagingSetting = pagingSetting(r.rep.Endpoints)
	return r.rep, nil
}

// outcome sums up the endpoints: a refused key first, then any failure or
// mismatch, then a budget that left endpoints unasked.
func outcome(eps []Endpoint) string {
	has := func(o string) bool {
		for _, e := range eps {
			if e.Outcome == o {
				return true
			}
		}
		return false
	}
	budget := false
	for _, e := range eps {
		if e.Outcome == OutcomeSkipped && errors.Is(e.err, ErrBudgetSpent) {
			budget = true
		}
	}
	switch {
	case has(OutcomeUnauthorized):
		return OutcomeUnauthorized
	case has(OutcomeFailed), has(OutcomeForbidden):
		return OutcomeFailed
	case has(OutcomeMismatch):
		return OutcomeMismatch
	case has(OutcomePaging):
		return OutcomePaging
	case budget:
		return OutcomeBudget
	}
	return OutcomeOK
}

// ask is one request kind of an endpoint.
type ask struct {
	desc   string
	id     string // a detail's id
	query  url.Values
	params map[string]string // the request's parameters columns may take
}

// endpoint checks one declared endpoint of s: one request kind, or one per
// value of a parameter the declaration enumerates (profitability's level).
func (r *run) endpoint(ctx context.Context, s *stream.Stream, ep stream.Endpoint) {
	base := Endpoint{Stream: s.Name, Endpoint: ep.Name, PagingFields: []string{}, Columns: []ColumnCheck{}, Unmapped: []Field{}}
	var id string
	if strings.Contains(ep.Path, "{id}") {
		id = r.ids[s.Name]
		if id == "" {
			e := base
			e.Request, e.Outcome = "one "+ep.Name, OutcomeSkipped
			e.Error = "no record of " + s.Endpoints[0].Name + " to take an id from"
			r.rep.Endpoints = append(r.rep.Endpoints, e)
			return
		}
	}
	for _, a := range asks(s, ep, id) {
		e := base
		e.Request = a.desc
		r.do(ctx, s, ep, a, &e)
		r.rep.Endpoints = append(r.rep.Endpoints, e)
	}
}

// asks lists the request kinds of ep: with the id for a path that takes
// one, and one per value of an enumerated request parameter.
func asks(s *stream.Stream, ep stream.Endpoint, id string) []ask {
	_, page := firstAsk(ep.Pagination)
	one := ask{desc: page, query: url.Values{}, params: map[string]string{}}
	switch {
	case ep.Paging == stream.PagingDetail:
		return []ask{{desc: "id " + id, id: id, params: map[string]string{}}}
	case ep.Paging == stream.PagingWindow:
		return []ask{{desc: "one e-mail of the last 30 days", params: map[string]string{}}}
	case id != "":
		one.desc = "id " + id + ", " + page
		one.query.Set("id", id)
		// A parameter column without a source field takes the id asked for.
		for _, t := range s.Tables() {
			if !t.FillsFrom(ep.Name) {
				continue
			}
			for _, c := range t.Columns {
				if c.Param != "" && c.Derived == stream.DerivedParam {
					one.params[c.Param] = id
				}
			}
		}
	}
	for _, t := range s.Tables() {
		if !t.FillsFrom(ep.Name) {
			continue
		}
		for _, c := range t.Columns {
			if c.Param == "" || len(c.OneOf) == 0 || c.Derived != "" {
				continue
			}
			var out []ask
			for _, v := range c.OneOf {
				a := ask{desc: c.Param + "=" + v + ", " + page, query: url.Values{c.Param: {v}}, params: map[string]string{c.Param: v}}
				out = append(out, a)
			}
			return out
		}
	}
	return []ask{one}
}

// comms reports whether an endpoint is on the communications interface.
func comms(ep stream.Endpoint) bool { return ep.Paging == stream.PagingWindow }

// budgetFor is the requests the next call to ep may send: what is left of
// the endpoint's PerEndpoint and of the day's budget.
func (r *run) budgetFor(ep string) int { return r.budgetUnder(ep, PerEndpoint) }

// budgetUnder is the requests the next call booked under key may send:
// what is left of limit and of the day's budget.
func (r *run) budgetUnder(key string, limit int) int {
	n := limit - r.spent[key]
	if r.o.Budget >= 0 {
		n = min(n, r.o.Budget-r.used)
	}
	return max(n, 0)
}

// send runs fn with a client limited to the endpoint's remaining requests
// and books what it sent.
func (r *run) send(ep string, e *Endpoint, fn func(c *extract.Client) error) error {
	return r.sendLimited(ep, PerEndpoint, e, fn)
}

// sendLimited is send for the requests booked under key (an endpoint's
// name, or its paging test's), at most limit of them.
func (r *run) sendLimited(key string, limit int, e *Endpoint, fn func(c *extract.Client) error) error {
	ep, _, _ := strings.Cut(key, "#")
	n := r.budgetUnder(key, limit)
	if n == 0 {
		if r.o.Budget >= 0 && r.used >= r.o.Budget {
			return ErrBudgetSpent
		}
		return fmt.Errorf("the endpoint's %d requests are used", limit)
	}
	b := extract.NewBudget(n)
	before, _ := r.o.Tally.get(ep)
	err := fn(r.o.Client.WithBudget(b))
	after, status := r.o.Tally.get(ep)
	sent := max(b.Spent(), after-before)
	r.used += sent
	r.spent[key] += sent
	e.Requests += sent
	if after > before {
		e.Status = status
	}
	return err
}

// do sends one request kind and inspects what came back.
func (r *run) do(ctx context.Context, s *stream.Stream, ep stream.Endpoint, a ask, e *Endpoint) {
	if why := r.refused[comms(ep)]; why != "" {
		e.Outcome, e.Error = OutcomeSkipped, "not asked: "+why
		return
	}
	var recs []extract.Record
	var err error
	switch ep.Paging {
	case stream.PagingDetail:
		var raw []byte
		err = r.send(ep.Name, e, func(c *extract.Client) error {
			var err error
			raw, err = c.Object(ctx, ep.Name, extract.ID(a.id))
			return err
		})
		if err == nil {
			recs = []extract.Record{{Raw: raw}}
			e.Records = 1
		}
	case stream.PagingWindow:
		var p *extract.Page
		p, err = r.window(ctx, ep, e)
		if p != nil {
			recs = r.page(p, e)
		}
	default:
		var p *extract.Page
		first, _ := firstAsk(ep.Pagination)
		err = r.send(ep.Name, e, func(c *extract.Client) error {
			var err error
			p, err = c.AskPage(ctx, ep.Name, a.query, first)
			return err
		})
		if err == nil {
			recs = r.page(p, e)
			defer func() {
				if !r.pagingTested[ep.Name] {
					r.pagingTested[ep.Name] = true
					r.probePaging(ctx, ep, a.query, p, e)
				}
			}()
		}
	}
	if err != nil {
		r.failed(ep, e, err)
		return
	}
	e.Outcome = OutcomeOK
	if len(recs) == 0 {
		e.Note = "no record to inspect: its columns are not checked"
		return
	}
	in := inspect(s, ep.Name, recs[0], a.params)
	e.Columns, e.Unmapped = in.columns, in.unmapped
	e.Problems = append(e.Problems, in.problems...)
	if id := in.id; id != "" && r.ids[s.Name] == "" && ep.Name == s.Endpoints[0].Name {
		r.ids[s.Name] = id
	}
	for _, c := range e.Columns {
		if c.Failed() {
			e.Outcome = OutcomeMismatch
		}
	}
	if len(in.problems) > 0 {
		e.Outcome = OutcomeMismatch
	}
}

// page notes a list page's envelope and returns its records.
func (r *run) page(p *extract.Page, e *Endpoint) []extract.Record {
	e.Envelope = p.Envelope
	if p.PagingFields != nil {
		e.PagingFields = p.PagingFields
	}
	e.Records = p.Rows()
	for range p.Rejects {
		e.Problems = append(e.Problems, "a record on the page is not a JSON object (or nests too deep)")
	}
	return p.Records
}

// window asks one page of one e-mail from the 30 days up to today, and,
// when that window is empty, from the start of the history (or a year).
func (r *run) window(ctx context.Context, ep stream.Endpoint, e *Endpoint) (*extract.Page, error) {
	today := r.o.Today
	if today.IsZero() {
		today = time.Now()
	}
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	since := r.o.Since
	if since.IsZero() || !since.Before(day.AddDate(0, 0, -30)) {
		since = day.AddDate(-1, 0, 0)
	}
	var p *extract.Page
	for i, from := range []time.Time{day.AddDate(0, 0, -30), since} {
		q := r.o.Comms
		q.DateStart, q.DateEnd, q.PerPage, q.StartPage = from, day, 1, 1
		e.Request = fmt.Sprintf("%s..%s, page 1, per_page 1", from.Format(time.DateOnly), day.Format(time.DateOnly))
		err := r.send(ep.Name, e, func(c *extract.Client) error {
			var err error
			p, err = c.CommunicationsRecords(ctx, q, 1)
			return err
		})
		if err != nil || p.Rows() > 0 || i == 1 || r.budgetFor(ep.Name) == 0 {
			return p, err
		}
	}
	return p, nil
}

// failed books a request's error on e.
func (r *run) failed(ep stream.Endpoint, e *Endpoint, err error) {
	e.err = err
	e.Error = err.Error()
	switch {
	case errors.Is(err, extract.ErrUnauthorized):
		e.Outcome = OutcomeUnauthorized
		r.refused[comms(ep)] = "the interface refused the key"
	case errors.Is(err, extract.ErrUnreachable):
		e.Outcome = OutcomeFailed
		r.refused[comms(ep)] = "the interface's host cannot be reached"
	case errors.Is(err, extract.ErrForbidden):
		e.Outcome = OutcomeForbidden
	case errors.Is(err, extract.ErrBudgetExhausted) && e.Requests > 0:
		// The endpoint's last allowed request failed and its retry was
		// not sent: the failure is the answer's (e.Status).
		e.Outcome = OutcomeFailed
		e.Error = fmt.Sprintf("HTTP %d, and no retry within the endpoint's %d requests", e.Status, PerEndpoint)
	case errors.Is(err, ErrBudgetSpent), errors.Is(err, extract.ErrBudgetExhausted):
		e.Outcome = OutcomeSkipped
	case errors.Is(err, extract.ErrDailyQuota):
		e.Outcome = OutcomeSkipped
		e.err = fmt.Errorf("%w: the service refused: %w", ErrBudgetSpent, err)
	default:
		e.Outcome = OutcomeFailed
	}
	if e.Outcome == OutcomeSkipped && e.Status == 0 && e.Requests == 0 {
		e.Error = "not asked: " + e.Error
	}
}
