package cli

import (
	"strings"
	"testing"
)

// TestInsecureURLIsAConfigError: plain http:// to a host that is not
// loopback is a configuration error (exit 2) naming the variables, not the
// Go field.
func TestInsecureURLIsAConfigError(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"AGENCY_BASE_URL": "http://api.agency.example", "AGENCY_COMMS_URL": "https://workflow.agency.example",
		"AGENCY_API_KEY": testAPIKey, "AGENCY_COMMS_KEY": testCommsKey, "AGENCY_COMMS_DOMAIN_ID": "1",
		"AGENCY_COMMS_USER_IDS": "1-3", "AGENCY_COMMS_START_DATE": "2024-01-01",
		"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?sslmode=disable", "LOG_FORMAT": "json",
	}
	for _, cmd := range []string{"run", "plan"} {
		code, _, errs := mainWith(vars, cmd)
		if code != ExitUsage || !strings.Contains(errs, "AGENCY_BASE_URL") || !strings.Contains(errs, "AGENCY_ALLOW_INSECURE_HTTP") || strings.Contains(errs, "AllowInsecureHTTP") {
			t.Fatalf("%s with plain http:// to a remote host: exit %d, stderr %s; want 2 naming AGENCY_BASE_URL and AGENCY_ALLOW_INSECURE_HTTP", cmd, code, errs)
		}
	}
	vars["AGENCY_ALLOW_INSECURE_HTTP"] = "true"
	if code, _, errs := mainWith(vars, "plan"); code == ExitUsage {
		t.Fatalf("plan with AGENCY_ALLOW_INSECURE_HTTP=true: exit 2: %s", errs)
	}
	// Loopback needs no permission (the sandbox).
	vars["AGENCY_ALLOW_INSECURE_HTTP"] = "false"
	vars["AGENCY_BASE_URL"], vars["AGENCY_COMMS_URL"] = "http://127.0.0.1:8081", "http://localhost:8082"
	if code, _, errs := mainWith(vars, "plan"); code == ExitUsage {
		t.Fatalf("plan against loopback http://: exit 2: %s", errs)
	}
}
