package webhook

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, contentType, body string) int {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReceiverRecordsOnlyWellFormedMessages: the statuses given are answered
// first and record nothing; then a JSON POST of exactly {"text": ...} is
// recorded, and anything else is a 400 that records nothing.
func TestReceiverRecordsOnlyWellFormedMessages(t *testing.T) {
	t.Parallel()
	r := Start(t, http.StatusServiceUnavailable)
	url := r.URL("/services/T/B/secret")
	for _, c := range []struct {
		contentType, body string
		want              int
	}{
		{"application/json", `{"text":"first"}`, http.StatusServiceUnavailable},
		{"application/json", `{"text":"hello"}`, http.StatusOK},
		{"text/plain", `{"text":"plain"}`, http.StatusBadRequest},
		{"application/json", `{"text":"extra","channel":"#x"}`, http.StatusBadRequest},
		{"application/json", `{"text":`, http.StatusBadRequest},
		{"application/json", `{"text":"bye"}`, http.StatusOK},
	} {
		if got := post(t, url, c.contentType, c.body); got != c.want {
			t.Errorf("%s %s: %d, want %d", c.contentType, c.body, got, c.want)
		}
	}
	if got := r.Texts(); !slices.Equal(got, []string{"hello", "bye"}) || r.Attempts() != 6 {
		t.Errorf("texts %q after %d attempts, want hello and bye after 6", got, r.Attempts())
	}
}

// TestHoldAnswersOnRelease: a held message is recorded at once and
// answered once released.
func TestHoldAnswersOnRelease(t *testing.T) {
	t.Parallel()
	r := Start(t)
	release := r.Hold()
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(r.URL(""), "application/json", strings.NewReader(`{"text":"held"}`))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	for len(r.Texts()) == 0 { // recorded before it is answered
		select {
		case code := <-done:
			t.Fatalf("answered %d before the release", code)
		case <-time.After(time.Millisecond):
		}
	}
	release()
	if code := <-done; code != http.StatusOK {
		t.Fatalf("answered %d after the release, want 200", code)
	}
}
