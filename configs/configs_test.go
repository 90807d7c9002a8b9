// Package configs holds agencysync's configuration examples; its tests keep
// them equal to the Config struct and prove that each one works.
package configs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/cli"
	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

func TestMain(m *testing.M) { warehousetest.Main(m) }

const exampleFile = "agencysync.env.example"

// secretPath is where every recipe in deploy/ mounts a secret: compose
// secrets and the examples use /run/secrets/<lower-case name>.
func secretPath(name string) string { return "/run/secrets/" + strings.ToLower(name) }

// --- env file syntax --------------------------------------------------------

// assignment is one NAME=value line of an env file, set or commented out.
type assignment struct {
	Name      string
	Value     string
	Commented bool
	Line      int
}

var assignRE = regexp.MustCompile(`^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$`)

// parseEnvFile reads the subset of env-file syntax that systemd's
// EnvironmentFile, compose's env_file and a POSIX shell agree on: NAME=value
// with a bare value, or a double-quoted one with backslash escapes. Comment
// lines of the form "# NAME=value" are returned as commented assignments.
func parseEnvFile(t *testing.T, path string) []assignment {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []assignment
	for i, line := range strings.Split(string(raw), "\n") {
		m := assignRE.FindStringSubmatch(line)
		if m == nil {
			if line != "" && !strings.HasPrefix(line, "#") {
				t.Errorf("%s:%d: neither a comment nor NAME=value: %q", path, i+1, line)
			}
			continue
		}
		v, err := unquote(m[3])
		if err != nil {
			t.Errorf("%s:%d: %v", path, i+1, err)
			continue
		}
		out = append(out, assignment{Name: m[2], Value: v, Commented: m[1] != "", Line: i + 1})
	}
	return out
}

var bareRE = regexp.MustCompile(`^[A-Za-z0-9_./:,%@+=-]*$`)

func unquote(v string) (string, error) {
	if bareRE.MatchString(v) {
		return v, nil
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", fmt.Errorf("value %q needs double quotes", v)
	}
	var b strings.Builder
	inner := v[1 : len(v)-1]
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		switch {
		case c == '\\' && i+1 < len(inner) && strings.ContainsRune(`\"$`+"`", rune(inner[i+1])):
			b.WriteByte(inner[i+1])
			i++
		case c == '"' || c == '$' || c == '`' || c == '\\':
			return "", fmt.Errorf("value %q has an unescaped %q", v, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func quote(v string) string {
	if bareRE.MatchString(v) {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
	return `"` + r.Replace(v) + `"`
}

// --- the generated example ---------------------------------------------------

// exampleValue is the "e.g." value of a variable's form.
func exampleValue(form string) string {
	_, eg, ok := strings.Cut(form, "e.g. ")
	if !ok {
		return ""
	}
	eg, _, _ = strings.Cut(eg, ";")
	eg, _, _ = strings.Cut(eg, " or ")
	return strings.TrimSpace(eg)
}

// requiredVariables finds, by asking the code, which variables a sync cannot
// do without: each is unset in turn from an otherwise complete configuration.
func requiredVariables(t *testing.T) map[string]bool {
	t.Helper()
	full := map[string]string{}
	for _, v := range config.Variables() {
		switch {
		case v.Secret && strings.Contains(v.Form, "http(s) URL"): // a webhook
			full[v.Name] = "https://hooks.example/services/T0/B0/x"
		case v.Secret:
			full[v.Name] = "postgres://u:p@db.example:5432/w"
		case v.Default != "":
			full[v.Name] = v.Default
		default:
			full[v.Name] = exampleValue(v.Form)
		}
	}
	load := func(env map[string]string) error {
		cfg, err := config.LoadFrom(context.Background(), config.Environment{Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, ReadFile: os.ReadFile}, cli.Known())
		if err != nil {
			return err
		}
		return cfg.Require(config.NeedSync)
	}
	if err := load(full); err != nil {
		t.Fatalf("a complete configuration from the defaults and examples does not load: %v", err)
	}
	req := map[string]bool{}
	for _, v := range config.Variables() {
		env := maps(full)
		delete(env, v.Name)
		var ce *config.Error
		if err := load(env); errors.As(err, &ce) && ce.Variable == v.Name {
			req[v.Name] = true
		}
	}
	if len(req) == 0 {
		t.Fatal("no variable is required: the probe is broken")
	}
	return req
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// generateExample renders agencysync.env.example from config.Variables().
func generateExample(t *testing.T) string {
	required := requiredVariables(t)
	var b strings.Builder
	b.WriteString(`# agencysync configuration: every variable, with its default.
# Generated from config.Config (UPDATE_EXAMPLES=1 go test ./configs); the
# command ` + "`agencysync config`" + ` prints the same reference.
#
# Lines NAME=value are set: the service's addresses and whose e-mails to sync,
# which have no default (replace the examples). Lines "# NAME=value" show the
# default ("# NAME=" when it is unset): uncomment one to change it. Values with
# spaces or shell characters are double-quoted, so this file serves as a
# systemd EnvironmentFile, a compose env_file or a shell's
# "set -a; . ./agencysync.env; set +a".
#
# Secrets (DATABASE_URL, AGENCY_API_KEY, AGENCY_COMMS_KEY) are never written
# here: each is read from the file its *_FILE variable names, and the recipes
# in deploy/ set those themselves (compose secrets, a Kubernetes Secret
# volume, systemd credentials). Uncomment a *_FILE line only to run by hand.
`)
	for _, v := range config.Variables() {
		b.WriteString("\n# " + capitalize(strings.TrimSuffix(v.Desc, ".")) + ".")
		if required[v.Name] {
			b.WriteString(" Required.")
		}
		b.WriteString("\n# Form: " + strings.TrimSuffix(v.Form, ".") + ".")
		if v.Default == "" && !required[v.Name] {
			b.WriteString(" Default: unset.")
		}
		if v.Secret {
			b.WriteString(" Secret: give it as a file.")
		}
		b.WriteString("\n")
		switch {
		case v.Secret:
			b.WriteString("# " + v.Name + "=\n")
			b.WriteString("# " + v.Name + "_FILE=" + secretPath(v.Name) + "\n")
		case required[v.Name]:
			b.WriteString(v.Name + "=" + quote(exampleValue(v.Form)) + "\n")
		default:
			b.WriteString("# " + v.Name + "=" + quote(v.Default) + "\n")
		}
	}
	return b.String()
}

// capitalize starts a description with a capital, unless its first word is an
// identifier (statement_timeout, with_message, -brand_url).
func capitalize(s string) string {
	first, _, _ := strings.Cut(s, " ")
	if !regexp.MustCompile(`^[a-z]+$`).MatchString(first) {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// TestEnvExampleIsGenerated keeps agencysync.env.example equal to the Config
// struct. Run with UPDATE_EXAMPLES=1 to rewrite it.
func TestEnvExampleIsGenerated(t *testing.T) {
	t.Parallel()
	want := generateExample(t)
	got, err := os.ReadFile(exampleFile)
	if err == nil && string(got) == want {
		return
	}
	if os.Getenv("UPDATE_EXAMPLES") == "1" {
		if err := os.WriteFile(exampleFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is stale (%v); run UPDATE_EXAMPLES=1 go test ./configs -run TestEnvExampleIsGenerated", exampleFile, err)
}

// TestEnvExampleCoversEveryVariable checks the example on its own terms, so a
// mistake in the generator cannot hide behind TestEnvExampleIsGenerated.
func TestEnvExampleCoversEveryVariable(t *testing.T) {
	t.Parallel()
	required := requiredVariables(t)
	entries := parseEnvFile(t, exampleFile)
	byName := map[string][]assignment{}
	for _, e := range entries {
		byName[e.Name] = append(byName[e.Name], e)
	}
	known := map[string]bool{}
	for _, v := range config.Variables() {
		known[v.Name] = true
		if v.Secret {
			known[v.Name+"_FILE"] = true
		}
		got := byName[v.Name]
		if len(got) != 1 {
			t.Errorf("%s appears %d times, want once", v.Name, len(got))
			continue
		}
		e := got[0]
		switch {
		case v.Secret:
			if !e.Commented || e.Value != "" {
				t.Errorf("line %d: secret %s must stay commented and empty, got %+v", e.Line, v.Name, e)
			}
			f := byName[v.Name+"_FILE"]
			if len(f) != 1 || !f[0].Commented || !filepath.IsAbs(f[0].Value) {
				t.Errorf("%s_FILE: want one commented absolute path, got %+v", v.Name, f)
			}
		case required[v.Name]:
			if e.Commented || e.Value == "" {
				t.Errorf("line %d: required %s must be set, got %+v", e.Line, v.Name, e)
			}
		default:
			if !e.Commented || e.Value != v.Default {
				t.Errorf("line %d: %s must show its default %q commented out, got %+v", e.Line, v.Name, v.Default, e)
			}
		}
	}
	for name := range byName {
		if !known[name] {
			t.Errorf("%s is not a configuration variable", name)
		}
	}
}

// TestEnvExampleLoads loads the example as a deployment would (the secrets as
// files) and checks that uncommenting every default changes nothing.
func TestEnvExampleLoads(t *testing.T) {
	t.Parallel()
	entries := parseEnvFile(t, exampleFile)
	dir := t.TempDir()
	files := map[string]string{}
	set, all := map[string]string{}, map[string]string{}
	secret := map[string]bool{}
	for _, v := range config.Variables() {
		secret[v.Name] = v.Secret
	}
	for _, e := range entries {
		if base, ok := strings.CutSuffix(e.Name, "_FILE"); ok && secret[base] {
			local := filepath.Join(dir, filepath.Base(e.Value))
			content := "secret-" + e.Name
			switch e.Name {
			case "DATABASE_URL_FILE":
				content = "postgres://agencysync:pw@db.example:5432/warehouse"
			case "SYNC_NOTIFY_URL_FILE":
				content = "https://hooks.example/services/T0/B0/secret"
			}
			if err := os.WriteFile(local, []byte(content+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			files[e.Value] = local
			set[e.Name], all[e.Name] = e.Value, e.Value
			continue
		}
		if e.Value == "" {
			continue // an unset secret or an unset optional variable
		}
		all[e.Name] = e.Value
		if !e.Commented {
			set[e.Name] = e.Value
		}
	}
	readFile := func(p string) ([]byte, error) {
		if local, ok := files[p]; ok {
			return os.ReadFile(local)
		}
		return nil, fmt.Errorf("unexpected file %s", p)
	}
	load := func(env map[string]string) *config.Config {
		cfg, err := config.LoadFrom(context.Background(), config.Environment{Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, ReadFile: readFile}, cli.Known())
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		if err := cfg.Require(config.NeedSync); err != nil {
			t.Fatalf("the example's set lines do not make a complete configuration: %v", err)
		}
		return cfg
	}
	a, b := load(set), load(all)
	if a.APIKey.Value() != "secret-AGENCY_API_KEY_FILE" {
		t.Errorf("AGENCY_API_KEY_FILE was not read: %q", a.APIKey.Value())
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("uncommenting the defaults changed the configuration:\n%+v\n%+v", a, b)
	}
}

// TestEnvFilesReadTheSameInBash sources each env file in bash (every line
// uncommented) and compares with the parser, so the quoting works in a shell
// as it does for systemd and compose.
func TestEnvFilesReadTheSameInBash(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	for _, name := range []string{exampleFile, "sandbox.env", "streams.env.example"} {
		entries := parseEnvFile(t, name)
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// The last assignment of a name wins, in bash as in systemd.
		want := map[string]string{}
		var lines []string
		for _, line := range strings.Split(string(raw), "\n") {
			if m := assignRE.FindStringSubmatch(line); m != nil {
				lines = append(lines, m[2]+"="+m[3])
			}
		}
		for _, e := range entries {
			want[e.Name] = e.Value
		}
		script := "set -a\n" + strings.Join(lines, "\n") + "\nset +a\nenv -0\n"
		cmd := exec.Command(bash, "--noprofile", "--norc", "-c", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s in bash: %v", name, err)
		}
		got := map[string]string{}
		for _, kv := range strings.Split(string(out), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				got[k] = v
			}
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: bash reads %s=%q, the parser %q", name, k, got[k], v)
			}
		}
	}
}

// --- sandbox.env -------------------------------------------------------------

// sandboxDefaultAddrs reads agencysandbox's default listen addresses from the
// flags table of internal/testkit/sandbox/README.md.
func sandboxDefaultAddrs(t *testing.T) (api, comms string) {
	t.Helper()
	raw, err := os.ReadFile("../internal/testkit/sandbox/README.md")
	if err != nil {
		t.Fatal(err)
	}
	find := func(flag string) string {
		m := regexp.MustCompile("\\| `" + flag + "` \\| `([^`]+)` \\|").FindStringSubmatch(string(raw))
		if m == nil {
			t.Fatalf("internal/testkit/sandbox/README.md documents no default of %s", flag)
		}
		return m[1]
	}
	return find("--api-addr"), find("--comms-addr")
}

// TestSandboxEnvSyncsTheSandbox runs a sync with sandbox.env against an
// in-process sandbox with the default keys: only the addresses are moved to
// the test's free ports (and the warehouse to the test's database).
func TestSandboxEnvSyncsTheSandbox(t *testing.T) {
	t.Parallel()
	vars := map[string]string{}
	for _, e := range parseEnvFile(t, "sandbox.env") {
		if e.Commented {
			t.Errorf("line %d: sandbox.env sets everything it shows, got commented %s", e.Line, e.Name)
		}
		vars[e.Name] = e.Value
	}
	for _, v := range config.Variables() {
		if v.Secret && vars[v.Name] != "" {
			t.Errorf("sandbox.env sets secret %s inline; give it as %s_FILE", v.Name, v.Name)
		}
	}
	if _, ok := vars["DATABASE_URL"]; ok {
		t.Error("sandbox.env must leave DATABASE_URL unset (a private local cluster)")
	}
	apiAddr, commsAddr := sandboxDefaultAddrs(t)
	for name, addr := range map[string]string{"AGENCY_BASE_URL": apiAddr, "AGENCY_COMMS_URL": commsAddr} {
		if want := "http://" + addr; vars[name] != want {
			t.Errorf("%s=%q, want the local sandbox's default %q", name, vars[name], want)
		}
	}
	o := sandbox.DefaultOptions()
	// sandbox.env's key files are read from the repository root, as its usage says.
	readFile := func(p string) ([]byte, error) {
		if filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox.env names an absolute path %s", p)
		}
		return os.ReadFile(filepath.Join("..", p))
	}
	for name, want := range map[string]string{"AGENCY_API_KEY_FILE": o.APIKey, "AGENCY_COMMS_KEY_FILE": o.CommsKey} {
		b, err := readFile(vars[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := strings.TrimRight(string(b), "\r\n"); got != want {
			t.Errorf("%s holds %q, want the sandbox's default key %q", name, got, want)
		}
	}
	if start, history := o.Start.AddDate(0, 0, -o.HistoryDays).Format("2006-01-02"), vars["AGENCY_COMMS_START_DATE"]; history > start {
		t.Errorf("AGENCY_COMMS_START_DATE=%s starts after the sandbox's history (%s)", history, start)
	}

	o.Brands, o.ProjectsPerBrand, o.Users, o.Emails, o.HistoryDays = 3, 2, 12, 1200, 30
	o.NoLimits = true
	sb := sandbox.StartT(t, o)
	vars["AGENCY_BASE_URL"], vars["AGENCY_COMMS_URL"] = sb.APIURL(), sb.CommsURL()
	vars["DATABASE_URL"] = warehousetest.DSN(t)
	vars["WAREHOUSE_SCHEMA"] = warehousetest.NewSchemaName(t)
	vars["AGENCY_RATE_LIMIT"] = "200" // the sandbox runs without limits here
	vars["LOG_FORMAT"] = "json"

	run := func(args ...string) string {
		var out, errb bytes.Buffer
		env := cli.Env{Stdout: &out, Stderr: &errb, ReadFile: readFile,
			Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
		if code := cli.Main(context.Background(), args, env); code != cli.ExitOK {
			t.Fatalf("agencysync %s with sandbox.env: exit %d\n%s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	run("run")
	var rep engine.StatusReport
	if err := json.Unmarshal([]byte(run("status", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Status != "succeeded" {
		t.Fatalf("runs: %+v", rep.Runs)
	}
	for _, s := range rep.Streams {
		if s.Rows == 0 || s.LastSuccess == nil {
			t.Errorf("stream %s: %d rows, last success %v", s.Stream, s.Rows, s.LastSuccess)
		}
	}
	// The one 401 a run may get is its keyless clock probe (Stats.Keyless);
	// any other 401 or a 403 is a refused key.
	if st := sb.Stats(); st.ByStatus["401"] != st.Keyless || st.ByStatus["403"] != 0 {
		t.Errorf("the sandbox refused keys: %v (keyless probes %d)", st.ByStatus, st.Keyless)
	}
}

// --- streams.env.example -----------------------------------------------------

// TestStreamsExample checks every assignment of streams.env.example, set or
// commented: each is a valid value of its variable, and the set ones give
// serve the schedules and the planner the order the comments describe.
func TestStreamsExample(t *testing.T) {
	t.Parallel()
	entries := parseEnvFile(t, "streams.env.example")
	set := map[string]string{}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name] = true
		if !e.Commented {
			set[e.Name] = e.Value
		}
		env := map[string]string{e.Name: e.Value}
		if _, err := loadStreams(env); err != nil {
			t.Errorf("line %d: %s=%q: %v", e.Line, e.Name, e.Value, err)
		}
		switch e.Name {
		case "SYNC_PRIORITIES", "SYNC_STREAM_SCHEDULES", "SYNC_SCHEDULE":
		default:
			t.Errorf("line %d: %s is not a schedule or priority variable", e.Line, e.Name)
		}
	}
	for _, want := range []string{"SYNC_SCHEDULE", "SYNC_STREAM_SCHEDULES", "SYNC_PRIORITIES"} {
		if _, ok := set[want]; !ok {
			t.Errorf("streams.env.example does not set %s", want)
		}
	}
	cfg, err := loadStreams(set)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range cfg.Schedules {
		for _, st := range s.Streams {
			got[st] = s.Spec
		}
	}
	want := map[string]string{"brands": "0 2 * * *", "projects": "0 2 * * *", "finance": "30 7,19 * * *", "communications": "0 * * * *"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schedules %v, want %v", got, want)
	}
	prio := cfg.Priorities
	if i, j := slices.Index(prio, "finance"), slices.Index(prio, "brands"); i > j {
		t.Errorf("finance should come before brands: %v", prio)
	}
	if prio[len(prio)-3] != string(engine.TaskCommsBackfill) || prio[len(prio)-2] != string(engine.TaskCommsRefresh) || prio[len(prio)-1] != string(engine.TaskVerify) {
		t.Errorf("the e-mail history (its backfill, then its re-read) should come last, before its verification: %v", prio)
	}
	// The line introduced as the default is the real default, spelled out.
	raw, err := os.ReadFile("streams.env.example")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	defaults := 0
	for _, e := range entries {
		if e.Commented && e.Name == "SYNC_PRIORITIES" && e.Line >= 2 && strings.HasSuffix(lines[e.Line-2], "The default:") {
			defaults++
			if want := strings.Join(cli.Known().Tasks, ","); e.Value != want {
				t.Errorf("line %d shows %s as the default order, which is %s", e.Line, e.Value, want)
			}
		}
	}
	if defaults != 1 {
		t.Errorf("want one commented SYNC_PRIORITIES line introduced as the default, found %d", defaults)
	}
}

// loadStreams loads env as every command does.
func loadStreams(env map[string]string) (*config.Config, error) {
	return config.LoadFrom(context.Background(), config.Environment{Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, ReadFile: os.ReadFile}, cli.Known())
}

// TestFieldMapExampleLoads: fieldmap.example.yaml is a valid
// AGENCY_FIELD_MAP_FILE, and maps the same pairs as the AGENCY_FIELD_MAP
// example of the real-service walk-through (docs/real-service.md: the
// renamed project fields).
func TestFieldMapExampleLoads(t *testing.T) {
	t.Parallel()
	fromFile, err := loadStreams(map[string]string{"AGENCY_FIELD_MAP_FILE": "fieldmap.example.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	walk, err := os.ReadFile("../docs/real-service.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^AGENCY_FIELD_MAP=(\S+)$`).FindSubmatch(walk)
	if m == nil {
		t.Fatal("docs/real-service.md shows no AGENCY_FIELD_MAP=… line")
	}
	fromVar, err := loadStreams(map[string]string{"AGENCY_FIELD_MAP": string(m[1])})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"projects.name": "title", "projects.status": "state", "projects.deadline": "due_date", "projects.budget_amount": "budget_total"}
	if !reflect.DeepEqual(fromFile.FieldMap, want) || !reflect.DeepEqual(fromVar.FieldMap, want) {
		t.Errorf("fieldmap.example.yaml maps %v, the walk-through %v; want both %v", fromFile.FieldMap, fromVar.FieldMap, want)
	}
}
