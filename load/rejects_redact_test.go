package load

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/logging"
	"github.com/agencysync/agencysync/transform"
)

// TestRejectsAreRedacted: a rejected record whose payload, key or reason
// echoes a key (raw, URL-encoded, \u-escaped) is stored without it.
func TestRejectsAreRedacted(t *testing.T) {
	t.Parallel()
	const key = "sk-Live-0123456789abcdef"
	pool, schema := warehousetest.Schema(t)
	s, err := New(pool, Config{Schema: schema, StatementTimeout: time.Minute, Redactor: logging.NewRedactor(key)})
	if err != nil {
		t.Fatal(err)
	}
	escaped := strings.ReplaceAll(key, "-", `\u002d`)
	rj := transform.NewReject("invoices", "inv-"+key[:10],
		json.RawMessage(`{"id":"x","note":"token `+escaped+`","url":"/?k=`+url.QueryEscape(key)+`"}`),
		errors.New(`amount "`+key+`" is not a decimal number`))
	commit(t, s, page{stream: "finance", batch: transform.Batch{Rejects: []transform.Reject{rj}}})
	row := queryText(t, pool, "SELECT record_key || ' ' || payload::text || ' ' || error FROM "+qualified(schema, "rejected_records"))
	for i := 0; i+8 <= len(key); i++ {
		for _, f := range []string{key[i : i+8], url.QueryEscape(key[i : i+8]), strings.ReplaceAll(key[i:i+8], "-", `\u002d`)} {
			if strings.Contains(row, f) {
				t.Fatalf("stored reject holds %q: %s", f, row)
			}
		}
	}
	if !strings.Contains(row, logging.Redacted) || !strings.Contains(row, "is not a decimal number") {
		t.Fatalf("stored reject: %s", row)
	}

	// sync_runs.error, which analysts read, likewise.
	runID, err := s.StartRun(context.Background(), Run{Trigger: "test", Streams: []string{"finance"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(context.Background(), runID, RunResult{Status: "failed", Error: "HTTP 400 bad key " + url.PathEscape(key)}); err != nil {
		t.Fatal(err)
	}
	msg := queryText(t, pool, "SELECT error FROM "+qualified(schema, "sync_runs"))
	if strings.Contains(msg, key[:8]) || !strings.Contains(msg, "HTTP 400 bad key "+logging.Redacted) {
		t.Fatalf("sync_runs.error = %q", msg)
	}
}
