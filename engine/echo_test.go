package engine

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/agencysync/agencysync/internal/testkit/leak"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/logging"
)

// TestEchoedKeysAppearNowhere: the sandbox echoes each request's key in
// every brand detail and in e-mails of every page (echo_key_in_records:
// raw, URL-encoded, with escaped slashes, \u-escaped, base64 in both
// alphabets with and without padding at every alignment, a basic-auth
// header, hex in both cases). After a full sync no piece of either key, in
// any of those forms, is in the warehouse (every table, sync_runs
// included), the logs (the production logger, at debug level) or the
// metrics; the records themselves land.
func TestEchoedKeysAppearNowhere(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Emails = 400 // three pages of 1000 would only make the scan longer
	o.APIKey, o.CommsKey = "sk_live/4f9a+Zq8Lm2Rt7Xw0Pb5Nc3Vd6", "wf-9d8c7b6a5f4e3d2c1b0a=="
	h := newHarness(t, o, nil)
	on := true
	if err := h.sb.SetTwists(sandbox.Twists{HostileTwists: sandbox.HostileTwists{EchoKeyInRecords: &on}}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log, err := logging.New(&logs, "debug", "json", o.APIKey, o.CommsKey)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	eng, _ := h.wire(wiring{log: log, reg: reg})
	res := runEngine(context.Background(), t, eng, Request{})
	if res.Status != StatusSucceeded {
		t.Fatalf("run %s: %v", res.Status, res.Err)
	}
	texts := map[string]string{"logs": logs.String()}
	rows, err := h.pool.Query(context.Background(), "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'", h.schema)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if rows.Err() != nil || len(tables) < 10 {
		t.Fatalf("%d tables (%v)", len(tables), rows.Err())
	}
	for _, table := range tables {
		var dump string
		q := "SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM " + pgx.Identifier{h.schema, table}.Sanitize() + " t"
		if err := h.pool.QueryRow(context.Background(), q).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		texts["table "+table] = dump
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var metricsText bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&metricsText, f); err != nil {
			t.Fatal(err)
		}
	}
	texts["metrics"] = metricsText.String()
	for where, text := range texts {
		for _, key := range []string{o.APIKey, o.CommsKey} {
			if l := leak.Find(text, key); l != "" {
				i := strings.Index(text, logging.Redacted)
				t.Errorf("%s holds key %q: %s (first redaction at %d)", where, key, l, i)
			}
		}
	}
	// The keys were echoed, and redacted where the records are stored.
	for _, table := range []string{"brands", "emails"} {
		if !strings.Contains(texts["table "+table], logging.Redacted) {
			t.Errorf("%s: no %s; did the sandbox echo the keys?", table, logging.Redacted)
		}
	}
	if !strings.Contains(texts["logs"], "echoed an API key") {
		t.Error("no warning that the service echoed a key")
	}
	h.assertEqualsTruth()
}
