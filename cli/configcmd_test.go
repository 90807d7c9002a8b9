package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/config"
)

// TestConfigEffective: `config --effective` prints every variable's value in
// force — from the environment, a _FILE, or the default — with secrets shown
// only as their length.
func TestConfigEffective(t *testing.T) {
	t.Parallel()
	apiKey := strings.Repeat("k", 31) + "apikey123"   // 40 characters
	commsKey := "comms-secret-from-a-file-0123456789" // 35 characters
	keyFile := tempFile(t, "comms_key", commsKey+"\n")
	dsn := "postgres://owner:pg-pass-word@db.example:5433/wh?sslmode=require"
	vars := map[string]string{
		"AGENCY_API_KEY": apiKey, "AGENCY_COMMS_KEY_FILE": keyFile, "DATABASE_URL": dsn,
		"AGENCY_RATE_LIMIT": "7", "AGENCY_COMMS_USER_IDS": "3, 1-2", "AGENCY_QUOTA_RESERVE": "0.1",
	}
	code, out, errs := mainWith(vars, "config", "--effective")
	if code != ExitOK {
		t.Fatalf("config --effective exit %d: %s", code, errs)
	}
	for _, secret := range []string{apiKey, commsKey, "pg-pass-word", "apikey123"} {
		if strings.Contains(out+errs, secret) {
			t.Fatalf("config --effective printed a secret %q:\n%s", secret, out)
		}
	}
	line := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `\s+(.*)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("config --effective lacks %s:\n%s", name, out)
		}
		return m[1]
	}
	for name, want := range map[string][]string{
		"AGENCY_API_KEY":        {"set (40 chars)", "environment"},
		"AGENCY_COMMS_KEY":      {"set (35 chars)", "AGENCY_COMMS_KEY_FILE"},
		"DATABASE_URL":          {"set (", "db.example:5433"},
		"AGENCY_RATE_LIMIT":     {"7", "environment"},
		"AGENCY_DAILY_QUOTA":    {"10000", "default"},
		"AGENCY_COMMS_USER_IDS": {"1-3", "environment"},
		"AGENCY_QUOTA_RESERVE":  {"10%", "environment"},
		"SYNC_SCHEDULE":         {"0 2 * * *", "default"},
		"AGENCY_BASE_URL":       {"(unset)"},
	} {
		got := line(name)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want it to contain %q", name, got, w)
			}
		}
	}
	for _, v := range config.Variables() {
		line(v.Name)
	}

	// A bad value is a configuration error naming the variable.
	vars["AGENCY_RATE_LIMIT"] = "fast"
	if code, _, errs := mainWith(vars, "config", "--effective"); code != ExitUsage || !strings.Contains(errs, "AGENCY_RATE_LIMIT") {
		t.Fatalf("config --effective with a bad value: exit %d, %s", code, errs)
	}
	// Plain `config` still prints the reference, whatever the environment.
	if code, out, _ := mainWith(vars, "config"); code != ExitOK || !strings.Contains(out, "form:") {
		t.Fatalf("config: exit %d\n%s", code, out)
	}
}

// TestConfigEffectiveShowsTheFieldMapInForce: with AGENCY_FIELD_MAP_FILE and
// AGENCY_FIELD_MAP both set, `config --effective` shows, besides each as
// set, the merged mapping the commands use: the file's pairs with the
// variable's overriding.
func TestConfigEffectiveShowsTheFieldMapInForce(t *testing.T) {
	t.Parallel()
	file := tempFile(t, "fields.yaml", "projects:\n  name: title\n  status: state\n")
	vars := map[string]string{"AGENCY_FIELD_MAP_FILE": file, "AGENCY_FIELD_MAP": "projects.status=status_label,projects.deadline=due_date",
		"DATABASE_URL": "postgres://u@db.example/w"}
	code, out, errs := mainWith(vars, "config", "--effective")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "field map in force" + `\s+projects\.deadline=due_date,projects\.name=title,projects\.status=status_label$`
	if !regexp.MustCompile(`(?m)^` + want).MatchString(out) {
		t.Fatalf("config --effective does not show the merged field map (%s):\n%s", want, out)
	}
	delete(vars, "AGENCY_FIELD_MAP_FILE")
	delete(vars, "AGENCY_FIELD_MAP")
	if _, out, _ := mainWith(vars, "config", "--effective"); strings.Contains(out, "field map in force") {
		t.Fatalf("a field map is shown with none set:\n%s", out)
	}
}

// TestConfigEffectiveShowsThePagingInForce: AGENCY_PAGING over the field
// map file's paging:, entry by entry, on one line; a bad entry exits 2
// naming the variable.
func TestConfigEffectiveShowsThePagingInForce(t *testing.T) {
	t.Parallel()
	file := tempFile(t, "fields.yaml", "paging:\n  \"*\": offset:max=100\n  brand_contacts: {style: none}\n")
	vars := map[string]string{"AGENCY_FIELD_MAP_FILE": file, "AGENCY_PAGING": "*=cursor", "DATABASE_URL": "postgres://u@db.example/w"}
	code, out, errs := mainWith(vars, "config", "--effective")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := `(?m)^paging in force\s+\*=cursor,brand_contacts=none$`; !regexp.MustCompile(want).MatchString(out) {
		t.Fatalf("config --effective does not show the merged paging (%s):\n%s", want, out)
	}
	vars["AGENCY_PAGING"] = "brands=offset:max=0"
	if code, _, errs := mainWith(vars, "config", "--effective"); code != ExitUsage || !strings.Contains(errs, "AGENCY_PAGING") {
		t.Fatalf("a bad AGENCY_PAGING: exit %d\n%s", code, errs)
	}
}
