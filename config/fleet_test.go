package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fleetYAML declares two agencies; the second takes the first's common
// variables through a YAML merge key and overrides what is its own.
const fleetYAML = `
agencies:
  - name: acme
    schema: acme
    env: &acme
      AGENCY_BASE_URL: https://api.agency.example
      AGENCY_COMMS_URL: https://workflow.agency.example
      AGENCY_COMMS_USER_IDS: 1-300
      AGENCY_COMMS_START_DATE: 2024-01-01
      AGENCY_API_KEY_FILE: keys/acme_api
      AGENCY_COMMS_KEY_FILE: /run/secrets/acme/comms
      AGENCY_COMMS_DOMAIN_ID: 7
      SYNC_SCHEDULE: "0 3 * * *"
      AGENCY_QUOTA_TZ: Europe/Bucharest
  - name: globex-2
    schema: globex
    env:
      <<: *acme
      AGENCY_API_KEY_FILE: /run/secrets/globex/api
      AGENCY_COMMS_KEY_FILE: /run/secrets/globex/comms
      AGENCY_COMMS_DOMAIN_ID: "9"
      AGENCY_RATE_LIMIT: 2.5
      SYNC_NOTIFY_URL_FILE: /run/secrets/globex/hook
`

func fleetFile(t *testing.T, dir string) *FleetFile {
	t.Helper()
	f, err := ParseFleetFile([]byte(fleetYAML), dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParseFleetFile(t *testing.T) {
	f := fleetFile(t, "/etc/agencysync")
	if len(f.Agencies) != 2 || f.Agencies[0].Name != "acme" || f.Agencies[1].Schema != "globex" {
		t.Fatalf("agencies %+v", f.Agencies)
	}
	g := f.Agencies[1].Env
	// A merged map keeps the agency's own values over the anchor's, and
	// scalars of any YAML type arrive as written.
	if g["AGENCY_COMMS_DOMAIN_ID"] != "9" || g["AGENCY_RATE_LIMIT"] != "2.5" || g["AGENCY_BASE_URL"] != "https://api.agency.example" ||
		g["AGENCY_API_KEY_FILE"] != "/run/secrets/globex/api" {
		t.Errorf("globex env %v", g)
	}
	if got := f.Agencies[0].Env["AGENCY_COMMS_DOMAIN_ID"]; got != "7" {
		t.Errorf("an unquoted number: %q", got)
	}
	want := []string{"/etc/agencysync/keys/acme_api", "/run/secrets/acme/comms"}
	if got := f.SecretFiles(f.Agencies[0]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("secret files %v, want %v", got, want)
	}
	if got := f.SecretFiles(f.Agencies[1]); len(got) != 3 {
		t.Errorf("globex's secret files %v: want its two keys and its webhook", got)
	}
}

func TestParseFleetFileRefuses(t *testing.T) {
	agency := func(env string) string {
		return "agencies:\n  - name: acme\n    schema: acme\n    env:\n" + env
	}
	for _, c := range []struct {
		name, yaml       string
		agency, variable string // the error names them ("" agency: a file-level error)
		says             string
	}{
		{"inline api key", agency("      AGENCY_API_KEY: k-123456789\n"), "acme", "AGENCY_API_KEY", "inline"},
		{"inline comms key", agency("      AGENCY_COMMS_KEY: k-123456789\n"), "acme", "AGENCY_COMMS_KEY", "inline"},
		{"inline webhook", agency("      SYNC_NOTIFY_URL: https://hooks.example/x\n"), "acme", "SYNC_NOTIFY_URL", "inline"},
		{"inline empty key", agency("      AGENCY_API_KEY: \"\"\n"), "acme", "AGENCY_API_KEY", "inline"},
		{"database url", agency("      DATABASE_URL_FILE: /run/db\n"), "acme", "DATABASE_URL_FILE", "worker's database"},
		{"warehouse schema", agency("      WAREHOUSE_SCHEMA: other\n"), "acme", "WAREHOUSE_SCHEMA", "schema field"},
		{"http addr", agency("      HTTP_ADDR: :9000\n"), "acme", "HTTP_ADDR", "one address"},
		{"stream schedules", agency("      SYNC_STREAM_SCHEDULES: communications=0 * * * *\n"), "acme", "SYNC_STREAM_SCHEDULES", "whole"},
		{"fleet variable", agency("      FLEET_CONCURRENCY: 3\n"), "acme", "FLEET_CONCURRENCY", "worker's setting"},
		{"unknown variable", agency("      AGENCY_BASEURL: https://x.example\n"), "acme", "AGENCY_BASEURL", "not a variable"},
		{"a list as a value", agency("      AGENCY_COMMS_USER_IDS: [1, 2]\n"), "acme", "AGENCY_COMMS_USER_IDS", "single value"},
		{"bad schema", "agencies:\n  - name: acme\n    schema: Acme\n", "acme", "schema", "plain identifier"},
		{"shared schema", "agencies:\n  - {name: a, schema: s}\n  - {name: b, schema: s}\n", "b", "schema", "agency a"},
		{"twice", "agencies:\n  - {name: a, schema: s}\n  - {name: a, schema: t}\n", "", "", "declared twice"},
		{"bad name", "agencies:\n  - {name: Acme Corp, schema: s}\n", "", "", "short lowercase name"},
		{"none", "agencies: []\n", "", "", "no agencies"},
		{"unknown field", "agencies:\n  - {name: a, schema: s, key: x}\n", "", "", "key"},
		{"unknown top-level field", "defaults: {}\nagencies:\n  - {name: a, schema: s}\n", "", "", "defaults"},
		{"not yaml", "agencies: [\n", "", "", "FLEET_FILE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFleetFile([]byte(c.yaml), "")
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("%v: does not say %q", err, c.says)
			}
			if c.agency == "" {
				return
			}
			var ae *FleetAgencyError
			var ce *Error
			if !errors.As(err, &ae) || ae.Agency != c.agency || !errors.As(err, &ce) || ce.Variable != c.variable {
				t.Errorf("%v: want agency %s and variable %s named", err, c.agency, c.variable)
			}
			if !strings.HasPrefix(err.Error(), "agency "+c.agency+": "+c.variable+": ") {
				t.Errorf("message %q does not start with the agency and the variable", err)
			}
			if strings.Contains(err.Error(), "k-123456789") {
				t.Errorf("the message quotes the key: %v", err)
			}
		})
	}
}

func TestFleetAgencyConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(dir, "keys", "acme_api"): "acme-api-key-1\n",
		"/run/secrets/acme/comms":              "acme-comms-key-1",
		"/run/secrets/globex/api":              "globex-api-key-1",
		"/run/secrets/globex/comms":            "globex-comms-key-1",
		"/run/secrets/globex/hook":             "https://hooks.example/globex",
		"/run/secrets/worker/hook":             "https://hooks.example/fleet",
	}
	readFile := func(p string) ([]byte, error) {
		if v, ok := files[p]; ok {
			return []byte(v), nil
		}
		return nil, os.ErrNotExist
	}
	worker := Environment{Lookup: env(map[string]string{
		"DATABASE_URL": "postgres://u:pw-secret@db:5432/w", "AGENCY_API_KEY": "worker-key-never-inherited",
		"SYNC_NOTIFY_URL_FILE": "/run/secrets/worker/hook", "LOG_LEVEL": "debug", "HTTP_ADDR": ":9464",
		"AGENCY_DAILY_QUOTA": "77",
	}), ReadFile: readFile}
	f := fleetFile(t, dir)
	ctx := context.Background()

	acme, err := f.Config(ctx, worker, f.Agencies[0], testKnown)
	if err != nil {
		t.Fatal(err)
	}
	if acme.WarehouseSchema != "acme" || acme.APIKey.Value() != "acme-api-key-1" || acme.CommsKey.Value() != "acme-comms-key-1" ||
		acme.DatabaseURL.Value() != "postgres://u:pw-secret@db:5432/w" || acme.CommsDomainID != 7 || acme.SyncSchedule != "0 3 * * *" ||
		acme.QuotaTZ.String() != "Europe/Bucharest" || acme.LogLevel != "debug" {
		t.Errorf("acme's configuration: %+v", acme)
	}
	// The worker's own variables of a single agency do not leak into the
	// agencies: its AGENCY_DAILY_QUOTA is not acme's.
	if acme.DailyQuota != 10000 {
		t.Errorf("acme's daily quota %d: the worker's AGENCY_DAILY_QUOTA leaked into the agency", acme.DailyQuota)
	}
	if acme.NotifyURL.Value() != "https://hooks.example/fleet" {
		t.Errorf("acme inherits the worker's webhook: got %q", acme.NotifyURL.Value())
	}
	globex, err := f.Config(ctx, worker, f.Agencies[1], testKnown)
	if err != nil {
		t.Fatal(err)
	}
	if globex.NotifyURL.Value() != "https://hooks.example/globex" || globex.RateLimit != 2.5 || globex.APIKey.Value() != "globex-api-key-1" {
		t.Errorf("globex's configuration: notify %q, rate %v", globex.NotifyURL.Value(), globex.RateLimit)
	}

	// A rotated key is read by the next Config.
	files[filepath.Join(dir, "keys", "acme_api")] = "acme-api-key-2"
	if acme, err = f.Config(ctx, worker, f.Agencies[0], testKnown); err != nil || acme.APIKey.Value() != "acme-api-key-2" {
		t.Errorf("after the key file changed: %v", err)
	}
	// A bad key file names the agency and the variable, never the value.
	files["/run/secrets/acme/comms"] = "acme comms key"
	_, err = f.Config(ctx, worker, f.Agencies[0], testKnown)
	var ae *FleetAgencyError
	if !errors.As(err, &ae) || ae.Agency != "acme" {
		t.Fatalf("a key with a space: %v", err)
	}
	assertVariable(t, ae.Err, "AGENCY_COMMS_KEY_FILE")
	if strings.Contains(err.Error(), "acme comms key") {
		t.Errorf("the message quotes the key: %v", err)
	}
	delete(files, "/run/secrets/acme/comms")
	_, err = f.Config(ctx, worker, f.Agencies[0], testKnown)
	if !errors.As(err, &ae) || ae.Agency != "acme" || !strings.Contains(err.Error(), "AGENCY_COMMS_KEY_FILE") {
		t.Errorf("a missing key file: %v", err)
	}
}

func TestFleetSettings(t *testing.T) {
	ctx := context.Background()
	s, err := FleetSettingsFrom(ctx, env(map[string]string{"FLEET_FILE": "/etc/fleet.yaml"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != "agencysync_fleet" || s.Concurrency != 4 || s.JobTimeout != time.Hour || s.RescueAfter != time.Hour+5*time.Minute ||
		s.QuotaRecheck != time.Hour || s.WatchInterval != 10*time.Second || s.WorkerID == "" {
		t.Errorf("defaults: %+v", s)
	}
	s, err = FleetSettingsFrom(ctx, env(map[string]string{"FLEET_FILE": "f", "FLEET_JOB_TIMEOUT": "30s", "FLEET_RESCUE_AFTER": "45s", "FLEET_WORKER_ID": "pod-a.1"}))
	if err != nil || s.RescueAfter != 45*time.Second || s.WorkerID != "pod-a.1" {
		t.Errorf("%+v, %v", s, err)
	}
	for _, c := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{}, "FLEET_FILE"},
		{map[string]string{"FLEET_FILE": "f", "FLEET_SCHEMA": "Fleet"}, "FLEET_SCHEMA"},
		{map[string]string{"FLEET_FILE": "f", "FLEET_CONCURRENCY": "0"}, "FLEET_CONCURRENCY"},
		{map[string]string{"FLEET_FILE": "f", "FLEET_CONCURRENCY": "many"}, "FLEET_CONCURRENCY"},
		{map[string]string{"FLEET_FILE": "f", "FLEET_JOB_TIMEOUT": "5s"}, "FLEET_JOB_TIMEOUT"},
		{map[string]string{"FLEET_FILE": "f", "FLEET_JOB_TIMEOUT": "1m", "FLEET_RESCUE_AFTER": "65s"}, "FLEET_RESCUE_AFTER"},
		{map[string]string{"FLEET_FILE": "f", "FLEET_QUOTA_RECHECK": "10ms"}, "FLEET_QUOTA_RECHECK"},
		{map[string]string{"FLEET_FILE": "f", "FLEET_WATCH_INTERVAL": "0s"}, "FLEET_WATCH_INTERVAL"},
		{map[string]string{"FLEET_FILE": "f", "FLEET_WORKER_ID": "a b"}, "FLEET_WORKER_ID"},
	} {
		_, err := FleetSettingsFrom(ctx, env(c.env))
		assertVariable(t, err, c.name)
	}
}

func TestFleetSchemaIsNotAnAgencys(t *testing.T) {
	f, err := ParseFleetFile([]byte("agencies:\n  - {name: a, schema: agencysync_fleet}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := FleetSettingsFrom(context.Background(), env(map[string]string{"FLEET_FILE": "f"}))
	if err := f.CheckSettings(s); err == nil || !strings.Contains(err.Error(), "FLEET_SCHEMA") {
		t.Errorf("an agency in the queue's schema: %v", err)
	}
}

func TestFleetVariablesDocumented(t *testing.T) {
	for _, v := range FleetVariables() {
		if !strings.HasPrefix(v.Name, "FLEET_") || v.Form == "" || v.Desc == "" {
			t.Errorf("%+v: want a FLEET_ name, a form and a description", v)
		}
	}
	if !strings.Contains(FleetMarkdownTable(), "| `FLEET_FILE` |") {
		t.Error("the table lacks FLEET_FILE")
	}
}

// TestFleetDocTable keeps docs/fleet.md's table of the worker's variables
// equal to FleetSettings. Run with UPDATE_DOCS=1 to rewrite it.
func TestFleetDocTable(t *testing.T) {
	const (
		begin = "<!-- fleet-config:begin (generated from config.FleetSettings; UPDATE_DOCS=1 go test ./config) -->\n"
		end   = "<!-- fleet-config:end -->"
		path  = "../docs/fleet.md"
	)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q … %q", path, begin, end)
	}
	want := FleetMarkdownTable()
	if doc[i+len(begin):j] == want {
		return
	}
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s's table of FLEET_* variables is stale; run UPDATE_DOCS=1 go test ./config -run TestFleetDocTable\nwant:\n%s", path, want)
}
