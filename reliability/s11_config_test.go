package reliability

import (
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agencysync/agencysync/config"
)

// badValue is a malformed value of one variable (value "" with unset: the
// variable is left out, for the required ones).
type badValue struct {
	variable string
	value    string
	unset    bool
	command  string // default run
	names    string // the variable the message must name (default variable)
}

// badValues has at least one malformed value for every variable of
// config.Variables() except those whose every value is valid (freeForm).
var badValues = []badValue{
	{variable: "DATABASE_URL", value: "mysql://root:hunter2-secret@db.example/agency"},
	{variable: "WAREHOUSE_SCHEMA", value: "Agency-Prod"},
	{variable: "DB_STATEMENT_TIMEOUT", value: "5 minutes"},
	{variable: "AGENCY_BASE_URL", value: "api.agency.example"},
	{variable: "AGENCY_API_KEY", unset: true},
	{variable: "AGENCY_API_KEY_FILE", value: "/nonexistent/agency-api-key", names: "AGENCY_API_KEY_FILE"},
	{variable: "AGENCY_COMMS_URL", value: "ftp://workflow.agency.example"},
	{variable: "AGENCY_COMMS_KEY", unset: true},
	{variable: "AGENCY_COMMS_DOMAIN_ID", value: "one"},
	{variable: "AGENCY_COMMS_USER_IDS", value: "1-x"},
	{variable: "AGENCY_COMMS_START_DATE", value: "2024-13-45"},
	{variable: "AGENCY_COMMS_LOOKBACK", value: "1 day"},
	{variable: "AGENCY_COMMS_WITH_MESSAGE", value: "yes"},
	{variable: "AGENCY_COMMS_BRAND_URL", value: "brands/42"},
	{variable: "AGENCY_COMMS_BACKFILL_WINDOW", value: "36h"},
	{variable: "AGENCY_COMMS_RATE_LIMIT", value: "-1"},
	{variable: "AGENCY_PATHS", value: "brands"},
	{variable: "AGENCY_PAGING", value: "*=offset:max=5000"},
	{variable: "AGENCY_FIELD_MAP", value: "projects.name"},
	{variable: "AGENCY_FIELD_MAP_FILE", value: "/nonexistent/fields.yaml"},
	{variable: "AGENCY_WORKFLOW_ID", value: ""},
	{variable: "AGENCY_RATE_LIMIT", value: "0"},
	{variable: "AGENCY_DAILY_QUOTA", value: "lots"},
	{variable: "AGENCY_QUOTA_RESERVE", value: "150%"},
	{variable: "AGENCY_QUOTA_TZ", value: "Mars/Olympus_Mons"},
	{variable: "AGENCY_COMMS_TZ", value: "Mars/Olympus_Mons"},
	{variable: "AGENCY_REQUEST_TIMEOUT", value: "0s"},
	{variable: "AGENCY_ALLOW_INSECURE_HTTP", value: "maybe"},
	{variable: "SYNC_SCHEDULE", value: "every night"},
	{variable: "SYNC_STREAM_SCHEDULES", value: "communications=hourly", command: "serve"},
	{variable: "SYNC_PRIORITIES", value: "everything"},
	{variable: "SYNC_DETAIL_MAX_AGE", value: "0s"},
	{variable: "SYNC_FINANCE_FULL_EVERY", value: "-1h"},
	{variable: "SYNC_MASS_DELETE_SHARE", value: "a fifth"},
	{variable: "SYNC_AUTO_MIGRATE", value: "perhaps"},
	{variable: "SYNC_PREFETCH", value: "sometimes"},
	{variable: "SYNC_MAX_IN_FLIGHT", value: "-1"},
	{variable: "HTTP_ADDR", value: "not-an-address", command: "serve"},
	{variable: "SYNC_NOTIFY_URL", value: "hooks.slack.example/services/T0/B0/hunter2-secret"},
	{variable: "SYNC_FAIL_ON", value: "warnings,everything"},
	{variable: "SYNC_EXIT_INCOMPLETE", value: "1"},
	{variable: "AGENCY_MAX_RESPONSE_BYTES", value: "a lot"},
	{variable: "SYNC_COMMS_REFRESH_AGE", value: "-24h"},
	{variable: "LOG_LEVEL", value: "loud"},
	{variable: "LOG_FORMAT", value: "xml"},
}

// freeForm are the variables that accept any value.
var freeForm = map[string]string{
	"WAREHOUSE_LOCAL_DIR": "any directory path",
	"PG_BINDIR":           "any directory path (looked into when the private cluster starts)",
}

// TestS11BadConfiguration: each malformed variable stops agencysync at start
// with exit 2 and a message naming the variable, without echoing a secret and
// before touching the database or the service.
func TestS11BadConfiguration(t *testing.T) {
	sc := newScenario(t, 11, "Bad configuration: each malformed variable exits 2 naming it")
	// A complete, valid configuration; the database and the service are
	// unreachable, so a value that slipped through would exit 1, not 2.
	valid := map[string]string{
		"DATABASE_URL":            "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2",
		"WAREHOUSE_SCHEMA":        "agency",
		"AGENCY_BASE_URL":         "http://127.0.0.1:1",
		"AGENCY_COMMS_URL":        "http://127.0.0.1:1",
		"AGENCY_API_KEY":          apiKey,
		"AGENCY_COMMS_KEY":        commsKey,
		"AGENCY_COMMS_DOMAIN_ID":  "1",
		"AGENCY_COMMS_USER_IDS":   "1-300",
		"AGENCY_COMMS_START_DATE": "2024-01-01",
		"LOG_FORMAT":              "json",
	}
	if res := runWorker(t, valid, "run"); res.code != 1 {
		t.Fatalf("the valid configuration: %s, want exit 1 (unreachable database)\n%s", res, res.stderr)
	}
	tested := map[string]bool{}
	for _, bv := range badValues {
		tested[bv.variable] = true
	}
	covered := 0
	for _, v := range config.Variables() {
		switch {
		case tested[v.Name]:
			covered++
		case freeForm[v.Name] == "":
			t.Errorf("no malformed value of %s is tested", v.Name)
		}
	}
	var exited2 atomic.Int64
	t.Run("variables", func(t *testing.T) {
		for _, bv := range badValues {
			t.Run(bv.variable, func(t *testing.T) {
				t.Parallel()
				env := maps.Clone(valid)
				switch {
				case bv.unset:
					delete(env, bv.variable)
				case bv.variable == "AGENCY_API_KEY_FILE":
					delete(env, "AGENCY_API_KEY")
					env[bv.variable] = bv.value
				default:
					env[bv.variable] = bv.value
				}
				cmd := bv.command
				if cmd == "" {
					cmd = "run"
				}
				res := runWorker(t, env, cmd)
				names := bv.names
				if names == "" {
					names = bv.variable
				}
				out := res.stdout + res.stderr
				switch {
				case res.code != 2:
					t.Errorf("%s=%q: %s, want exit 2\n%s", bv.variable, bv.value, res, out)
				case !strings.Contains(out, names):
					t.Errorf("%s=%q: exit 2, but the message does not name %s:\n%s", bv.variable, bv.value, names, out)
				case strings.Contains(out, "hunter2"):
					t.Errorf("%s: the message echoes the secret value:\n%s", bv.variable, out)
				default:
					exited2.Add(1)
					t.Logf("%s", strings.TrimSpace(out))
				}
			})
		}
	})
	sc.fig("%d malformed values covering %d of %d variables (the other free-form): %d exit 2 naming the variable",
		len(badValues), covered, len(config.Variables()), exited2.Load())
	if int(exited2.Load()) != len(badValues) {
		t.Errorf("%d of %d malformed values exit 2 naming their variable", exited2.Load(), len(badValues))
	}
}
