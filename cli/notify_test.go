package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/loopback"
	"github.com/agencysync/agencysync/internal/testkit/webhook"
)

// TestRunNotifies: with SYNC_NOTIFY_URL set, a run that ends partial posts
// one message, the next (successful) run posts one recovery, and neither the
// messages nor the logs hold a key or the webhook's path.
func TestRunNotifies(t *testing.T) {
	t.Parallel()
	hook := webhook.Start(t)
	const path = "/services/T0/B0/hooksecretpath"
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, map[string]string{"AGENCY_DAILY_QUOTA": "8", "AGENCY_QUOTA_RESERVE": "0%", "SYNC_NOTIFY_URL": hook.URL(path)})
	code, out, errs := mainWith(vars, "run")
	if code != ExitIncomplete {
		t.Fatalf("run with a tiny budget exit %d, want %d:\n%s", code, ExitIncomplete, errs)
	}
	assertNoSecrets(t, out, errs)
	if strings.Contains(errs, "hooksecretpath") {
		t.Errorf("the log holds the webhook's path:\n%s", errs)
	}
	if texts := hook.Texts(); len(texts) != 1 || !strings.Contains(texts[0], "partial") {
		t.Fatalf("messages %q, want one partial", texts)
	}
	vars["AGENCY_DAILY_QUOTA"] = "10000"
	if code, _, errs := mainWith(vars, "run"); code != ExitOK {
		t.Fatalf("second run exit %d:\n%s", code, errs)
	}
	texts := hook.Texts()
	if len(texts) != 2 || !strings.Contains(texts[1], "recovered") {
		t.Fatalf("messages %q, want a recovery after the partial run", texts)
	}
	assertNoSecrets(t, texts...)
}

// TestServeAnswersStatusPage: serve's HTTP address answers / with the page.
func TestServeAnswersStatusPage(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	addr := loopback.FreeAddr(t)
	vars := syncEnv(t, sb, o, map[string]string{"HTTP_ADDR": addr, "SYNC_SCHEDULE": "0 0 1 1 *"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		env := Env{Stdout: io.Discard, Stderr: &errb, ReadFile: os.ReadFile,
			Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
		done <- Main(ctx, []string{"serve"}, env)
	}()
	var page string
	for range 300 {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				page = string(b)
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, errb.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	<-done
	if !strings.Contains(page, `<table id="streams">`) || !strings.Contains(page, `data-stream="communications"`) {
		t.Fatalf("GET / did not answer the status page:\n%.500s", page)
	}
}
