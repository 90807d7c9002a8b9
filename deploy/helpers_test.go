// Package deploy holds agencysync's deployment recipes (Dockerfile, compose,
// Kubernetes, systemd, Grafana, dbt). It has no Go code of its own: its
// tests check the recipes against the code they deploy, and the README's
// commands and queries against a warehouse synced from the sandbox.
package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

func TestMain(m *testing.M) { warehousetest.Main(m) }

// repo is the repository root, seen from this package's directory.
const repo = ".."

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// yamlDocs decodes every document of a YAML file into generic maps.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(readFile(t, path)))
	var out []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if doc != nil {
			out = append(out, doc)
		}
	}
}

// get walks a generic YAML/JSON value along a path of map keys and list
// indexes ("spec", "template", 0, ...); nil when absent.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func strList(v any) []string {
	var out []string
	for _, x := range list(v) {
		out = append(out, str(x))
	}
	return out
}

// variables are the configuration variables by name; the _FILE variant of a
// secret is listed too.
type variables struct {
	known   map[string]bool
	secrets map[string]bool
}

func configVariables() variables {
	v := variables{known: map[string]bool{}, secrets: map[string]bool{}}
	for _, c := range config.Variables() {
		v.known[c.Name] = true
		if c.Secret {
			v.secrets[c.Name] = true
			v.known[c.Name+"_FILE"] = true
		}
	}
	return v
}

// envAssignment is one NAME=value of an env file, set or commented out.
type envAssignment struct {
	Name, Value string
	Commented   bool
}

var envLineRE = regexp.MustCompile(`^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$`)

// parseEnvFile reads NAME=value lines (and "# NAME=value" comments); quoted
// values lose their double quotes and backslash escapes.
func parseEnvFile(t *testing.T, path string) []envAssignment {
	t.Helper()
	var out []envAssignment
	for _, line := range strings.Split(readFile(t, path), "\n") {
		m := envLineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v := m[3]
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = regexp.MustCompile(`\\(.)`).ReplaceAllString(v[1:len(v)-1], "$1")
		}
		out = append(out, envAssignment{Name: m[2], Value: v, Commented: m[1] != ""})
	}
	return out
}

// shellWords splits a command line on blanks, honouring double and single
// quotes (enough for the Dockerfile's RUN lines and the README's commands).
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// --- the Dockerfile --------------------------------------------------------

type dockerStage struct {
	Name         string
	From         string
	Instructions []dockerInstruction
}

type dockerInstruction struct {
	Cmd  string // upper case: RUN, ENV, CMD, ...
	Args string
}

// parseDockerfile splits a Dockerfile into stages and instructions, joining
// continuation lines and dropping comments.
func parseDockerfile(t *testing.T) (args map[string]string, stages []*dockerStage) {
	t.Helper()
	args = map[string]string{}
	var logical []string
	var cur strings.Builder
	for _, line := range strings.Split(readFile(t, "Dockerfile"), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	for _, l := range logical {
		cmd, rest, _ := strings.Cut(l, " ")
		cmd = strings.ToUpper(cmd)
		rest = strings.TrimSpace(rest)
		switch {
		case cmd == "FROM":
			f := strings.Fields(rest)
			st := &dockerStage{From: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.Name = f[2]
			}
			stages = append(stages, st)
		case len(stages) == 0 && cmd == "ARG":
			k, v, _ := strings.Cut(rest, "=")
			args[k] = v
		case len(stages) > 0:
			st := stages[len(stages)-1]
			st.Instructions = append(st.Instructions, dockerInstruction{Cmd: cmd, Args: rest})
		}
	}
	return args, stages
}

func stage(t *testing.T, stages []*dockerStage, name string) *dockerStage {
	t.Helper()
	for _, s := range stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("Dockerfile has no stage %q", name)
	return nil
}

// stageChain returns a stage and the stages it is built FROM, nearest first.
func stageChain(t *testing.T, stages []*dockerStage, name string) []*dockerStage {
	t.Helper()
	var chain []*dockerStage
	for name != "" {
		var next *dockerStage
		for _, s := range stages {
			if s.Name == name {
				next = s
			}
		}
		if next == nil {
			break
		}
		chain = append(chain, next)
		name = next.From
	}
	return chain
}

// lastOf is the value of the last instruction cmd along a stage chain.
func lastOf(chain []*dockerStage, cmd string) string {
	for _, s := range chain {
		for i := len(s.Instructions) - 1; i >= 0; i-- {
			if s.Instructions[i].Cmd == cmd {
				return s.Instructions[i].Args
			}
		}
	}
	return ""
}

// envOf collects the ENV key=value pairs along a stage chain.
func envOf(t *testing.T, chain []*dockerStage) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i := len(chain) - 1; i >= 0; i-- {
		for _, in := range chain[i].Instructions {
			if in.Cmd != "ENV" {
				continue
			}
			words, err := shellWords(in.Args)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range words {
				k, v, ok := strings.Cut(w, "=")
				if !ok {
					t.Fatalf("ENV %q: use the key=value form", in.Args)
				}
				out[k] = v
			}
		}
	}
	return out
}

func jsonArray(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("%q is not the exec (JSON array) form: %v", s, err)
	}
	return out
}

// --- binaries built as the Dockerfile builds them ---------------------------

const testVersion = "deploy-test"

// binaries builds agencysync and agencysandbox with the Dockerfile's own go
// build commands (its RUN line, output moved to a temporary directory of the
// test) and returns that directory.
func binaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := buildLikeDockerfile(t, dir); err != nil {
		t.Fatalf("build as the Dockerfile does: %v", err)
	}
	return dir
}

func buildLikeDockerfile(t *testing.T, out string) error {
	_, stages := parseDockerfile(t)
	build := stage(t, stages, "build")
	env := append(os.Environ(), "GOFLAGS=-buildvcs=false")
	for k, v := range envOf(t, []*dockerStage{build}) {
		env = append(env, k+"="+v)
	}
	built := 0
	for _, in := range build.Instructions {
		if in.Cmd != "RUN" || !strings.Contains(in.Args, "go build") {
			continue
		}
		cmdline := regexp.MustCompile(`--mount=\S+\s*`).ReplaceAllString(in.Args, "")
		cmdline = strings.ReplaceAll(cmdline, "${VERSION}", testVersion)
		cmdline = strings.ReplaceAll(cmdline, "/out/", out+"/")
		for _, part := range strings.Split(cmdline, "&&") {
			words, err := shellWords(part)
			if err != nil {
				return err
			}
			if len(words) < 2 || words[0] != "go" || words[1] != "build" {
				return fmt.Errorf("unexpected build step %q", part)
			}
			cmd := exec.Command(words[0], words[1:]...)
			cmd.Dir, cmd.Env = repo, env
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %v\n%s", part, err, b)
			}
			built++
		}
	}
	if built != 2 {
		return fmt.Errorf("the build stage has %d go build commands, want 2 (agencysync and agencysandbox)", built)
	}
	for _, name := range []string{"agencysync", "agencysandbox"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			return fmt.Errorf("the build stage does not produce /out/%s: %v", name, err)
		}
	}
	return nil
}

// startSandboxProcess runs the agencysandbox binary bin with args (later flags
// override earlier ones, so callers append their overrides), waits for it to
// log its addresses and returns them; the process is stopped with SIGTERM
// when the test ends and must exit 0.
func startSandboxProcess(t *testing.T, bin string, args ...string) (apiURL, commsURL string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type listening struct {
		Msg   string `json:"msg"`
		API   string `json:"api_url"`
		Comms string `json:"communications_url"`
	}
	found := make(chan listening, 1)
	var logs childproc.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&logs, sc.Text())
			var l listening
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.API != "" {
				select {
				case found <- l:
				default:
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var listeningAt time.Time
	t.Cleanup(func() {
		// agencysandbox installs its SIGTERM handler just after it logs its
		// addresses (cmd/agencysandbox/main.go): give it that moment.
		time.Sleep(time.Until(listeningAt.Add(500 * time.Millisecond)))
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agencysandbox did not stop cleanly on SIGTERM: %v", err)
			}
		case <-patience.After(t):
			_ = cmd.Process.Kill()
			t.Error("agencysandbox did not stop on SIGTERM before the test's deadline")
		}
	})
	select {
	case l := <-found:
		listeningAt = time.Now()
		u, err := url.Parse(l.Comms)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = ""
		return l.API, u.String()
	case err := <-done:
		t.Fatalf("agencysandbox %s exited: %v\n%s", strings.Join(args, " "), err, logs.String())
	case <-patience.After(t):
		t.Fatal("agencysandbox did not log its addresses before the test's deadline")
	}
	return "", ""
}

func contextWithTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
