package sandbox

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Options configures a sandbox. The zero value is not usable: start from
// DefaultOptions and change what a test or a run needs. Two sandboxes built
// from equal Options serve byte-identical responses to equal requests.
type Options struct {
	// Seed drives every generated value; a different seed gives a different dataset.
	Seed int64
	// Brands is the number of brands of the agency (1..65535).
	Brands int
	// ProjectsPerBrand is the number of projects each brand has (0..1000).
	ProjectsPerBrand int
	// Users is the number of platform users; their ids are 1..Users.
	Users int
	// Emails is the number of e-mails generated at start. Every e-mail involves
	// at least one platform user, so it is also the total that a query for all
	// users over all dates matches.
	Emails int
	// HistoryDays is the length of the generated history, ending at Start.
	HistoryDays int
	// Start is the initial value of the sandbox clock. The clock moves only by
	// admin calls, never with wall time, so equal options give equal data.
	Start time.Time
	// DomainID is the domain the generated e-mails belong to; a communications
	// request for another domain_id matches nothing.
	DomainID int64
	// CommsDayOffset is where the communications endpoint cuts its calendar
	// days: date_start and date_end are dates of the fixed zone UTC+offset
	// (within -14h..+14h; 0: UTC days). The twist comms_day_offset changes
	// it at run time.
	CommsDayOffset time.Duration

	// APIKey is this agency's key on the main interface (header Authorization).
	APIKey string
	// CommsKey is the key of the communications endpoint (header X-Workflow-Key).
	CommsKey string
	// ForeignKey is another agency's valid key: 403 on this agency's data.
	// Empty disables it.
	ForeignKey string
	// RevokedKey is a key that was regenerated away: 401 like any unknown key.
	// It exists so that tests can name it; empty disables it.
	RevokedKey string
	// AdminToken guards the /_sandbox/ admin API (header X-Admin-Token).
	// Empty disables the admin API (every admin path answers 404).
	AdminToken string

	// Variants switches response shapes to tolerated variants; see Variants().
	Variants []string

	// Rate is the number of requests accepted in any sliding window of one
	// second (see README for non-integer rates).
	Rate float64
	// DailyQuota is the number of requests accepted per quota day.
	DailyQuota int
	// QuotaTZ is the time zone whose midnight (on the sandbox clock) resets
	// the daily quota; nil means UTC.
	QuotaTZ *time.Location
	// MaxPerPage caps per_page: a larger ask is answered with this value.
	MaxPerPage int
	// LimitsScope is "shared" (the communications endpoint counts against the
	// main interface's rate and quota) or "separate" (it has its own).
	LimitsScope string
	// NoLimits disables the rate limit and the daily quota (requests are still
	// counted in the stats).
	NoLimits bool

	// Faults are the rates of injected faults.
	Faults Faults
	// Latency is added to every response of the two data listeners.
	Latency time.Duration
	// Jitter adds a uniformly drawn extra delay in [0, Jitter) to every response.
	Jitter time.Duration
	// SlowDelay is how long a request chosen by the slow fault waits.
	SlowDelay time.Duration
	// BadRecordRate is the share (0..1) of records, chosen deterministically by
	// id, that are served as valid JSON with wrong content.
	BadRecordRate float64

	// Logger receives the sandbox's logs; nil means no logging.
	Logger *zap.Logger
}

// Faults holds the rate (0..1) of each injected fault. One uniform draw per
// request picks at most one fault, so the rates add up and their sum must not
// exceed 1.
type Faults struct {
	// Err500 answers 500 with the spec's body.
	Err500 float64 `json:"fault_500"`
	// HTML502 answers 502 with an HTML page, as a proxy would.
	HTML502 float64 `json:"fault_502_html"`
	// Err503 answers 503 with a JSON error body and Retry-After.
	Err503 float64 `json:"fault_503"`
	// Truncate answers 200 with the body cut in the middle of the JSON.
	Truncate float64 `json:"fault_truncate"`
	// Slow waits Options.SlowDelay before answering normally.
	Slow float64 `json:"fault_slow"`
	// Drop closes the connection without any response.
	Drop float64 `json:"fault_drop"`
	// Spurious429 answers 429 "Rate limit exceeded" although the rate is respected.
	Spurious429 float64 `json:"fault_429"`
}

func (f Faults) sum() float64 {
	return f.Err500 + f.HTML502 + f.Err503 + f.Truncate + f.Slow + f.Drop + f.Spurious429
}

func (f Faults) validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{
		{"fault_500", f.Err500}, {"fault_502_html", f.HTML502}, {"fault_503", f.Err503},
		{"fault_truncate", f.Truncate}, {"fault_slow", f.Slow}, {"fault_drop", f.Drop},
		{"fault_429", f.Spurious429},
	} {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return fmt.Errorf("validate faults: %s must be within 0..1, got %v", r.name, r.v)
		}
	}
	if s := f.sum(); s > 1+1e-9 {
		return fmt.Errorf("validate faults: the fault rates add up to %v, more than 1", s)
	}
	return nil
}

// Limits scopes accepted by Options.LimitsScope.
const (
	ScopeShared   = "shared"
	ScopeSeparate = "separate"
)

// DefaultOptions returns realistic defaults: 40 brands of 15 projects, 300
// platform users, 20 000 e-mails over 730 days ending 2026-11-01T00:00:00Z,
// the spec's limits (10 requests/s, 10 000 requests/day, 1000 rows/request),
// no faults and the admin API disabled.
func DefaultOptions() Options {
	return Options{
		Seed:             1,
		Brands:           40,
		ProjectsPerBrand: 15,
		Users:            300,
		Emails:           20000,
		HistoryDays:      730,
		Start:            time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		DomainID:         1,
		APIKey:           "sandbox-api-key",
		CommsKey:         "sandbox-comms-key",
		ForeignKey:       "sandbox-foreign-key",
		RevokedKey:       "sandbox-revoked-key",
		Rate:             10,
		DailyQuota:       10000,
		QuotaTZ:          time.UTC,
		MaxPerPage:       1000,
		LimitsScope:      ScopeShared,
		SlowDelay:        35 * time.Second,
	}
}

// SmallOptions is the small agency the tests around the engine run against:
// 4 brands, 12 projects, 20 users and 2500 e-mails over 60 days, without
// rate limits, the admin API open with the token "admin".
func SmallOptions() Options {
	o := DefaultOptions()
	o.Brands, o.ProjectsPerBrand, o.Users, o.Emails, o.HistoryDays = 4, 3, 20, 2500, 60
	o.NoLimits = true
	o.AdminToken = "admin"
	return o
}

// maxDayOffset bounds Options.CommsDayOffset: the zones in use lie within
// UTC-12 and UTC+14.
const maxDayOffset = 14 * time.Hour

// maxEmails bounds Options.Emails plus appended e-mails (indexes are uint32).
const maxEmails = 50_000_000

func (o *Options) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Brands < 1 || o.Brands > 65535 {
		bad("brands must be within 1..65535, got %d", o.Brands)
	}
	if o.ProjectsPerBrand < 0 || o.ProjectsPerBrand > 1000 {
		bad("projects per brand must be within 0..1000, got %d", o.ProjectsPerBrand)
	}
	if o.Users < 1 || o.Users > 1_000_000 {
		bad("users must be within 1..1000000, got %d", o.Users)
	}
	if o.Emails < 0 || o.Emails > maxEmails {
		bad("emails must be within 0..%d, got %d", maxEmails, o.Emails)
	}
	if o.HistoryDays < 1 || o.HistoryDays > 36500 {
		bad("history days must be within 1..36500, got %d", o.HistoryDays)
	}
	if o.Start.IsZero() {
		bad("start must be set")
	}
	if o.CommsDayOffset < -maxDayOffset || o.CommsDayOffset > maxDayOffset {
		bad("comms day offset must be within -14h..+14h, got %s", o.CommsDayOffset)
	}
	if o.DomainID < 1 {
		bad("domain id must be positive, got %d", o.DomainID)
	}
	if o.APIKey == "" {
		bad("api key must not be empty")
	}
	if o.CommsKey == "" {
		bad("comms key must not be empty")
	}
	for _, k := range []struct{ name, v string }{{"foreign key", o.ForeignKey}, {"revoked key", o.RevokedKey}} {
		if k.v != "" && (k.v == o.APIKey || k.v == o.CommsKey) {
			bad("%s must differ from the api and comms keys", k.name)
		}
	}
	if o.ForeignKey != "" && o.ForeignKey == o.RevokedKey {
		bad("foreign key and revoked key must differ")
	}
	if !o.NoLimits && (math.IsNaN(o.Rate) || o.Rate <= 0) {
		bad("rate must be positive, got %v", o.Rate)
	}
	if !o.NoLimits && o.DailyQuota < 1 {
		bad("daily quota must be positive, got %d", o.DailyQuota)
	}
	if o.MaxPerPage < 1 {
		bad("max per page must be positive, got %d", o.MaxPerPage)
	}
	switch o.LimitsScope {
	case "":
		o.LimitsScope = ScopeShared
	case ScopeShared, ScopeSeparate:
	default:
		bad("limits scope must be %q or %q, got %q", ScopeShared, ScopeSeparate, o.LimitsScope)
	}
	if o.QuotaTZ == nil {
		o.QuotaTZ = time.UTC
	}
	if err := o.Faults.validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Latency < 0 || o.Jitter < 0 || o.SlowDelay < 0 {
		bad("latency, jitter and slow delay must not be negative")
	}
	if math.IsNaN(o.BadRecordRate) || o.BadRecordRate < 0 || o.BadRecordRate > 1 {
		bad("bad record rate must be within 0..1, got %v", o.BadRecordRate)
	}
	if _, err := parseVariants(o.Variants); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("validate options: %w", err)
	}
	return nil
}

// VariantInfo names and describes one tolerated response variant.
type VariantInfo struct {
	Name        string
	Description string
}

// Variant names accepted in Options.Variants.
const (
	VariantBareArray          = "bare-array"
	VariantMetaPaging         = "meta-paging"
	VariantPaginationPaging   = "pagination-paging"
	VariantNoPaging           = "no-paging"
	VariantRowsShape          = "rows-shape"
	VariantRowsArray          = "rows-array"
	VariantUnwrapped          = "unwrapped"
	VariantWrapped            = "wrapped"
	VariantNumericIDs         = "numeric-ids"
	VariantStringMoney        = "string-money"
	VariantRecipientsArray    = "recipients-array"
	VariantFromObject         = "from-object"
	VariantEmptyRowsArray     = "empty-rows-array"
	VariantEmptyAsObject      = "empty-as-object"
	VariantSmallPage          = "small-page"
	VariantHasAttachments     = "has-attachments-variants"
	VariantIgnoreUpdatedSince = "ignore-updated-since"
	VariantOutsiderRecipients = "outsider-recipients"
	VariantRenamedFields      = "renamed-fields"
	VariantPHPFalse           = "php-false"
	VariantPHPStrings         = "php-strings"
	VariantPHPEmptyArray      = "php-empty-array"
	VariantPHPPaginator       = "php-paginator"
	VariantPHPResource        = "php-resource"
	VariantPHP422             = "php-422"
	VariantPHP                = "php"
)

// smallPageCap is the per_page cap of the small-page variant.
const smallPageCap = 100

// Variants lists every variant the sandbox can serve, in a stable order.
func Variants() []VariantInfo {
	return append([]VariantInfo{
		{VariantBareArray, "main lists are a bare top-level JSON array, without paging fields"},
		{VariantMetaPaging, `main lists carry their paging fields under "meta"`},
		{VariantPaginationPaging, `main lists carry their paging fields under "pagination"`},
		{VariantNoPaging, `main lists are {"data":[...]} without paging fields`},
		{VariantRowsShape, `main lists use the communications shape {"data":{"rows":{"<key>":{...}},"total":...}}`},
		{VariantRowsArray, `main lists use {"data":{"rows":[...],"total":...}}`},
		{VariantUnwrapped, "brand list elements are bare, not wrapped in brand_info"},
		{VariantWrapped, "every other list element is wrapped in <thing>_info (project_info, invoice_info, ...)"},
		{VariantNumericIDs, "identifiers are JSON numbers instead of strings (main interface and e-mail brand_id/project_id)"},
		{VariantStringMoney, `amounts are JSON strings ("1250.50") instead of numbers`},
		{VariantRecipientsArray, "to/cc/bcc are JSON arrays of user objects instead of objects keyed by user id"},
		{VariantFromObject, "from is an object keyed by platform user id (outsiders by e-mail address) instead of an array"},
		{VariantEmptyRowsArray, `communications rows is [] instead of {} when the page is empty`},
		{VariantEmptyAsObject, `an empty collection is {} where an array is expected (lists, team, empty to/cc/bcc)`},
		{VariantSmallPage, fmt.Sprintf("per_page is capped at %d (or max-per-page if lower) and answered as such", smallPageCap)},
		{VariantHasAttachments, "has_attachments is 1 or true when there are attachments, 0 or null otherwise"},
		{VariantIgnoreUpdatedSince, "updated_since is ignored: lists return older records too"},
		{VariantOutsiderRecipients, "beyond the assumptions doc: outsiders also receive e-mails, keyed in to/cc by their lower-cased e-mail address"},
		{VariantRenamedFields, "beyond the assumptions doc: projects, contacts and invoices name their fields differently (title, state, due_date, budget_total, ...)"},
		{VariantPHPFalse, "false instead of null for a missing value (strings, numbers, ids, instants, an empty to/cc/bcc)"},
		{VariantPHPStrings, `numbers as strings: amounts "1000.50", counts and sizes "42", flags "1"/"0", paging fields "3"`},
		{VariantPHPEmptyArray, `[] where an empty object is expected: empty rows, and the empty custom_fields object of projects and brands`},
		{VariantPHPPaginator, "main lists in the Laravel paginator envelope: paging fields beside data with first_page_url, next_page_url, links, from, to, ..."},
		{VariantPHPResource, "main lists in the Laravel resource envelope: paging fields under meta, page URLs under links"},
		{VariantPHP422, `a bad parameter answers 422 {"message":...,"errors":{"<field>":[...]}} instead of 400`},
		{VariantPHP, "all PHP encoder habits together: php-false, php-strings, php-empty-array, php-paginator and php-422"},
	}, pagingVariants()...)
}

// variantSet is the parsed form of Options.Variants.
type variantSet struct {
	listShape          string // "" (canonical) or one of the list-shape variant names
	unwrapped          bool
	wrapped            bool
	numericIDs         bool
	stringMoney        bool
	recipientsArray    bool
	fromObject         bool
	emptyRowsArray     bool
	emptyAsObject      bool
	smallPage          bool
	hasAttachments     bool
	ignoreUpdatedSince bool
	outsiderRecipients bool
	renamed            bool
	phpFalse           bool
	phpStrings         bool
	phpEmptyArray      bool
	php422             bool
}

func parseVariants(names []string) (variantSet, error) {
	var v variantSet
	setShape := func(n string) error {
		if v.listShape != "" && v.listShape != n {
			return fmt.Errorf("parse variants: %q and %q both set the list shape", v.listShape, n)
		}
		v.listShape = n
		return nil
	}
	for _, raw := range names {
		n := strings.TrimSpace(raw)
		switch n {
		case VariantBareArray, VariantMetaPaging, VariantPaginationPaging, VariantNoPaging, VariantRowsShape, VariantRowsArray,
			VariantPHPPaginator, VariantPHPResource:
			if err := setShape(n); err != nil {
				return v, err
			}
		case VariantOffsetPaging, VariantCursorPaging, VariantLinkPaging, VariantSilentCap, VariantIgnorePage:
			if err := setShape(n); err != nil {
				return v, err
			}
		case VariantPHP:
			if err := setShape(VariantPHPPaginator); err != nil {
				return v, fmt.Errorf("%w (php includes php-paginator)", err)
			}
			v.phpFalse, v.phpStrings, v.phpEmptyArray, v.php422 = true, true, true, true
		case VariantRenamedFields:
			v.renamed = true
		case VariantPHPFalse:
			v.phpFalse = true
		case VariantPHPStrings:
			v.phpStrings = true
		case VariantPHPEmptyArray:
			v.phpEmptyArray = true
		case VariantPHP422:
			v.php422 = true
		case VariantUnwrapped:
			v.unwrapped = true
		case VariantWrapped:
			v.wrapped = true
		case VariantNumericIDs:
			v.numericIDs = true
		case VariantStringMoney:
			v.stringMoney = true
		case VariantRecipientsArray:
			v.recipientsArray = true
		case VariantFromObject:
			v.fromObject = true
		case VariantEmptyRowsArray:
			v.emptyRowsArray = true
		case VariantEmptyAsObject:
			v.emptyAsObject = true
		case VariantSmallPage:
			v.smallPage = true
		case VariantHasAttachments:
			v.hasAttachments = true
		case VariantIgnoreUpdatedSince:
			v.ignoreUpdatedSince = true
		case VariantOutsiderRecipients:
			v.outsiderRecipients = true
		default:
			return v, fmt.Errorf("parse variants: unknown variant %q", raw)
		}
	}
	return v, nil
}
