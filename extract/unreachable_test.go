package extract

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/loopback"
	"github.com/agencysync/agencysync/stream"
)

// refundingLedger counts requests and takes back those never sent, as the
// load package's ledger does.
type refundingLedger struct {
	counted, uncounted atomic.Int32
}

func (l *refundingLedger) CountRequest(context.Context) error { l.counted.Add(1); return nil }

func (l *refundingLedger) UncountRequest(context.Context, time.Time) error {
	l.uncounted.Add(1)
	return nil
}

func (l *refundingLedger) net() int32 { return l.counted.Load() - l.uncounted.Load() }

// TestUnreachableHostNotBilledNorRetriedLong: a request that never left the
// machine — connection refused, a name that does not resolve, a TLS
// handshake that failed — is not counted (the ledger takes it back, the
// budget is refunded), is tried at most unreachableAttempts times, and its
// error names the setting of the address. A request that was sent and got
// no answer (the server read it and dropped the connection) stays counted
// and is retried as before.
func TestUnreachableHostNotBilledNorRetriedLong(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `[{"id":1}]`)
	}))
	t.Cleanup(tlsSrv.Close)
	dnsFails := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "api.agency.invalid", IsNotFound: true}}
	}}}
	cases := []struct {
		name, base, comms string
		hc                *http.Client
		want              string
	}{
		{name: "refused", base: "http://" + loopback.FreeAddr(t), want: "connection refused"},
		{name: "refused comms", comms: "http://" + loopback.FreeAddr(t), want: "connection refused"},
		{name: "no such host", base: "http://127.0.0.1:9", hc: dnsFails, want: "does not resolve"},
		{name: "tls", base: tlsSrv.URL, want: "TLS handshake failed"}, // the default transport does not trust the test certificate
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			led := &refundingLedger{}
			var mu sync.Mutex
			var infos []RequestInfo
			o := fastOptions(tc.base, tc.comms)
			o.Counter, o.HTTPClient, o.MaxAttempts = led, tc.hc, 6
			o.Names = SettingNames{BaseURL: "AGENCY_BASE_URL", CommsURL: "AGENCY_COMMS_URL"}
			o.Hook = func(ri RequestInfo) { mu.Lock(); infos = append(infos, ri); mu.Unlock() }
			c := newClient(t, o)
			b := NewBudget(100)
			var err error
			setting := "AGENCY_BASE_URL"
			if tc.comms != "" {
				setting = "AGENCY_COMMS_URL"
				_, err = collect(t, c.WithBudget(b).Communications(context.Background(), CommsQuery{DomainID: 1, UserIDs: []int64{1}}))
			} else {
				_, err = c.WithBudget(b).Detail(context.Background(), stream.EndpointProject, "1")
			}
			if !errors.Is(err, ErrUnreachable) || !errors.Is(err, ErrNetwork) || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v, want ErrUnreachable", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "cannot reach "+setting) || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "not counted") {
				t.Errorf("err %q: want it to name %s and say %q", msg, setting, tc.want)
			}
			if led.net() != 0 || b.Spent() != 0 || b.Remaining() != 100 {
				t.Errorf("billed: ledger %d (counted %d), budget spent %d", led.net(), led.counted.Load(), b.Spent())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(infos) == 0 || len(infos) > unreachableAttempts {
				t.Fatalf("%d attempts, want 1 to %d", len(infos), unreachableAttempts)
			}
			for _, ri := range infos {
				if !ri.Unsent || ri.ErrorClass != "unreachable" || ri.Status != 0 {
					t.Errorf("attempt %+v: want unsent, class unreachable", ri)
				}
			}
		})
	}

	t.Run("sent, no answer", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		var seen atomic.Int32
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 4096)
				_, _ = conn.Read(buf) // the request arrived
				seen.Add(1)
				conn.Close()
			}
		}()
		led := &refundingLedger{}
		o := fastOptions("http://"+ln.Addr().String(), "")
		o.Counter, o.MaxAttempts = led, 4
		c := newClient(t, o)
		b := NewBudget(100)
		_, err = c.WithBudget(b).Detail(context.Background(), stream.EndpointProject, "1")
		if !errors.Is(err, ErrNetwork) || errors.Is(err, ErrUnreachable) {
			t.Fatalf("err %v: want a network error that is not ErrUnreachable", err)
		}
		if !strings.Contains(err.Error(), "giving up after 4 attempts") {
			t.Errorf("err %q: want every attempt used", err)
		}
		// net/http may re-send a GET on its own after such a drop; every
		// send is counted.
		if led.uncounted.Load() != 0 || int(led.counted.Load()) < 4 || b.Spent() < 4 || int(seen.Load()) < 4 {
			t.Errorf("counted %d, uncounted %d, budget spent %d, server saw %d: every request sent must stay billed",
				led.counted.Load(), led.uncounted.Load(), b.Spent(), seen.Load())
		}
	})
}
