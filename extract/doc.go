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
//     does not grow with history. per_page defaults to the 1000-rows-per-request
//     maximum; a server that answers a smaller per_page is followed (later pages
//     are asked with the answered size, so no row is skipped or repeated); no
//     request is made past last_page, and an unpaged list stops at its first
//     short or empty page.
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
//     Options.Counter before it is sent (the load package persists the count).
//     A client made by WithBudget refuses to send past its RequestBudget
//     (ErrBudgetExhausted), before the server has to refuse.
//   - Retries: rate limiting (429 "Rate limit exceeded" or a 429 without the
//     JSON body), 5xx, network errors, timeouts and bodies that are not JSON at
//     all (empty, truncated, HTML) are retried with exponential backoff and
//     jitter (github.com/cenkalti/backoff/v4), honouring Retry-After, up to
//     Options.MaxAttempts. Everything else fails at once.
//   - Typed errors: callers branch with errors.Is on ErrUnauthorized,
//     ErrForbidden, ErrNotFound, ErrBadRequest, ErrValidation (422, naming
//     each refused field in APIError.Fields), ErrDailyQuota, ErrRateLimited,
//     ErrServer, ErrNetwork, ErrTimeout, ErrMalformedResponse,
//     ErrUnexpectedShape, ErrBudgetExhausted, ... and reach details with
//     errors.As (*APIError, *ResponseError, *NetworkError, *RecordError).
//     Errors name the endpoint and page ("fetch invoices page 3: ...") and never
//     contain a key: every configured key is redacted (logging.Redactor) from
//     what a server echoes back — error messages and details, bodies that are
//     not JSON, rejected records' reasons and bytes — and from transport
//     errors, raw, URL-encoded or JSON-escaped, whole or any 8 characters of
//     it, and always before a message is cut to its 300 bytes.
//   - Safety: plain http:// is refused unless the host is loopback (tests, the
//     sandbox) or Options.AllowInsecureHTTP is set; redirects to another host
//     or scheme are refused so that no key follows them.
//   - Observability: Options.Hook is called after every request with its
//     endpoint, method, page, attempt, status, duration, size and error class;
//     Options.Logger (zap) gets a debug line per request and a warning per
//     retry.
//
// # Decoding
//
// Decoding is a hand-rolled, validating JSON scanner written for these
// payloads (no reflection, SWAR string scanning, per-page arenas and string
// interning); a 1000-row communications page decodes in a few milliseconds.
// It tolerates every variant listed in the project's API assumptions:
//
//   - lists as {"data":[...], "total", "per_page", "current_page",
//     "last_page"}, as a bare array, with the paging fields missing or nested
//     under "meta" or "pagination", or in the communications shape
//     {"data":{"rows":[...] or {"<id>":{...}}, "total", ...}};
//   - elements bare or wrapped in a "<thing>_info" object;
//   - identifiers as JSON strings or integer numbers, normalised to text (ID);
//     ids beyond int64 stay valid IDs, but are an error (ErrIDOutOfRange) where
//     the record type needs an int64 (communication record ids, platform user
//     ids);
//   - money as JSON numbers or numeric strings, kept exact as canonical
//     decimal text (Decimal), never through float64;
//   - "[]" where an object is expected and "{}" where an array is;
//   - in communications: rows as an object keyed by record id (key order is
//     kept), as [] or as an array of records carrying an id; to/cc/bcc as [],
//     an object keyed by platform user id, or an array of user objects; from as
//     an array or an object; has_attachments as 1/0/null/true/false; the
//     text/plain content type.
//
// A record that does not decode does not fail its page: it is returned in
// Page.Rejects as a RecordError carrying its raw bytes (for the warehouse's
// rejected_records). Every record keeps its own JSON as received in Raw (a
// copy: it never aliases a buffer the client reuses). Dates ("YYYY-MM-DD")
// are time.Time at UTC midnight; instants are UTC with their microseconds.
// The decoders are exported (DecodeList, DecodeCommunications,
// DecodeBrandDetail, DecodeProject) for callers that fetch bodies themselves.
//
// SplitPage and SplitObject are their generic successors for the declared
// streams, on github.com/tidwall/gjson: they recognise the same envelopes
// (and the PHP paginator's) but do not interpret records, returning each
// record's bytes as received (Record.Raw) with its key when the rows are
// keyed by id; a row that is not an object, or is nested too deep, is
// rejected alone.
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
