package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/config"
)

// TestPanicIsReportedRedacted: a panic whose value carries a key (URL-encoded,
// say) is printed without it, and the process exits 1.
func TestPanicIsReportedRedacted(t *testing.T) {
	t.Parallel()
	env, _, _ := testEnv(nil)
	cfg, err := config.LoadFrom(context.Background(), config.Environment{Lookup: env.Lookup, ReadFile: env.ReadFile}, Known())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := func() (code int) {
		defer reportPanic(&out, func() *config.Config { return cfg }, &code)
		panic("request to https://x/?key=" + strings.ReplaceAll(testAPIKey, "-", "%2D") + " failed: " + testCommsKey[3:15])
	}()
	if code != ExitFailure {
		t.Fatalf("code %d", code)
	}
	if !strings.Contains(out.String(), "panic: request to") || !strings.Contains(out.String(), "[REDACTED]") {
		t.Fatalf("panic not reported: %s", out.String())
	}
	for _, k := range []string{testAPIKey, testCommsKey} {
		for i := 0; i+8 <= len(k); i++ {
			for _, f := range []string{k[i : i+8], strings.ReplaceAll(k[i:i+8], "-", "%2D")} {
				if strings.Contains(out.String(), f) {
					t.Fatalf("panic report holds %q: %s", f, out.String())
				}
			}
		}
	}
}
