package reliability

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOracleSharesNothingWithTheWorker checks that the suite's standard of
// correctness cannot agree with a bug of the worker's decoding or
// transforms: neither the suite (with its test dependencies) nor package
// oracle depends on packages extract, transform, load or engine.
func TestOracleSharesNothingWithTheWorker(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test",
		"github.com/agencysync/agencysync/reliability").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !strings.Contains(string(out), "github.com/agencysync/agencysync/internal/testkit/oracle") {
		t.Fatalf("the suite does not use package oracle: %v", deps)
	}
	for _, d := range deps {
		for _, banned := range []string{"extract", "transform", "load", "engine"} {
			if d == "github.com/agencysync/agencysync/"+banned {
				t.Errorf("the suite depends on package %s, the code it checks", banned)
			}
		}
	}
}
