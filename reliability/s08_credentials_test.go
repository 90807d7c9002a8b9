package reliability

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/stream"
)

// TestS08Credentials: revoked keys exit 3 after one request per interface
// (a refused key ends only its own interface's streams), saying the
// credentials were rejected; another agency's key gets 403 on every stream
// of the main interface, each reported.
func TestS08Credentials(t *testing.T) {
	sc := newScenario(t, 8, "Credentials: revoked keys exit 3 after one request per interface; foreign key 403 per stream")
	// smallRig is a parallel part of the scenario on a sandbox of 4 brands
	// and 12 projects.
	smallRig := func(t *testing.T) (*scenario, *rig) {
		t.Parallel()
		sc := sc.in(t)
		o := defaultSandbox()
		o.Brands, o.ProjectsPerBrand = 4, 3
		return sc, newRig(t, sc, o)
	}

	t.Run("revoked", func(t *testing.T) {
		sc, r := smallRig(t)
		res := r.run(map[string]string{"AGENCY_API_KEY": revokedKey, "AGENCY_COMMS_KEY": revokedKey})
		st := r.sb.stats()
		if res.code != 3 {
			t.Errorf("revoked key: %s, want exit 3\n%s", res, tail([]byte(res.stderr), 10))
		}
		// Besides the keyless clock probe (a 401 too), one request with
		// each key: each interface's streams end at their first refusal.
		if st.Keyed() != 2 || st.Keyless > 1 || st.ByStatus["401"] != 2+st.Keyless {
			t.Errorf("revoked key: the sandbox saw %d requests with the key and %d keyless (%v), want one 401 per interface", st.Keyed(), st.Keyless, st.ByStatus)
		}
		msg := grepLines(res.stderr, `"level":"error"`)
		if !strings.Contains(msg, "401") || !strings.Contains(strings.ToLower(msg), "invalid authentication") {
			t.Errorf("revoked key: the error does not say the key was rejected (401 Invalid authentication):\n%s", res.stderr)
		}
		var status, errText string
		if err := r.pool.QueryRow(context.Background(), "SELECT status, coalesce(error, '') FROM "+pgx.Identifier{r.schema, "sync_runs"}.Sanitize()).Scan(&status, &errText); err != nil {
			t.Fatal(err)
		}
		if status != "failed" || !strings.Contains(errText, "401") {
			t.Errorf("revoked key: sync_runs records %s: %q", status, errText)
		}
		if !strings.Contains(errText, "My Account") {
			t.Errorf("revoked key: the message does not say where the token is renewed: %q", errText)
		}
		sc.fig("revoked keys: exit %d after %d requests, one per interface (%d × 401); the message quotes 401 \"Invalid authentication\" and points to My Account",
			res.code, st.Keyed(), st.ByStatus["401"]-st.Keyless)
	})

	t.Run("foreign", func(t *testing.T) {
		sc, r := smallRig(t)
		res := r.run(map[string]string{"AGENCY_API_KEY": foreignKey})
		st := r.sb.stats()
		if res.code != 1 || res.status() != "failed" {
			t.Errorf("foreign key: %s, want exit 1 and a failed run", res)
		}
		var errText string
		if err := r.pool.QueryRow(context.Background(), "SELECT coalesce(error, '') FROM "+pgx.Identifier{r.schema, "sync_runs"}.Sanitize()).Scan(&errText); err != nil {
			t.Fatal(err)
		}
		for _, task := range listTasks() {
			part := ""
			for _, p := range strings.Split(errText, "; ") {
				if strings.HasPrefix(p, task+":") {
					part = p
				}
			}
			if !strings.Contains(part, "403") {
				t.Errorf("foreign key: the run's error has no 403 for %s: %q", task, errText)
			}
		}
		// The only 401s are the keyless clock probes.
		if st.ByStatus["403"] == 0 || st.ByStatus["401"] != st.Keyless {
			t.Errorf("foreign key: statuses %v (%d keyless)", st.ByStatus, st.Keyless)
		}
		// The communications endpoint has its own key: its stream still syncs.
		good, _ := r.sb.truth().counts("communications")
		var emails int
		if err := r.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{r.schema, "emails"}.Sanitize()).Scan(&emails); err != nil {
			t.Fatal(err)
		}
		if emails != good {
			t.Errorf("foreign key: %d e-mails synced with the valid communications key, the truth has %d", emails, good)
		}
		sc.fig("foreign key: exit %d, %d × 403 (brands, projects and finance each reported), communications synced (%d e-mails)", res.code, st.ByStatus["403"], emails)
		t.Logf("foreign key: %s", errText)
	})
}

// listTasks are the list tasks of the declared streams (each named as its
// stream).
func listTasks() []string {
	var out []string
	for _, s := range stream.All() {
		if len(s.Lists) > 0 {
			out = append(out, s.Name)
		}
	}
	return out
}
