package extract

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// gzipBomb is a gzip stream (concatenated members) inflating to a JSON
// start and then size bytes of spaces, about 1 KiB on the wire per MiB.
func gzipBomb(t testing.TB, size int) []byte {
	t.Helper()
	var out bytes.Buffer
	member := func(p []byte) {
		zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
		if _, err := zw.Write(p); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	member([]byte(`{"data":{"rows":{`))
	spaces := bytes.Repeat([]byte{' '}, 1<<20)
	var one bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&one, gzip.BestCompression)
	_, _ = zw.Write(spaces)
	_ = zw.Close()
	for range size >> 20 {
		out.Write(one.Bytes())
	}
	return out.Bytes()
}

// TestHostileBodiesStayWithinTheBudget: a gzip bomb (256 MiB inflated) and
// an endless body, each answered to several requests at once, end every
// request with ErrResponseTooLarge naming the cap and its setting, not
// retried; the bodies held at once never pass the shared budget (the small
// pool plus one reader at the cap) however many are in flight; and a
// capped read allocates about the cap, not the doubling buffer's twice.
func TestHostileBodiesStayWithinTheBudget(t *testing.T) {
	const limit = 4 << 20
	bomb := gzipBomb(t, 256<<20)
	for _, kind := range []string{"gzip bomb", "endless"} {
		t.Run(kind, func(t *testing.T) {
			srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
				if kind == "gzip bomb" {
					w.Header().Set("Content-Encoding", "gzip")
					_, _ = w.Write(bomb)
					return
				}
				_, _ = w.Write([]byte(`{"data":{"rows":{`))
				chunk := bytes.Repeat([]byte{' '}, 64<<10)
				for r.Context().Err() == nil {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			})
			o := fastOptions(srv.URL, srv.URL)
			o.MaxBodyBytes = limit
			o.Names.MaxBodyBytes = "AGENCY_MAX_RESPONSE_BYTES"
			c := newClient(t, o)
			const inFlight = 6
			var wg sync.WaitGroup
			errs := make([]error, inFlight)
			for i := range inFlight {
				wg.Go(func() {
					_, errs[i] = c.CommunicationsPage(context.Background(), CommsQuery{DomainID: 1, UserIDs: []int64{1}}, i+1)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(err.Error(), "4 MiB") || !strings.Contains(err.Error(), "AGENCY_MAX_RESPONSE_BYTES") {
					t.Errorf("request %d: %v, want the cap and its setting named", i, err)
				}
			}
			if rec.count() != inFlight {
				t.Errorf("%d requests for %d pages: a body too large was retried", rec.count(), inFlight)
			}
			budget := smallPoolReaders*c.mem.allowance + limit + chunkSize
			if peak := c.mem.peak.Load(); peak > budget || peak < limit {
				t.Errorf("bodies held at once peaked at %d bytes; want the cap %d reached and at most %d", peak, limit, budget)
			}
			if held := c.mem.held.Load(); held != 0 {
				t.Errorf("%d bytes still held after every request ended", held)
			}

			// One capped read on its own allocates about the cap.
			c2 := newClient(t, o)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := c2.CommunicationsPage(context.Background(), CommsQuery{DomainID: 1, UserIDs: []int64{1}}, 1)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrResponseTooLarge) {
				t.Fatal(err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit*3/2 {
				t.Errorf("a read capped at %d bytes allocated %d", limit, alloc)
			}
		})
	}
}

// TestLargeBodiesInFlightAllLand: bodies larger than a reader's allowance
// but under the cap, several in flight at once, plain with a length and
// gzip without, are all read whole (in chunks, joined) and none waits
// forever for another.
func TestLargeBodiesInFlightAllLand(t *testing.T) {
	const rows = 9000 // about 10 MiB of JSON: past the 8 MiB allowance
	var page strings.Builder
	page.WriteString(`{"data":[`)
	for i := range rows {
		if i > 0 {
			page.WriteByte(',')
		}
		fmt.Fprintf(&page, `{"id":%d,"name":"%s"}`, i+1, strings.Repeat("x", 1100))
	}
	page.WriteString(`],"total":9000,"per_page":9000,"current_page":1,"last_page":1}`)
	plain := []byte(page.String())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("gzip") == "1" {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gz.Bytes())
			return
		}
		_, _ = w.Write(plain)
	})
	o := fastOptions(srv.URL, "")
	o.MaxBodyBytes, o.PerPage = 16<<20, 1000
	c := newClient(t, o)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			q := url.Values{"gzip": {fmt.Sprint(i % 2)}}
			p, err := c.ListPage(context.Background(), stream.EndpointBrands, q, 1, 1000)
			switch {
			case err != nil:
				errs[i] = err
			case len(p.Records) != rows || p.Bytes != len(plain):
				errs[i] = fmt.Errorf("%d records, %d bytes; want %d, %d", len(p.Records), p.Bytes, rows, len(plain))
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if held := c.mem.held.Load(); held != 0 {
		t.Errorf("%d bytes still held", held)
	}
}
