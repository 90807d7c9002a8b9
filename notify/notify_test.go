package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agencysync/agencysync/internal/testkit/webhook"
)

const hookPath = "/services/T000/B000/XXXXsecretXXXX"

func newNotifier(t *testing.T, url string, log *zap.Logger) *Notifier {
	t.Helper()
	n, err := New(Options{URL: url, Attempts: 3, Backoff: time.Millisecond, Logger: log,
		Redact: func(s string) string { return strings.ReplaceAll(s, "api-key-123", "[REDACTED]") }, Secrets: []string{"postgres://agencysync:db-password-456@db.example/w"}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDeliversRedactedJSON(t *testing.T) {
	t.Parallel()
	r := webhook.Start(t)
	n := newNotifier(t, r.URL(hookPath), nil)
	if err := n.Send("run failed: key api-key-123, db db-password-456, hook " + r.URL(hookPath)); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := r.Texts()
	if len(got) != 1 {
		t.Fatalf("%d messages, want 1", len(got))
	}
	for _, secret := range []string{"api-key-123", "db-password-456", "XXXXsecretXXXX"} {
		if strings.Contains(got[0], secret) {
			t.Errorf("message %q contains a secret %q", got[0], secret)
		}
	}
	if !strings.Contains(got[0], "run failed") {
		t.Errorf("message %q", got[0])
	}
	if err := n.Send("late"); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
}

func TestRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	r := webhook.Start(t, http.StatusServiceUnavailable, http.StatusTooManyRequests)
	n := newNotifier(t, r.URL(hookPath), nil)
	if err := n.Send("hello"); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.Texts(); len(got) != 1 || got[0] != "hello" || r.Attempts() != 3 {
		t.Fatalf("messages %q after %d attempts, want one after 3", got, r.Attempts())
	}
}

func TestClientErrorNotRetried(t *testing.T) {
	t.Parallel()
	r := webhook.Start(t, http.StatusNotFound, http.StatusNotFound, http.StatusNotFound)
	n := newNotifier(t, r.URL(hookPath), nil)
	_ = n.Send("hello")
	_ = n.Close(context.Background())
	if r.Attempts() != 1 {
		t.Fatalf("%d attempts on a 404, want 1", r.Attempts())
	}
}

// A receiver that is down: Send returns at once, the attempts run out, and
// no log line holds the webhook's path.
func TestReceiverDown(t *testing.T) {
	t.Parallel()
	r := webhook.Start(t)
	url := r.URL(hookPath)
	r.Close()
	core, logs := observer.New(zapcore.DebugLevel)
	n := newNotifier(t, url, zap.New(core))
	if err := n.Send("hello"); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var failed int
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + strings.ReplaceAll(toString(v), "\n", " ")
		}
		if strings.Contains(line, "XXXXsecretXXXX") || strings.Contains(line, "/services/") {
			t.Errorf("log line holds the webhook's path: %s", line)
		}
		if e.Message == "notification not delivered" {
			failed++
			if e.ContextMap()["attempts"] != int64(3) {
				t.Errorf("gave up after %v attempts, want 3", e.ContextMap()["attempts"])
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d 'not delivered' lines, want 1", failed)
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A receiver that hangs: Send still returns at once, and Close with an ended
// context abandons the request instead of waiting for it.
func TestSlowReceiverAbandonedOnClose(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	cancelled := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body) // then the server sees the client go away
		arrived <- struct{}{}
		select {
		case <-req.Context().Done():
			close(cancelled)
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	n := newNotifier(t, srv.URL+hookPath, nil)
	for i := range 40 { // more than the queue holds: the extra are dropped, never waited for
		err := n.Send("hello")
		if err != nil && !(i >= 16 && errors.Is(err, ErrQueueFull)) {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	<-arrived
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want the abandon error", err)
	}
	<-cancelled // the request in flight was cancelled, not left hanging
}

func TestNewRefusesBadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "hooks.example/x", "ftp://hooks.example/x", "https://"} {
		if _, err := New(Options{URL: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		} else if u != "" && strings.Contains(err.Error(), u) {
			t.Errorf("New(%q): error quotes the URL: %v", u, err)
		}
	}
}
