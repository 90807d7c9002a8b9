package config

import (
	"errors"
	"strings"
	"testing"
)

// problemVariables lists the variables err names, one per *Error it holds.
func problemVariables(t *testing.T, err error) []string {
	t.Helper()
	var list *Errors
	if errors.As(err, &list) {
		var out []string
		for _, e := range list.List {
			out = append(out, e.Variable)
		}
		return out
	}
	var one *Error
	if errors.As(err, &one) {
		return []string{one.Variable}
	}
	t.Fatalf("%v is no configuration error", err)
	return nil
}

// TestEveryProblemAtOnce: values that do not decode, values out of range,
// names that refer to nothing and a field map that does not parse are all
// reported by one LoadFrom, each naming its variable, so that a user
// fixes them in one round.
func TestEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	_, err := loadTest(env(map[string]string{
		"AGENCY_RATE_LIMIT":      "fast",     // does not decode
		"AGENCY_DAILY_QUOTA":     "-3",       // out of range
		"AGENCY_COMMS_DOMAIN_ID": "seven",    // does not decode
		"LOG_LEVEL":              "chatty",   // not a level
		"SYNC_SCHEDULE":          "nightly",  // not cron
		"SYNC_PRIORITIES":        "nothing",  // names no task
		"AGENCY_FIELD_MAP":       "projects", // no table.column=path
		"AGENCY_BASE_URL":        "ftp://x",  // not http(s)
		"AGENCY_COMMS_URL":       "https://wf.example/v1",
	}), noFiles)
	if err == nil {
		t.Fatal("LoadFrom accepted nine bad values")
	}
	got := problemVariables(t, err)
	for _, want := range []string{"AGENCY_RATE_LIMIT", "AGENCY_DAILY_QUOTA", "AGENCY_COMMS_DOMAIN_ID", "LOG_LEVEL",
		"SYNC_SCHEDULE", "SYNC_PRIORITIES", "AGENCY_FIELD_MAP", "AGENCY_BASE_URL"} {
		if !contains(got, want) || !strings.Contains(err.Error(), want) {
			t.Errorf("the error names %v (%q); want %s among them", got, err, want)
		}
	}
	if contains(got, "AGENCY_COMMS_URL") {
		t.Errorf("AGENCY_COMMS_URL is valid (only the main interface's URL must not end with /v1), yet named: %v", got)
	}
}

// TestEveryMissingVariableAtOnce: an empty environment names every
// variable a sync needs in one error.
func TestEveryMissingVariableAtOnce(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, env(nil), noFiles)
	err := cfg.Require(NeedSync)
	want := []string{"AGENCY_BASE_URL", "AGENCY_API_KEY", "AGENCY_COMMS_URL", "AGENCY_COMMS_KEY",
		"AGENCY_COMMS_DOMAIN_ID", "AGENCY_COMMS_USER_IDS", "AGENCY_COMMS_START_DATE"}
	got := problemVariables(t, err)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Require(NeedSync) on an empty environment names %v, want %v", got, want)
	}
	for _, v := range want {
		if !strings.Contains(err.Error(), v+": is required") {
			t.Errorf("the message does not say %s is required: %q", v, err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
