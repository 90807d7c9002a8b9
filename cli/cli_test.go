package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	testAPIKey   = "api-key-5ecret-value"
	testCommsKey = "comms-key-5ecret-value"
	testDBPass   = "db-pa55word"
)

func testEnv(vars map[string]string) (Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	base := map[string]string{
		"AGENCY_API_KEY":   testAPIKey,
		"AGENCY_COMMS_KEY": testCommsKey,
		"LOG_FORMAT":       "json",
	}
	for k, v := range vars {
		base[k] = v
	}
	return Env{
		Stdout: &out, Stderr: &errb,
		Lookup:   func(k string) (string, bool) { v, ok := base[k]; return v, ok },
		ReadFile: os.ReadFile,
	}, &out, &errb
}

func assertNoSecrets(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		for _, secret := range []string{testAPIKey, testCommsKey, testDBPass} {
			if strings.Contains(s, secret) {
				t.Fatalf("secret %q appears in output:\n%s", secret, s)
			}
		}
	}
}

// tempFile writes content to a file named name in a new temporary folder
// and returns its path.
func tempFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// assertUsageError runs agencysync with args under the environment vars and
// asserts exit 2, a stderr that says want, and no secret printed.
func assertUsageError(t *testing.T, vars map[string]string, want string, args ...string) {
	t.Helper()
	env, out, errb := testEnv(vars)
	if code := Main(context.Background(), args, env); code != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitUsage, errb)
	}
	if !strings.Contains(errb.String(), want) {
		t.Fatalf("stderr does not say %q: %s", want, errb)
	}
	assertNoSecrets(t, out.String(), errb.String())
}

func TestBadConfigurationExits2NamingTheVariable(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]string{
		"WAREHOUSE_SCHEMA":        "x; drop table y",
		"AGENCY_COMMS_START_DATE": "01/02/2024",
		"AGENCY_RATE_LIMIT":       "ten",
		"DATABASE_URL":            "mysql://u:" + testDBPass + "@h/db",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assertUsageError(t, map[string]string{name: value}, name+":", "migrate", "status")
		})
	}
}

func TestFailingRunNeverPrintsSecrets(t *testing.T) {
	t.Parallel()
	// A warehouse that refuses connections: the run fails with exit 1.
	env, out, errb := testEnv(map[string]string{
		"DATABASE_URL": "postgres://agency:" + testDBPass + "@127.0.0.1:1/w?sslmode=disable&connect_timeout=2",
	})
	code := Main(context.Background(), []string{"migrate", "up"}, env)
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitFailure, errb)
	}
	if errb.Len() == 0 {
		t.Fatal("a failing run printed nothing")
	}
	assertNoSecrets(t, out.String(), errb.String())
}

func TestUsage(t *testing.T) {
	t.Parallel()
	env, out, errb := testEnv(nil)
	if code := Main(context.Background(), []string{"--help"}, env); code != ExitOK {
		t.Fatalf("--help exit %d", code)
	}
	if !strings.Contains(out.String(), "migrate") {
		t.Fatalf("help lacks commands: %s", out)
	}
	if code := Main(context.Background(), []string{"frobnicate"}, env); code != ExitUsage {
		t.Fatalf("unknown command exit %d", code)
	}
	if code := Main(context.Background(), []string{"migrate", "sideways"}, env); code != ExitUsage {
		t.Fatalf("bad migrate verb exit %d: %s", code, errb)
	}
	env, out, _ = testEnv(nil)
	if code := Main(context.Background(), []string{"config"}, env); code != ExitOK {
		t.Fatalf("config exit %d", code)
	}
	assertNoSecrets(t, out.String())
	if !strings.Contains(out.String(), "AGENCY_COMMS_USER_IDS") {
		t.Fatalf("config reference incomplete: %s", out)
	}
}

// TestKeyWithLineBreakExits2AtStart: a key with a line break is a
// configuration error before any request: exit 2, the variable named, the
// key never printed.
func TestKeyWithLineBreakExits2AtStart(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"AGENCY_API_KEY", "AGENCY_COMMS_KEY"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			value := testAPIKey + "\n"
			if name == "AGENCY_COMMS_KEY" {
				value = "\t" + testCommsKey
			}
			// No service address either: had the key passed, the error
			// would name AGENCY_BASE_URL instead.
			assertUsageError(t, map[string]string{name: value}, name+":", "plan")
		})
	}
}

// TestUsageErrorsNameTheFlag: a command's stray argument, unknown stream or
// malformed day is a usage error (exit 2) whose message names the command or
// flag, before anything is opened.
func TestUsageErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"check", "x"}, `check takes no arguments, got ["x"]`},
		{[]string{"config", "x"}, `config takes no arguments, got ["x"]`},
		{[]string{"rebuild", "x"}, `rebuild takes no arguments, got ["x"]`},
		{[]string{"run", "x", "y"}, `run takes no arguments, got ["x" "y"]`},
		{[]string{"verify", "x"}, `verify takes no arguments, got ["x"]`},
		{[]string{"check", "--streams", "emails"}, `--streams: `},
		{[]string{"run", "--streams", "emails"}, `--streams: `},
		{[]string{"plan", "--streams", "emails"}, `--streams: `},
		{[]string{"rebuild", "--streams", "emails"}, `--streams: `},
		{[]string{"verify", "--from", "2024-13-01"}, `--from "2024-13-01": want YYYY-MM-DD`},
		{[]string{"verify", "--from", "2024-02-01", "--to", "soon"}, `--to "soon": want YYYY-MM-DD`},
		{[]string{"backfill", "--from", "yesterday"}, `--from "yesterday": want YYYY-MM-DD`},
		{[]string{"backfill", "--from", "2024-02-01", "--to", "soon"}, `--to "soon": want YYYY-MM-DD`},
		{[]string{"backfill", "--to", "2024-02-01"}, `--to needs --from`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			assertUsageError(t, nil, "agencysync "+c.args[0]+": "+c.want, c.args...)
		})
	}
}
