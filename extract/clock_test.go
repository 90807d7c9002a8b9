package extract

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agencysync/agencysync/stream"
)

func TestServiceClockObserve(t *testing.T) {
	local := time.Date(2026, 11, 24, 23, 30, 0, 0, time.UTC)
	c := NewServiceClock(func() time.Time { return local })
	if got := c.Now(); !got.Equal(local) {
		t.Fatalf("before any answer: %v, want the local clock %v", got, local)
	}
	if _, known := c.Offset(); known {
		t.Fatal("offset known before any answer")
	}
	for _, h := range []string{"", "yesterday", "Mon, 99 Nov 2026 00:00:00 GMT"} {
		if c.Observe(h, local, local) {
			t.Errorf("header %q was taken", h)
		}
	}
	// The service is 2 h 15 min ahead: past its midnight while the worker's
	// clock still says 23:30.
	svc := local.Add(2*time.Hour + 15*time.Minute)
	if !c.Observe(svc.Format(http.TimeFormat), local.Add(-40*time.Millisecond), local) {
		t.Fatal("a valid Date header was refused")
	}
	off, known := c.Offset()
	if want := 2*time.Hour + 15*time.Minute; !known || (off-want).Abs() > time.Second {
		t.Fatalf("offset %v (known %v), want 2h15m within a second", off, known)
	}
	if got := c.Now(); got.Format(time.DateOnly) != "2026-11-25" {
		t.Fatalf("service day %s, want 2026-11-25", got.Format(time.DateOnly))
	}
	// A sub-second difference is no skew: the header cannot tell it.
	c.Observe(local.Format(http.TimeFormat), local, local)
	if off, _ := c.Offset(); off != 0 {
		t.Fatalf("offset after an in-step answer: %v, want 0", off)
	}
	// A clock that jumps back is followed at the next answer.
	c.Observe(local.AddDate(0, 0, -3).Format(http.TimeFormat), local, local)
	if off, _ := c.Offset(); (off + 72*time.Hour).Abs() > time.Second {
		t.Fatalf("offset after a jump back: %v, want -72h", off)
	}
	c.SetOffset(time.Hour)
	if got := c.Now(); !got.Equal(local.Add(time.Hour)) {
		t.Fatalf("after SetOffset: %v", got)
	}
}

// TestClientLearnsServiceClock: a service whose clock runs three days ahead of
// the worker's tells it through the Date header of any answer, an error
// included; one that sends no Date header leaves the worker's clock.
func TestClientLearnsServiceClock(t *testing.T) {
	ahead := 3 * 24 * time.Hour
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("nodate") != "" {
			w.Header()["Date"] = nil // net/http then sends none
		} else {
			w.Header().Set("Date", time.Now().Add(ahead).UTC().Format(http.TimeFormat))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[],"total":0,"per_page":1000,"current_page":1,"last_page":1}`))
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name  string
		path  string
		known bool
	}{{"with Date", "/v1/brands", true}, {"without Date", "/v1/brands?nodate=1", false}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewServiceClock(nil)
			c, err := New(Options{BaseURL: srv.URL, APIKey: "key-0123456789", Clock: clock,
				Paths: Paths{stream.EndpointBrands: tc.path}, MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range c.List(context.Background(), stream.EndpointBrands, ListQuery{}) {
				if err != nil {
					t.Fatal(err)
				}
			}
			off, known := clock.Offset()
			if known != tc.known {
				t.Fatalf("offset known = %v, want %v", known, tc.known)
			}
			if tc.known && (off < ahead-2*time.Second || off > ahead+2*time.Second) {
				t.Fatalf("offset %v, want about %v", off, ahead)
			}
			if !tc.known && clock.Now().Sub(time.Now()).Abs() > time.Second {
				t.Fatalf("without a Date header the clock is not the worker's: %v", clock.Now())
			}
		})
	}
}

type countingCounter struct{ n int }

func (c *countingCounter) CountRequest(context.Context) error { c.n++; return nil }

// TestProbeClockCarriesNoKey: the probe reads the Date header of a 401 and
// neither sends the key nor counts a request or spends the budget.
func TestProbeClockCarriesNoKey(t *testing.T) {
	ahead := 26 * time.Hour
	var sawKey bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawKey = sawKey || r.Header.Get("Authorization") != "" || r.Header.Get("X-Workflow-Key") != ""
		w.Header().Set("Date", time.Now().Add(ahead).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Invalid authentication","details":["The API key provided is invalid"]}}`))
	}))
	defer srv.Close()
	clock := NewServiceClock(nil)
	clock.SetOffset(time.Hour) // kept by an earlier process
	counter := &countingCounter{}
	c, err := New(Options{BaseURL: srv.URL, APIKey: "key-0123456789", Clock: clock, Counter: counter})
	if err != nil {
		t.Fatal(err)
	}
	budget := NewBudget(0)
	if err := c.WithBudget(budget).ProbeClock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sawKey {
		t.Error("the probe sent a key")
	}
	if counter.n != 0 || budget.Spent() != 0 {
		t.Errorf("the probe counted %d requests, spent %d of the budget", counter.n, budget.Spent())
	}
	if off, _ := clock.Offset(); !clock.Observed() || (off-ahead).Abs() > 2*time.Second {
		t.Errorf("offset after the probe %v (observed %v), want about %v", off, clock.Observed(), ahead)
	}
}
