package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/warehouse"
)

func needPsql(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		if _, err := warehouse.PsqlPath(os.Getenv("PG_BINDIR")); err != nil {
			t.Skip("no psql binary on this machine")
		}
	}
}

// TestPsqlOnDatabaseURL: `agencysync psql -c …` answers on the warehouse of
// DATABASE_URL with search_path on the warehouse schema, so an unqualified
// table name is the schema's; the count is checked against a direct query.
func TestPsqlOnDatabaseURL(t *testing.T) {
	t.Parallel()
	needPsql(t)
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, nil)
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("run exit %d: %s", code, errs)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, vars["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var want int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{vars["WAREHOUSE_SCHEMA"], "emails"}.Sanitize()).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if want == 0 {
		t.Fatal("the run loaded no e-mail")
	}
	code, out, errs := mainWith(vars, "psql", "-X", "-At", "-c", "select count(*) from emails")
	if code != ExitOK || strings.TrimSpace(out) != strconv.Itoa(want) {
		t.Fatalf("psql exit %d, out %q (want %d), stderr %s", code, out, want, errs)
	}
	// psql's own exit code is agencysync's.
	code, _, errs = mainWith(vars, "psql", "-X", "-v", "ON_ERROR_STOP=1", "-c", "select * from no_such_table")
	if code != 1 || !strings.Contains(errs, "no_such_table") {
		t.Fatalf("psql on a failing statement: exit %d, stderr %s; want 1 and psql's message", code, errs)
	}
}

// TestPsqlOnPrivateCluster: with DATABASE_URL unset, psql starts the private
// cluster for as long as it runs and stops it after; when the cluster already
// runs (another command holds it), psql uses it and leaves it running.
func TestPsqlOnPrivateCluster(t *testing.T) {
	t.Parallel()
	needPsql(t)
	base, err := os.MkdirTemp("", "agencysync-psql-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil { // the server's user must reach it when root
		t.Fatal(err)
	}
	dir := filepath.Join(base, "pg")
	vars := map[string]string{"WAREHOUSE_LOCAL_DIR": dir, "WAREHOUSE_SCHEMA": "agency", "LOG_FORMAT": "json", "HOME": base}
	if code, _, errs := mainWith(vars, "migrate", "up"); code != ExitOK {
		t.Fatalf("migrate up exit %d: %s", code, errs)
	}
	code, out, errs := mainWith(vars, "psql", "-X", "-At", "-c", "select count(*) from emails", "-c", "show search_path")
	if code != ExitOK || !strings.HasPrefix(out, "0\nagency") {
		t.Fatalf("psql exit %d, out %q, stderr %s; want 0 e-mails and search_path agency", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("the cluster psql started still runs after it: %v", err)
	}

	ctx := context.Background()
	c, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{DataDir: dir, BinDir: os.Getenv("PG_BINDIR")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	code, out, errs = mainWith(vars, "psql", "-X", "-At", "-c", "select count(*) from agency.emails")
	if code != ExitOK || strings.TrimSpace(out) != "0" {
		t.Fatalf("psql on a running cluster: exit %d, out %q, stderr %s", code, out, errs)
	}
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatalf("psql stopped a cluster it did not start: %v", err)
	}
	conn.Close(ctx)
}

// TestPsqlArgs: the password leaves the URL for PGPASSWORD (never on psql's
// command line) and the options set search_path to the schema.
func TestPsqlArgs(t *testing.T) {
	t.Parallel()
	args, env, err := psqlConnection("postgres://u:s3cr3t-pw@db.example:5433/wh?sslmode=require&options=-cstatement_timeout%3D0", "agency")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	if strings.Contains(line, "s3cr3t-pw") || !strings.Contains(strings.Join(env, " "), "PGPASSWORD=s3cr3t-pw") {
		t.Fatalf("args %q env %q: the password must be in PGPASSWORD only", args, env)
	}
	if !strings.Contains(line, "search_path%3Dagency") || !strings.Contains(line, "statement_timeout%3D0") || !strings.Contains(line, "sslmode=require") {
		t.Fatalf("args %q: want search_path added to the existing options and sslmode kept", args)
	}
	if _, _, err := psqlConnection("postgres://u:p@h/db?password=q", "agency"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := psqlConnection("::not a url", "agency"); err == nil || strings.Contains(err.Error(), "not a url") {
		t.Fatalf("bad URL: %v; want an error that does not echo the URL", err)
	}
}
