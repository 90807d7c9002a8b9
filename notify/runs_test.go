package notify

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/enginetest"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/internal/testkit/webhook"
	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/load"
)

func TestMain(m *testing.M) { warehousetest.Main(m) }

// scriptedRunner returns the results given, in turn.
type scriptedRunner struct {
	results []*engine.Result
	n       int
}

func (s *scriptedRunner) Run(context.Context, engine.Request) (*engine.Result, error) {
	r := s.results[s.n]
	s.n++
	return r, nil
}

// statusLog is a RunHistory over runs in the order they ran.
type statusLog struct{ order []*engine.Result }

func (l *statusLog) PreviousRunStatus(_ context.Context, runID string) (string, error) {
	prev := ""
	for _, r := range l.order {
		if r.RunID == runID {
			return prev, nil
		}
		if r.Status != engine.StatusSkipped {
			prev = string(r.Status)
		}
	}
	return "", load.ErrNoSuchRun
}

type collectSender struct {
	mu    sync.Mutex
	texts []string
}

func (c *collectSender) Send(text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.texts = append(c.texts, text)
	return nil
}

// TestNotifyingEvents runs a scripted sequence: each of the four events
// yields one message, quiet runs none.
func TestNotifyingEvents(t *testing.T) {
	t.Parallel()
	seq := []struct {
		res  *engine.Result
		want string // "" for no message
	}{
		{&engine.Result{RunID: "11111111-a", Status: engine.StatusSucceeded}, ""},
		{&engine.Result{RunID: "22222222-a", Status: engine.StatusFailed, Err: errors.New("brands: HTTP 500")}, "failed"},
		{&engine.Result{RunID: "33333333-a", Status: engine.StatusSkipped}, ""},
		{&engine.Result{RunID: "44444444-a", Status: engine.StatusSucceeded}, "recovered"},
		{&engine.Result{RunID: "55555555-a", Status: engine.StatusPartial, Err: errors.New("today's request budget is spent")}, "ended partial"},
		{&engine.Result{RunID: "66666666-a", Status: engine.StatusSucceeded}, "recovered"},
		{&engine.Result{RunID: "77777777-a", Status: engine.StatusWarning, Notes: []string{"shortfall 3", "gap"}}, "with warnings"},
		{&engine.Result{RunID: "88888888-a", Status: engine.StatusSucceeded}, "recovered"},
		{&engine.Result{RunID: "99999999-a", Status: engine.StatusWarning, OpenRejects: map[string]int64{"finance": 196, "brands": 0},
			Warnings: []inventory.Warning{{Kind: inventory.KindRejectedStream, Stream: "invoices", Records: 196, Count: 196,
				Message: "196 of 196 invoices records were rejected"}}}, "196 open rejects (finance 196)"},
		{&engine.Result{RunID: "aaaaaaaa-a", Status: engine.StatusWarning, OpenRejects: map[string]int64{"finance": 196}}, "with warnings"},
		{&engine.Result{RunID: "bbbbbbbb-a", Status: engine.StatusSucceeded}, "succeeded after a warning run"},
		{&engine.Result{RunID: "cccccccc-a", Status: engine.StatusSucceeded}, ""},
	}
	runner := &scriptedRunner{}
	hist := &statusLog{}
	for _, s := range seq {
		runner.results = append(runner.results, s.res)
		hist.order = append(hist.order, s.res)
	}
	sender := &collectSender{}
	r := Notifying(runner, hist, sender, RunOptions{Schema: "agency", Logger: zaptest.NewLogger(t)})
	for i, s := range seq {
		before := len(sender.texts)
		res, err := r.Run(context.Background(), engine.Request{Trigger: engine.TriggerServe})
		if err != nil || res != s.res {
			t.Fatalf("run %d: the wrapper changed the result: %v %v", i, res, err)
		}
		got := sender.texts[before:]
		switch {
		case s.want == "" && len(got) != 0:
			t.Errorf("run %d (%s): %q, want no message", i, s.res.Status, got)
		case s.want != "" && (len(got) != 1 || !strings.Contains(got[0], s.want) || !strings.Contains(got[0], s.res.RunID[:8])):
			t.Errorf("run %d (%s): %q, want one message saying %q", i, s.res.Status, got, s.want)
		}
	}
	if w := sender.texts[4]; !strings.Contains(w, "shortfall 3") || !strings.Contains(w, "• gap") {
		t.Errorf("the warnings message lacks its notes: %q", w)
	}
	if w := sender.texts[6]; !strings.Contains(w, "• invoices rejected_stream: 196 of 196 invoices") || !strings.Contains(w, "1 rejected_stream") {
		t.Errorf("the warnings message lacks its coverage warning: %q", w)
	}
	// A run that could not even start is a failure too.
	before := len(sender.texts)
	errRunner := runnerFunc(func(context.Context, engine.Request) (*engine.Result, error) {
		return nil, errors.New("lock: connection refused")
	})
	if _, err := Notifying(errRunner, hist, sender, RunOptions{}).Run(context.Background(), engine.Request{}); err == nil {
		t.Fatal("the error was swallowed")
	}
	if got := sender.texts[before:]; len(got) != 1 || !strings.Contains(got[0], "failed") || !strings.Contains(got[0], "connection refused") {
		t.Errorf("a run error gave %q", got)
	}
}

type runnerFunc func(context.Context, engine.Request) (*engine.Result, error)

func (f runnerFunc) Run(ctx context.Context, req engine.Request) (*engine.Result, error) {
	return f(ctx, req)
}

// TestNotifyRealRunNoKeyNoDelay runs the real engine against a main
// interface that echoes the key in its errors; the webhook hangs until the
// run has returned. The run ends failed, without waiting for the webhook,
// and the one message it sends holds no key.
func TestNotifyRealRunNoKeyNoDelay(t *testing.T) {
	t.Parallel()
	o := enginetest.SmallSandbox()
	o.Emails, o.HistoryDays = 200, 10
	h := enginetest.New(t, o)
	key := o.APIKey
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": "invalid filter for key " + r.Header.Get("Authorization") + " (" + key + ")"})
	}))
	t.Cleanup(echo.Close)
	h.APIURL = echo.URL
	h.Engine()

	hook := webhook.Start(t)
	release := hook.Hold() // answer only once the run has returned
	n, err := New(Options{URL: hook.URL("/services/T/B/hooksecret"), Redact: h.Eng.Redact, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	store, err := load.New(h.Pool, load.Config{Schema: h.Schema})
	if err != nil {
		t.Fatal(err)
	}
	r := Notifying(h.Eng, store, n, RunOptions{Schema: h.Schema, Redact: h.Eng.Redact, Logger: zaptest.NewLogger(t)})
	res, err := r.Run(context.Background(), engine.Request{Trigger: engine.TriggerTest})
	// Reaching here with the webhook still holding its answer means the run did not wait for it.
	release()
	if err != nil || res.Status != engine.StatusFailed {
		t.Fatalf("run: %v %+v, want failed", err, res)
	}
	if !strings.Contains(res.Err.Error(), "invalid filter") {
		t.Fatalf("the run failed for another reason: %v", res.Err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	texts := hook.Texts()
	if len(texts) != 1 {
		t.Fatalf("%d messages, want 1: %q", len(texts), texts)
	}
	if !strings.Contains(texts[0], "failed") || !strings.Contains(texts[0], "invalid filter") {
		t.Errorf("message %q does not say what failed", texts[0])
	}
	for _, secret := range []string{key, o.CommsKey, "hooksecret"} {
		if len(secret) >= 4 && strings.Contains(texts[0], secret) {
			t.Errorf("message holds a secret %q: %s", secret, texts[0])
		}
	}

	// The next run succeeds (the real interface again): one recovery message.
	h.APIURL = ""
	h.Engine()
	n2, err := New(Options{URL: hook.URL("/services/T/B/hooksecret"), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err = Notifying(h.Eng, store, n2, RunOptions{Schema: h.Schema}).Run(context.Background(), engine.Request{Trigger: engine.TriggerTest})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("second run: %v %+v", err, res)
	}
	if err := n2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if texts = hook.Texts(); len(texts) != 2 || !strings.Contains(texts[1], "recovered") {
		t.Errorf("after the failed run, a success sent %q, want one recovery", texts[1:])
	}
}

// TestWarningMessageIsRedacted: a warning run's message lists its coverage
// warnings and notes, redacted (a key echoed in a note, a reason).
func TestWarningMessageIsRedacted(t *testing.T) {
	t.Parallel()
	const key = "sandbox-api-key-0123456789"
	res := &engine.Result{RunID: "dddddddd-a", Status: engine.StatusWarning,
		Notes: []string{"contacts of brand 7: fewer records than announced (key " + key + ")"},
		Warnings: []inventory.Warning{{Kind: inventory.KindRejectedStream, Stream: "invoices",
			Message: "12 of 12 invoices records were rejected, most because: bad token " + key}},
		OpenRejects: map[string]int64{"finance": 12}}
	sender := &collectSender{}
	redact := func(s string) string { return strings.ReplaceAll(s, key, "[REDACTED]") }
	r := Notifying(&scriptedRunner{results: []*engine.Result{res}}, &statusLog{order: []*engine.Result{res}}, sender,
		RunOptions{Schema: "agency", Redact: redact})
	if _, err := r.Run(context.Background(), engine.Request{}); err != nil {
		t.Fatal(err)
	}
	if len(sender.texts) != 1 {
		t.Fatalf("%d messages, want 1", len(sender.texts))
	}
	msg := sender.texts[0]
	if strings.Contains(msg, key) || !strings.Contains(msg, "[REDACTED]") || !strings.Contains(msg, "• invoices rejected_stream:") ||
		!strings.Contains(msg, "12 open rejects (finance 12)") || !strings.Contains(msg, "• contacts of brand 7") {
		t.Errorf("message %q", msg)
	}
}
