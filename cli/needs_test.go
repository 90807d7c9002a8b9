package cli

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// warehouseOnly is the environment of a command that uses nothing but the
// warehouse: no address, key or id of the service is set.
func warehouseOnly(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"DATABASE_URL": warehousetest.DSN(t), "WAREHOUSE_SCHEMA": warehousetest.NewSchemaName(t), "LOG_FORMAT": "json",
	}
}

// serviceVars is every variable of the service that a sync uses, pointing
// at an address nobody listens on.
func serviceVars() map[string]string {
	return map[string]string{
		"AGENCY_BASE_URL": "http://127.0.0.1:9", "AGENCY_API_KEY": testAPIKey,
		"AGENCY_COMMS_URL": "http://127.0.0.1:9", "AGENCY_COMMS_KEY": testCommsKey,
		"AGENCY_COMMS_DOMAIN_ID": "1", "AGENCY_COMMS_USER_IDS": "1-3", "AGENCY_COMMS_START_DATE": "2024-01-01",
	}
}

// sourceVars is a configuration that passes Require(config.NeedSync) without a service
// behind it (nothing here sends a request).
func sourceVars(t *testing.T) map[string]string {
	t.Helper()
	vars := warehouseOnly(t)
	maps.Copy(vars, serviceVars())
	return vars
}

// TestStatusAndMigrateRunWithoutAPIKeys: the commands that only read or
// change the warehouse (migrate, status, plan of the lists) ask for no
// service variable; plan of the e-mails asks only for where their history
// starts.
func TestStatusAndMigrateRunWithoutAPIKeys(t *testing.T) {
	t.Parallel()
	vars := warehouseOnly(t)
	for _, args := range [][]string{{"migrate", "up"}, {"migrate", "status"}, {"status"}, {"status", "--json"}, {"plan", "--streams", "brands,projects,finance"}} {
		code, out, errs := mainWith(vars, args...)
		if code != ExitOK {
			t.Fatalf("%v without service variables: exit %d\n%s\n%s", args, code, out, errs)
		}
		if args[0] == "status" && args[len(args)-1] == "--json" {
			var rep map[string]any
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep["schema"] != vars["WAREHOUSE_SCHEMA"] {
				t.Errorf("status --json printed %v (%v), want the report of schema %s", rep, err, vars["WAREHOUSE_SCHEMA"])
			}
		}
	}
	code, _, errs := mainWith(vars, "plan")
	if code != ExitUsage || !strings.Contains(errs, "AGENCY_COMMS_START_DATE: is required") || strings.Contains(errs, "AGENCY_API_KEY") {
		t.Fatalf("plan of every stream without AGENCY_COMMS_START_DATE: exit %d, %s; want 2 naming it (and no key)", code, errs)
	}
	vars["AGENCY_COMMS_START_DATE"] = "2024-01-01"
	if code, out, errs := mainWith(vars, "plan"); code != ExitOK || !strings.Contains(out, "communications-backfill") {
		t.Fatalf("plan with the start date and no keys: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestMissingVariablesFailOnlyTheCommandsThatUseThem: each syncing command
// names the first variable it uses that is missing (exit 2), and no other.
func TestMissingVariablesFailOnlyTheCommandsThatUseThem(t *testing.T) {
	t.Parallel()
	// A warehouse nobody listens on: a command that got past its
	// configuration would fail with exit 1 instead.
	base := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", "LOG_FORMAT": "json"}
	source := serviceVars()
	// Per command line: the variables it uses (each one left out fails it
	// with exit 2 naming it) and some it does not use (left out, it goes on).
	cases := []struct{ line, uses, unused string }{
		{"run", "AGENCY_API_KEY AGENCY_COMMS_KEY AGENCY_COMMS_START_DATE", ""},
		{"run --streams brands,finance", "AGENCY_API_KEY", "AGENCY_COMMS_KEY AGENCY_COMMS_USER_IDS"},
		{"run --streams communications", "AGENCY_COMMS_DOMAIN_ID", "AGENCY_API_KEY"},
		{"serve", "AGENCY_API_KEY AGENCY_COMMS_USER_IDS", ""},
		{"verify", "AGENCY_COMMS_KEY", "AGENCY_API_KEY"},
		{"verify --from 2024-02-01 --to 2024-02-03", "", "AGENCY_COMMS_START_DATE"},
		{"verify --from 2024-02-01", "AGENCY_COMMS_START_DATE", ""},
		{"backfill --from 2024-02-01", "AGENCY_COMMS_URL", "AGENCY_API_KEY AGENCY_COMMS_START_DATE"},
		{"backfill", "AGENCY_COMMS_START_DATE AGENCY_COMMS_URL", "AGENCY_API_KEY"},
		{"plan", "AGENCY_COMMS_START_DATE", "AGENCY_API_KEY AGENCY_COMMS_KEY AGENCY_BASE_URL"},
		{"status", "", "AGENCY_API_KEY AGENCY_COMMS_START_DATE"},
		{"migrate status", "", "AGENCY_COMMS_KEY"},
		{"check", "AGENCY_API_KEY AGENCY_COMMS_USER_IDS", "AGENCY_COMMS_START_DATE"},
		{"check --streams brands,finance", "AGENCY_BASE_URL", "AGENCY_COMMS_KEY"},
		{"check --streams communications", "AGENCY_COMMS_URL", "AGENCY_API_KEY"},
	}
	without := func(line, missing string, want bool) {
		t.Run(line+" without "+missing, func(t *testing.T) {
			t.Parallel()
			vars := maps.Clone(base)
			maps.Copy(vars, source)
			delete(vars, missing)
			code, out, errs := mainWith(vars, strings.Fields(line)...)
			named := strings.Contains(errs, missing+": is required")
			switch {
			case want && (code != ExitUsage || !named):
				t.Fatalf("exit %d, want 2 naming %s:\n%s\n%s", code, missing, out, errs)
			case !want && (code == ExitUsage || named):
				t.Fatalf("exit %d: the command asked for %s, which it does not use:\n%s\n%s", code, missing, out, errs)
			}
			assertNoSecrets(t, out, errs)
		})
	}
	for _, c := range cases {
		for _, missing := range strings.Fields(c.uses) {
			without(c.line, missing, true)
		}
		for _, missing := range strings.Fields(c.unused) {
			without(c.line, missing, false)
		}
	}
}

// TestBadVariableFailsEveryCommand: a variable that is set is checked by
// every command that reads the configuration, whether or not it uses it:
// exit 2 naming it, before anything is opened.
func TestBadVariableFailsEveryCommand(t *testing.T) {
	t.Parallel()
	badYAML := tempFile(t, "fields.yaml", "projects:\n  name: [title]\n")
	bad := map[string]string{
		"SYNC_PRIORITIES":       "communications-increment,emails",
		"SYNC_STREAM_SCHEDULES": "emails=0 * * * *",
		"AGENCY_PATHS":          "contacts=/v1/contacts",
		"AGENCY_FIELD_MAP":      "projects.name",
		"AGENCY_FIELD_MAP_FILE": badYAML,
	}
	commands := [][]string{{"run"}, {"check"}, {"serve"}, {"backfill", "--from", "2024-01-01"}, {"verify"}, {"plan"}, {"status"},
		{"migrate", "status"}, {"migrate", "up"}, {"psql", "-c", "select 1"}, {"config", "--effective"}}
	for variable, value := range bad {
		for _, args := range commands {
			t.Run(variable+"/"+strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				// No service variables and a warehouse nobody listens
				// on: only the bad variable can explain an exit 2.
				vars := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2",
					"LOG_FORMAT": "json", variable: value}
				code, out, errs := mainWith(vars, args...)
				if code != ExitUsage || !strings.Contains(errs, variable+":") {
					t.Fatalf("exit %d, want 2 naming %s:\n%s\n%s", code, variable, out, errs)
				}
			})
		}
	}
}

// TestSyncWithOnlyTheVariablesItUses: against the sandbox, a sync of the
// e-mails (run, backfill, verify) completes without the main interface's
// key, and a sync of the lists without any communications variable: what
// Require lets through, the engine really does not use.
func TestSyncWithOnlyTheVariablesItUses(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	full := syncEnv(t, sb, o, nil)
	without := func(names ...string) map[string]string {
		vars := maps.Clone(full)
		for _, n := range names {
			delete(vars, n)
		}
		return vars
	}
	comms := without("AGENCY_API_KEY")
	lists := without("AGENCY_COMMS_URL", "AGENCY_COMMS_KEY", "AGENCY_COMMS_DOMAIN_ID", "AGENCY_COMMS_USER_IDS", "AGENCY_COMMS_START_DATE")
	from := o.Start.AddDate(0, 0, -o.HistoryDays-1).Format("2006-01-02")
	steps := []struct {
		vars map[string]string
		args []string
	}{
		{comms, []string{"run", "--streams", "communications"}},
		{comms, []string{"verify"}},
		{comms, []string{"backfill", "--from", from}},
		{lists, []string{"run", "--streams", "brands,projects,finance"}},
		{lists, []string{"status"}},
	}
	for _, s := range steps {
		code, out, errs := mainWith(s.vars, s.args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", s.args, code, out, errs)
		}
		assertNoSecrets(t, out, errs)
	}
	code, out, errs := mainWith(full, "status", "--json")
	if code != ExitOK {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	var rep struct {
		Streams []struct {
			Stream      string  `json:"stream"`
			LastSuccess *string `json:"last_success"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(rep.Streams) != 4 {
		t.Fatalf("status shows %d streams, want 4:\n%s", len(rep.Streams), out)
	}
	for _, st := range rep.Streams {
		if st.LastSuccess == nil {
			t.Errorf("stream %s never succeeded:\n%s", st.Stream, out)
		}
	}
}

// TestFieldMapNamesUnknownColumns: AGENCY_FIELD_MAP is checked against the
// stream declarations at start, by every command that loads the
// configuration: an unknown table or column exits 2 naming it.
func TestFieldMapNamesUnknownColumns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ value, want string }{
		{"projects.nope=title", "no column nope"},
		{"nosuchtable.name=title", "nosuchtable"},
		{"projects.name=title,projects.raw=payload", "raw"},
	} {
		vars := warehouseOnly(t)
		vars["AGENCY_FIELD_MAP"] = tc.value
		code, _, errs := mainWith(vars, "status")
		if code != ExitUsage || !strings.Contains(errs, "AGENCY_FIELD_MAP") || !strings.Contains(errs, tc.want) {
			t.Errorf("AGENCY_FIELD_MAP=%s: exit %d, %q; want 2 naming the variable and %s", tc.value, code, errs, tc.want)
		}
	}
	vars := warehouseOnly(t)
	vars["AGENCY_FIELD_MAP"] = "projects.name=title,projects.status=state,projects.deadline=due_date,projects.budget_amount=budget_total"
	if code, out, errs := mainWith(vars, "migrate", "up"); code != ExitOK {
		t.Fatalf("migrate up with a valid field map: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := mainWith(vars, "status"); code != ExitOK {
		t.Fatalf("a valid field map: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestEmptyEnvironmentNamesEveryMissingVariable: from an empty environment
// a sync fails once, exit 2, with one error naming every variable it
// needs — not one variable a round.
func TestEmptyEnvironmentNamesEveryMissingVariable(t *testing.T) {
	t.Parallel()
	code, _, errs := mainWith(map[string]string{}, "run")
	if code != ExitUsage {
		t.Fatalf("run from an empty environment: exit %d, want %d\n%s", code, ExitUsage, errs)
	}
	for _, v := range []string{"AGENCY_BASE_URL", "AGENCY_API_KEY", "AGENCY_COMMS_URL", "AGENCY_COMMS_KEY",
		"AGENCY_COMMS_DOMAIN_ID", "AGENCY_COMMS_USER_IDS", "AGENCY_COMMS_START_DATE"} {
		if !strings.Contains(errs, v+": is required") {
			t.Errorf("the error does not name %s:\n%s", v, errs)
		}
	}
	vars := map[string]string{"AGENCY_RATE_LIMIT": "fast", "LOG_LEVEL": "chatty", "AGENCY_DAILY_QUOTA": "0"}
	code, _, errs = mainWith(vars, "status")
	if code != ExitUsage || !strings.Contains(errs, "AGENCY_RATE_LIMIT") || !strings.Contains(errs, "LOG_LEVEL") || !strings.Contains(errs, "AGENCY_DAILY_QUOTA") {
		t.Fatalf("three bad values: exit %d, want 2 naming all three:\n%s", code, errs)
	}
}
