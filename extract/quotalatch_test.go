package extract

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// Once the service refused a request for the daily quota, requests that
// are about to leave (several may be in flight at once) are not sent: each
// would be refused too, and each costs a request in the ledger.
func TestDailyQuotaStopsTheRequestsAboutToLeave(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(errBody("Daily quota exceeded", "You have exceeded the allowed daily requests")))
	}))
	defer srv.Close()
	c := newClient(t, fastOptions(srv.URL, srv.URL))
	for i := range 3 {
		_, err := c.Detail(context.Background(), stream.EndpointBrand, ID("7"))
		if !errors.Is(err, ErrDailyQuota) {
			t.Fatalf("call %d: %v, want the daily quota", i, err)
		}
	}
	if n := served.Load(); n != 1 {
		t.Errorf("the service saw %d requests after refusing the first for the daily quota; want 1", n)
	}
	// A copy with the same budget (the run's logger) shares what the
	// service said; a copy with a budget of its own (the next run) asks the
	// service again.
	if _, err := c.WithLogger(nil).Detail(context.Background(), stream.EndpointBrand, ID("7")); !errors.Is(err, ErrDailyQuota) || served.Load() != 1 {
		t.Errorf("copy: %v after %d requests", err, served.Load())
	}
	if _, err := c.WithBudget(NewBudget(5)).Detail(context.Background(), stream.EndpointBrand, ID("7")); !errors.Is(err, ErrDailyQuota) || served.Load() != 2 {
		t.Errorf("next run: %v after %d requests, want the service asked again", err, served.Load())
	}
}
