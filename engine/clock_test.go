package engine

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/load"
)

// clockProcess is one worker process as `agencysync run` wires it: the
// service clock runs on the worker's real clock, seeded with the offset the
// warehouse kept from the previous process, and the ledger and the engine
// read it. apiURL overrides the main interface's address ("" the sandbox's).
type clockProcess struct {
	eng    *Engine
	clock  *extract.ServiceClock
	logs   *observer.ObservedLogs
	ledger *load.Ledger
}

func (h *harness) newClockProcess(apiURL string, per int) *clockProcess {
	core, logs := observer.New(zapcore.InfoLevel)
	clock := extract.NewServiceClock(time.Now)
	eng, ledger := h.wire(wiring{apiURL: apiURL, perPage: per, timeout: 2 * time.Second, clock: clock,
		log: zap.New(zapcore.NewTee(zaptest.NewLogger(h.t).Core(), core))})
	return &clockProcess{eng: eng, clock: clock, logs: logs, ledger: ledger}
}

// newClockHarness is a harness on a small sandbox whose clock starts on
// 2026-03-09 at the time of day at.
func newClockHarness(t *testing.T, at time.Duration) *harness {
	t.Helper()
	o := smallSandbox()
	o.Start = time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC).Add(at)
	return newHarness(t, o, nil)
}

// keyedSince is what the sandbox served with a key since before: the
// requests counted against the quota (a keyless clock probe is answered 401
// and is not).
func keyedSince(before, after sandbox.Stats) int64 {
	return after.Keyed() - before.Keyed()
}

// ledgerDays reads the quota ledger: requests by day.
func (h *harness) ledgerDays() map[string]int {
	h.t.Helper()
	rows, err := h.pool.Query(context.Background(), "SELECT day::text, requests FROM "+h.table("api_quota_usage"))
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]int{}
	var day string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&day, &n}, func() error { out[day] = n; return nil }); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// TestHourlyRunsAfterTheServiceClockJumps is the hourly benchmark figure
// as the benchmark runs it: every hourly `run --streams communications` is a
// new process that starts from the offset the previous one kept, while the
// sandbox's clock has moved on an hour. Each run reads the service's clock
// first (a keyless request, no quota), so it plans the service's day: the
// day's first run re-reads the lookback window once (by design) and records
// it under the service's new day, and every later hourly run costs at most 2
// requests counted against the quota. The ledger's day is the service's.
func TestHourlyRunsAfterTheServiceClockJumps(t *testing.T) {
	t.Parallel()
	h := newClockHarness(t, 20*time.Hour+30*time.Minute)
	const per = 50
	run := func(label string) (*Result, int64, *clockProcess) {
		t.Helper()
		p := h.newClockProcess("", per)
		before := h.sb.Stats()
		res, err := p.eng.Run(context.Background(), Request{Trigger: TriggerTest, Streams: []string{"communications"}})
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if res.Status != StatusSucceeded {
			t.Fatalf("%s: %s %v (notes %v)", label, res.Status, res.Err, res.Notes)
		}
		return res, keyedSince(before, h.sb.Stats()), p
	}
	if res, _, _ := run("first sync"); res.RequestsUsed == 0 {
		t.Fatal("first sync sent nothing")
	}
	var costs []int64
	readOn := "" // the service day whose first increment re-read the lookback window
	for hour := 1; hour <= 7; hour++ {
		h.advance(time.Hour)
		if _, _, err := h.sb.AppendEmails(40); err != nil { // new ones span at most 2 pages
			t.Fatal(err)
		}
		svcNow := h.sb.Now()
		svcDay := svcNow.Format(time.DateOnly)
		ledgerBefore := h.ledgerDays()
		res, keyed, _ := run("hourly run at " + svcNow.Format("2006-01-02 15:04"))
		costs = append(costs, keyed)
		if int64(res.RequestsUsed) != keyed {
			t.Errorf("%s: the run reports %d requests, the sandbox counted %d against the quota", svcNow.Format("15:04"), res.RequestsUsed, keyed)
		}
		// Every request the run sent is counted on the service's day.
		ledgerAfter := h.ledgerDays()
		for day, n := range ledgerAfter {
			if d := n - ledgerBefore[day]; d != 0 && day != svcDay {
				t.Errorf("%s: the ledger counted %d request(s) on %s; the service's day is %s", svcNow.Format("15:04"), d, day, svcDay)
			}
		}
		if d := ledgerAfter[svcDay] - ledgerBefore[svcDay]; int64(d) != keyed {
			t.Errorf("%s: the ledger counted %d request(s) on the service's day %s, the sandbox %d", svcNow.Format("15:04"), d, svcDay, keyed)
		}
		// A day's first increment (21:30 after the first sync's backfill,
		// then 00:30) re-reads the lookback window once, by design; every
		// other hourly run costs at most 2.
		if firstOfDay := readOn != svcDay; !firstOfDay && keyed > 2 {
			t.Errorf("hourly run at %s (service time) cost %d requests against the quota, want <= 2", svcNow.Format("2006-01-02 15:04"), keyed)
		}
		readOn = svcDay
	}
	if miss := missingCommsIDs(h); len(miss) > 0 {
		t.Errorf("the hourly runs left %d e-mails out: %v", len(miss), miss[:min(len(miss), 10)])
	}
	t.Logf("figure: hourly runs across the service's midnight (21:30 .. 03:30), requests against the quota: %v", costs)
}

// missingCommsIDs are the sandbox's e-mail keys the warehouse does not hold.
func missingCommsIDs(h *harness) []string {
	h.t.Helper()
	held := map[string]bool{}
	rows, err := h.pool.Query(context.Background(), "SELECT record_id::text FROM "+h.table("emails")+" WHERE _deleted_at IS NULL")
	if err != nil {
		h.t.Fatal(err)
	}
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { held[id] = true; return nil }); err != nil {
		h.t.Fatal(err)
	}
	var miss []string
	for _, l := range h.truth()["communications"] {
		if !l.Bad && !held[l.Key] {
			miss = append(miss, l.Key)
		}
	}
	return miss
}

// TestRunProceedsWhenTheClockProbeFails: when the keyless clock probe cannot
// reach the service (the main interface is down; communications are
// served), the run still plans on the offset the previous process kept,
// says so in a warning and a note, and its answers correct the clock.
func TestRunProceedsWhenTheClockProbeFails(t *testing.T) {
	t.Parallel()
	h := newClockHarness(t, 10*time.Hour+30*time.Minute)
	if res, err := h.newClockProcess("", 200).eng.Run(context.Background(), Request{Trigger: TriggerTest, Streams: []string{"communications"}}); err != nil || res.Status != StatusSucceeded {
		t.Fatalf("first sync: %v %+v", err, res)
	}
	kept, known, err := h.newClockProcess("", 200).ledger.ClockOffset(context.Background())
	if err != nil || !known {
		t.Fatalf("no offset kept after the first sync: %v", err)
	}
	// A main interface that refuses connections: a closed listener's address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	h.advance(2 * time.Hour)
	if _, _, err := h.sb.AppendEmails(30); err != nil {
		t.Fatal(err)
	}
	p := h.newClockProcess(dead, 200)
	before := h.sb.Stats()
	res, err := p.eng.Run(context.Background(), Request{Trigger: TriggerTest, Streams: []string{"communications"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusWarning || res.Err != nil {
		t.Fatalf("run with the probe failing: %s %v (notes %v), want warning (its note)", res.Status, res.Err, res.Notes)
	}
	if keyed := keyedSince(before, h.sb.Stats()); keyed == 0 || int64(res.RequestsUsed) != keyed {
		t.Errorf("run with the probe failing: reports %d requests, the sandbox counted %d", res.RequestsUsed, keyed)
	}
	said := p.logs.FilterMessageSnippet("could not read the service's clock").FilterLevelExact(zapcore.WarnLevel).Len()
	if said != 1 {
		t.Errorf("the run logged %d warnings that the clock could not be read, want 1", said)
	}
	noted := false
	for _, n := range res.Notes {
		noted = noted || strings.Contains(n, "could not read the service's clock") && strings.Contains(n, "kept")
	}
	if !noted {
		t.Errorf("the run's notes %q do not say that it planned on the kept clock", res.Notes)
	}
	// The communications answers told the clock: the offset moved 2 h on.
	off, _ := p.clock.Offset()
	if d := off - kept; d < 2*time.Hour-5*time.Second || d > 2*time.Hour+5*time.Second {
		t.Errorf("after the run the offset moved %v, want about 2h (the sandbox's jump)", d)
	}
	if miss := missingCommsIDs(h); len(miss) > 0 {
		t.Errorf("the run left %d e-mails out: %v", len(miss), miss[:min(len(miss), 10)])
	}
}

// TestClockProbeIsKeylessAndFree: with a service that answers, each run
// reads the clock first with exactly one request that carries no key.
func TestClockProbeIsKeylessAndFree(t *testing.T) {
	t.Parallel()
	h := newClockHarness(t, 10*time.Hour+30*time.Minute)
	var keyless, keyed int
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			keyless++
		} else {
			keyed++
		}
		u, _ := url.Parse(h.sb.APIURL())
		r.URL.Scheme, r.URL.Host, r.RequestURI = u.Scheme, u.Host, ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(mustRead(resp))
	}))
	t.Cleanup(front.Close)
	for i := range 2 {
		res, err := h.newClockProcess(front.URL, 200).eng.Run(context.Background(), Request{Trigger: TriggerTest, Streams: []string{"communications"}})
		if err != nil || res.Status != StatusSucceeded {
			t.Fatalf("run %d: %v %+v", i, err, res)
		}
		if keyless != i+1 || keyed != 0 {
			t.Errorf("after run %d the main interface saw %d keyless and %d keyed requests, want %d and 0", i+1, keyless, keyed, i+1)
		}
	}
}

func mustRead(resp *http.Response) []byte {
	b, _ := io.ReadAll(resp.Body)
	return b
}
