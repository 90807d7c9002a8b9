package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func noFiles(string) ([]byte, error) { return nil, os.ErrNotExist }

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, env(nil), noFiles)
	if cfg.WarehouseSchema != "agency" || cfg.RateLimit != 10 || cfg.DailyQuota != 10000 ||
		cfg.QuotaReserve != 0.05 || cfg.SyncSchedule != "0 2 * * *" || cfg.LogFormat != "auto" ||
		cfg.QuotaTZ.String() != "UTC" || cfg.CommsTZ.String() != "UTC" || !cfg.AutoMigrate {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
	if err := cfg.Require(NeedSync); err == nil || !strings.Contains(err.Error(), "AGENCY_BASE_URL") {
		t.Fatalf("Require(NeedSync) = %v, want AGENCY_BASE_URL is required", err)
	}
}

func TestLoadFull(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, env(map[string]string{
		"DATABASE_URL":            "postgres://u:pw@db:5432/w",
		"WAREHOUSE_SCHEMA":        "agency_2",
		"AGENCY_BASE_URL":         "https://api.agency.example",
		"AGENCY_API_KEY":          "k-main",
		"AGENCY_COMMS_URL":        "https://wf.agency.example",
		"AGENCY_COMMS_KEY":        "k-comms",
		"AGENCY_COMMS_DOMAIN_ID":  "7",
		"AGENCY_COMMS_USER_IDS":   "1-5, 412,3",
		"AGENCY_COMMS_START_DATE": "2024-01-31",
		"AGENCY_RATE_LIMIT":       "2.5",
		"AGENCY_QUOTA_RESERVE":    "0.1",
		"AGENCY_QUOTA_TZ":         "Europe/Bucharest",
		"AGENCY_COMMS_TZ":         "America/New_York",
		"SYNC_SCHEDULE":           "*/15 * * * *",
		"LOG_LEVEL":               "debug",
		"LOG_FORMAT":              "json",
	}), noFiles)
	if err := cfg.Require(NeedSync); err != nil {
		t.Fatalf("Require(NeedSync): %v", err)
	}
	if got := cfg.CommsUserIDs.String(); got != "1-5,412" {
		t.Errorf("user ids = %q", got)
	}
	if cfg.CommsTZ.String() != "America/New_York" {
		t.Errorf("comms time zone = %v", cfg.CommsTZ)
	}
	if cfg.CommsStartDate.String() != "2024-01-31" || cfg.QuotaReserve != 0.1 || cfg.RateLimit != 2.5 {
		t.Errorf("parsed %+v", cfg)
	}
	if cfg.APIKey.Value() != "k-main" || cfg.CommsKey.Value() != "k-comms" {
		t.Errorf("secrets not read")
	}
	// Every way of printing the config hides the secrets.
	js, _ := json.Marshal(cfg)
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), string(js), fmt.Sprint(cfg.APIKey)} {
		for _, secret := range cfg.Secrets() {
			if strings.Contains(s, secret) {
				t.Fatalf("secret %q printed in %s", secret, s)
			}
		}
	}
}

func TestSecretFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	if err := os.WriteFile(path, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := mustLoad(t, env(map[string]string{"AGENCY_API_KEY_FILE": path}), os.ReadFile)
	if cfg.APIKey.Value() != "from-file" {
		t.Fatalf("APIKey = %q", cfg.APIKey.Value())
	}
	_, err := loadTest(env(map[string]string{"AGENCY_API_KEY_FILE": path, "AGENCY_API_KEY": "x"}), os.ReadFile)
	assertVariable(t, err, "AGENCY_API_KEY_FILE")
	_, err = loadTest(env(map[string]string{"AGENCY_COMMS_KEY_FILE": filepath.Join(dir, "missing")}), os.ReadFile)
	assertVariable(t, err, "AGENCY_COMMS_KEY_FILE")
}

func assertVariable(t *testing.T, err error, name string) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) || ce.Variable != name {
		t.Fatalf("error = %v, want a config error naming %s", err, name)
	}
	if !strings.HasPrefix(err.Error(), name+":") {
		t.Fatalf("message %q does not start with the variable", err)
	}
}

func TestBadValues(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, value string }{
		{"WAREHOUSE_SCHEMA", "x; drop table y"},
		{"WAREHOUSE_SCHEMA", "Agency"},
		{"WAREHOUSE_SCHEMA", strings.Repeat("a", 64)},
		{"WAREHOUSE_SCHEMA", "pg_catalog"},
		{"AGENCY_COMMS_START_DATE", "2024-13-01"},
		{"AGENCY_COMMS_START_DATE", "yesterday"},
		{"AGENCY_COMMS_USER_IDS", "1-x"},
		{"AGENCY_COMMS_USER_IDS", "5-1"},
		{"AGENCY_COMMS_USER_IDS", "1-99999999"},
		{"AGENCY_COMMS_DOMAIN_ID", "one"},
		{"AGENCY_RATE_LIMIT", "fast"},
		{"AGENCY_RATE_LIMIT", "0"},
		{"AGENCY_DAILY_QUOTA", "-1"},
		{"AGENCY_QUOTA_RESERVE", "150%"},
		{"AGENCY_QUOTA_TZ", "Mars/Base"},
		{"AGENCY_COMMS_TZ", "Mars/Base"},
		{"AGENCY_COMMS_TZ", "Local"},
		{"AGENCY_COMMS_TZ", ""},
		{"AGENCY_BASE_URL", "ftp://x"},
		{"AGENCY_BASE_URL", "https://api.example/v1"},
		{"AGENCY_COMMS_URL", "not a url"},
		{"AGENCY_COMMS_WITH_MESSAGE", "yes"},
		{"SYNC_SCHEDULE", "every night"},
		{"LOG_LEVEL", "loud"},
		{"LOG_FORMAT", "xml"},
		{"DATABASE_URL", "mysql://root:hunter2@x/db"},
		{"AGENCY_REQUEST_TIMEOUT", "soon"},
		{"AGENCY_MAX_RESPONSE_BYTES", "lots"},
		{"AGENCY_MAX_RESPONSE_BYTES", "32MB"},
		{"AGENCY_MAX_RESPONSE_BYTES", "512KiB"}, // under the 1MiB floor
		{"AGENCY_MAX_RESPONSE_BYTES", "2GiB"},
		{"AGENCY_COMMS_LOOKBACK", "-1h"},
		{"AGENCY_COMMS_LOOKBACK", "0s"}, // the engine reads a zero as its default, 24h
		{"SYNC_AUTO_MIGRATE", "maybe"},
		{"HTTP_ADDR", "not-an-address"},
		{"HTTP_ADDR", "127.0.0.1:http-alt"},
		{"AGENCY_COMMS_BRAND_URL", "brands/42"},
		{"SYNC_NOTIFY_URL", "hooks.slack.example/services/hunter2"},
		{"SYNC_NOTIFY_URL", "ftp://hooks.example/hunter2"},
		{"SYNC_NOTIFY_URL", "http://hooks.example/hunter2"}, // plain http to a non-local host
	}
	for _, c := range cases {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			t.Parallel()
			_, err := loadTest(env(map[string]string{c.name: c.value}), noFiles)
			assertVariable(t, err, c.name)
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("password leaked: %v", err)
			}
		})
	}
}

func TestUserIDsRoundTrip(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "", "1": "1", "3,1,2": "1-3", "1-300,412": "1-300,412", "10-12, 11-14 ,20": "10-14,20"} {
		ids, err := ParseUserIDs(in)
		if err != nil {
			t.Fatalf("ParseUserIDs(%q): %v", in, err)
		}
		if got := ids.String(); got != want {
			t.Errorf("ParseUserIDs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVariablesDocumented(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, v := range Variables() {
		if v.Form == "" || v.Desc == "" {
			t.Errorf("%s lacks form or desc", v.Name)
		}
		if seen[v.Name] {
			t.Errorf("%s twice", v.Name)
		}
		seen[v.Name] = true
	}
	for _, name := range []string{"DATABASE_URL", "WAREHOUSE_SCHEMA", "AGENCY_BASE_URL", "AGENCY_API_KEY", "AGENCY_COMMS_URL",
		"AGENCY_COMMS_KEY", "AGENCY_COMMS_DOMAIN_ID", "AGENCY_COMMS_USER_IDS", "AGENCY_COMMS_START_DATE", "AGENCY_RATE_LIMIT",
		"AGENCY_DAILY_QUOTA", "AGENCY_QUOTA_RESERVE", "SYNC_SCHEDULE", "LOG_LEVEL", "LOG_FORMAT"} {
		if !seen[name] {
			t.Errorf("contract variable %s missing", name)
		}
	}
}

func TestNotifyURL(t *testing.T) {
	t.Parallel()
	const hook = "https://hooks.slack.example/services/T0/B0/hunter2"
	cfg := mustLoad(t, env(map[string]string{"SYNC_NOTIFY_URL": hook}), noFiles)
	if cfg.NotifyURL.Value() != hook {
		t.Fatalf("NotifyURL = %q", cfg.NotifyURL.Value())
	}
	if b, _ := json.Marshal(cfg); strings.Contains(string(b), "hunter2") || strings.Contains(fmt.Sprintf("%+v", cfg), "hunter2") {
		t.Fatal("the notify URL is printed: it is a secret")
	}
	found := false
	for _, s := range cfg.Secrets() {
		found = found || s == hook
	}
	if !found {
		t.Error("Secrets() lacks the notify URL")
	}
	for _, ok := range []map[string]string{
		{"SYNC_NOTIFY_URL": "http://127.0.0.1:9000/hook"},
		{"SYNC_NOTIFY_URL": "http://hooks.example/x", "AGENCY_ALLOW_INSECURE_HTTP": "true"},
	} {
		if _, err := loadTest(env(ok), noFiles); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
}

// testKnown are the names the product's packages supply (cli.Known), as
// of this writing: the planner's tasks, serve's streams, the endpoints.
var testKnown = Known{
	Tasks:       []string{"communications-increment", "brands", "projects", "finance", "details", "communications-backfill", "verify"},
	Streams:     []string{"brands", "projects", "finance", "communications"},
	Endpoints:   []string{"brands", "brand", "brand_contacts", "projects", "project", "budgets", "invoices", "collections", "payments", "profitability", "agency_summary", "communications"},
	PagingLists: []string{"brands", "brand_contacts", "projects", "budgets", "invoices", "collections", "payments", "profitability", "agency_summary"},
	FixedPaging: []string{"communications"},
	Entity:      []string{"brand", "brand_contacts", "project"},
}

// loadTest loads as an ordinary user (euid 1000) with a home folder,
// whoever runs the tests.
// mustLoad is loadTest of a configuration that must load.
func mustLoad(t *testing.T, lookup func(string) (string, bool), readFile func(string) ([]byte, error)) *Config {
	t.Helper()
	cfg, err := loadTest(lookup, readFile)
	if err != nil {
		t.Fatalf("LoadFrom: %v", err)
	}
	return cfg
}

func loadTest(lookup func(string) (string, bool), readFile func(string) ([]byte, error)) (*Config, error) {
	withHome := func(k string) (string, bool) {
		if v, ok := lookup(k); ok || k != "HOME" {
			return v, ok
		}
		return "/home/tester", true
	}
	return LoadFrom(context.Background(), Environment{Lookup: withHome, ReadFile: readFile, Geteuid: func() int { return 1000 }}, testKnown)
}
