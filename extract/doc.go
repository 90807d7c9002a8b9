// Package extract is a Go client of the agency platform's Agency Data Service:
// the brand, project and finance interface under {base_url}/v1 and the
// communications (e-mail) endpoint under {communications_url}. It is the
// extractor of agencysync's sync worker and a reusable library (the service
// publishes no official client).
//
// # What it does
//
//   - Every endpoint: Brands, Brand, BrandContacts, Projects, Project, Budgets,
//     Invoices, Collections, Payments, Profitability, AgencySummary on the main
//     interface (header "Authorization: <key>", "Accept: application/json") and
//     Communications / CommunicationsPage on the communications endpoint (POST
//     with a JSON body, headers X-Workflow-Key, X-Workflow-Id and
//     X-Workflow-Execution-Id). Every path is configurable (Options.Paths).
//   - Lists are Go iterators (iter.Seq2) that hold one page at a time, so memory
//     does not grow with history. Each list pages as its endpoint's declared
//     stream.Pagination says (Options.Streams, under AGENCY_PAGING): by page
//     and per_page (the canonical), by offset and limit, by cursor (a token
//     or a next-page URL in the body, or a Link rel="next" header), or not at
//     all. The page size defaults to the 1000-rows-per-request maximum (at
//     most the endpoint's Max); a server that answers a smaller per_page is
//     followed. The last page carries the verdict on the listing (Page.End,
//     a ListEnd): proven complete by the paging fields agreeing with the
//     rows seen, by a short page of a page size the server honours (seen in
//     the listing, or recorded by an earlier one: PagingMemo), by one
//     request past the end that comes back empty (asked with the page size
//     the server answered, so a silent cap shows), or by the end of a cursor
//     chain; or not proven, with the reason and the paging to try. A server
//     that ignores the position parameter (a page that repeats the one
//     before) ends the listing unproven, its repeated rows dropped.
//   - Pacing: requests are evenly spaced at Options.RateLimit (default 10/s,
//     burst 1) by golang.org/x/time/rate, with a small spacing margin (default
//     2ms). Because the service counts requests by arrival time, a window
//     guard adds a bound that delays cannot break: at most floor(rate)
//     requests per second measured from the estimated arrivals of earlier
//     ones (write time, plus how much slower than the fastest round trip the
//     answer came back; a full window from a failure without an answer). A
//     delay common to all requests costs no pace; only its variation does.
//     The two interfaces share one limit unless Options.CommsRateLimit is set.
//   - Quota: every request sent, retries included, is counted through
//     Options.Counter before it is sent (the load package persists the count);
//     one that never left the machine (no connection to the host could be
//     made) is given back (QuotaRefunder).
//     A client made by WithBudget refuses to send past its RequestBudget
//     (ErrBudgetExhausted), before the server has to refuse.
//   - Retries: rate limiting (429 "Rate limit exceeded" or a 429 without the
//     JSON body), 5xx, network errors, timeouts and bodies that are not JSON at
//     all (empty, truncated, HTML) are retried with exponential backoff and
//     jitter (github.com/cenkalti/backoff/v4), honouring Retry-After, up to
//     Options.MaxAttempts; a host that cannot be reached (ErrUnreachable:
//     refused, unresolvable, TLS failure) 3 times at most, within seconds,
//     its error naming the address's setting (Options.Names). Everything
//     else fails at once.
//   - Typed errors: callers branch with errors.Is on ErrUnauthorized,
//     ErrForbidden, ErrNotFound, ErrBadRequest, ErrValidation (422, naming
//     each refused field in APIError.Fields), ErrDailyQuota, ErrRateLimited,
//     ErrServer, ErrNetwork, ErrUnreachable, ErrTimeout, ErrMalformedResponse,
//     ErrUnexpectedShape, ErrResponseTooLarge, ErrBudgetExhausted, ... and
//     reach details with
//     errors.As (*APIError, *ResponseError, *NetworkError, *RecordError).
//     Errors name the endpoint and page ("fetch invoices page 3: ...") and never
//     contain a key: every configured key is redacted (logging.Redactor) from
//     what a server echoes back — error messages and details, bodies that are
//     not JSON, rejected records' reasons and bytes, whole bodies before their
//     records are split — and from transport errors, raw, URL-encoded,
//     JSON-escaped, base64 or hex, whole or any 8 characters of it, and
//     always before a message is cut to its 300 bytes.
//   - Bodies: read in chunks within one memory budget that the requests in
//     flight share (Options.MaxBodyBytes, default 32 MiB, plus 16 MiB,
//     whatever their number), capped after gzip decompression
//     (ErrResponseTooLarge); a charset the Content-Type declares is decoded
//     as the body is read (golang.org/x/text's registries), and an
//     undeclared body that is not UTF-8 is reported (RequestInfo.InvalidUTF8,
//     CharsetHint).
//   - Safety: plain http:// is refused unless the host is loopback (tests, the
//     sandbox) or Options.AllowInsecureHTTP is set; redirects to another host
//     or scheme are refused so that no key follows them.
//   - Observability: Options.Hook is called after every request with its
//     endpoint, method, page, attempt, status, duration, size and error class;
//     Options.Logger (zap) gets a debug line per request and a warning per
//     retry.
//
// # Pages and records
//
// The client does not interpret records: a page's Records are each record's
// JSON exactly as received (Raw, a copy owned by the page) with its object
// key when the rows came keyed by id (Key); the declared streams' transform
// derives every column from them. Splitting uses github.com/tidwall/gjson
// (validation, then one walk of the envelope) and tolerates every envelope
// listed in the project's API assumptions:
//
//   - lists as {"data":[...], "total", "per_page", "current_page",
//     "last_page"}, as a bare array, with the paging fields missing, nested
//     under "meta" or "pagination", written as numeric strings, or beside the
//     PHP paginator's first_page_url, next_page_url, links, from and to; in
//     the communications shape {"data":{"rows":[...] or {"<id>":{...}},
//     "total", ...}}; or as {"data":{"<id>":{...}}};
//   - null, false, [] or {} for an empty collection;
//   - the text/plain content type of the communications endpoint.
//
// A row that is not a JSON object, or is nested deeper than 9 000 levels,
// does not fail its page: it is returned in Page.Rejects as a RecordError
// carrying its raw bytes (for the warehouse's rejected_records). A body that
// is not JSON is ErrMalformedResponse (retried), JSON of another shape
// ErrUnexpectedShape, an error object an *APIError. SplitPage and
// SplitObject are exported for callers that fetch bodies themselves.
//
// # Usage
//
//	c, err := extract.New(extract.Options{
//		BaseURL:  "https://api.agency.example", // without /v1
//		APIKey:   os.Getenv("AGENCY_API_KEY"),
//		CommsURL: "https://workflows.agency.example",
//		CommsKey: os.Getenv("AGENCY_COMMS_KEY"),
//		Counter:  ledger, // persists the daily request count
//		Logger:   logger,
//	})
//	if err != nil { ... }
//	run := c.WithExecutionID(runID).WithBudget(extract.NewBudget(remainingToday))
//	for page, err := range run.Brands(ctx) {
//		if err != nil {
//			if errors.Is(err, extract.ErrDailyQuota) { ... stop for today ... }
//			return err
//		}
//		for _, b := range page.Records { ... }
//		for _, rej := range page.Rejects { ... store rej.Raw, rej.Err ... }
//	}
//
// A Client is safe for concurrent use; its copies (WithBudget,
// WithExecutionID) share its limiter and connection pool.
package extract
