package extract

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Every error the client returns matches at least one of them
// with errors.Is, so callers branch on the class and not on the text.
var (
	// ErrUnauthorized: the key was refused (HTTP 401). Never retried: check or
	// regenerate the API token under "My Account" in the platform.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the key has no access to the requested data (HTTP 403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: the requested object does not exist (HTTP 404).
	ErrNotFound = errors.New("not found")
	// ErrBadRequest: the server refused the request as malformed (HTTP 400).
	ErrBadRequest = errors.New("bad request")
	// ErrValidation: the server refused a parameter of the request (HTTP 422
	// Unprocessable Entity, {"message": ..., "errors": {field: [...]}});
	// APIError.Fields names each refused field. A client error: never
	// retried, since the same request would be refused alike.
	ErrValidation = errors.New("validation failed")
	// ErrDailyQuota: the daily request quota is spent (HTTP 429 "Daily quota
	// exceeded"). Not retried; APIError.ResetAt carries the reset time when the
	// server tells it.
	ErrDailyQuota = errors.New("daily quota exceeded")
	// ErrRateLimited: the per-second limit was exceeded (HTTP 429 "Rate limit
	// exceeded", or a 429 without the JSON body). Retried after a pause that
	// honours Retry-After; returned when the attempts run out.
	ErrRateLimited = errors.New("rate limited")
	// ErrServer: the server failed (HTTP 5xx). Retried; returned when the
	// attempts run out.
	ErrServer = errors.New("server error")
	// ErrUnexpectedStatus: an HTTP status the service does not document (a
	// redirect, 405, 409, ...). Not retried.
	ErrUnexpectedStatus = errors.New("unexpected HTTP status")
	// ErrErrorResponse: a 200 response carrying an error object whose message
	// is not one of the documented ones (documented messages map to their own
	// class, e.g. a 200 saying "Rate limit exceeded" is ErrRateLimited).
	ErrErrorResponse = errors.New("error object in a successful response")
	// ErrNetwork: the request failed in transport (connection refused or
	// reset, DNS, TLS, a timeout). Retried; returned when the attempts run out.
	ErrNetwork = errors.New("network error")
	// ErrUnreachable: the request never left the machine: no connection to
	// the service's host could be made (connection refused, a host name
	// that does not resolve, a TLS handshake that failed, a connection that
	// timed out). Also matches ErrNetwork. The request is not counted (a
	// QuotaRefunder counter takes it back), and it is tried at most
	// unreachableAttempts times, within seconds: the error names the
	// setting of the address (Options.Names).
	ErrUnreachable = errors.New("host unreachable")
	// ErrTimeout: the per-request timeout expired. Also matches ErrNetwork.
	ErrTimeout = errors.New("request timed out")
	// ErrMalformedResponse: the body is not JSON at all (empty, truncated, an
	// HTML page, garbage). Retried; returned when the attempts run out.
	ErrMalformedResponse = errors.New("malformed response")
	// ErrUnexpectedShape: the body is JSON but not a shape the client knows
	// (rows of the wrong type, no data, a scalar where a list belongs). Not
	// retried.
	ErrUnexpectedShape = errors.New("unexpected response shape")
	// ErrResponseTooLarge: the body exceeds Options.MaxBodyBytes. Not retried.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrBudgetExhausted: the client's Budget is spent; returned before any
	// request is sent.
	ErrBudgetExhausted = errors.New("request budget exhausted")
	// ErrInvalidRecord: a row of a page is not a record (not a JSON object,
	// or nested too deep). Such rows are set aside in Page.Rejects as
	// *RecordError values; the rest of the page proceeds.
	ErrInvalidRecord = errors.New("invalid record")
	// ErrTooDeep: a record holds a value nested deeper than the decoder keeps
	// (9 000 levels; see the package documentation). Such a record is
	// rejected alone (a *RecordError that matches ErrInvalidRecord too); the
	// rest of its page proceeds.
	ErrTooDeep = errors.New("nested too deep")
	// ErrInsecureURL: New refused a plain http:// address that is not loopback
	// (set Options.AllowInsecureHTTP to allow it).
	ErrInsecureURL = errors.New("insecure URL")
	// ErrNotConfigured: the call needs an address or key that Options lacks.
	ErrNotConfigured = errors.New("not configured")
)

// Messages of the service's error table, compared case-insensitively.
const (
	msgDailyQuota = "daily quota exceeded"
	msgRateLimit  = "rate limit exceeded"
)

// APIError is an error answer of the service: a non-2xx status, or a 2xx
// carrying an error object. errors.Is(err, ErrX) matches its class (Kind).
// Message and Details come from the body's error object when there is one and
// never contain a configured key.
type APIError struct {
	Endpoint   string        // endpoint name, e.g. "brands" or "communications"
	Page       int           // page asked for; 0 for single-object endpoints
	Status     int           // HTTP status (200 for an error object in a 2xx)
	Message    string        // error.message of the body, if any
	Details    []string      // error.details of the body, if any
	Fields     []FieldError  // the fields a validation error (422) names, in the order received
	RetryAfter time.Duration // from the Retry-After header; 0 when absent
	ResetAt    time.Time     // daily quota reset, when known; zero otherwise
	Kind       error         // the sentinel this error matches
	// Setting names the setting of the key the request carried
	// (Options.Names), for a refused key's message; "" leaves it out.
	Setting string
	// Comms: the request went to the communications interface (its key is
	// X-Workflow-Key).
	Comms bool
}

// FieldError is one field a validation error refused, with the server's
// messages about it.
type FieldError struct {
	Field    string
	Messages []string
}

// Error describes the answer without naming the endpoint (the wrapping error
// does that) and without any key.
func (e *APIError) Error() string {
	var b strings.Builder
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
		b.WriteString(": ")
	}
	b.WriteString("HTTP ")
	b.WriteString(strconv.Itoa(e.Status))
	if e.Message != "" {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(e.Message))
	}
	if len(e.Details) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(e.Details, "; "))
		b.WriteString(")")
	}
	for _, f := range e.Fields {
		b.WriteString(" [")
		b.WriteString(f.Field)
		b.WriteString(": ")
		b.WriteString(strings.Join(f.Messages, "; "))
		b.WriteString("]")
	}
	if e.RetryAfter > 0 {
		b.WriteString(", retry after ")
		b.WriteString(e.RetryAfter.String())
	}
	if !e.ResetAt.IsZero() {
		b.WriteString(", quota resets at ")
		b.WriteString(e.ResetAt.UTC().Format(time.RFC3339))
	}
	switch e.Kind {
	case ErrUnauthorized:
		switch {
		case e.Comms && e.Setting != "":
			b.WriteString(": the communications key (" + e.Setting + ", sent as X-Workflow-Key) was refused; check the configured communications key")
		case e.Comms:
			b.WriteString(": the communications key (X-Workflow-Key) was refused; check the configured communications key")
		case e.Setting != "":
			b.WriteString(": the API key (" + e.Setting + ") was refused; check the API token under \"My Account\" in the platform, or regenerate it there and configure the new one (regenerating revokes the old key at once)")
		default:
			b.WriteString(": the API key was refused; check the API token under \"My Account\" in the platform, or regenerate it there and configure the new one (regenerating revokes the old key at once)")
		}
	case ErrForbidden:
		b.WriteString(": the key has no access to the requested data")
	case ErrValidation:
		if f := e.pageSizeField(); f != "" && e.Endpoint != "" {
			b.WriteString(": the server refused the page size (" + f + "); set a size it accepts with AGENCY_PAGING=" +
				e.Endpoint + "=…:max=N (docs/paging.md)")
		}
	}
	return b.String()
}

// pageSizeFields are the parameter names a list's page size goes by (the
// paging styles' defaults and their common variants).
var pageSizeFields = []string{"per_page", "limit", "page_size", "pageSize", "size"}

// pageSizeField is the page-size parameter a validation error refused, ""
// when it refused none.
func (e *APIError) pageSizeField() string {
	for _, f := range e.Fields {
		if slices.Contains(pageSizeFields, f.Field) {
			return f.Field
		}
	}
	return ""
}

// Is matches the error's class.
func (e *APIError) Is(target error) bool { return target == e.Kind && e.Kind != nil }

// ResponseError is a body the client could not use as a whole: not JSON
// (ErrMalformedResponse, retried), JSON of an unknown shape
// (ErrUnexpectedShape) or too large (ErrResponseTooLarge).
type ResponseError struct {
	Endpoint string
	Page     int
	Reason   string // what was unexpected, e.g. "HTML page where JSON was expected"
	Kind     error

	notJSON *notJSONError // the body's start, for the client to redact before cutting
}

// Error describes what was wrong with the body.
func (e *ResponseError) Error() string { return e.Kind.Error() + ": " + e.Reason }

// Is matches the error's class.
func (e *ResponseError) Is(target error) bool { return target == e.Kind }

// NetworkError is a transport failure: the request did not produce a complete
// response. Its text is redacted of every configured key.
type NetworkError struct {
	Endpoint    string
	Page        int
	Timeout     bool // the per-request timeout expired
	Unreachable bool // no connection to the host could be made: the request was never sent
	msg         string
	cause       error
}

// Error describes the transport failure, redacted of every configured key.
func (e *NetworkError) Error() string { return e.msg }

// Unwrap exposes the class sentinels (ErrNetwork, and ErrTimeout for
// timeouts) and the transport's own error, except context errors (a
// per-request timeout is not the caller's context expiring).
func (e *NetworkError) Unwrap() []error {
	errs := []error{ErrNetwork}
	if e.Unreachable {
		errs = append(errs, ErrUnreachable)
	}
	if e.Timeout {
		errs = append(errs, ErrTimeout)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// RecordError is one row that is not a usable record. The rest of its page
// was delivered; Raw holds the record's bytes as received, for the
// warehouse's rejected_records table. It matches ErrInvalidRecord.
type RecordError struct {
	Endpoint string          // endpoint name
	Page     int             // page the record came on
	Key      string          // record key: its id or object key when known, else "#<index>"
	Raw      json.RawMessage // the record as received
	Err      error           // what was wrong
}

// Error names the endpoint, page and record and says what was wrong.
func (e *RecordError) Error() string {
	return fmt.Sprintf("decode %s page %d record %s: %v", e.Endpoint, e.Page, e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *RecordError) Unwrap() error { return e.Err }

// Is matches ErrInvalidRecord.
func (e *RecordError) Is(target error) bool { return target == ErrInvalidRecord }

// shapeError is a value of an unexpected type or form inside valid JSON.
type shapeError struct {
	msg  string
	kind error // optional finer class, e.g. ErrTooDeep
}

func (e *shapeError) Error() string { return e.msg }
func (e *shapeError) Unwrap() error { return e.kind }

func shapef(format string, args ...any) error {
	return &shapeError{msg: fmt.Sprintf(format, args...)}
}

// errorClass names the class of err for RequestInfo.ErrorClass and logs.
func errorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrUnauthorized):
		return "unauthorized"
	case errors.Is(err, ErrForbidden):
		return "forbidden"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrBadRequest):
		return "bad_request"
	case errors.Is(err, ErrValidation):
		return "validation"
	case errors.Is(err, ErrDailyQuota):
		return "daily_quota"
	case errors.Is(err, ErrRateLimited):
		return "rate_limited"
	case errors.Is(err, ErrServer):
		return "server"
	case errors.Is(err, ErrUnexpectedStatus):
		return "unexpected_status"
	case errors.Is(err, ErrErrorResponse):
		return "error_response"
	case errors.Is(err, ErrUnreachable):
		return "unreachable"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrNetwork):
		return "network"
	case errors.Is(err, ErrMalformedResponse):
		return "malformed"
	case errors.Is(err, ErrUnexpectedShape):
		return "shape"
	case errors.Is(err, ErrResponseTooLarge):
		return "too_large"
	case errors.Is(err, ErrBudgetExhausted):
		return "budget"
	default:
		return "other"
	}
}

// retryable reports whether a failed attempt may be repeated.
func retryable(err error) bool {
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrServer) ||
		errors.Is(err, ErrNetwork) || errors.Is(err, ErrMalformedResponse)
}

// redactedError is an error whose text held a key: the redacted text, and
// the class sentinels of the original (errors.Is still matches them).
type redactedError struct {
	msg   string
	kinds []error
}

func (e *redactedError) Error() string   { return e.msg }
func (e *redactedError) Unwrap() []error { return e.kinds }

// classSentinels lists the sentinels of this package that err matches.
func classSentinels(err error) []error {
	var out []error
	for _, k := range []error{ErrUnauthorized, ErrForbidden, ErrNotFound, ErrBadRequest, ErrValidation, ErrDailyQuota,
		ErrRateLimited, ErrServer, ErrUnexpectedStatus, ErrErrorResponse, ErrNetwork, ErrUnreachable, ErrTimeout,
		ErrMalformedResponse, ErrUnexpectedShape, ErrResponseTooLarge, ErrBudgetExhausted,
		ErrInvalidRecord, ErrTooDeep, ErrInsecureURL, ErrNotConfigured} {
		if errors.Is(err, k) {
			out = append(out, k)
		}
	}
	return out
}
