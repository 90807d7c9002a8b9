package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/logging"
	"github.com/agencysync/agencysync/stream"
)

// Paths maps an endpoint's name (stream.Endpoint.Name) to the path it is
// asked at, overriding its declared one (AGENCY_PATHS): BaseURL + path for
// the main interface (the paths carry the /v1 segment), CommsURL + path for
// the communications endpoint. "{id}" is replaced by the escaped
// identifier.
type Paths map[string]string

// Options configure a Client. Zero values take the documented defaults.
type Options struct {
	// BaseURL is {base_url} without /v1, e.g. "https://api.example.com".
	BaseURL string
	// APIKey is sent as `Authorization: <key>` (no scheme).
	APIKey string
	// CommsURL is {communications_url} without the path.
	CommsURL string
	// CommsKey is sent as X-Workflow-Key to the communications endpoint.
	CommsKey string
	// WorkflowID is the X-Workflow-Id value; default "agencysync".
	WorkflowID string
	// WorkflowIDHeader is the name of the workflow id header; default
	// "X-Workflow-Id".
	WorkflowIDHeader string
	// ExecutionID is sent as X-Workflow-Execution-Id (the sync run's id);
	// omitted when empty. See WithExecutionID.
	ExecutionID string
	// Paths override the declared paths of the endpoints they name (nil:
	// every endpoint at its declared path).
	Paths Paths
	// Streams are the stream declarations in force (stream.ApplyPaging
	// under AGENCY_PAGING): the endpoints the client asks, at their declared
	// paths (or Paths'); each list pages as its endpoint's Pagination says,
	// and the communications endpoint asks at most its Max rows a page.
	// Nil: stream.All().
	Streams []*stream.Stream
	// RateLimit is the pace in requests per second (default 10): requests are
	// evenly spaced, never in bursts (burst 1).
	RateLimit float64
	// CommsRateLimit is 0 to share the main limiter with the communications
	// endpoint (default), or a separate pace for it.
	CommsRateLimit float64
	// SpacingMargin is added to the window of the window guard, and to the
	// interval between two requests up to 2% of it (default 2ms; negative
	// for none). The
	// service counts requests per second by arrival time: besides even
	// spacing, the client lets at most floor(rate) requests through per
	// window measured from their estimated arrivals (see the package
	// documentation). At 10/s the margin costs 2% of the pace, and no quota: a
	// run is bounded by the daily quota, not by the pace.
	SpacingMargin time.Duration
	// PerPage is the page size asked for; default and maximum 1000 (the
	// rows-per-request quota).
	PerPage int
	// Timeout bounds one request, body included; default 30s.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one request (first try included);
	// default 6.
	MaxAttempts int
	// RetryInitialInterval and RetryMaxInterval shape the exponential backoff
	// (factor 2, ±50% jitter); defaults 500ms and 30s.
	RetryInitialInterval time.Duration
	RetryMaxInterval     time.Duration
	// MaxRetryWait is the longest Retry-After the client waits for; a longer
	// one ends the retries at once with the error. Default 2 minutes.
	MaxRetryWait time.Duration
	// MaxBodyBytes bounds a response body as read: after the transport's
	// gzip decompression (and the declared charset's decoding). A larger
	// body is ErrResponseTooLarge, not retried, dropped as soon as it
	// passes the limit. Default DefaultMaxBodyBytes. The requests in flight
	// share one memory budget for their bodies (see memBudget): what they
	// hold at once stays within MaxBodyBytes plus 16 MiB, whatever their
	// number.
	MaxBodyBytes int64
	// AllowInsecureHTTP allows plain http:// to hosts that are not loopback.
	// Without it only https:// is accepted, plus http:// to 127.0.0.0/8, ::1
	// and localhost (tests, the sandbox).
	AllowInsecureHTTP bool
	// Counter, when set, is told of every request before it is sent, retries
	// included; an error from it stops the request unsent.
	Counter QuotaCounter
	// Clock, when set, learns the service's time from the Date header of
	// every answer (see ServiceClock).
	Clock *ServiceClock
	// Hook, when set, is called after every request (attempt) with its
	// outcome. It must be safe for concurrent use and quick.
	Hook func(RequestInfo)
	// HTTPClient to send with; default a client with its own transport. The
	// client is copied: redirects to another host or scheme are refused so
	// that no key follows them.
	HTTPClient *http.Client
	// Logger; nil logs nothing.
	Logger *zap.Logger
	// Names are the settings the user sets some of these options by (for
	// agencysync, environment variables), so that errors say what to check
	// or change; an empty field names the option itself.
	Names SettingNames
}

// SettingNames name the settings behind some Options fields in errors.
type SettingNames struct {
	BaseURL      string // default "BaseURL"
	CommsURL     string // default "CommsURL"
	APIKey       string // default none: a refused key's message names the header
	CommsKey     string // default none
	MaxBodyBytes string // default "MaxBodyBytes"
}

// withDefaults names the options whose fields are empty (keys excepted).
func (n SettingNames) withDefaults() SettingNames {
	for _, f := range []struct {
		v   *string
		def string
	}{{&n.BaseURL, "BaseURL"}, {&n.CommsURL, "CommsURL"}, {&n.MaxBodyBytes, "MaxBodyBytes"}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	return n
}

// QuotaCounter counts requests against the daily quota. The load package's
// ledger implements it and persists the count (api_quota_usage), so a restart
// does not forget.
type QuotaCounter interface {
	CountRequest(ctx context.Context) error
}

// QuotaDayMover is a QuotaCounter whose quota day follows the ServiceClock.
// A request is counted before it is sent, on the day the clock then tells;
// when its answer corrects the clock (the first answer a process sees, or a
// service clock that jumped), the client asks the counter to move that one
// request from the day of countedAt to the day of trueAt.
type QuotaDayMover interface {
	MoveRequest(ctx context.Context, countedAt, trueAt time.Time) error
}

// QuotaRefunder is a QuotaCounter that takes back a request it counted but
// that never left the machine: no connection to the service's host could be
// made (ErrUnreachable), so the service cannot have counted it. countedAt is
// when it was counted, on the client's ServiceClock; zero when the client
// has none (the counter's own clock then tells the day: the request was
// counted a moment before).
type QuotaRefunder interface {
	UncountRequest(ctx context.Context, countedAt time.Time) error
}

// RequestInfo describes one sent request (one attempt) for metrics and logs.
// It never carries a key.
type RequestInfo struct {
	Endpoint string // endpoint name (stream.Endpoint.Name)
	Method   string // GET or POST
	Page     int    // page asked for; 0 for single-object endpoints
	Attempt  int    // 1 for the first try
	Resends  int    // times net/http re-sent it on its own after a dead reused connection
	Unsent   bool   // it never left the machine: no connection to the host (ErrUnreachable); not counted
	// Charset is the charset the body declared and was decoded from ("" for
	// UTF-8); UnknownCharset a declared charset no registry knows (the body
	// was read as UTF-8).
	Charset, UnknownCharset string
	// InvalidUTF8: a successful body read as UTF-8 (no other charset
	// declared) was not valid UTF-8; its invalid bytes reach the records as
	// U+FFFD. CharsetHint names the common charsets that decode it cleanly
	// (comma-separated, most likely first; "" when none does).
	InvalidUTF8 bool
	CharsetHint string
	Status      int           // HTTP status; 0 when no response arrived
	Duration    time.Duration // until the body was read
	Bytes       int           // body size
	ErrorClass  string        // "" on success, else e.g. "rate_limited", "server", "network", "timeout", "malformed"
	Err         error         // the attempt's error, nil on success
}

// RequestBudget is the number of requests a client may still send. It is safe
// for concurrent use; several clients may share one. A nil *RequestBudget is
// unlimited. (It is not called Budget: that name is the finance record.)
type RequestBudget struct {
	remaining atomic.Int64
	spent     atomic.Int64
}

// NewBudget returns a budget of n requests.
func NewBudget(n int) *RequestBudget {
	b := &RequestBudget{}
	b.remaining.Store(int64(n))
	return b
}

// Remaining is the number of requests left (-1 for a nil, unlimited budget).
func (b *RequestBudget) Remaining() int {
	if b == nil {
		return -1
	}
	return int(max(b.remaining.Load(), 0))
}

// Spent is the number of requests sent under the budget.
func (b *RequestBudget) Spent() int {
	if b == nil {
		return 0
	}
	return int(b.spent.Load())
}

func (b *RequestBudget) take() bool {
	if b == nil {
		return true
	}
	for {
		r := b.remaining.Load()
		if r <= 0 {
			return false
		}
		if b.remaining.CompareAndSwap(r, r-1) {
			b.spent.Add(1)
			return true
		}
	}
}

// spend records a request that was sent without asking the budget first (a
// transport-level resend); Remaining never goes below zero.
func (b *RequestBudget) spend() {
	if b == nil {
		return
	}
	b.remaining.Add(-1)
	b.spent.Add(1)
}

func (b *RequestBudget) refund() {
	if b == nil {
		return
	}
	b.remaining.Add(1)
	b.spent.Add(-1)
}

// Client is a client of the Agency Data Service. It is safe for concurrent
// use; its copies (WithBudget, WithExecutionID) share its limiter and HTTP
// client.
type Client struct {
	base, comms          string // without trailing slash
	apiKey, commsKey     string
	workflowID, wfHeader string
	executionID          string
	endpoints            map[string]stream.Endpoint // by name, at the paths in force
	window               stream.Endpoint            // the date-windowed list of the communications interface
	probePath            string                     // the path the clock probe asks (the first list)
	perPage              int
	timeout              time.Duration
	maxAttempts          int
	retryInitial         time.Duration
	retryMax             time.Duration
	maxRetryWait         time.Duration
	maxBody              int64
	pacer                *pacer
	commsPacer           *pacer
	counter              QuotaCounter
	hook                 func(RequestInfo)
	clock                *ServiceClock
	hc                   *http.Client
	log                  *zap.Logger
	budget               *RequestBudget
	redactor             *logging.Redactor
	quotaOut             *quotaLatch // shared by the copies, but for WithBudget's
	memo                 *PagingMemo
	names                SettingNames
	mem                  *memBudget // the bodies' memory, shared by the copies
}

// quotaLatch remembers that the service refused a request for the daily
// quota: with several requests in flight, those about to leave are not sent
// (each would be refused, and counted) until the quota resets.
type quotaLatch struct {
	until atomic.Int64 // unix nanoseconds; 0: open
	err   atomic.Pointer[APIError]
}

// maxQuotaLatch bounds how long the latch stays closed when the reset time
// is unknown or far: a request after it is sent, and refused again if the
// quota is still spent.
const maxQuotaLatch = time.Hour

// close shuts the latch until the quota resets (as e tells, at most
// maxQuotaLatch; one minute when it does not tell).
func (q *quotaLatch) close(e *APIError, now time.Time) {
	until := now.Add(time.Minute)
	switch {
	case !e.ResetAt.IsZero() && e.ResetAt.After(now):
		until = e.ResetAt
	case e.RetryAfter > 0:
		until = now.Add(e.RetryAfter)
	}
	until = minTime(until, now.Add(maxQuotaLatch))
	cp := *e
	q.err.Store(&cp)
	q.until.Store(until.UnixNano())
}

// refused is the error of a request not sent because the latch is closed
// (nil when it is open).
func (q *quotaLatch) refused(cl *call, now time.Time) error {
	if u := q.until.Load(); u == 0 || now.UnixNano() >= u {
		return nil
	}
	e := *q.err.Load()
	e.Endpoint, e.Page = cl.endpoint, cl.page
	return &e
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// maxMessageLen bounds the server's error message and each detail as kept
// in errors: they are redacted first, then cut.
const maxMessageLen = 300

// New validates opts and returns a client.
func New(opts Options) (*Client, error) {
	c := &Client{
		apiKey:       opts.APIKey,
		commsKey:     opts.CommsKey,
		workflowID:   opts.WorkflowID,
		wfHeader:     opts.WorkflowIDHeader,
		executionID:  opts.ExecutionID,
		perPage:      opts.PerPage,
		timeout:      opts.Timeout,
		maxAttempts:  opts.MaxAttempts,
		retryInitial: opts.RetryInitialInterval,
		retryMax:     opts.RetryMaxInterval,
		maxRetryWait: opts.MaxRetryWait,
		maxBody:      opts.MaxBodyBytes,
		counter:      opts.Counter,
		hook:         opts.Hook,
		clock:        opts.Clock,
		log:          opts.Logger,
		quotaOut:     &quotaLatch{},
		memo:         NewPagingMemo(nil),
		names:        opts.Names.withDefaults(),
	}
	if opts.BaseURL == "" && opts.CommsURL == "" {
		return nil, fmt.Errorf("create client: %w: neither BaseURL nor CommsURL is set", ErrNotConfigured)
	}
	if err := c.declare(opts.Streams, opts.Paths); err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	var err error
	if opts.BaseURL != "" {
		if c.base, err = checkURL(opts.BaseURL, opts.AllowInsecureHTTP); err != nil {
			return nil, fmt.Errorf("create client: base URL: %w", err)
		}
	}
	if opts.CommsURL != "" {
		if c.comms, err = checkURL(opts.CommsURL, opts.AllowInsecureHTTP); err != nil {
			return nil, fmt.Errorf("create client: communications URL: %w", err)
		}
	}
	c.setDefaults()
	c.mem = newMemBudget(c.maxBody)
	margin := opts.SpacingMargin
	if margin == 0 {
		margin = 2 * time.Millisecond
	} else if margin < 0 {
		margin = 0
	}
	rl := opts.RateLimit
	if rl <= 0 {
		rl = 10
	}
	c.pacer = newPacer(rl, margin)
	if opts.CommsRateLimit > 0 {
		c.commsPacer = newPacer(opts.CommsRateLimit, margin)
	}
	c.hc = httpClient(opts.HTTPClient, rl, opts.CommsRateLimit)
	c.redactor = logging.NewRedactor(opts.APIKey, opts.CommsKey)
	return c, nil
}

// setDefaults gives the options left at their zero value their defaults.
func (c *Client) setDefaults() {
	if c.workflowID == "" {
		c.workflowID = "agencysync"
	}
	if c.wfHeader == "" {
		c.wfHeader = "X-Workflow-Id"
	}
	if c.perPage <= 0 || c.perPage > 1000 {
		c.perPage = 1000
	}
	if c.timeout <= 0 {
		c.timeout = 30 * time.Second
	}
	if c.maxAttempts <= 0 {
		c.maxAttempts = 6
	}
	if c.retryInitial <= 0 {
		c.retryInitial = 500 * time.Millisecond
	}
	if c.retryMax <= 0 {
		c.retryMax = 30 * time.Second
	}
	if c.maxRetryWait <= 0 {
		c.maxRetryWait = 2 * time.Minute
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBodyBytes
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
}

// httpClient is a copy of given (nil: a client with its own transport,
// sized for the paces rate and commsRate) that refuses redirects to another
// host or scheme.
func httpClient(given *http.Client, rate, commsRate float64) *http.Client {
	var hc http.Client
	if given != nil {
		hc = *given
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Enough idle connections for the requests kept in flight (see
		// InFlight): a connection closed after each answer is a new
		// handshake, and a reused one that died is a resend.
		tr.MaxIdleConnsPerHost = max(4, InFlightFor(rate, time.Second/10), InFlightFor(commsRate, time.Second/10))
		// A host that does not answer the connection attempt is found
		// out in dialTimeout, not in the request's whole timeout.
		tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
		hc.Transport = tr
	}
	hc.CheckRedirect = checkRedirect
	return &hc
}

// dialTimeout bounds the making of a connection (the TLS handshake has
// its own 10 s, the transport's default).
const dialTimeout = 10 * time.Second

// checkURL validates an address and returns it without trailing slash.
func checkURL(raw string, allowInsecure bool) (string, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", raw, err)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%w: %q has no host", ErrNotConfigured, raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("%w: credentials in the URL are not supported", ErrNotConfigured)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowInsecure && !isLoopback(u.Hostname()) {
			return "", fmt.Errorf("%w: plain http:// to %s would send the key unencrypted; use https:// or set AllowInsecureHTTP", ErrInsecureURL, u.Host)
		}
	default:
		return "", fmt.Errorf("%w: unsupported scheme %q", ErrInsecureURL, u.Scheme)
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkRedirect refuses redirects to another host or scheme: custom key
// headers would follow them.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	prev := via[len(via)-1].URL
	if req.URL.Host != prev.Host || req.URL.Scheme != prev.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

// WithBudget returns a copy of c that sends at most b's remaining requests;
// past them it returns ErrBudgetExhausted without sending.
//
// The copy starts with no memory of a daily quota refusal: a budget is one
// run's, and the copy's requests in flight stop at the first refusal
// among them (see quotaLatch) — a later run asks the service again.
func (c *Client) WithBudget(b *RequestBudget) *Client {
	cp := *c
	cp.budget = b
	cp.quotaOut = &quotaLatch{}
	return &cp
}

// declare takes the endpoints of streams (nil: stream.All()) at the paths
// in force: the declared ones, or those paths names.
func (c *Client) declare(streams []*stream.Stream, paths Paths) error {
	if streams == nil {
		streams = stream.All()
	}
	c.endpoints = map[string]stream.Endpoint{}
	for _, s := range streams {
		for _, ep := range s.Endpoints {
			if p, ok := paths[ep.Name]; ok && p != "" {
				ep.Path = p
			}
			c.endpoints[ep.Name] = ep
			switch {
			case ep.Kind() == stream.KindWindow:
				c.window = ep
			case ep.Kind() == stream.KindList && c.probePath == "":
				c.probePath = ep.Path
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		if _, ok := c.endpoints[name]; !ok {
			return fmt.Errorf("path of %q: no such endpoint: %w", name, ErrNotConfigured)
		}
	}
	return nil
}

// endpoint returns the endpoint named name if it is of one of kinds.
func (c *Client) endpoint(name string, kinds ...stream.Kind) (stream.Endpoint, bool) {
	ep, ok := c.endpoints[name]
	return ep, ok && slices.Contains(kinds, ep.Kind())
}

// WithPagingMemo returns a copy of c whose listings read and record what
// is known of each endpoint's paging in m (the engine keeps it in the
// warehouse between runs).
func (c *Client) WithPagingMemo(m *PagingMemo) *Client {
	cp := *c
	cp.memo = m
	return &cp
}

// Pagination returns how the list endpoint ep pages (the declaration in
// force).
func (c *Client) Pagination(ep string) stream.Pagination { return c.pagination(ep) }

// WithExecutionID returns a copy of c that sends id as X-Workflow-Execution-Id.
func (c *Client) WithExecutionID(id string) *Client {
	cp := *c
	cp.executionID = id
	return &cp
}

// WithLogger returns a copy of c that logs to log (for example a logger
// carrying the run's id); nil logs nothing.
func (c *Client) WithLogger(log *zap.Logger) *Client {
	if log == nil {
		log = zap.NewNop()
	}
	cp := *c
	cp.log = log
	return &cp
}

// InFlight is the number of requests worth keeping in flight now:
// InFlightFor the pace and the answer times measured so far, of the main
// interface or, with comms, of the communications endpoint (its own pace
// when it has one). The client is safe for that many concurrent calls; the
// pacer spaces them as it spaces one caller's.
func (c *Client) InFlight(comms bool) int {
	if comms && c.commsPacer != nil {
		return c.commsPacer.inFlight()
	}
	return c.pacer.inFlight()
}

// RequestBudget returns the client's request budget (nil when unlimited).
func (c *Client) RequestBudget() *RequestBudget { return c.budget }

// redact removes the configured keys from s in every encoding a server could
// echo them in, and any 8 consecutive characters of them (see
// logging.Redactor).
func (c *Client) redact(s string) string { return c.redactor.String(s) }

// Redact removes the client's keys from s (raw, URL-encoded, JSON-escaped,
// whole or in part; see logging.Redactor), for text that reaches a log or
// the warehouse by another way than the client's errors.
func (c *Client) Redact(s string) string { return c.redact(s) }

// redactError returns err, or when its text holds a key an error with the
// redacted text that still matches err's class sentinels.
func (c *Client) redactError(err error) error {
	if err == nil || !c.redactor.Contains(err.Error()) {
		return err
	}
	return &redactedError{msg: c.redact(err.Error()), kinds: classSentinels(err)}
}

// redactRecord removes the keys from a rejected record's text and bytes. Raw
// stays JSON unless a key spanned its syntax (the warehouse then stores it
// as a JSON string).
func (c *Client) redactRecord(re *RecordError) {
	if c.redactor.Contains(string(re.Raw)) {
		re.Raw = json.RawMessage(c.redact(string(re.Raw)))
	}
	re.Key = c.redact(re.Key)
	re.Err = c.redactError(re.Err)
}

// redactRejects redacts every reject of a page.
func redactRejects(c *Client, p *Page) {
	for i := range p.Rejects {
		c.redactRecord(&p.Rejects[i])
	}
}

// call is one logical request (retried as a unit).
type call struct {
	endpoint string
	method   string
	url      string
	body     []byte
	comms    bool
	page     int
	what     string // for errors, e.g. "fetch brands page 2"
	// link, when set, receives the URL of the answer's Link header with
	// rel="next" ("" when none).
	link *string
}

// hintBackOff is an exponential backoff that waits at least a server's
// Retry-After when one was given for the last attempt.
type hintBackOff struct {
	backoff.BackOff
	hint time.Duration
}

func (h *hintBackOff) NextBackOff() time.Duration {
	d := h.BackOff.NextBackOff()
	if d != backoff.Stop && h.hint > d {
		d = h.hint
	}
	h.hint = 0
	return d
}

// execute sends cl with pacing, budget, quota counting and bounded retries.
// onOK gets each 2xx body (valid only during the call) and decides whether it
// is usable; a retryable error from it (ErrMalformedResponse, ...) retries.
func (c *Client) execute(ctx context.Context, cl *call, onOK func(body []byte) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", cl.what, err)
	}
	exp := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(c.retryInitial),
		backoff.WithMaxInterval(c.retryMax),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMaxElapsedTime(0),
	)
	hint := &hintBackOff{BackOff: exp}
	bo := backoff.WithContext(backoff.WithMaxRetries(hint, uint64(c.maxAttempts-1)), ctx)
	attempt, unreachable := 0, 0
	op := func() error {
		attempt++
		err := c.attempt(ctx, cl, attempt, onOK)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !retryable(err) {
			return backoff.Permanent(err)
		}
		if errors.Is(err, ErrUnreachable) {
			if unreachable++; unreachable >= unreachableAttempts {
				return backoff.Permanent(err)
			}
		}
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			if ae.RetryAfter > c.maxRetryWait {
				return backoff.Permanent(err)
			}
			hint.hint = ae.RetryAfter
		}
		return err
	}
	notify := func(err error, wait time.Duration) {
		c.log.Warn("request failed, retrying",
			zap.String("endpoint", cl.endpoint), zap.Int("page", cl.page),
			zap.Int("attempt", attempt), zap.Duration("wait", wait),
			zap.String("error_class", errorClass(err)), zap.String("error", c.redact(err.Error())))
	}
	err := backoff.RetryNotify(op, bo, notify)
	if err == nil {
		return nil
	}
	what := c.redact(cl.what) // it may name an id the server gave
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case retryable(err):
		return fmt.Errorf("%s: giving up after %d attempts: %w", what, attempt, err)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// countResends records requests that the HTTP transport sent again on its
// own: in the budget and, durably, in the quota counter.
func (c *Client) countResends(ctx context.Context, n int) {
	for range n {
		c.budget.spend()
		if c.counter != nil {
			if err := c.counter.CountRequest(context.WithoutCancel(ctx)); err != nil {
				c.log.Warn("count a resent request", zap.String("error", c.redact(err.Error())))
			}
		}
	}
}

// recount moves the request counted at countedAt (under clock offset
// countedOff) to the quota day its answer showed it fell on, when the
// answer corrected the clock. A failure is logged: the count stays on the
// earlier day, one request off, never lost.
func (c *Client) recount(ctx context.Context, countedAt time.Time, countedOff time.Duration) {
	mover, ok := c.counter.(QuotaDayMover)
	if !ok {
		return
	}
	off, _ := c.clock.Offset()
	if off == countedOff {
		return
	}
	if err := mover.MoveRequest(context.WithoutCancel(ctx), countedAt, countedAt.Add(off-countedOff)); err != nil {
		c.log.Warn("could not move a request to the service's quota day", zap.String("error", c.redact(err.Error())))
	}
}

func (c *Client) report(info *RequestInfo) {
	fields := []zap.Field{
		zap.String("endpoint", info.Endpoint), zap.String("method", info.Method),
		zap.Int("page", info.Page), zap.Int("attempt", info.Attempt),
		zap.Int("status", info.Status), zap.Duration("duration", info.Duration),
		zap.Int("bytes", info.Bytes),
	}
	if info.Err != nil {
		fields = append(fields, zap.String("error_class", info.ErrorClass), zap.String("error", c.redact(info.Err.Error())))
	}
	c.log.Debug("request", fields...)
	if c.hook != nil {
		c.hook(*info)
	}
}

// transportError classifies a failure to get a complete response.
func (c *Client) transportError(ctx, rctx context.Context, cl *call, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	timeout := rctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		timeout = true
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err // without the URL
	}
	if timeout {
		cause = nil
	}
	msg := op + ": " + c.redact(err.Error())
	if timeout {
		msg = fmt.Sprintf("%s: timed out after %s", op, c.timeout)
	}
	return &NetworkError{Endpoint: cl.endpoint, Page: cl.page, Timeout: timeout, msg: msg, cause: cause}
}

// redactAPIError redacts the server's message and details, then cuts each
// to maxMessageLen: redaction always comes first, so a cut cannot split a
// key into pieces that escape it.
func (c *Client) redactAPIError(e *APIError) {
	e.Message = c.redactor.Clip(e.Message, maxMessageLen)
	for i, d := range e.Details {
		e.Details[i] = c.redactor.Clip(d, maxMessageLen)
	}
	for i := range e.Fields {
		f := &e.Fields[i]
		f.Field = c.redactor.Clip(f.Field, maxMessageLen)
		for j, m := range f.Messages {
			f.Messages[j] = c.redactor.Clip(m, maxMessageLen)
		}
	}
}

// statusError builds the *APIError of a non-2xx answer.
func (c *Client) statusError(cl *call, resp *http.Response, body []byte) error {
	now := time.Now()
	e := &APIError{Endpoint: cl.endpoint, Page: cl.page, Status: resp.StatusCode, Setting: c.keySetting(cl), Comms: cl.comms}
	if eb := parseErrorBody(body); eb != nil {
		e.Message, e.Details, e.Fields = eb.Message, eb.Details, eb.Fields
	}
	c.redactAPIError(e)
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	switch st := resp.StatusCode; {
	case st == http.StatusUnauthorized:
		e.Kind = ErrUnauthorized
	case st == http.StatusForbidden:
		e.Kind = ErrForbidden
	case st == http.StatusNotFound:
		e.Kind = ErrNotFound
	case st == http.StatusBadRequest:
		e.Kind = ErrBadRequest
	case st == http.StatusUnprocessableEntity:
		e.Kind = ErrValidation
	case st == http.StatusTooManyRequests:
		if classifyMessage(e.Message) == ErrDailyQuota {
			e.Kind = ErrDailyQuota
			e.ResetAt = resetTime(resp.Header, e.RetryAfter, now)
		} else {
			e.Kind = ErrRateLimited
		}
	case st >= 500:
		e.Kind = ErrServer
	default:
		e.Kind = ErrUnexpectedStatus
	}
	return e
}

// keySetting names the setting of the key cl carries.
func (c *Client) keySetting(cl *call) string {
	if cl.comms {
		return c.names.CommsKey
	}
	return c.names.APIKey
}

// parseErrorBody reads {"error": {...}}, {"error": "..."}, {"message":
// "..."} and a validation error's {"errors": {field: [...]}} (beside the
// message or inside the error object) from an error answer; nil when the
// body is not such JSON.
func parseErrorBody(body []byte) *errorBody {
	data := bytes.TrimPrefix(body, utf8BOM)
	if _, err := validJSON(data); err != nil {
		return nil
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return nil
	}
	var eb *errorBody
	var msg string
	var fields []FieldError
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "error":
			eb = errorOf(v)
		case "message":
			if v.Type == gjson.String {
				msg = v.Str
			}
		case "errors":
			fields = fieldErrors(v)
		}
		return true
	})
	switch {
	case eb != nil:
	case msg != "" || len(fields) > 0:
		eb = &errorBody{Message: msg}
	default:
		return nil
	}
	if len(eb.Fields) == 0 {
		eb.Fields = fields
	}
	return eb
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > 1e7 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// resetTime is when the daily quota resets, when the server says so: from
// Retry-After, else X-RateLimit-Reset (epoch seconds, or seconds from now).
func resetTime(h http.Header, retryAfter time.Duration, now time.Time) time.Time {
	if retryAfter > 0 {
		return now.Add(retryAfter).UTC()
	}
	if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			if n > 1e9 {
				return time.Unix(n, 0).UTC()
			}
			return now.Add(time.Duration(n) * time.Second).UTC()
		}
	}
	return time.Time{}
}
