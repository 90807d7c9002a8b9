package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// mailFreshness is the mail stream's last success as the sync_freshness
// view gives it (nil: never synced completely).
func (h *harness) mailFreshness() (last any) {
	h.t.Helper()
	err := h.pool.QueryRow(context.Background(), "SELECT last_success_at FROM "+h.table("sync_freshness")+" WHERE stream = $1",
		h.eng.mailStream()).Scan(&last)
	if err != nil {
		h.t.Fatalf("read the mail stream's freshness: %v", err)
	}
	return last
}

// TestAllRejectedMailIsNotFresh: when every e-mail the service sends is
// rejected (here every email_at is unreadable), nothing landed: the run
// ends warning with its open rejects, and the mail stream is not shown
// fresh — not after the backfill, nor after a later run whose increment
// found nothing new.
func TestAllRejectedMailIsNotFresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	at := regexp.MustCompile(`"email_at":"[^"]*"`)
	proxy := rewritingProxy(t, h.sb.CommsURL(), func(resp *http.Response) bool { return resp.StatusCode == 200 }, func(body []byte) []byte {
		return at.ReplaceAll(body, []byte(`"email_at":"not a date"`))
	})
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	h.eng, _ = h.wire(wiring{commsURL: srv.URL})
	for run := 1; run <= 2; run++ {
		res := h.run(Request{Streams: []string{h.eng.mailStream()}})
		if res.Status != StatusWarning || res.OpenRejects[h.eng.mailStream()] == 0 {
			t.Fatalf("run %d %s (%v), open rejects %v; want warning with the e-mails rejected", run, res.Status, res.Err, res.OpenRejects)
		}
		if n := h.count("SELECT count(*) FROM " + h.table("emails")); n != 0 {
			t.Fatalf("run %d: %d e-mails landed, want none", run, n)
		}
		if last := h.mailFreshness(); last != nil {
			t.Errorf("run %d: the mail stream is shown fresh (last success %v) while every e-mail was rejected", run, last)
		}
		h.advance(6 * time.Hour) // the next run's increment finds nothing new
	}
}

// TestMailShortfallIsNotFresh: a service whose totals announce five more
// e-mails than it ever delivers: the run ends partial (the range is not
// reconciled), and the mail stream's last success does not move — it is
// shown fresh only once every range landed whole.
func TestMailShortfallIsNotFresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	total := regexp.MustCompile(`"total":(\d+)`)
	proxy := rewritingProxy(t, h.sb.CommsURL(), func(resp *http.Response) bool { return resp.StatusCode == 200 }, func(body []byte) []byte {
		return total.ReplaceAllFunc(body, func(m []byte) []byte {
			n, _ := strconv.Atoi(string(total.FindSubmatch(m)[1]))
			return []byte(`"total":` + strconv.Itoa(n+5))
		})
	})
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	h.eng, _ = h.wire(wiring{commsURL: srv.URL})
	res := h.run(Request{Streams: []string{h.eng.mailStream()}})
	if res.Status != StatusPartial {
		t.Fatalf("run %s (%v); want partial (the totals are never reached)", res.Status, res.Err)
	}
	if last := h.mailFreshness(); last != nil {
		t.Errorf("the mail stream is shown fresh (last success %v) while its ranges fell short of the service's totals", last)
	}
	// The same service, honest again: the next run repairs, and only then
	// is the stream fresh.
	h.eng, _ = h.wire(wiring{})
	if res := h.run(Request{Streams: []string{h.eng.mailStream()}}); res.Status != StatusSucceeded {
		t.Fatalf("honest run %s (%v)", res.Status, res.Err)
	}
	if last := h.mailFreshness(); last == nil {
		t.Error("the mail stream is not fresh after a run that landed every range whole")
	}
}
