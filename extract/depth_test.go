package extract

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// nested is a JSON value nested levels deep: objects, or arrays.
func nested(levels int, arrays bool) string {
	if arrays {
		return strings.Repeat(`[`, levels) + `1` + strings.Repeat(`]`, levels)
	}
	return strings.Repeat(`{"a":`, levels) + `1` + strings.Repeat(`}`, levels)
}

// commsPageWithNested is a canonical page of 10 e-mails (ids 1..10) whose
// record 5 carries an extra member nested levels deep.
func commsPageWithNested(t *testing.T, levels int, arrays bool) []byte {
	t.Helper()
	body := string(genCommsPage(10, 1, 1, 1000, 10))
	const at = `"5":{"email":{`
	if !strings.Contains(body, at) {
		t.Fatalf("generated page lacks %s", at)
	}
	return []byte(strings.Replace(body, at, `"5":{"extra":`+nested(levels, arrays)+`,"email":{`, 1))
}

// TestDeeplyNestedRecordIsRejectedAlone: a communications record nested
// deeper than the decoder keeps (valid JSON) is rejected alone, with its
// reason; the other nine land, from one request — no retry, no page error.
func TestDeeplyNestedRecordIsRejectedAlone(t *testing.T) {
	for _, arrays := range []bool{false, true} {
		t.Run(fmt.Sprintf("arrays=%v", arrays), func(t *testing.T) {
			body := commsPageWithNested(t, maxDepth+700, arrays)
			srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Write(body)
			})
			c := newClient(t, fastOptions("", srv.URL))
			pages, err := collect(t, c.Communications(context.Background(), CommsQuery{DomainID: 1, UserIDs: []int64{1}}))
			if err != nil {
				t.Fatalf("page failed: %v", err)
			}
			if len(pages) != 1 || len(pages[0].Records) != 9 || len(pages[0].Rejects) != 1 {
				t.Fatalf("pages %d, want 1 page of 9 records and 1 reject", len(pages))
			}
			rj := pages[0].Rejects[0]
			if rj.Key != "5" || !errors.Is(&rj, ErrTooDeep) || !errors.Is(&rj, ErrInvalidRecord) ||
				!strings.Contains(rj.Error(), "nested deeper than") {
				t.Fatalf("reject %s: %v", rj.Key, rj.Error())
			}
			if !strings.Contains(string(rj.Raw), `"extra":`) || !strings.HasSuffix(string(rj.Raw), "}") {
				t.Fatalf("reject's raw bytes are not the record: %.80s…", rj.Raw)
			}
			if n := rec.count(); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
		})
	}
}

// TestDeeplyNestedListRecordAndDetail: the same on a list endpoint (the
// record rejected alone, one request) and a detail (rejected, not retried).
func TestDeeplyNestedListRecordAndDetail(t *testing.T) {
	deep := nested(maxDepth+1, false)
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/brands":
			writeJSON(w, 200, `{"data":[{"id":1,"name":"A"},{"id":2,"name":"B","meta":`+deep+`},{"id":3,"name":"C"}],"total":3,"per_page":1000,"current_page":1,"last_page":1}`)
		case "/v1/projects/7":
			writeJSON(w, 200, `{"id":7,"name":"P","history":[],"custom":`+deep+`}`)
		default:
			writeJSON(w, 404, errBody("Data not found", r.URL.Path))
		}
	})
	c := newClient(t, fastOptions(srv.URL, ""))
	pages, err := collect(t, c.List(context.Background(), stream.EndpointBrands, ListQuery{}))
	if err != nil {
		t.Fatalf("brands: %v", err)
	}
	if len(pages) != 1 || len(pages[0].Records) != 2 || len(pages[0].Rejects) != 1 || pages[0].Rejects[0].Key != "2" ||
		!errors.Is(&pages[0].Rejects[0], ErrTooDeep) {
		t.Fatalf("brands: %+v", pages)
	}
	if n := rec.count(); n != 1 {
		t.Fatalf("%d requests for the brands list, want 1", n)
	}
	_, err = c.Detail(context.Background(), stream.EndpointProject, "7")
	var re *RecordError
	if !errors.As(err, &re) || !errors.Is(err, ErrTooDeep) || re.Key != "7" {
		t.Fatalf("project detail: %v, want a *RecordError of ErrTooDeep", err)
	}
	if n := rec.count(); n != 2 {
		t.Fatalf("%d requests in all, want 2 (the detail not retried)", n)
	}
}
