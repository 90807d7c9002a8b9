package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
	"go.yaml.in/yaml/v3"
)

// FleetSettings are the settings of a fleet worker (agencysync fleet serve,
// fleet status), from its own environment: where the agencies are declared,
// where the job queue lives and how the worker shares its time. Every
// agency's own configuration comes from FLEET_FILE (FleetFile.Config).
type FleetSettings struct {
	// File is the YAML file that declares the agencies.
	File string `env:"FLEET_FILE" form:"a YAML file path, e.g. /etc/agencysync/fleet.yaml" desc:"the agencies of a fleet worker: per agency a name, its warehouse schema and its variables (secrets only as *_FILE); re-read when it changes and on SIGHUP"`
	// Schema holds the job queue (River's tables) every worker shares.
	Schema string `env:"FLEET_SCHEMA, default=agencysync_fleet" form:"a plain lowercase identifier, e.g. agencysync_fleet" desc:"Postgres schema of the fleet's job queue (River), shared by every worker of the fleet; no agency may use it"`
	// Concurrency bounds the agencies one worker syncs at once.
	Concurrency int `env:"FLEET_CONCURRENCY, default=4" form:"a number from 1 to 100" desc:"agencies one worker syncs at once, each paced by its own rate limit"`
	// JobTimeout is the longest one job syncs before it hands the agency
	// back to the queue (resumed at once, by any worker, from its checkpoint).
	JobTimeout time.Duration `env:"FLEET_JOB_TIMEOUT, default=1h" form:"a Go duration of at least 10s, e.g. 1h" desc:"longest stretch one worker syncs an agency before the sync goes back to the queue and resumes from its checkpoint (other agencies waiting go first)"`
	// RescueAfter is how long a job may run before it is presumed lost (its
	// worker died) and run again elsewhere; 0: JobTimeout + 5m.
	RescueAfter time.Duration `env:"FLEET_RESCUE_AFTER, default=0s" form:"a Go duration longer than FLEET_JOB_TIMEOUT by at least 10s; 0s for FLEET_JOB_TIMEOUT + 5m" desc:"how long a sync may hold its job before the fleet presumes its worker dead (killed, machine lost) and resumes the agency on another worker"`
	// QuotaRecheck caps how long an agency whose daily quota is spent waits
	// before the service's clock is read again (one keyless request).
	QuotaRecheck time.Duration `env:"FLEET_QUOTA_RECHECK, default=1h" form:"a Go duration of at least 1s, e.g. 1h" desc:"an agency whose daily quota is spent waits for the service's next quota day, reading the service's clock again at least this often (a keyless request)"`
	// WatchInterval is how often FLEET_FILE and the agencies' key files
	// are read for changes.
	WatchInterval time.Duration `env:"FLEET_WATCH_INTERVAL, default=10s" form:"a Go duration of at least 1s, e.g. 10s" desc:"how often FLEET_FILE and the agencies' key files are read for changes (SIGHUP reads them at once)"`
	// WorkerID names this worker in the queue and in fleet status; it must
	// be unique among the running workers. Empty: the host name and the
	// process id.
	WorkerID string `env:"FLEET_WORKER_ID" form:"a short name unique among the running workers, e.g. the pod name" desc:"name of this worker in the job queue and in fleet status; unset: host name and process id"`
}

// FleetSettingsFrom reads the fleet worker's settings from lookup (the
// worker's environment), defaulted and checked; a problem is an *Error
// naming the variable.
func FleetSettingsFrom(ctx context.Context, lookup func(string) (string, bool)) (*FleetSettings, error) {
	var s FleetSettings
	l := &fleetLookuper{lookup: lookup}
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &s, Lookuper: l}); err != nil {
		v := fleetVariable(l.last)
		problem := "invalid value"
		var ve *valueError
		if errors.As(err, &ve) {
			problem = ve.problem
		}
		return nil, &Error{Variable: v.Name, Problem: problem, Form: v.Form}
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	if s.RescueAfter == 0 {
		s.RescueAfter = s.JobTimeout + 5*time.Minute
	}
	if s.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "worker"
		}
		s.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return &s, nil
}

// fleetLookuper records the key envconfig looked up last (the one an error
// is about).
type fleetLookuper struct {
	lookup func(string) (string, bool)
	last   string
}

func (l *fleetLookuper) Lookup(key string) (string, bool) {
	l.last = key
	return l.lookup(key)
}

var workerIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

func (s *FleetSettings) validate() error {
	bad := func(field, problem string) error {
		v := fleetVariableOf(field)
		return &Error{Variable: v.Name, Problem: problem, Form: v.Form}
	}
	switch {
	case s.File == "":
		return bad("File", "is required")
	case !ValidSchema(s.Schema):
		return bad("Schema", fmt.Sprintf("%q is not a plain identifier", s.Schema))
	case s.Concurrency < 1 || s.Concurrency > 100:
		return bad("Concurrency", fmt.Sprintf("%d is out of range", s.Concurrency))
	case s.JobTimeout < 10*time.Second:
		return bad("JobTimeout", fmt.Sprintf("%s is shorter than 10s", s.JobTimeout))
	case s.RescueAfter != 0 && s.RescueAfter < s.JobTimeout+10*time.Second:
		return bad("RescueAfter", fmt.Sprintf("%s does not exceed FLEET_JOB_TIMEOUT (%s) by 10s: a sync still running would be run twice", s.RescueAfter, s.JobTimeout))
	case s.QuotaRecheck < time.Second:
		return bad("QuotaRecheck", "must be at least 1s")
	case s.WatchInterval < time.Second:
		return bad("WatchInterval", "must be at least 1s")
	case s.WorkerID != "" && !workerIDRE.MatchString(s.WorkerID):
		return bad("WorkerID", fmt.Sprintf("%q is not a short name of letters, digits, '.', '_' and '-'", s.WorkerID))
	}
	return nil
}

// FleetVariables lists the fleet worker's own variables (FleetSettings) in
// struct order, as Variables does for Config.
func FleetVariables() []Variable { return variablesOf(reflect.TypeOf(FleetSettings{})) }

// fleetVariable is the fleet worker's variable named name.
func fleetVariable(name string) Variable { return variableIn(FleetVariables(), name, byName) }

// fleetVariableOf is the fleet worker's variable of struct field field.
func fleetVariableOf(field string) Variable {
	return variableIn(FleetVariables(), field, byField)
}

// FleetMarkdownTable renders the fleet worker's variables as the Markdown
// table docs/fleet.md embeds (a test keeps the two equal).
func FleetMarkdownTable() string { return markdownTable(FleetVariables()) }

// FleetAgency is one agency of FLEET_FILE: its name, its warehouse schema
// and its variables (those of a single worker; secrets only as *_FILE).
type FleetAgency struct {
	Name   string
	Schema string
	// Env holds the agency's variables as written; a *_FILE path that is
	// relative is relative to FLEET_FILE's folder.
	Env map[string]string
}

// FleetFile is FLEET_FILE, read and checked.
type FleetFile struct {
	// Agencies in the file's order.
	Agencies []FleetAgency
	dir      string // FLEET_FILE's folder: relative *_FILE paths start there
}

// FleetAgencyError is a problem with one agency of FLEET_FILE: it names the
// agency; Err names the variable (an *Error, exit code 2).
type FleetAgencyError struct {
	Agency string
	Err    error
}

func (e *FleetAgencyError) Error() string { return fmt.Sprintf("agency %s: %v", e.Agency, e.Err) }

// Unwrap returns the problem.
func (e *FleetAgencyError) Unwrap() error { return e.Err }

var agencyNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// workerOnly are the variables of the fleet worker itself: an agency may
// not set them (its schema is the agency's schema field).
var workerOnly = map[string]string{
	"DATABASE_URL":          "every agency uses the fleet worker's database (DATABASE_URL of the worker's environment)",
	"WAREHOUSE_SCHEMA":      "give the agency's schema with its schema field",
	"WAREHOUSE_LOCAL_DIR":   "a fleet needs DATABASE_URL, shared by every worker",
	"PG_BINDIR":             "set it in the fleet worker's environment",
	"HTTP_ADDR":             "each worker serves one address for all its agencies (HTTP_ADDR of the worker's environment)",
	"LOG_LEVEL":             "the worker's log is one log for all its agencies (LOG_LEVEL of the worker's environment)",
	"LOG_FORMAT":            "the worker's log is one log for all its agencies (LOG_FORMAT of the worker's environment)",
	"SYNC_STREAM_SCHEDULES": "a fleet syncs each agency whole, on its SYNC_SCHEDULE (one job per agency at a time)",
}

// inherited are the variables an agency takes from the fleet worker's
// environment when it does not set them (with their _FILE form, as a pair).
var inherited = []string{"DATABASE_URL", "DB_STATEMENT_TIMEOUT", "SYNC_NOTIFY_URL", "PG_BINDIR", "LOG_LEVEL", "LOG_FORMAT"}

// ParseFleetFile reads FLEET_FILE's contents (dir is the file's folder):
// strict YAML (an unknown field is an error), agencies with distinct valid
// names and schemas, and only known variables, no secret given inline and
// none of the worker's own. It reads no key file: Config does, per agency.
func ParseFleetFile(data []byte, dir string) (*FleetFile, error) {
	var doc struct {
		Agencies []struct {
			Name   string               `yaml:"name"`
			Schema string               `yaml:"schema"`
			Env    map[string]yaml.Node `yaml:"env"`
		} `yaml:"agencies"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("read FLEET_FILE: %w", err)
	}
	if len(doc.Agencies) == 0 {
		return nil, errors.New("read FLEET_FILE: no agencies (want agencies: a list of name, schema, env)")
	}
	known := map[string]Variable{}
	for _, v := range Variables() {
		known[v.Name] = v
	}
	f := &FleetFile{dir: dir}
	names, schemas := map[string]bool{}, map[string]string{}
	for i, a := range doc.Agencies {
		switch {
		case !agencyNameRE.MatchString(a.Name):
			return nil, fmt.Errorf("read FLEET_FILE: agency %d: name %q is not a short lowercase name (letters, digits, '_', '-')", i+1, a.Name)
		case names[a.Name]:
			return nil, fmt.Errorf("read FLEET_FILE: agency %s is declared twice", a.Name)
		case !ValidSchema(a.Schema):
			return nil, &FleetAgencyError{a.Name, &Error{Variable: "schema", Problem: fmt.Sprintf("%q is not a plain identifier", a.Schema), Form: variableOf("WarehouseSchema").Form}}
		case schemas[a.Schema] != "":
			return nil, &FleetAgencyError{a.Name, &Error{Variable: "schema", Problem: fmt.Sprintf("%s is also agency %s's: two agencies never share a schema", a.Schema, schemas[a.Schema])}}
		}
		names[a.Name], schemas[a.Schema] = true, a.Name
		env := make(map[string]string, len(a.Env))
		for _, k := range slices.Sorted(mapKeys(a.Env)) {
			n := a.Env[k]
			if n.Kind != yaml.ScalarNode {
				return nil, &FleetAgencyError{a.Name, &Error{Variable: k, Problem: "is not a single value"}}
			}
			if err := checkAgencyVariable(k, known); err != nil {
				return nil, &FleetAgencyError{a.Name, err}
			}
			env[k] = n.Value
		}
		f.Agencies = append(f.Agencies, FleetAgency{Name: a.Name, Schema: a.Schema, Env: env})
	}
	return f, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkAgencyVariable refuses what an agency may not set: an unknown
// variable, a secret given inline, a variable of the worker.
func checkAgencyVariable(k string, known map[string]Variable) error {
	base, isFile := strings.CutSuffix(k, "_FILE")
	if v, ok := known[base]; isFile && ok && v.Secret {
		if reason, worker := workerOnly[base]; worker {
			return &Error{Variable: k, Problem: "is not an agency's setting: " + reason}
		}
		return nil
	}
	v, ok := known[k]
	switch {
	case strings.HasPrefix(k, "FLEET_"):
		return &Error{Variable: k, Problem: "is the fleet worker's setting, not an agency's: set it in the worker's environment"}
	case !ok:
		return &Error{Variable: k, Problem: "is not a variable of agencysync (agencysync config lists them)"}
	case v.Secret:
		return &Error{Variable: k, Problem: "is a secret given inline: FLEET_FILE names key files only", Form: k + "_FILE, the path of a file holding the value"}
	}
	if reason, worker := workerOnly[k]; worker {
		return &Error{Variable: k, Problem: "is not an agency's setting: " + reason}
	}
	return nil
}

// Agency returns the agency named name, if the file declares it.
func (f *FleetFile) Agency(name string) (FleetAgency, bool) {
	for _, a := range f.Agencies {
		if a.Name == name {
			return a, true
		}
	}
	return FleetAgency{}, false
}

// CheckSettings refuses an agency whose schema is the fleet's own.
func (f *FleetFile) CheckSettings(s *FleetSettings) error {
	for _, a := range f.Agencies {
		if a.Schema == s.Schema {
			return &FleetAgencyError{a.Name, &Error{Variable: "schema", Problem: fmt.Sprintf("%s is FLEET_SCHEMA, the job queue's schema", a.Schema)}}
		}
	}
	return nil
}

// SecretFiles are the paths of the agency's secret files (its *_FILE
// variables of secrets), sorted: what a key change is seen in.
func (f *FleetFile) SecretFiles(a FleetAgency) []string {
	secret := secretVariables()
	var out []string
	for k, v := range a.Env {
		if base, ok := strings.CutSuffix(k, "_FILE"); ok && secret[base] && v != "" {
			out = append(out, f.path(v))
		}
	}
	slices.Sort(out)
	return out
}

// path resolves a file path of FLEET_FILE: a relative one starts at the
// file's folder.
func (f *FleetFile) path(p string) string {
	if p == "" || filepath.IsAbs(p) || f.dir == "" {
		return p
	}
	return filepath.Join(f.dir, p)
}

// Config loads agency a's configuration as a single worker's: its variables
// from FLEET_FILE, WAREHOUSE_SCHEMA its schema, and from worker (the fleet
// worker's environment) only DATABASE_URL, DB_STATEMENT_TIMEOUT,
// SYNC_NOTIFY_URL, PG_BINDIR, LOG_LEVEL and LOG_FORMAT, each unless the
// agency sets its own. Secret files are read now (through worker.ReadFile),
// so a rotated key is in force from the next Config. A problem is a
// *FleetAgencyError naming the agency around an *Error naming the variable.
func (f *FleetFile) Config(ctx context.Context, worker Environment, a FleetAgency, known Known) (*Config, error) {
	env := worker
	env.Lookup = func(key string) (string, bool) {
		if key == "WAREHOUSE_SCHEMA" {
			return a.Schema, true
		}
		for _, k := range inherited {
			if key != k && key != k+"_FILE" {
				continue
			}
			_, own := a.Env[k]
			_, ownFile := a.Env[k+"_FILE"]
			if !own && !ownFile {
				return worker.Lookup(key)
			}
		}
		v, ok := a.Env[key]
		if ok && strings.HasSuffix(key, "_FILE") {
			v = f.path(v)
		}
		return v, ok
	}
	cfg, err := LoadFrom(ctx, env, known)
	if err != nil {
		return nil, &FleetAgencyError{a.Name, err}
	}
	return cfg, nil
}
