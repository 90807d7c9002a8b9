package cli

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/loopback"
	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// serveUntilReady starts serve with vars, waits for /readyz to answer 200
// (failing after a generous bound), probes it probes more times, stops serve
// and returns the /readyz body and serve's log.
func serveUntilReady(t *testing.T, vars map[string]string, probes int, args ...string) (string, string) {
	t.Helper()
	addr := loopback.FreeAddr(t)
	vars["HTTP_ADDR"] = addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb childproc.Buffer
	env := Env{Stdout: &out, Stderr: &errb, ReadFile: os.ReadFile,
		Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	done := make(chan int, 1)
	go func() { done <- Main(ctx, append([]string{"serve"}, args...), env) }()
	probe := func() (int, string, error) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	var code int
	var body string
	var err error
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case c := <-done:
			t.Fatalf("serve exited %d before ready:\n%s", c, errb.String())
		default:
		}
		if code, body, err = probe(); err == nil && code == http.StatusOK {
			break
		}
	}
	if code != http.StatusOK {
		t.Fatalf("/readyz never answered 200 (last %d %q, %v):\n%s", code, body, err, errb.String())
	}
	for i := range probes {
		if code, body, err = probe(); err != nil || code != http.StatusOK {
			t.Fatalf("/readyz probe %d: %d %q %v", i, code, body, err)
		}
	}
	cancel()
	select {
	case c := <-done:
		if c != ExitOK {
			t.Fatalf("serve exit %d:\n%s", c, errb.String())
		}
	case <-patience.After(t):
		t.Fatal("serve did not stop after the cancel before the test's deadline")
	}
	return body, errb.String()
}

// TestLeastPrivilegeRole runs every command as a role that owns only its
// schema and has no CREATE on the database.
func TestLeastPrivilegeRole(t *testing.T) {
	t.Parallel()
	own := warehousetest.NewSchemaOwner(t)
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, map[string]string{"DATABASE_URL": own.DSN, "WAREHOUSE_SCHEMA": own.Schema})

	steps := [][]string{{"migrate", "up"}, {"migrate", "status"}, {"plan"}, {"run"}, {"status", "--json"}, {"plan"}}
	outs := map[string]string{}
	for _, args := range steps {
		code, out, errs := mainWith(vars, args...)
		if code != ExitOK {
			t.Fatalf("%v as %s exit %d:\n%s\n%s", args, own.Role, code, out, errs)
		}
		outs[strings.Join(args, " ")] = out
	}
	if strings.Contains(outs["migrate status"], "pending") {
		t.Fatalf("migrate status after up:\n%s", outs["migrate status"])
	}
	var rep struct {
		Runs []struct {
			Status string `json:"status"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(outs["status --json"]), &rep); err != nil || len(rep.Runs) != 1 || rep.Runs[0].Status != "succeeded" {
		t.Fatalf("status --json (err %v): %s", err, outs["status --json"])
	}
	// A reader (USAGE on the schema, SELECT on its tables) can watch it with
	// the default configuration, since nothing is pending.
	reader, readerDSN := warehousetest.NewRole(t)
	grant := []string{
		"GRANT USAGE ON SCHEMA " + pgx.Identifier{own.Schema}.Sanitize() + " TO " + pgx.Identifier{reader}.Sanitize(),
		"GRANT SELECT ON ALL TABLES IN SCHEMA " + pgx.Identifier{own.Schema}.Sanitize() + " TO " + pgx.Identifier{reader}.Sanitize(),
	}
	for _, q := range grant {
		if _, err := warehousetest.Pool(t).Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	readerVars := maps.Clone(vars)
	readerVars["DATABASE_URL"] = readerDSN
	for _, args := range [][]string{{"status"}, {"plan"}, {"migrate", "status"}} {
		if code, out, errs := mainWith(readerVars, args...); code != ExitOK {
			t.Fatalf("%v as reader %s exit %d:\n%s\n%s", args, reader, code, out, errs)
		}
	}
	// The reader really is read-only: its sync is refused.
	if code, _, errs := mainWith(readerVars, "run"); code == ExitOK || !strings.Contains(errs, "permission denied") {
		t.Fatalf("a sync as a reader exit %d, want a refusal:\n%s", code, errs)
	}

	// Without SYNC_AUTO_MIGRATE too: nothing on the way asks for more.
	vars["SYNC_AUTO_MIGRATE"] = "false"
	for _, args := range [][]string{{"status"}, {"plan"}, {"run", "--streams", "communications"},
		{"backfill", "--from", o.Start.AddDate(0, 0, -2).Format("2006-01-02"), "--to", o.Start.Format("2006-01-02")}} {
		if code, out, errs := mainWith(vars, args...); code != ExitOK {
			t.Fatalf("%v as %s without AUTO_MIGRATE exit %d:\n%s\n%s", args, own.Role, code, out, errs)
		}
	}
	delete(vars, "SYNC_AUTO_MIGRATE") // serve as deployed: migrations checked at start
	body, _ := serveUntilReady(t, vars, 3)
	if !strings.Contains(body, "ready") {
		t.Fatalf("/readyz body %q", body)
	}
}
