// Package webhook is a hand-written incoming webhook for tests, as Slack
// offers one: it takes JSON POSTs of exactly {"text": "..."} and records
// each text, so that a test can read what the worker notified.
package webhook

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// Receiver is a webhook on a loopback address, closed when the test ends.
type Receiver struct {
	t        testing.TB
	srv      *httptest.Server
	statuses []int
	attempts atomic.Int64
	hold     chan struct{} // while open, answers wait (nil: answer at once)

	mu    sync.Mutex
	texts []string
}

// Start starts a receiver. It answers the statuses given in turn, recording
// nothing, then records the text of every well-formed message and answers
// 200; a request that is not a JSON POST of {"text": string} gets a 400.
func Start(t testing.TB, statuses ...int) *Receiver {
	t.Helper()
	r := &Receiver{t: t, statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	n := int(r.attempts.Add(1))
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "want a JSON POST", http.StatusBadRequest)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if n <= len(r.statuses) {
		w.WriteHeader(r.statuses[n-1])
		return
	}
	text, ok := body["text"].(string)
	if !ok || len(body) != 1 {
		http.Error(w, `want {"text": string}`, http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.texts = append(r.texts, text)
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-req.Context().Done():
		}
	}
	_, _ = io.WriteString(w, "ok")
}

// URL is the receiver's address followed by path (a Slack-like
// /services/... path, whose secret part the worker must never log).
func (r *Receiver) URL(path string) string { return r.srv.URL + path }

// Texts returns the texts received so far, in order.
func (r *Receiver) Texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.texts)
}

// Attempts counts the requests received, answered or not.
func (r *Receiver) Attempts() int64 { return r.attempts.Load() }

// Hold makes every later message wait for its answer — recorded at once,
// answered when release is called, its request ends or the test ends: a
// slow webhook.
func (r *Receiver) Hold() (release func()) {
	hold := make(chan struct{})
	r.mu.Lock()
	r.hold = hold
	r.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	r.t.Cleanup(release) // before the server's Close, which waits for the answers
	return release
}

// Close stops the receiver: later messages find nothing listening.
func (r *Receiver) Close() { r.srv.Close() }
