package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkCommunicationsPage serves 1000-row e-mail pages (all users, no
// filter) over loopback HTTP with limits off, as the worker would fetch them,
// and reports pages/s and rows/s. The client reads each body in full.
func BenchmarkCommunicationsPage(b *testing.B) {
	s, o := benchSandbox(b)
	if err := s.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	defer client.CloseIdleConnections()
	var users strings.Builder
	for u := 1; u <= o.Users; u++ {
		if u > 1 {
			users.WriteByte(',')
		}
		fmt.Fprint(&users, u)
	}
	url := s.CommsURL() + CommsPath
	const perPage = 1000
	pages := o.Emails / perPage
	var bytesRead int64
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		body := fmt.Sprintf(`{"domain_id":1,"user_id":[%s],"page":%d,"per_page":%d,"with_message":"0"}`, users.String(), n%pages+1, perPage)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
		req.Header.Set("X-Workflow-Key", o.CommsKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		k, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		bytesRead += k
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/el, "pages/s")
	b.ReportMetric(float64(b.N*perPage)/el, "rows/s")
	b.ReportMetric(float64(bytesRead)/float64(b.N), "bytes/page")
}

// BenchmarkCommunicationsEncode measures the handler alone (no network):
// building one 1000-row page of all users' e-mails.
func BenchmarkCommunicationsEncode(b *testing.B) {
	s, o := benchSandbox(b)
	users := make([]int64, o.Users)
	for k := range users {
		users[k] = int64(k + 1)
	}
	q := commsQuery{users: users, from: math.MinInt64, to: math.MaxInt64, brand: -1}
	set := s.mail.match(&q)
	var c emailCore
	scratch := make([]byte, 0, 2048)
	e := enc{b: make([]byte, 0, 2<<20)}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		e.b = e.b[:0]
		base := (n * 1000) % (set.len() - 1000)
		for k := base; k < base+1000; k++ {
			i := set.at(k)
			e.keyInt(emailID(s.mail.seed, i))
			scratch = s.mail.writeEmail(&e, i, &c, false, s.commsSt, false, scratch)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "rows/s")
}

// benchSandbox is a sandbox of 200 000 e-mails without limits, not started,
// and its options.
func benchSandbox(b *testing.B) (*Server, Options) {
	b.Helper()
	o := DefaultOptions()
	o.Emails = 200_000
	o.NoLimits = true
	s, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	return s, o
}
