package engine

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDeeplyNestedEmailLandsOrIsRejectedAlone: on the first communications
// page, one e-mail carries a member nested 700 levels (jsonb stores it: it
// lands, raw intact) and another one nested deeper than the decoder keeps
// (rejected alone, with its reason). Every other e-mail lands; no page is
// retried.
func TestDeeplyNestedEmailLandsOrIsRejectedAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	nest := func(n int) string { return strings.Repeat(`{"a":`, n) + `1` + strings.Repeat(`}`, n) }
	record := regexp.MustCompile(`"(\d+)":\{"email":\{`)
	var modified atomic.Int32
	var keptID, rejectedID atomic.Int64
	proxy := rewritingProxy(t, h.sb.CommsURL(), func(resp *http.Response) bool {
		return resp.StatusCode == 200 && modified.CompareAndSwap(0, 1)
	}, func(body []byte) []byte {
		locs := record.FindAllSubmatchIndex(body, 2)
		if len(locs) < 2 {
			t.Errorf("first communications page has %d records", len(locs))
			return body
		}
		id := func(i int) int64 { n, _ := strconv.ParseInt(string(body[locs[i][2]:locs[i][3]]), 10, 64); return n }
		keptID.Store(id(0))
		rejectedID.Store(id(1))
		var out bytes.Buffer
		out.Write(body[:locs[0][1]-len(`"email":{`)])
		out.WriteString(`"extra":` + nest(700) + `,`)
		out.Write(body[locs[0][1]-len(`"email":{`) : locs[1][1]-len(`"email":{`)])
		out.WriteString(`"extra":` + nest(extractMaxDepth+500) + `,`)
		out.Write(body[locs[1][1]-len(`"email":{`):])
		return out.Bytes()
	})
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	h.eng, _ = h.wire(wiring{commsURL: srv.URL})

	res := h.run(Request{Streams: []string{"communications"}})
	if modified.Load() == 0 {
		t.Fatal("no communications page passed the proxy")
	}
	if res.Retries != 0 {
		t.Fatalf("%d retries, want none: %v", res.Retries, res.Err)
	}
	if res.Err != nil {
		t.Fatalf("run %s: %v", res.Status, res.Err)
	}
	good, _ := h.truth().Counts("communications")
	if n := h.count("SELECT count(*) FROM " + h.table("emails")); n != good-1 {
		t.Fatalf("%d e-mails landed, want %d (all but the one too deep)", n, good-1)
	}
	if n := h.count("SELECT count(*) FROM "+h.table("emails")+" WHERE record_id = $1 AND raw ? 'extra'", keptID.Load()); n != 1 {
		t.Fatalf("the e-mail nested 700 levels did not land with its raw JSON")
	}
	if n := h.count("SELECT count(*) FROM "+h.table("rejected_records")+
		" WHERE stream = 'communications' AND record_key = $1 AND error LIKE '%nested deeper than%'",
		strconv.FormatInt(rejectedID.Load(), 10)); n != 1 {
		t.Fatalf("the e-mail nested too deep is not in rejected_records with its reason")
	}
}

// extractMaxDepth is the decoder's depth limit (extract's maxDepth).
const extractMaxDepth = 9000
