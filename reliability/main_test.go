package reliability

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// Paths of the binaries under test, built once by TestMain.
var (
	agencysyncBin string
	sandboxBin    string
)

// soak selects the larger sizes of make test-soak.
var soak = os.Getenv("AGENCYSYNC_SOAK") == "1"

// The keys of the sandbox and the worker, random per suite run so that the
// secrets audit (TestS10Secrets) cannot be fooled by a fixed string that
// happens to appear elsewhere. The foreign and revoked keys are secrets too:
// TestS08Credentials configures them as AGENCY_API_KEY.
var (
	apiKey     = "rel-api-" + randomHex(12)
	commsKey   = "rel-comms-" + randomHex(12)
	foreignKey = "rel-foreign-" + randomHex(12)
	revokedKey = "rel-revoked-" + randomHex(12)
	adminToken = "rel-admin-" + randomHex(8)
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func TestMain(m *testing.M) {
	flag.Parse()
	raiseParallel()
	dir, err := buildBinaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		os.Exit(1)
	}
	agencysyncBin = filepath.Join(dir, "agencysync")
	sandboxBin = filepath.Join(dir, "agencysandbox")
	warehousetest.Main(m)
}

// raiseParallel lets every scenario run at once unless -test.parallel was
// given: they mostly wait on subprocesses, and TestS10Secrets holds a slot
// while it waits for the others.
func raiseParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "12")
	}
}

// buildBinaries builds agencysync and agencysandbox (as make build does, but
// without stripping) into a fresh directory named after this process, and
// removes the directories of earlier runs whose process is gone:
// warehousetest.Main ends the process with os.Exit, so a run cannot remove its
// own directory.
func buildBinaries() (string, error) {
	const prefix = "agencysync-reliability-"
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, d := range old {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err == nil && pid != os.Getpid() && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", prefix, os.Getpid()))
	if err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	start := time.Now()
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", dir+string(filepath.Separator),
		"github.com/agencysync/agencysync/cmd/agencysync", "github.com/agencysync/agencysync/cmd/agencysandbox")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the binaries: %v\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "reliability: built agencysync and agencysandbox in %s (%s)\n", dir, time.Since(start).Round(time.Millisecond))
	return dir, nil
}

// sizes are the scenario sizes: the default ones keep `go test ./reliability/`
// within a few minutes on two cores; AGENCYSYNC_SOAK=1 selects the soak's.
type sizes struct {
	crashEmails      int // scenario 1: e-mails of the backfill
	kills            int // scenario 1: SIGKILLs at least
	faultEmails      int // scenario 2
	quotaEmails      int // scenario 3 (the sync must need between one and two days of its quota of 40)
	rateEmails       int // scenario 4 (at the real 10 requests/s)
	rateBrands       int // scenario 4: brands (5 projects each)
	badEmails        int // scenario 5
	changeEmails     int // scenario 6
	dbEmails         int // scenario 9
	dbTerminations   int // scenario 9: rounds of pg_terminate_backend
	sandboxLatencyDB time.Duration
}

func currentSizes() sizes {
	if soak {
		return sizes{crashEmails: 200_000, kills: 12, faultEmails: 100_000, quotaEmails: 30_000, rateEmails: 10_000,
			rateBrands: 20, badEmails: 100_000, changeEmails: 20_000, dbEmails: 80_000, dbTerminations: 4,
			sandboxLatencyDB: 5 * time.Millisecond}
	}
	return sizes{crashEmails: 50_000, kills: 5, faultEmails: 20_000, quotaEmails: 30_000, rateEmails: 3_000,
		rateBrands: 10, badEmails: 20_000, changeEmails: 5_000, dbEmails: 20_000, dbTerminations: 2,
		sandboxLatencyDB: 5 * time.Millisecond}
}
