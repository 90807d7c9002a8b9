package cli

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// TestReadOnlyCommandsCreateNothing: status, plan, config and check on a
// schema that was never migrated create no schema and no table (whatever
// SYNC_AUTO_MIGRATE says); each says the schema is not migrated, names
// `agencysync migrate up` and exits 2. The service is never asked.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, nil)
	schema := warehousetest.NewSchemaName(t) // another one, never migrated
	vars["WAREHOUSE_SCHEMA"] = schema
	pool := openPool(t, vars["DATABASE_URL"])
	existed := schemaExists(t, pool, schema) // an administrator may have created it empty
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"plan"}, {"check"}, {"check", "--json"}} {
		code, out, errs := mainWith(vars, args...)
		if code != ExitUsage || !strings.Contains(errs, "agencysync migrate up") {
			t.Errorf("%v on an unmigrated schema: exit %d, want %d naming `agencysync migrate up`\n%s\n%s", args, code, ExitUsage, out, errs)
		}
		assertNothingIn(t, pool, schema, existed, args)
	}
	if code, _, errs := mainWith(vars, "config", "--effective"); code != ExitOK {
		t.Fatalf("config --effective: exit %d: %s", code, errs)
	}
	assertNothingIn(t, pool, schema, existed, []string{"config", "--effective"})
	if st := sb.Stats(); st.Requests != 0 {
		t.Errorf("the read-only commands sent %d requests to the service", st.Requests)
	}
}

// schemaExists reports whether schema exists.
func schemaExists(t *testing.T, pool *pgxpool.Pool, schema string) bool {
	t.Helper()
	return queryInt(t, pool, "SELECT count(*) FROM pg_namespace WHERE nspname = '"+schema+"'") > 0
}

// assertNothingIn fails the test when schema was created (it did not exist
// before) or holds a table or a view.
func assertNothingIn(t *testing.T, pool *pgxpool.Pool, schema string, existed bool, after []string) {
	t.Helper()
	if !existed && schemaExists(t, pool, schema) {
		t.Fatalf("after %v: schema %s was created; a read-only command must create nothing", after, schema)
	}
	if n := queryInt(t, pool, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '"+schema+"'"); n != 0 {
		t.Fatalf("after %v: schema %s holds %d relations; a read-only command must create nothing", after, schema, n)
	}
}
