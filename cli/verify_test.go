package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestVerifyCommand: verify proves a complete warehouse equal (exit 0),
// finds and fills a day deleted behind the worker's back (exit 0, the day
// named), exits 75 when the budget is spent and 2 on a bad range; runs are
// recorded with trigger verify and status shows the result.
func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, nil)
	if code, out, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("run exit %d:\n%s\n%s", code, out, errs)
	}
	code, out, errs := mainWith(vars, "verify")
	if code != ExitOK || !strings.Contains(out, "; equal; 1 request(s)") {
		t.Fatalf("verify of a complete warehouse: exit %d:\n%s\n%s", code, out, errs)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, vars["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	emails := pgx.Identifier{vars["WAREHOUSE_SCHEMA"], "emails"}.Sanitize()
	var day string
	if err := conn.QueryRow(ctx, "SELECT to_char((min(email_at) AT TIME ZONE 'UTC')::date + 3, 'YYYY-MM-DD') FROM "+emails).Scan(&day); err != nil {
		t.Fatal(err)
	}
	tag, err := conn.Exec(ctx, "DELETE FROM "+emails+" WHERE (email_at AT TIME ZONE 'UTC')::date = $1::date", day)
	if err != nil || tag.RowsAffected() == 0 {
		t.Fatalf("delete %s: %v (%d rows)", day, err, tag.RowsAffected())
	}
	code, out, errs = mainWith(vars, "verify", "--from", o.Start.AddDate(0, 0, -o.HistoryDays-1).Format("2006-01-02"))
	if code != ExitOK || !strings.Contains(out, "1 day(s) differed ("+day+")") || !strings.Contains(out, day+"  service") || !strings.Contains(out, "repaired") {
		t.Fatalf("verify with a gap on %s: exit %d:\n%s\n%s", day, code, out, errs)
	}
	var missing int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+emails+" WHERE (email_at AT TIME ZONE 'UTC')::date = $1::date", day).Scan(&missing); err != nil || int64(missing) != tag.RowsAffected() {
		t.Errorf("day %s holds %d e-mails after verify, want %d", day, missing, tag.RowsAffected())
	}
	code, out, errs = mainWith(vars, "status")
	if code != ExitOK || !strings.Contains(out, "verify: last") || !strings.Contains(out, "verify") {
		t.Errorf("status exit %d does not show the verification:\n%s\n%s", code, out, errs)
	}
	var triggers int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{vars["WAREHOUSE_SCHEMA"], "sync_runs"}.Sanitize()+" WHERE trigger = 'verify' AND status = 'succeeded'").Scan(&triggers); err != nil || triggers != 2 {
		t.Errorf("%d succeeded verify runs recorded (%v), want 2", triggers, err)
	}

	for _, bad := range [][]string{{"--from", "2025-13-01"}, {"--from", "2025-02-01", "--to", "2025-01-01"}, {"extra"}} {
		if code, _, errs := mainWith(vars, append([]string{"verify"}, bad...)...); code != ExitUsage {
			t.Errorf("verify %v: exit %d, want %d: %s", bad, code, ExitUsage, errs)
		}
	}
	// The day's budget is spent: 75.
	spent := map[string]string{"AGENCY_DAILY_QUOTA": "1", "AGENCY_QUOTA_RESERVE": "0%"}
	for k, v := range vars {
		if _, ok := spent[k]; !ok {
			spent[k] = v
		}
	}
	if code, out, errs := mainWith(spent, "verify"); code != ExitIncomplete {
		t.Errorf("verify without budget: exit %d, want %d:\n%s\n%s", code, ExitIncomplete, out, errs)
	}
}
