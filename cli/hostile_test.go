package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/loopback"
	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// ledgerTotal is every request the schema's quota ledger counts.
func ledgerTotal(t *testing.T, vars map[string]string) int {
	t.Helper()
	pool := openPool(t, vars["DATABASE_URL"])
	return queryInt(t, pool, "SELECT coalesce(sum(requests), 0)::int FROM "+pgx.Identifier{vars["WAREHOUSE_SCHEMA"], "api_quota_usage"}.Sanitize())
}

// TestUnreachableBaseURLFailsFastUnbilled: AGENCY_BASE_URL on a closed port.
// `run` fails (exit 1) naming the variable, tries the host a few times only
// (no minutes of retries), bills nothing that never left the machine, and
// the communications stream, whose address is fine, lands. With both
// addresses closed nothing is billed at all; `check` likewise.
func TestUnreachableBaseURLFailsFastUnbilled(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, map[string]string{"AGENCY_BASE_URL": "http://" + loopback.FreeAddr(t)})
	code, out, errs := mainWith(vars, "run")
	if code != ExitFailure {
		t.Fatalf("run exit %d, want %d:\n%s", code, ExitFailure, errs)
	}
	if !strings.Contains(errs, "cannot reach AGENCY_BASE_URL") {
		t.Errorf("no error naming AGENCY_BASE_URL:\n%s", errs)
	}
	if n := strings.Count(errs, `"msg":"request failed, retrying"`); n > 2 {
		t.Errorf("%d retries of an unreachable host, want at most 2", n)
	}
	assertNoSecrets(t, out, errs)
	if got, sent := ledgerTotal(t, vars), sb.Stats().Requests; int64(got) != sent {
		t.Errorf("quota ledger %d, the service saw %d requests: a request that never left was billed", got, sent)
	}
	pool := openPool(t, vars["DATABASE_URL"])
	if n := queryInt(t, pool, "SELECT count(*)::int FROM "+pgx.Identifier{vars["WAREHOUSE_SCHEMA"], "emails"}.Sanitize()); n != sb.Stats().Emails || n == 0 {
		t.Errorf("%d e-mails landed, the service holds %d", n, sb.Stats().Emails)
	}

	both := syncEnv(t, sb, o, map[string]string{"AGENCY_BASE_URL": "http://" + loopback.FreeAddr(t), "AGENCY_COMMS_URL": "http://" + loopback.FreeAddr(t)})
	code, _, errs = mainWith(both, "run")
	if code != ExitFailure || !strings.Contains(errs, "cannot reach AGENCY_COMMS_URL") {
		t.Fatalf("run with both addresses closed: exit %d:\n%s", code, errs)
	}
	if got := ledgerTotal(t, both); got != 0 {
		t.Errorf("quota ledger %d after a run that reached nothing", got)
	}
	code, out, errs = mainWith(both, "check")
	if code != ExitFailure || !strings.Contains(errs+out, "cannot reach AGENCY_BASE_URL") {
		t.Fatalf("check with both addresses closed: exit %d:\n%s\n%s", code, out, errs)
	}
	if got := ledgerTotal(t, both); got != 0 {
		t.Errorf("quota ledger %d after a check that reached nothing", got)
	}
}

// TestRefusedMainKeyValidCommsKey: with the main interface refusing its
// key (the sandbox's refuse_main_key twist), `run` exits 3 naming
// AGENCY_API_KEY, and every e-mail lands.
func TestRefusedMainKeyValidCommsKey(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	on := true
	if err := sb.SetTwists(sandbox.Twists{HostileTwists: sandbox.HostileTwists{RefuseMainKey: &on}}); err != nil {
		t.Fatal(err)
	}
	vars := syncEnv(t, sb, o, nil)
	code, out, errs := mainWith(vars, "run")
	if code != ExitCredential {
		t.Fatalf("run exit %d, want %d:\n%s", code, ExitCredential, errs)
	}
	if !strings.Contains(errs, "AGENCY_API_KEY") {
		t.Errorf("the error does not name AGENCY_API_KEY:\n%s", errs)
	}
	assertNoSecrets(t, out, errs)
	pool := openPool(t, vars["DATABASE_URL"])
	table := func(name string) string { return pgx.Identifier{vars["WAREHOUSE_SCHEMA"], name}.Sanitize() }
	if n := queryInt(t, pool, "SELECT count(*)::int FROM "+table("emails")); n != sb.Stats().Emails {
		t.Errorf("%d e-mails landed, the service holds %d", n, sb.Stats().Emails)
	}
	status := fmt.Sprint(queryInt(t, pool, "SELECT count(*)::int FROM "+table("sync_runs")+" WHERE status = 'failed' AND error LIKE '%AGENCY_API_KEY%'"))
	if status != "1" {
		t.Errorf("sync_runs: %s failed runs naming AGENCY_API_KEY, want 1", status)
	}
}

// truthCounts is the sandbox's ground truth: records per stream (those
// that are not deliberately bad).
func truthCounts(t *testing.T, sb *sandbox.Server) oracle.Truth {
	t.Helper()
	var buf bytes.Buffer
	if err := sb.Truth(&buf); err != nil {
		t.Fatal(err)
	}
	tr, err := oracle.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestBodyTooLargeFailsOnlyItsStream: every communications page a gzip
// bomb (1 GiB inflated), or a body that never ends: `run` exits 1 naming
// the cap and AGENCY_MAX_RESPONSE_BYTES, and every other stream lands.
func TestBodyTooLargeFailsOnlyItsStream(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"gzip_bomb", "endless_body"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			sb, o := startSandbox(t, nil)
			on := true
			tw := sandbox.HostileTwists{GzipBomb: &on}
			if kind == "endless_body" {
				tw = sandbox.HostileTwists{EndlessBody: &on}
			}
			if err := sb.SetTwists(sandbox.Twists{HostileTwists: tw}); err != nil {
				t.Fatal(err)
			}
			vars := syncEnv(t, sb, o, nil)
			code, out, errs := mainWith(vars, "run")
			if code != ExitFailure {
				t.Fatalf("run exit %d, want %d:\n%s", code, ExitFailure, errs)
			}
			if !strings.Contains(errs, "response too large") || !strings.Contains(errs, "32 MiB cap of AGENCY_MAX_RESPONSE_BYTES") {
				t.Errorf("the error does not name the cap and its setting:\n%s", errs)
			}
			assertNoSecrets(t, out, errs)
			pool := openPool(t, vars["DATABASE_URL"])
			tr := truthCounts(t, sb)
			for stream, table := range map[string]string{"brands": "brands", "contacts": "brand_contacts", "projects": "projects",
				"invoices": "invoices", "payments": "payments", "summary": "agency_finance_summary"} {
				want, _ := tr.Counts(stream)
				if got := queryInt(t, pool, "SELECT count(*)::int FROM "+pgx.Identifier{vars["WAREHOUSE_SCHEMA"], table}.Sanitize()); got != want {
					t.Errorf("%s: %d rows, the truth has %d", table, got, want)
				}
			}
		})
	}
}
