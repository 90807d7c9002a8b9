// Package config reads, defaults and checks agencysync's configuration from
// the environment, once: the other packages receive typed values (Config's
// fields) and read no variable themselves. Variable names are a contract:
// scripts, docs and deployment files use them. Secrets also accept
// <NAME>_FILE (the value read from that file, as container secrets do) and
// never appear in logs, errors, panics or help text.
//
// LoadFrom checks every variable that is set, whichever command runs; the
// names some variables refer to (tasks, streams, endpoints, warehouse
// columns) come from the packages that own them through Known, so config
// imports none of them. Whether a variable is present is the command's
// question: Config.Require(Need) asks only for what that command uses.
// A problem is an *Error naming the variable (exit code 2).
package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
	"github.com/sethvargo/go-envconfig"
)

// Config is the whole configuration of agencysync, filled from the environment
// by go-envconfig. The struct tags are the reference: `env` names the variable
// (and its default), `form` the expected form shown in errors and the docs,
// `desc` what it does.
type Config struct {
	// DatabaseURL is the PostgreSQL connection string of the warehouse. Empty
	// starts a private local cluster (demo and tests).
	DatabaseURL Secret `env:"DATABASE_URL" form:"postgres://user:pass@host:5432/db" desc:"PostgreSQL connection string of the warehouse; unset: a private local cluster is started (demo)" secret:"true"`
	// WarehouseSchema is the Postgres schema holding every warehouse table.
	WarehouseSchema string `env:"WAREHOUSE_SCHEMA, default=agency" form:"a plain lowercase identifier of at most 63 characters, e.g. agency" desc:"Postgres schema of the warehouse (two agencies can share a database)"`
	// LocalDataDir is where the private cluster keeps its data when
	// DATABASE_URL is unset (Load fills in the default then; "" when
	// DATABASE_URL is set and the variable is not).
	LocalDataDir string `env:"WAREHOUSE_LOCAL_DIR" form:"a directory path" desc:"data folder of the private cluster started when DATABASE_URL is unset; unset: $XDG_DATA_HOME/agencysync/postgres, else ~/.local/share/agencysync/postgres, and /var/lib/agencysync/postgres as root (the server then runs as the postgres user)"`
	// PGBinDir holds the PostgreSQL programs of the private cluster and of
	// `agencysync psql`; empty: searched for.
	PGBinDir string `env:"PG_BINDIR" form:"a directory holding initdb, postgres and psql" desc:"PostgreSQL programs of the private cluster and of agencysync psql; unset: the newest /usr/lib/postgresql/*/bin, then PATH"`
	// DBStatementTimeout bounds every warehouse statement.
	DBStatementTimeout time.Duration `env:"DB_STATEMENT_TIMEOUT, default=5m" form:"a Go duration, e.g. 5m" desc:"statement_timeout of every warehouse session"`

	// BaseURL is the spec's {base_url}, without /v1.
	BaseURL string `env:"AGENCY_BASE_URL" form:"an absolute http(s) URL without /v1, e.g. https://api.agency.example" desc:"{base_url} of the Agency Data Service, without /v1"`
	// APIKey is the main interface's key, sent as Authorization.
	APIKey Secret `env:"AGENCY_API_KEY" form:"the API token from My Account" desc:"key of the main interface (Authorization header)" secret:"true"`
	// CommsURL is the spec's {communications_url}, without the path.
	CommsURL string `env:"AGENCY_COMMS_URL" form:"an absolute http(s) URL without the path, e.g. https://workflow.agency.example" desc:"{communications_url} of the communications endpoint, without the path"`
	// CommsKey is the communications endpoint's key, sent as X-Workflow-Key.
	CommsKey Secret `env:"AGENCY_COMMS_KEY" form:"the workflow key" desc:"key of the communications endpoint (X-Workflow-Key header)" secret:"true"`
	// CommsDomainID is the domain_id sent to the communications endpoint.
	CommsDomainID int64 `env:"AGENCY_COMMS_DOMAIN_ID" form:"a positive integer, e.g. 1" desc:"domain_id of the communications requests"`
	// CommsUserIDs are the platform users whose communications are synced.
	CommsUserIDs UserIDs `env:"AGENCY_COMMS_USER_IDS" form:"comma-separated ids and ranges, e.g. 1-300,412" desc:"platform user ids whose e-mails are synced"`
	// CommsStartDate is the first day of the communications backfill.
	CommsStartDate Date `env:"AGENCY_COMMS_START_DATE" form:"a date YYYY-MM-DD, e.g. 2024-01-01" desc:"first day of the communications backfill"`
	// CommsLookback is how far before the watermark incremental runs start.
	CommsLookback time.Duration `env:"AGENCY_COMMS_LOOKBACK, default=24h" form:"a positive Go duration, e.g. 24h" desc:"overlap of each incremental communications window before the watermark"`
	// CommsWithMessage is the with_message value of communications requests.
	CommsWithMessage string `env:"AGENCY_COMMS_WITH_MESSAGE, default=0" form:"0, 1, true or false" desc:"with_message of the communications requests (1: include bodies)"`
	// CommsBrandURL is the -brand_url filter of communications requests (empty: all brands).
	CommsBrandURL string `env:"AGENCY_COMMS_BRAND_URL" form:"a brand web address, or empty for all brands" desc:"-brand_url filter of the communications requests"`
	// CommsBackfillWindow splits the backfill into date windows (0: one range).
	CommsBackfillWindow time.Duration `env:"AGENCY_COMMS_BACKFILL_WINDOW, default=0s" form:"a Go duration in whole days, e.g. 720h; 0s for one range" desc:"window of the communications backfill (0s: one range, the fewest requests)"`
	// CommsTZ is the time zone of the communications endpoint's calendar
	// dates (date_start, date_end): reconciliation counts the warehouse's
	// e-mails per day of this zone.
	CommsTZ Location `env:"AGENCY_COMMS_TZ, default=UTC" form:"an IANA time zone, e.g. UTC or Europe/Bucharest" desc:"time zone in which the communications endpoint cuts days (date_start/date_end); reconciliation counts e-mails per day of this zone"`
	// CommsRateLimit gives the communications endpoint its own pace (0: shared).
	CommsRateLimit float64 `env:"AGENCY_COMMS_RATE_LIMIT, default=0" form:"requests per second; 0 shares AGENCY_RATE_LIMIT" desc:"separate pace of the communications endpoint (0: one limiter for both interfaces)"`
	// Paths remaps endpoint paths (endpoint name → path).
	Paths EndpointPaths `env:"AGENCY_PATHS" form:"comma-separated name=path, e.g. brands=/v1/brands,project=/v1/projects/{id}" desc:"remapped endpoint paths (names: the endpoints of the stream declarations, e.g. brands, brand_contacts, project; an unknown name is refused naming the known ones, and so is a path without {id} for a detail or a list asked per entity, or with one for any other)"`
	// PagingPairs is AGENCY_PAGING as written; Paging is what is in force.
	PagingPairs PagingSettings `env:"AGENCY_PAGING" form:"comma-separated endpoint=style[:option=value…], e.g. *=offset:max=100" desc:"how lists page instead of the declared page/per_page up to 1000: endpoint an AGENCY_PATHS list name or * for all of the main interface; style page, offset, cursor or none; options page=, size=, offset=, cursor= (parameter names), max= (largest page size); overrides the field map file's paging: (see docs/paging.md)"`
	// Paging is the paging in force: AGENCY_FIELD_MAP_FILE's paging:
	// entries overridden by AGENCY_PAGING's, keyed by endpoint or "*".
	// Nil: every list pages as declared.
	Paging PagingSettings
	// FieldMapPairs is AGENCY_FIELD_MAP as written; FieldMap is what is in force.
	FieldMapPairs FieldMapPairs `env:"AGENCY_FIELD_MAP" form:"comma-separated table.column=source.path, e.g. projects.name=title,projects.status=state" desc:"source field each named warehouse column is read from, instead of the declared one (overrides AGENCY_FIELD_MAP_FILE pair by pair; see Field mapping)"`
	// FieldMapFile names a YAML file of field mappings (table: {column: path}).
	FieldMapFile string `env:"AGENCY_FIELD_MAP_FILE" form:"a YAML file path; the file maps tables to column: source.path pairs" desc:"the same mapping as AGENCY_FIELD_MAP, from a file (read first; AGENCY_FIELD_MAP overrides its pairs)"`
	// FieldMap is the field mapping in force: AGENCY_FIELD_MAP_FILE's pairs
	// overridden by AGENCY_FIELD_MAP's, keyed "table.column", valued by a
	// source field path (dotted, one level per dot). Nil: every column is
	// read from its declared field.
	FieldMap map[string]string
	// WorkflowID is sent as X-Workflow-Id.
	WorkflowID string `env:"AGENCY_WORKFLOW_ID, default=agencysync" form:"a short name" desc:"X-Workflow-Id of the communications requests"`

	// RateLimit is the pace of requests per second.
	RateLimit float64 `env:"AGENCY_RATE_LIMIT, default=10" form:"a positive number of requests per second, e.g. 10" desc:"requests per second, evenly spaced"`
	// DailyQuota is the number of requests the key may send per quota day.
	DailyQuota int `env:"AGENCY_DAILY_QUOTA, default=10000" form:"a positive integer, e.g. 10000" desc:"requests per day allowed to the key"`
	// QuotaReserve is the share of the daily quota left for other users of the key.
	QuotaReserve Percent `env:"AGENCY_QUOTA_RESERVE, default=5%" form:"a percentage from 0% to 100%, e.g. 5%" desc:"share of the daily quota kept for other users of the key"`
	// QuotaTZ is the time zone whose midnight resets the daily quota.
	QuotaTZ Location `env:"AGENCY_QUOTA_TZ, default=UTC" form:"an IANA time zone, e.g. UTC or Europe/Bucharest" desc:"time zone whose midnight resets the daily quota"`
	// RequestTimeout bounds each HTTP request.
	RequestTimeout time.Duration `env:"AGENCY_REQUEST_TIMEOUT, default=30s" form:"a Go duration, e.g. 30s" desc:"timeout of each HTTP request"`
	// MaxResponseBytes bounds a response body once decompressed and decoded.
	MaxResponseBytes ByteSize `env:"AGENCY_MAX_RESPONSE_BYTES, default=32MiB" form:"a size from 1MiB to 1GiB, in bytes or with KiB, MiB or GiB, e.g. 32MiB" desc:"largest response body accepted, counted after gzip decompression and charset decoding; a larger one fails its stream (exit 1) instead of exhausting memory, and the requests in flight share one memory budget of about this size plus 16MiB (default: 1000 e-mails with bodies at 32KiB each; see docs/hostile-input.md)"`
	// AllowInsecureHTTP permits plain http:// to hosts other than loopback.
	AllowInsecureHTTP bool `env:"AGENCY_ALLOW_INSECURE_HTTP, default=false" form:"true or false" desc:"allow plain http:// to non-loopback hosts"`

	// SyncSchedule is the cron schedule of `agencysync serve`.
	SyncSchedule string `env:"SYNC_SCHEDULE, default=0 2 * * *" form:"a 5-field cron expression, e.g. 0 2 * * *" desc:"when serve runs a sync (cron)"`
	// StreamSchedules gives streams their own cron schedule in serve.
	StreamSchedules StreamSchedules `env:"SYNC_STREAM_SCHEDULES" form:"stream=cron pairs separated by ;, e.g. communications=0 * * * *" desc:"per-stream schedules of serve (the rest use SYNC_SCHEDULE)"`
	// Schedules are serve's schedules in force: SYNC_SCHEDULE for the
	// streams SYNC_STREAM_SCHEDULES does not name, then one per expression
	// of SYNC_STREAM_SCHEDULES.
	Schedules []Schedule
	// Priorities orders the planner's tasks; after Load it names every task
	// (those SYNC_PRIORITIES leaves out follow in their default order).
	Priorities TaskOrder `env:"SYNC_PRIORITIES" form:"comma-separated tasks, e.g. communications-increment,brands,projects,finance,details,communications-backfill,communications-refresh,verify" desc:"order in which the planner spends the daily budget (tasks left out follow in their default order)"`
	// DetailMaxAge is the maximum age of an unchanged brand or project
	// detail: each day refreshes the slice of details whose day it is (an
	// even share, 1/days of them), so every detail is re-fetched at least
	// this often without a day on which they all come due.
	DetailMaxAge time.Duration `env:"SYNC_DETAIL_MAX_AGE, default=2160h" form:"a Go duration, e.g. 2160h (90 days)" desc:"maximum age of a brand's or project's detail whose list entry did not change; a slice is refreshed each day (1/days of them)"`
	// CommsRefreshAge is the most time that passes before a day of the
	// e-mail history is read in full again: each night re-reads the days
	// read longest ago, an even share (1/days of the e-mails), so that late
	// edits of old e-mails (a link to a project, a recipient) land.
	CommsRefreshAge time.Duration `env:"SYNC_COMMS_REFRESH_AGE, default=1440h" form:"a Go duration, e.g. 1440h (60 days)" desc:"maximum age of an e-mail day's last full read: every day of the history is re-read at least this often, a slice each night (1/days of the e-mails, the days read longest ago), so late edits of old e-mails land; finance lists that take updated_since are also listed completely at least this often"`
	// FinanceFullEvery lists finance without updated_since at least this often.
	FinanceFullEvery time.Duration `env:"SYNC_FINANCE_FULL_EVERY, default=168h" form:"a Go duration, e.g. 168h" desc:"list finance completely (to see deletions) at least this often"`
	// MassDeleteShare is the share of a table's live rows a complete
	// listing may soft-delete at once; more waits for the next run's
	// listing to agree.
	MassDeleteShare Percent `env:"SYNC_MASS_DELETE_SHARE, default=20%" form:"a percentage from 0% to 100%, e.g. 20%" desc:"a complete listing that would soft-delete more than this share of a table's live rows (an empty listing of a table that held rows, say) records them as candidates and deletes them only when the next run's listing agrees; the run ends partial meanwhile (see docs/paging.md)"`
	// Prefetch fetches the next page while the current one loads.
	Prefetch bool `env:"SYNC_PREFETCH, default=true" form:"true or false" desc:"fetch the next page while the current one loads (pages wait in the spool under $TMPDIR until committed, so a crash still loses at most the request in flight)"`
	// MaxInFlight bounds the requests in flight at once (0: derived from the rate limit and the answer times).
	MaxInFlight int `env:"SYNC_MAX_IN_FLIGHT, default=0" form:"0, or a number of requests from 1 to 1000" desc:"requests in flight at once for details and communications pages fetched ahead (0: from the rate limit and the answer times measured — 1 while rate × answer time ≤ 1, as at 10/s with answers under 100 ms, else 1.5 × that product rounded up plus one, e.g. 9 at 100/s with 50 ms answers); requests still leave paced, and only with SYNC_PREFETCH and the spool"`
	// ExitIncomplete is the exit code of a command that ended incomplete
	// and resumes on the next run (budget, daily quota, a range left for
	// later); a signal always exits 75.
	ExitIncomplete int `env:"SYNC_EXIT_INCOMPLETE, default=75" form:"75 or 0" desc:"exit code of a run that ended incomplete and resumes on the next run (the day's budget or the service's daily quota spent, a range left for later): 75 (EX_TEMPFAIL), or 0 where the scheduler counts every other code as a failure (the Kubernetes CronJob); sync_runs still says partial, and a run stopped by a signal always exits 75"`
	// AutoMigrate applies pending migrations before run and serve.
	AutoMigrate bool `env:"SYNC_AUTO_MIGRATE, default=true" form:"true or false" desc:"apply pending migrations before run and serve"`
	// HTTPAddr is where serve exposes /healthz, /readyz and /metrics.
	HTTPAddr string `env:"HTTP_ADDR, default=127.0.0.1:9464" form:"host:port, e.g. :9464" desc:"listen address of serve's /healthz, /readyz and /metrics"`
	// NotifyURL receives a JSON POST {"text": ...} when a run fails, ends
	// partial, ends with warnings or recovers (a Slack-compatible webhook).
	NotifyURL Secret `env:"SYNC_NOTIFY_URL" form:"an absolute http(s) URL, e.g. a Slack incoming webhook" desc:"webhook that gets a JSON POST {\"text\": …} when a run fails, ends partial, ends with warnings or recovers; unset: no notifications" secret:"true"`
	// FailOn names the kinds of warnings that make a sync that ended
	// warning exit 1 (a scheduler alerts) instead of 0.
	FailOn FailOn `env:"SYNC_FAIL_ON" form:"comma-separated kinds: warnings, rejects, new_fields" desc:"a run or backfill that ends with warnings of these kinds exits 1 instead of 0: warnings (coverage warnings null_column and rejected_stream, and notes), rejects (open rejected records in the run's streams), new_fields (fields never seen before); unset: warnings exit 0 (see docs/operations.md)"`

	// LogLevel is the minimum level logged.
	LogLevel string `env:"LOG_LEVEL, default=info" form:"debug, info, warn or error" desc:"minimum log level"`
	// LogFormat selects JSON or console logs; auto picks console on a terminal.
	LogFormat string `env:"LOG_FORMAT, default=auto" form:"json, console or auto" desc:"log format (auto: console on a terminal, JSON otherwise)"`
}

// Error is a configuration error: it names the variable and the expected form.
// Callers branch on it (errors.As) to exit with code 2.
type Error struct {
	Variable string
	Problem  string
	Form     string
}

func (e *Error) Error() string {
	if e.Form == "" {
		return fmt.Sprintf("%s: %s", e.Variable, e.Problem)
	}
	return fmt.Sprintf("%s: %s (want %s)", e.Variable, e.Problem, e.Form)
}

// ErrIncompleteKnown means Load was given a Known without the names a
// variable may refer to: a programming error, never the user's.
var ErrIncompleteKnown = errors.New("incomplete Known")

// Environment is what the configuration is read from: the variables, and
// the files that <NAME>_FILE secrets and AGENCY_FIELD_MAP_FILE name.
type Environment struct {
	Lookup   func(string) (string, bool)
	ReadFile func(string) ([]byte, error)
	// Geteuid is the effective user id, which places the private cluster's
	// data folder (root: RootLocalDir); nil: the process's.
	Geteuid func() int
}

var osGeteuid = os.Geteuid

// Load reads the configuration from the process environment; see LoadFrom.
func Load(ctx context.Context, known Known) (*Config, error) {
	return LoadFrom(ctx, Environment{Lookup: os.LookupEnv, ReadFile: os.ReadFile}, known)
}

// LoadFrom parses, defaults and validates every variable that is set, once:
// forms, the names SYNC_PRIORITIES, SYNC_STREAM_SCHEDULES and AGENCY_PATHS
// refer to (against known), and AGENCY_FIELD_MAP_FILE and AGENCY_FIELD_MAP
// (their syntax, then known.FieldMap). A problem is an *Error naming the
// variable. Whether the variables a command needs are present is Require's
// to say, so that a command runs without those it does not use.
func LoadFrom(ctx context.Context, env Environment, known Known) (*Config, error) {
	if err := known.complete(); err != nil {
		return nil, err
	}
	var p problems
	cfg, fromFile := decode(ctx, env, &p)
	p.add(cfg.validate())
	for _, e := range p.list {
		if fromFile[e.Variable] {
			// The value came from <NAME>_FILE: name the variable the user set.
			e.Problem = "the file named by " + e.Variable + "_FILE " + e.Problem
			e.Variable += "_FILE"
		}
	}
	cfg.defaultLocal(env)
	p.add(cfg.resolveNames(known))
	p.add(cfg.loadFieldMap(env.ReadFile, known))
	if err := p.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decode reads every variable into a Config. A value that does not decode
// is recorded in p and decoded again as unset (its default), so that the
// values after it are read too and every such problem is told at once. It
// returns the secrets that were read from their <NAME>_FILE.
func decode(ctx context.Context, env Environment, p *problems) (*Config, map[string]bool) {
	hidden := map[string]bool{}
	for {
		var cfg Config
		l := &secretFileLookuper{lookup: env.Lookup, readFile: env.ReadFile, secrets: secretVariables(), hidden: hidden}
		err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &cfg, Lookuper: l})
		switch {
		case l.err != nil && !hidden[l.failed]:
			p.add(l.err)
			hidden[l.failed] = true
		case err != nil && l.last != "" && !hidden[l.last]:
			p.add(describe(err, l.last))
			hidden[l.last] = true
		case err != nil:
			p.add(fmt.Errorf("load configuration: %w", err))
			return &cfg, l.fromFile
		default:
			return &cfg, l.fromFile
		}
	}
}

// resolveNames checks the names the variables refer to and fills in what
// follows from them: the whole task order and serve's schedules.
func (c *Config) resolveNames(known Known) error {
	var p problems
	if order, err := c.Priorities.complete(known.Tasks); err != nil {
		p.field("Priorities", err.Error())
	} else {
		c.Priorities = order
	}
	if err := c.StreamSchedules.check(known.Streams); err != nil {
		p.field("StreamSchedules", err.Error())
	} else {
		c.Schedules = schedules(c.SyncSchedule, c.StreamSchedules, known.Streams)
	}
	if err := c.Paths.check(known.Endpoints, known.Entity); err != nil {
		p.field("Paths", err.Error())
	}
	if err := c.PagingPairs.check(known.PagingLists, known.FixedPaging); err != nil {
		p.field("PagingPairs", err.Error())
	}
	return p.err()
}

// loopbackHost reports whether host is localhost or a loopback address: plain
// http:// to it never leaves the machine.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validPort reports whether p is a port number (0 to 65535).
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535
}

var identifierRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidSchema reports whether name is a plain identifier usable as the warehouse
// schema: a lowercase letter or underscore, then lowercase letters, digits or
// underscores, at most 63 characters, and not a reserved pg_ prefix.
func ValidSchema(name string) bool {
	return identifierRE.MatchString(name) && !strings.HasPrefix(name, "pg_")
}

func (c *Config) validate() error {
	var p problems
	c.validateService(&p)
	c.validateLimits(&p)
	c.validateForms(&p)
	return p.err()
}

// validateService checks the keys, the warehouse and the addresses.
func (c *Config) validateService(p *problems) {
	for _, k := range []struct {
		field string
		value Secret
	}{{"APIKey", c.APIKey}, {"CommsKey", c.CommsKey}} {
		p.add(checkKey(k.field, k.value.Value()))
	}
	if !ValidSchema(c.WarehouseSchema) {
		p.field("WarehouseSchema", fmt.Sprintf("%q is not a plain identifier", c.WarehouseSchema))
	}
	if c.DatabaseURL.Value() != "" {
		u, err := url.Parse(c.DatabaseURL.Value())
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			// The URL may hold a password: never echo it.
			p.field("DatabaseURL", "not a postgres:// URL")
		}
	}
	for _, f := range []struct{ field, value string }{{"BaseURL", c.BaseURL}, {"CommsURL", c.CommsURL}} {
		if f.value != "" {
			p.add(c.checkServiceURL(f.field, f.value))
		}
	}
	if n := c.NotifyURL.Value(); n != "" {
		// The URL is a secret (a webhook's path is its key): never echo it.
		u, err := url.Parse(n)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			p.field("NotifyURL", "not an absolute http(s) URL")
		case u.Scheme == "http" && !c.AllowInsecureHTTP && !loopbackHost(u.Hostname()):
			p.field("NotifyURL", "plain http:// to a host other than loopback (use https://, or set AGENCY_ALLOW_INSECURE_HTTP=true)")
		}
	}
	if c.CommsBrandURL != "" {
		u, err := url.Parse(c.CommsBrandURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			p.field("CommsBrandURL", fmt.Sprintf("%q is not an absolute http(s) URL without credentials", redactURL(c.CommsBrandURL)))
		}
	}
	if _, port, err := net.SplitHostPort(c.HTTPAddr); err != nil || !validPort(port) {
		p.field("HTTPAddr", fmt.Sprintf("%q is not host:port", c.HTTPAddr))
	}
}

// checkServiceURL checks AGENCY_BASE_URL or AGENCY_COMMS_URL (field).
func (c *Config) checkServiceURL(field, value string) error {
	u, err := url.Parse(value)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
		return fieldError(field, fmt.Sprintf("%q is not an absolute http(s) URL without credentials", redactURL(value)))
	case field == "BaseURL" && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1"):
		return fieldError(field, "must not end with /v1 (the client adds it)")
	case u.Scheme == "http" && !c.AllowInsecureHTTP && !loopbackHost(u.Hostname()):
		return fieldError(field, fmt.Sprintf("plain http:// to %s would send the key unencrypted; use https://, or set AGENCY_ALLOW_INSECURE_HTTP=true", u.Host))
	}
	return nil
}

// validateLimits checks the numbers and durations.
func (c *Config) validateLimits(p *problems) {
	if c.CommsDomainID < 0 {
		p.field("CommsDomainID", "must not be negative")
	}
	if c.RateLimit <= 0 || c.RateLimit > 1000 {
		p.field("RateLimit", fmt.Sprintf("%v is out of range", c.RateLimit))
	}
	if c.DailyQuota <= 0 {
		p.field("DailyQuota", fmt.Sprintf("%d is not positive", c.DailyQuota))
	}
	if c.CommsLookback <= 0 {
		// The engine reads a zero lookback as its default (24h): refuse
		// it rather than silently use a day.
		p.field("CommsLookback", "must be positive")
	}
	if c.CommsBackfillWindow < 0 || c.CommsBackfillWindow%(24*time.Hour) != 0 {
		p.field("CommsBackfillWindow", "must be whole days")
	}
	if c.CommsRateLimit < 0 || c.CommsRateLimit > 1000 {
		p.field("CommsRateLimit", fmt.Sprintf("%v is out of range", c.CommsRateLimit))
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > 1000 {
		p.field("MaxInFlight", fmt.Sprintf("%d is out of range", c.MaxInFlight))
	}
	if c.ExitIncomplete != 0 && c.ExitIncomplete != 75 {
		p.field("ExitIncomplete", fmt.Sprintf("%d is not allowed", c.ExitIncomplete))
	}
	for _, d := range []struct {
		field string
		value time.Duration
	}{{"DetailMaxAge", c.DetailMaxAge}, {"FinanceFullEvery", c.FinanceFullEvery}, {"RequestTimeout", c.RequestTimeout}} {
		if d.value <= 0 {
			p.field(d.field, "must be positive")
		}
	}
	if c.MaxResponseBytes < 1<<20 || c.MaxResponseBytes > 1<<30 {
		p.field("MaxResponseBytes", fmt.Sprintf("%s is out of range", c.MaxResponseBytes))
	}
	if c.CommsRefreshAge <= 0 {
		p.field("CommsRefreshAge", "must be positive")
	}
	if c.DBStatementTimeout < 0 {
		p.field("DBStatementTimeout", "must not be negative")
	}
}

// validateForms checks the values taken from a fixed set or a grammar.
func (c *Config) validateForms(p *problems) {
	for _, f := range []struct {
		field, value, what string
		allowed            []string
	}{
		{"CommsWithMessage", c.CommsWithMessage, "allowed", []string{"0", "1", "true", "false"}},
		{"LogLevel", c.LogLevel, "a level", []string{"debug", "info", "warn", "error"}},
		{"LogFormat", c.LogFormat, "a format", []string{"json", "console", "auto"}},
	} {
		if !slices.Contains(f.allowed, f.value) {
			if f.what == "allowed" {
				p.field(f.field, fmt.Sprintf("%q is not allowed", f.value))
			} else {
				p.field(f.field, fmt.Sprintf("%q is not %s", f.value, f.what))
			}
		}
	}
	if _, err := cron.ParseStandard(c.SyncSchedule); err != nil {
		p.field("SyncSchedule", fmt.Sprintf("%q is not a cron expression", c.SyncSchedule))
	}
	if c.WorkflowID == "" {
		p.field("WorkflowID", "must not be empty")
	}
}

// checkKey refuses a key that holds a control character (a line break, a
// tab, NUL, DEL, ...) or white space (including surrounding spaces and
// Unicode spaces such as U+00A0): such a key is a paste or file mistake, and
// HTTP refuses it in a header only at the first request, after retries that
// count against the quota. The error names the variable, never the value.
func checkKey(field, v string) error {
	if !utf8.ValidString(v) {
		return fieldError(field, "is not valid UTF-8")
	}
	for i, r := range v {
		what := ""
		switch {
		case unicode.IsControl(r):
			what = "a control character"
		case unicode.IsSpace(r):
			what = "white space"
		default:
			continue
		}
		return fieldError(field, fmt.Sprintf("contains %s at character %d (a line break or space from a paste or a file?); "+
			"the key must be one word of printable characters", what, utf8.RuneCountInString(v[:i])+1))
	}
	return nil
}

// Need is a set of variables a command uses beyond the warehouse's. Each
// command asks only for what it calls (cli), so that a missing secret fails
// only the commands that use it.
type Need uint

// What a command may need.
const (
	// NeedBaseURL: AGENCY_BASE_URL, the main interface, whose answers (even
	// the keyless clock probe) tell the service's clock.
	NeedBaseURL Need = 1 << iota
	// NeedAPIKey: AGENCY_API_KEY, the main interface's key.
	NeedAPIKey
	// NeedComms: AGENCY_COMMS_URL, AGENCY_COMMS_KEY, AGENCY_COMMS_DOMAIN_ID
	// and AGENCY_COMMS_USER_IDS, the communications requests.
	NeedComms
	// NeedStartDate: AGENCY_COMMS_START_DATE, where the e-mail history (its
	// backfill, its estimate, its verification) starts.
	NeedStartDate

	// NeedMain is the main interface: its address and key.
	NeedMain = NeedBaseURL | NeedAPIKey
	// NeedSync is what a sync of every stream uses.
	NeedSync = NeedMain | NeedComms | NeedStartDate
)

// Require checks that every variable of need is set, naming every one
// missing (an *Error, or an *Errors of them: exit 2).
func (c *Config) Require(need Need) error {
	checks := []struct {
		need    Need
		field   string
		missing bool
	}{
		{NeedBaseURL, "BaseURL", c.BaseURL == ""},
		{NeedAPIKey, "APIKey", c.APIKey.Value() == ""},
		{NeedComms, "CommsURL", c.CommsURL == ""},
		{NeedComms, "CommsKey", c.CommsKey.Value() == ""},
		{NeedComms, "CommsDomainID", c.CommsDomainID == 0},
		{NeedComms, "CommsUserIDs", len(c.CommsUserIDs) == 0},
		{NeedStartDate, "CommsStartDate", c.CommsStartDate.IsZero()},
	}
	var p problems
	for _, k := range checks {
		if need&k.need != 0 && k.missing {
			p.field(k.field, "is required")
		}
	}
	return p.err()
}

// Secrets returns the values of every secret that is set, so that log and
// error redaction can be checked against them.
func (c *Config) Secrets() []string {
	var out []string
	for _, s := range []Secret{c.DatabaseURL, c.APIKey, c.CommsKey, c.NotifyURL} {
		if s.Value() != "" {
			out = append(out, s.Value())
		}
	}
	return out
}

// RedactionSecrets returns what logs and errors must never show, in the
// form a logging.Redactor matches pieces of: the two keys, and the
// password of DATABASE_URL (not the whole URL: its host and database name
// are no secret, and redacting every 8 characters of it would garble
// ordinary text such as "postgres://").
func (c *Config) RedactionSecrets() []string {
	var out []string
	for _, s := range []Secret{c.APIKey, c.CommsKey} {
		if s.Value() != "" {
			out = append(out, s.Value())
		}
	}
	if u, err := url.Parse(c.DatabaseURL.Value()); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw)
		}
	}
	return out
}

// Variable describes one configuration variable, from the Config struct tags.
type Variable struct {
	Name    string // environment variable
	Default string // default value, empty if none
	Form    string // expected form
	Desc    string // what it does
	Secret  bool   // also read from <Name>_FILE; never printed
	Field   string // Go field name
}

// Variables lists every configuration variable in struct order. The docs'
// configuration table and the deployment checks are generated from it.
func Variables() []Variable { return variablesOf(reflect.TypeOf(Config{})) }

// variablesOf lists the variables of struct type t's fields that carry an
// env tag, in struct order.
func variablesOf(t reflect.Type) []Variable {
	out := make([]Variable, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, def := parseEnvTag(f.Tag.Get("env"))
		if name == "" {
			continue
		}
		out = append(out, Variable{
			Name: name, Default: def, Form: f.Tag.Get("form"), Desc: f.Tag.Get("desc"),
			Secret: f.Tag.Get("secret") == "true", Field: f.Name,
		})
	}
	return out
}

func parseEnvTag(tag string) (name, def string) {
	name, rest, _ := strings.Cut(tag, ",")
	for _, opt := range strings.Split(rest, ",") {
		opt = strings.TrimSpace(opt)
		if v, ok := strings.CutPrefix(opt, "default="); ok {
			def = v
		}
	}
	return strings.TrimSpace(name), def
}

func secretVariables() map[string]bool {
	out := map[string]bool{}
	for _, v := range Variables() {
		if v.Secret {
			out[v.Name] = true
		}
	}
	return out
}

// variableOf is Config's variable of struct field field.
func variableOf(field string) Variable { return variableIn(Variables(), field, byField) }

// variableIn returns the variable of list whose key (byName or byField) is
// want; one named want when none is.
func variableIn(list []Variable, want string, key func(Variable) string) Variable {
	for _, v := range list {
		if key(v) == want {
			return v
		}
	}
	return Variable{Name: want}
}

func byName(v Variable) string  { return v.Name }
func byField(v Variable) string { return v.Field }

func fieldError(field, problem string) error {
	v := variableOf(field)
	return &Error{Variable: v.Name, Problem: problem, Form: v.Form}
}

// describe turns an envconfig error into an Error naming the variable: the one
// looked up last, since envconfig decodes each field right after looking it up.
// envconfig's own text is dropped: it may quote the value.
func describe(err error, lastKey string) error {
	var v Variable
	for _, c := range Variables() {
		if c.Name == lastKey {
			v = c
		}
	}
	if v.Name == "" {
		return fmt.Errorf("load configuration: %w", err)
	}
	problem := "invalid value"
	var ve *valueError
	if errors.As(err, &ve) && !v.Secret {
		problem = ve.problem
	}
	return &Error{Variable: v.Name, Problem: problem, Form: v.Form}
}

// secretFileLookuper reads the environment, and for secrets also <NAME>_FILE.
type secretFileLookuper struct {
	lookup   func(string) (string, bool)
	readFile func(string) ([]byte, error)
	secrets  map[string]bool
	err      error
	failed   string          // the key whose _FILE failed (err)
	hidden   map[string]bool // keys read as unset: their value was refused already
	last     string          // the key looked up last
	fromFile map[string]bool // secrets read from <NAME>_FILE
}

func (l *secretFileLookuper) Lookup(key string) (string, bool) {
	l.last = key
	if l.hidden[key] {
		return "", false
	}
	v, ok := l.lookup(key)
	if !l.secrets[key] {
		return v, ok
	}
	path, fileOK := l.lookup(key + "_FILE")
	if !fileOK || path == "" {
		return v, ok
	}
	if ok && v != "" {
		l.fail(key, &Error{Variable: key + "_FILE", Problem: "set together with " + key, Form: "only one of " + key + " and " + key + "_FILE"})
		return "", false
	}
	b, err := l.readFile(path)
	if err != nil {
		l.fail(key, &Error{Variable: key + "_FILE", Problem: fmt.Sprintf("cannot read %q", path), Form: "a readable file holding the value"})
		return "", false
	}
	if l.fromFile == nil {
		l.fromFile = map[string]bool{}
	}
	l.fromFile[key] = true
	return strings.TrimRight(string(b), "\r\n"), true
}

func (l *secretFileLookuper) fail(key string, err error) {
	if l.err == nil {
		l.err, l.failed = err, key
	}
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if i := strings.Index(s, "@"); i >= 0 {
			return "…" + s[i:]
		}
		return s
	}
	u.User = url.User("REDACTED")
	return u.String()
}

// MarkdownTable renders the configuration reference as the Markdown table
// docs/configuration.md embeds (a test keeps the two equal).
func MarkdownTable() string { return markdownTable(Variables()) }

// markdownTable renders vars as a reference table: name, default, form and
// what it does ("|" escaped); a secret names its _FILE variable too.
func markdownTable(vars []Variable) string {
	var b strings.Builder
	b.WriteString("| variable | default | form | what it does |\n|---|---|---|---|\n")
	for _, v := range vars {
		def := "—"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		desc := strings.ReplaceAll(v.Desc, "|", "\\|")
		if v.Secret {
			desc += "; secret, also `" + v.Name + "_FILE`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Name, def, strings.ReplaceAll(v.Form, "|", "\\|"), desc)
	}
	return b.String()
}
