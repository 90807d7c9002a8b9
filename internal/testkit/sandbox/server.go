package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/stream"
)

// Error bodies of the spec's table. Bodies carry no trailing newline.
const (
	body401       = `{"error":{"message":"Invalid authentication","details":["The API key provided is invalid"]}}`
	body403       = `{"error":{"message":"Forbidden access","details":["Your API key does not have access to the requested data"]}}`
	body404       = `{"error":{"message":"Data not found","details":["The requested data does not exist."]}}`
	body429Quota  = `{"error":{"message":"Daily quota exceeded","details":["You have exceeded the allowed daily requests"]}}`
	body429Rate   = `{"error":{"message":"Rate limit exceeded","details":["You have exceeded the allowed requests per second"]}}`
	body500       = `{"error":{"message":"Internal server error","details":["The server encountered an error while processing your requests"]}}`
	body503       = `{"error":{"message":"Service unavailable","details":["The service is temporarily unavailable, please retry later"]}}`
	body405Prefix = `{"error":{"message":"Method not allowed","details":[`
	body400Prefix = `{"error":{"message":"Bad request","details":[`

	ctJSON = "application/json"
	ctText = "text/plain; charset=UTF-8"
	ctHTML = "text/html"
)

// Server is a running (or ready to run) sandbox of the Agency Data Service.
// All its methods are safe for concurrent use.
type Server struct {
	opts    Options
	log     *zap.Logger
	vars    variantSet
	mainSt  mainStyle
	commsSt commsStyle

	mu         sync.RWMutex // guards data, mail, declared and brandLists
	data       *dataset
	mail       *mailStore
	declared   []DeclaredList // lists served from given records (Declare)
	brandLists []brandList    // lists per brand served from their declarations
	clock      atomic.Int64   // sandbox now, Unix nanoseconds

	faultMu sync.Mutex
	fc      faultConfig
	tw      twistState

	apiLim, commsLim *limiter
	seq              atomic.Uint64
	stats            *statsCollector
	bufs             sync.Pool

	srvMu              sync.Mutex
	apiSrv, commsSrv   *http.Server
	apiURL, commsURL   string
	serveErrs          chan error
	started, closeOnce bool
}

// New validates opts and builds the deterministic dataset. Brand, project and
// finance records are generated at once; e-mails are indexed (timestamp,
// brand, participants) and their content is derived when served.
func New(opts Options) (*Server, error) {
	opts.Variants = slices.Clone(opts.Variants)
	if err := opts.validate(); err != nil {
		return nil, err
	}
	vars, err := parseVariants(opts.Variants)
	if err != nil {
		return nil, fmt.Errorf("new sandbox: %w", err)
	}
	opts.Start = opts.Start.UTC()
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{
		opts:    opts,
		log:     log,
		vars:    vars,
		mainSt:  mainStyle{vars},
		commsSt: commsStyle{vars},
		stats:   newStatsCollector(),
		fc: faultConfig{faults: opts.Faults, latency: opts.Latency, jitter: opts.Jitter,
			slowDelay: opts.SlowDelay, badRate: opts.BadRecordRate},
		tw: twistState{commsDayOffset: opts.CommsDayOffset},
	}
	s.clock.Store(opts.Start.UnixNano())
	s.apiLim = newLimiter(ScopeShared, opts.Rate)
	s.commsLim = s.apiLim
	if opts.LimitsScope == ScopeSeparate {
		s.apiLim.name = "api"
		s.commsLim = newLimiter("comms", opts.Rate)
	}

	people := genPlatformUsers(opts.Seed, opts.Users)
	s.data = genDataset(&s.opts, people)
	slugs := make([]string, len(s.data.brands))
	for i, b := range s.data.brands {
		slugs[i] = b.slug
	}
	outsiders := genOutsiders(opts.Seed, max(opts.Users, 3*opts.Brands, 20), slugs)
	for o := range outsiders {
		b := s.data.brands[o%len(s.data.brands)]
		b.outsiders = append(b.outsiders, o)
	}
	s.mail = newMailStore(&s.opts, s.data, people, outsiders)
	s.brandLists = brandListsOf(stream.All())
	log.Debug("sandbox dataset built",
		zap.Int("brands", len(s.data.brands)), zap.Int("projects", len(s.data.projects)),
		zap.Int("invoices", len(s.data.invoices)), zap.Int("emails", len(s.mail.ts)))
	return s, nil
}

// Start listens on the two addresses (for example "127.0.0.1:0") and serves
// the main interface with the admin API on apiAddr and the communications
// endpoint on commsAddr, until Close.
func (s *Server) Start(apiAddr, commsAddr string) error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.started {
		return errors.New("start sandbox: already started")
	}
	apiLn, err := net.Listen("tcp", apiAddr)
	if err != nil {
		return fmt.Errorf("listen api: %w", err)
	}
	commsLn, err := net.Listen("tcp", commsAddr)
	if err != nil {
		_ = apiLn.Close()
		return fmt.Errorf("listen comms: %w", err)
	}
	errLog, _ := zap.NewStdLogAt(s.log.Named("http"), zap.DebugLevel)
	s.apiSrv = &http.Server{Handler: s.APIHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: errLog}
	s.commsSrv = &http.Server{Handler: s.CommsHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: errLog}
	s.apiURL = "http://" + apiLn.Addr().String()
	s.commsURL = "http://" + commsLn.Addr().String()
	s.serveErrs = make(chan error, 2)
	s.started = true
	for _, p := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{s.apiSrv, apiLn}, {s.commsSrv, commsLn}} {
		go func() {
			err := p.srv.Serve(p.ln)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			s.serveErrs <- err
		}()
	}
	s.log.Debug("sandbox listening", zap.String("api_url", s.apiURL), zap.String("comms_url", s.commsURL))
	return nil
}

// APIURL is the main interface's {base_url} without /v1, such as
// "http://127.0.0.1:8081"; empty before Start.
func (s *Server) APIURL() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.apiURL
}

// CommsURL is the {communications_url} without the endpoint's path; empty
// before Start.
func (s *Server) CommsURL() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.commsURL
}

// Close stops both listeners at once, closing open connections.
func (s *Server) Close() error {
	return s.stop(func(srv *http.Server) error { return srv.Close() })
}

// Shutdown stops both listeners gracefully, waiting for requests in flight
// until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.stop(func(srv *http.Server) error { return srv.Shutdown(ctx) })
}

func (s *Server) stop(f func(*http.Server) error) error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if !s.started || s.closeOnce {
		return nil
	}
	s.closeOnce = true
	var errs []error
	for _, srv := range []*http.Server{s.apiSrv, s.commsSrv} {
		if err := f(srv); err != nil {
			errs = append(errs, err)
		}
	}
	for range 2 {
		if err := <-s.serveErrs; err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sandbox: %w", err)
	}
	return nil
}

// APIHandler serves the main interface and the admin API (what Start serves
// on the api address).
func (s *Server) APIHandler() http.Handler { return http.HandlerFunc(s.serveAPI) }

// CommsHandler serves the communications endpoint (what Start serves on the
// comms address).
func (s *Server) CommsHandler() http.Handler { return http.HandlerFunc(s.serveComms) }

// Now returns the sandbox clock.
func (s *Server) Now() time.Time { return time.Unix(0, s.clock.Load()).UTC() }

func (s *Server) quotaDay() string {
	return s.Now().In(s.opts.QuotaTZ).Format(layoutDate)
}

func (s *Server) faultConfig() faultConfig {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.fc
}

// Stats returns what GET /_sandbox/stats returns.
func (s *Server) Stats() Stats {
	st := s.stats.snapshot()
	d := s.quotaDay()
	st.QuotaDay = d
	st.Quota = map[string]QuotaUsage{}
	for _, l := range s.limiters() {
		u := l.usage(d)
		st.QuotaUsed += u
		st.Quota[l.name] = QuotaUsage{Day: d, Used: u, Limit: s.opts.DailyQuota}
	}
	st.Now = s.Now()
	s.mu.RLock()
	st.Emails = len(s.mail.ts) - len(s.mail.gone)
	s.mu.RUnlock()
	return st
}

func (s *Server) limiters() []*limiter {
	if s.apiLim == s.commsLim {
		return []*limiter{s.apiLim}
	}
	return []*limiter{s.apiLim, s.commsLim}
}

const maxPooledBuffer = 8 << 20

func (s *Server) getBuf() *[]byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func (s *Server) putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuffer {
		*b = (*b)[:0]
		s.bufs.Put(b)
	}
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, status int, body string) {
	writeBody(w, status, ctJSON, []byte(body))
}

// errorBody writes an error body with the given prefix and one detail.
func errorBody(e *enc, prefix, detail string) {
	e.b = append(e.b, prefix...)
	e.b = appendJSONString(e.b, detail)
	e.b = append(e.b, "]}}"...)
}

// badRequest writes the 400 body with the specific reason.
func badRequest(e *enc, reason string) (int, string) {
	errorBody(e, body400Prefix, reason)
	return http.StatusBadRequest, ctJSON
}

func notFound(e *enc) (int, string) {
	e.b = append(e.b, body404...)
	return http.StatusNotFound, ctJSON
}

func forbidden(e *enc) (int, string) {
	e.b = append(e.b, body403...)
	return http.StatusForbidden, ctJSON
}

func methodNotAllowed(w http.ResponseWriter, e *enc, allow string) (int, string) {
	w.Header().Set("Allow", allow)
	errorBody(e, body405Prefix, "Use "+allow+" for this endpoint")
	return http.StatusMethodNotAllowed, ctJSON
}

// serve runs the common pipeline of both data listeners: latency, auth, rate
// limit, spurious 429, daily quota, injected faults, then the handler h,
// which writes the body into the encoder and returns status and content type.
// The outcome is recorded in the stats before the client can see it, so a
// client that reads the stats after an answer finds that answer counted.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, endpoint string, lim *limiter, authorized bool, h func(e *enc) (int, string)) {
	x := &exchange{s: s, w: w, r: r, endpoint: endpoint,
		o: outcome{endpoint: endpoint, keyless: r.Header.Get("Authorization") == "" && r.Header.Get("X-Workflow-Key") == ""}}
	// The Date header tells the sandbox's (virtual) clock, as a real
	// server's tells its own: the worker takes its quota day from it.
	w.Header().Set("Date", s.Now().Format(http.TimeFormat))
	bufferBody(r)
	fr := newRNG(s.opts.Seed, tagRequest, s.seq.Add(1))
	fc := s.faultConfig()
	delay := fc.latency
	if fc.jitter > 0 {
		delay += time.Duration(fr.float() * float64(fc.jitter))
	}
	ctx := r.Context()
	if !sleepCtx(ctx, delay) {
		x.abort()
		return
	}
	fault, ok := s.admit(x, &fr, fc.faults, lim, authorized)
	if !ok {
		return
	}
	x.o.fault = fault
	if !x.injectFault(ctx, fault, fc.slowDelay) {
		return
	}
	bp := s.getBuf()
	defer s.putBuf(bp)
	e := enc{b: *bp}
	status, contentType := h(&e)
	body := e.b
	*bp = e.b
	if fault == faultNameTruncate && status == http.StatusOK && len(body) > 1 {
		cut := len(body)/3 + fr.intn(len(body)/3+1)
		body = body[:max(1, min(cut, len(body)-1))]
	}
	x.answer(status, contentType, body)
	if ce := s.log.Check(zap.DebugLevel, "request"); ce != nil {
		ce.Write(zap.String("endpoint", endpoint), zap.String("method", r.Method),
			zap.String("path", r.URL.RequestURI()), zap.Int("status", status), zap.String("fault", fault),
			zap.String("workflow_id", r.Header.Get("X-Workflow-Id")),
			zap.String("execution_id", r.Header.Get("X-Workflow-Execution-Id")))
	}
}

// exchange is one request to a data listener being answered, with the
// outcome that its answer records in the stats.
type exchange struct {
	s        *Server
	w        http.ResponseWriter
	r        *http.Request
	endpoint string
	o        outcome
}

// answer records the outcome with status and writes the answer.
func (x *exchange) answer(status int, contentType string, body []byte) {
	x.o.status = status
	x.s.stats.record(x.o)
	x.s.writeAnswer(x.w, x.r, x.endpoint, status, contentType, body)
}

// fail answers status with a JSON error body.
func (x *exchange) fail(status int, body string) { x.answer(status, ctJSON, []byte(body)) }

// abort records the request as abandoned by its client, without an answer.
func (x *exchange) abort() {
	x.o.aborted = true
	x.s.stats.record(x.o)
}

// bufferBody takes in r's body before any delay: net/http watches the
// connection only once the body has been read to its end, so a client that
// gives up during a slow answer cancels the request's context (and is
// recorded as aborted) at once, for a POST as for a GET, as a real server
// notices.
func bufferBody(r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		b, _ := io.ReadAll(io.LimitReader(r.Body, maxCommsBody+1))
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
}

// admit runs the checks before the handler: the key, the rate limit, a
// spurious 429, the daily quota and the echo_key twist. It returns the fault
// that fr picks for the request, and ok false when x has been answered.
func (s *Server) admit(x *exchange, fr *rng, faults Faults, lim *limiter, authorized bool) (fault string, ok bool) {
	if !authorized {
		x.fail(http.StatusUnauthorized, body401)
		return "", false
	}
	if !s.opts.NoLimits && !lim.allow() {
		x.o.rate = true
		x.fail(http.StatusTooManyRequests, body429Rate)
		return "", false
	}
	fault = faults.pick(fr.float())
	if fault == faultName429 {
		x.o.fault = fault
		if fr.chance(0.5) {
			x.w.Header().Set("Retry-After", "1")
		}
		x.fail(http.StatusTooManyRequests, body429Rate)
		return fault, false
	}
	if !lim.take(s.quotaDay(), s.opts.DailyQuota, !s.opts.NoLimits) {
		x.o.quota = true
		x.fail(http.StatusTooManyRequests, body429Quota)
		return fault, false
	}
	if s.twists().echoKey {
		key := x.r.Header.Get("X-Workflow-Key")
		if key == "" {
			key = x.r.Header.Get("Authorization")
		}
		x.answer(http.StatusBadRequest, ctJSON, echoKeyBody(key))
		return fault, false
	}
	return fault, true
}

// injectFault answers x with the injected fault (500, 502, 503, a dropped
// connection) or waits slowDelay for the slow fault; it returns false when
// the request is over: answered, dropped, or abandoned during the wait.
func (x *exchange) injectFault(ctx context.Context, fault string, slowDelay time.Duration) bool {
	switch fault {
	case faultName500:
		x.fail(http.StatusInternalServerError, body500)
		return false
	case faultName502:
		x.answer(http.StatusBadGateway, ctHTML, []byte(html502))
		return false
	case faultName503:
		x.w.Header().Set("Retry-After", "1")
		x.fail(http.StatusServiceUnavailable, body503)
		return false
	case faultNameDrop:
		x.o.dropped = true
		x.s.stats.record(x.o)
		dropConnection(x.w)
		return false
	case faultNameSlow:
		if !sleepCtx(ctx, slowDelay) {
			x.abort()
			return false
		}
	}
	return true
}

// auth is the standing of a main-interface key.
type auth int

const (
	authNone    auth = iota
	authOwn          // this agency's key
	authForeign      // another agency's valid key
)

func (s *Server) authMain(key string) auth {
	switch {
	case key == s.opts.APIKey:
		return authOwn
	case s.opts.ForeignKey != "" && key == s.opts.ForeignKey:
		return authForeign
	}
	return authNone
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; p == "/_sandbox" || strings.HasPrefix(p, "/_sandbox/") {
		s.serveAdmin(w, r)
		return
	}
	a := s.authMain(r.Header.Get("Authorization"))
	authorized := a != authNone && !s.hostileTwists().refuseMainKey
	if d, id, ok := s.declaredRoute(r.URL.Path); ok {
		s.serve(w, r, d.Name, s.apiLim, authorized, func(e *enc) (int, string) {
			return s.handleDeclared(w, e, r, d, id, a)
		})
		return
	}
	rt := routeMain(r.URL.Path)
	if rt.endpoint == epUnknown {
		if l, id, ok := s.brandListRoute(r.URL.Path); ok {
			s.serve(w, r, l.name, s.apiLim, authorized, func(e *enc) (int, string) {
				return s.handleBrandList(w, e, r, l, id, a)
			})
			return
		}
	}
	s.serve(w, r, rt.endpoint, s.apiLim, authorized, func(e *enc) (int, string) {
		return s.handleMain(w, e, r, rt, a)
	})
}

// CommsPath is the path of the communications endpoint.
const CommsPath = "/workflow/tools/communications-emails"

func (s *Server) serveComms(w http.ResponseWriter, r *http.Request) {
	endpoint := "communications"
	if r.URL.Path != CommsPath {
		endpoint = "unknown"
	}
	authorized := r.Header.Get("X-Workflow-Key") == s.opts.CommsKey
	s.serve(w, r, endpoint, s.commsLim, authorized, func(e *enc) (int, string) {
		if endpoint == "unknown" {
			return notFound(e)
		}
		if r.Method != http.MethodPost {
			return methodNotAllowed(w, e, http.MethodPost)
		}
		status, ct, pm := s.handleComms(e, r)
		if pm != nil {
			// handleComms has released its read lock: the mutation lands
			// before the client can read this answer and ask for the next.
			s.applyMutation(pm.indexes, pm.insert)
		}
		return status, ct
	})
}
