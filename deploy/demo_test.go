package deploy

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// demoBin builds the sandbox into a folder and puts beside it a stand-in
// agencysync that prints the addresses it was given, so the script's own
// logic runs without a sync.
func demoBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "agencysandbox"), "./cmd/agencysandbox")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the sandbox: %v\n%s", err, out)
	}
	fake := "#!/usr/bin/env bash\necho \"fake agencysync $1 base=$AGENCY_BASE_URL comms=$AGENCY_COMMS_URL\"\n" +
		"if [ \"$1\" = plan ]; then exec 3<>\"/dev/tcp/${AGENCY_BASE_URL#http://}\" && echo reachable || echo unreachable; fi\n"
	fake = strings.Replace(fake, "${AGENCY_BASE_URL#http://}", "$(echo \"${AGENCY_BASE_URL#http://}\" | tr : /)", 1)
	if err := os.WriteFile(filepath.Join(dir, "agencysync"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runDemo(t *testing.T, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repo, "deploy", "demo.sh"))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDemoPicksFreePorts: without DEMO_API_ADDR the demo's sandbox listens on
// free ports, the sync is pointed at them, and the script ends by printing
// the command that opens the warehouse.
func TestDemoPicksFreePorts(t *testing.T) {
	t.Parallel()
	bin := demoBin(t)
	out, err := runDemo(t, "DEMO_BIN="+bin, "DEMO_LOG_DIR="+t.TempDir(), "WAREHOUSE_SCHEMA=")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`fake agencysync plan base=http://127\.0\.0\.1:(\d+) comms=http://127\.0\.0\.1:(\d+)\n`).FindStringSubmatch(out)
	if m == nil || m[1] == "18081" || m[2] == "18082" || m[1] == "0" || m[1] == m[2] {
		t.Fatalf("demo output lacks two free sandbox ports:\n%s", out)
	}
	if !strings.Contains(out, "reachable\n") || strings.Contains(out, "unreachable") {
		t.Fatalf("the sync was not pointed at the listening sandbox:\n%s", out)
	}
	if !strings.Contains(out, "./bin/agencysync psql -c 'select count(*) from agency.emails'") {
		t.Fatalf("demo does not end by printing the psql command:\n%s", out)
	}
}

// TestDemoPortClashIsTheRealError: a taken address stops the demo with the
// sandbox's own error (its log's tail), before any sync.
func TestDemoPortClashIsTheRealError(t *testing.T) {
	t.Parallel()
	bin := demoBin(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out, err := runDemo(t, "DEMO_BIN="+bin, "DEMO_LOG_DIR="+t.TempDir(), "DEMO_API_ADDR="+l.Addr().String())
	if err == nil || !strings.Contains(out, "address already in use") || strings.Contains(out, "fake agencysync") {
		t.Fatalf("demo on a taken port: %v\n%s\nwant a failure quoting the sandbox's error, before any sync", err, out)
	}
}

// TestDemoAgainAndAgain: the demo run again and again with the previous
// demos' files in its log folder (their sandbox logs name ports nobody
// listens on any more) points every sync at its own, listening sandbox.
func TestDemoAgainAndAgain(t *testing.T) {
	t.Parallel()
	bin := demoBin(t)
	logs := t.TempDir()
	stale := `{"level":"info","msg":"agencysandbox listening","api_url":"http://127.0.0.1:9","communications_url":"http://127.0.0.1:9/workflow/tools/communications-emails"}` + "\n"
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(logs, "sandbox.log"), []byte(stale), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := runDemo(t, "DEMO_BIN="+bin, "DEMO_LOG_DIR="+logs, "WAREHOUSE_SCHEMA=")
		if err != nil || !strings.Contains(out, "reachable\n") || strings.Contains(out, "unreachable") || strings.Contains(out, "127.0.0.1:9 ") {
			t.Fatalf("demo run %d after a previous demo: %v\n%s", i+1, err, out)
		}
	}
}
