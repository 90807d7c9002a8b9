package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/warehouse"
)

// TestS13FutureDated: e-mails dated 9999-12-31 and a month ahead arrive in an
// increment; the e-mails that come after them must still be fetched (the
// watermark never passes the service's now).
func TestS13FutureDated(t *testing.T) {
	sc := newScenario(t, 13, "Future dates: future-dated e-mails do not stop the increments")
	r := newRig(t, sc, twistSandbox())
	mustSucceed(t, "first sync", r.run(nil))
	for _, at := range []string{"9999-12-31T00:00:00Z", time.Now().UTC().Add(30 * 24 * time.Hour).Format(time.RFC3339)} {
		r.sb.admin("POST", "emails", map[string]any{"append": 1, "email_at": at}, nil)
	}
	res := r.run(nil)
	h := r.emailHoldings()
	honest(t, "the run that meets the future-dated e-mails", res, h)
	r.sb.advance(time.Hour)
	r.sb.admin("POST", "emails", map[string]any{"append": 20}, nil)
	runs, last := r.runUntilComplete(2, nil)
	h = r.emailHoldings()
	sc.fig("after 2 future-dated e-mails and 20 later ones: %s (%d more runs, last exit %d)", h, runs, last.code)
	if !h.complete() {
		t.Errorf("the e-mails after the future-dated ones were not all fetched: %s", h)
	}
}

// TestS14DeepNesting: one e-mail nested 700 levels deep (valid JSON) is
// rejected alone with its reason; the rest of its page and of the range lands,
// and the run ends 0.
func TestS14DeepNesting(t *testing.T) {
	sc := newScenario(t, 14, "Deep nesting: a 700-deep record is rejected alone")
	r := newRig(t, sc, twistSandbox())
	tr := r.sb.truth()
	key := tr["communications"][len(tr["communications"])/2].Key
	r.sb.admin("POST", "emails/"+key, map[string]any{"nesting": 700}, nil)
	res := r.run(nil)
	h := r.emailHoldings()
	honest(t, "the run", res, h)
	sc.fig("e-mail %s nested 700 deep: exit %d %q, %d requests; %s", key, res.code, res.status(), res.num("requests_used"), h)
	if res.code != 0 || !h.complete() {
		t.Errorf("want exit 0 with every e-mail stored or rejected with a reason; got %s; %s\n%s", res, h, errorLines(res.stderr))
	}
}

// TestS15RecordsMoveBetweenPages: e-mails deleted or inserted in the range
// between two page requests, and a page size that changes between an
// interrupted run and its resume.
func TestS15RecordsMoveBetweenPages(t *testing.T) {
	sc := newScenario(t, 15, "Moving records: records that move between pages are not skipped")
	for _, c := range []struct {
		name string
		mut  map[string]any
	}{
		{"delete", map[string]any{"delete": 5, "after_pages": 1}},
		{"insert", map[string]any{"insert": 10, "after_pages": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := sc.in(t)
			t.Parallel()
			r := newRig(t, sc, twistSandbox())
			r.sb.admin("POST", "twists/mutate-between-pages", c.mut, nil)
			res := r.run(nil)
			h := r.emailHoldings()
			lied := honest(t, "the run during the mutation", res, h)
			runs, last := r.runUntilComplete(3, nil)
			final := r.emailHoldings()
			sc.fig("%s %v between pages 1 and 2: first run exit %d %q with %s; then %d runs (last exit %d): %s",
				c.name, c.mut[c.name], res.code, res.status(), h, runs, last.code, final)
			if lied || !final.complete() {
				t.Errorf("%s: records lost (%s) or a success claimed with a shortfall (%t)", c.name, final, lied)
			}
		})
	}
	// The page size changes between a killed run (after three pages) and
	// its resume: a cap that shrinks (the worker's per_page is answered
	// smaller), and a server that ignores per_page and whose page grew.
	for _, c := range []struct {
		name          string
		first, resume map[string]any
		stored        int
	}{
		{"page cap 50 to 25", map[string]any{}, map[string]any{"max_per_page": 25}, 150},
		{"fixed page 25 to 50", map[string]any{"fixed_per_page": 25}, map[string]any{"fixed_per_page": 50}, 75},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := sc.in(t)
			t.Parallel()
			o := twistSandbox()
			// Slow pages, so that the kill after three of them lands while
			// the run still has pages to go.
			o.Latency = 150 * time.Millisecond
			r := newRig(t, sc, o)
			r.sb.twists(c.first)
			// One request in flight: pages fetched ahead in parallel would
			// end the run before the kill after three of them.
			env := map[string]string{"SYNC_MAX_IN_FLIGHT": "1"}
			for k, v := range r.env {
				env[k] = v
			}
			w := startWorker(t, env, "run", "--streams", "communications")
			waitFor(t, "three pages stored", 5*time.Millisecond, func() bool { return r.storedCount() >= c.stored || !w.running() })
			killed := w.running()
			w.kill()
			r.syncLockFree(warehouse.SyncLockID(r.schema))
			before := r.storedCount()
			r.sb.twists(c.resume)
			runs, last := r.runUntilComplete(3, nil)
			final := r.emailHoldings()
			sc.fig("%s between a killed run (%d stored, killed while running: %t) and its resume: %d runs (last exit %d): %s", c.name, before, killed, runs, last.code, final)
			if !killed {
				t.Errorf("the first run ended before the kill: the scenario did not happen")
			}
			if !final.complete() {
				t.Errorf("the change of page size lost records: %s", final)
			}
		})
	}
}

// TestS16SecretsThroughTruncation: the service echoes the request's key in a
// 400 body, raw (the cut at 300 bytes falls inside a copy), URL-encoded and
// JSON-escaped. No output, sync_runs row or reject may hold the key in any of
// these forms, nor 16 characters of it in a row.
func TestS16SecretsThroughTruncation(t *testing.T) {
	sc := newScenario(t, 16, "Echoed key: a key echoed by the service never leaves, in any encoding")
	o := twistSandbox()
	// Characters that URL-encoding and JSON escaping change.
	o.APIKey = "rel-s12/api+" + randomHex(16) + `="q"`
	o.CommsKey = "rel-s12/comms+" + randomHex(16) + `="q"`
	r := newRig(t, sc, o)
	r.sb.twists(map[string]any{"echo_key": true})
	res := r.run(nil)
	var outputs []string
	outputs = append(outputs, res.stdout, res.stderr)
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(t))
	defer cancel()
	for _, table := range []string{"sync_runs", "rejected_records", "sync_state"} {
		rows, err := r.pool.Query(ctx, "SELECT row_to_json(x)::text FROM "+pgx.Identifier{r.schema, table}.Sanitize()+" AS x")
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		outputs = append(outputs, texts...)
	}
	leaks := 0
	for _, key := range []string{o.APIKey, o.CommsKey} {
		js, _ := json.Marshal(key)
		forms := map[string]string{"raw": key, "URL-encoded": url.QueryEscape(key), "JSON-escaped": string(js[1 : len(js)-1])}
		for k := 0; k+16 <= len(key); k++ {
			forms[fmt.Sprintf("characters %d..%d", k, k+16)] = key[k : k+16]
		}
		var leaked []string
		example := ""
		for _, name := range slices.Sorted(maps.Keys(forms)) {
			form := forms[name]
			for _, out := range outputs {
				if i := strings.Index(out, form); i >= 0 {
					leaked = append(leaked, name)
					if example == "" {
						example = out[max(0, i-120):min(len(out), i+len(form)+40)]
					}
					break
				}
			}
		}
		if len(leaked) > 0 {
			leaks += len(leaked)
			t.Errorf("a key of %d characters leaked in %d forms (%s), e.g. …%s…", len(key), len(leaked), strings.Join(leaked, "; "), example)
		}
	}
	sc.fig("echoing service: exit %d %q; %d texts searched (stdout, stderr, sync_runs, rejected_records, sync_state) for raw, URL-encoded, JSON-escaped and 16-character pieces of 2 keys: %d leaks", res.code, res.status(), len(outputs), leaks)
	if res.code != 1 {
		t.Errorf("a 400 on every request: exit %d, want 1 (a failure, the reason in sync_runs.error)", res.code)
	}
}

// TestS17LyingListPaging: a brands list (and every main list) that answers
// last_page 1 with total 3 but 2 rows must not soft-delete the third brand.
func TestS17LyingListPaging(t *testing.T) {
	sc := newScenario(t, 17, "Lying paging: a listing that lies about its paging soft-deletes nothing")
	r := newRig(t, sc, twistSandbox())
	mustSucceed(t, "first sync", r.run(nil))
	r.sb.twists(map[string]any{"lying_paging": true})
	res := r.run(nil)
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(t))
	defer cancel()
	var brands, projects int
	for _, c := range []struct {
		table string
		n     *int
	}{{"brands", &brands}, {"projects", &projects}} {
		if err := r.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{r.schema, c.table}.Sanitize()+" WHERE _deleted_at IS NOT NULL").Scan(c.n); err != nil {
			t.Fatal(err)
		}
	}
	sc.fig("lists answering total 3, last_page 1 and 2 rows: exit %d %q; %d brands and %d projects soft-deleted (of 3 and 6, none deleted at the service)", res.code, res.status(), brands, projects)
	if brands+projects > 0 {
		t.Errorf("%d brands and %d projects soft-deleted by a lying listing", brands, projects)
	}
	if res.code != 0 && res.code != 75 {
		t.Errorf("exit %d, want 0 (the record found past last_page) or 75 (incomplete listing)", res.code)
	}
}

// TestS18MissingCommsPaging: communications answers without total and
// last_page: paging goes on while pages come back full.
func TestS18MissingCommsPaging(t *testing.T) {
	sc := newScenario(t, 18, "Missing paging: communications without paging fields are paged while pages are full")
	r := newRig(t, sc, twistSandbox())
	r.sb.twists(map[string]any{"comms_paging_missing": true})
	res := r.run(nil)
	h := r.emailHoldings()
	honest(t, "the run", res, h)
	sc.fig("answers without total/last_page: exit %d %q, %s", res.code, res.status(), h)
	if !h.complete() {
		t.Errorf("e-mails lost without paging fields: %s", h)
	}
}

// TestS19LineBreakInKey: a key with a line break inside is bad configuration:
// exit 2 at start, naming the variable, no request.
func TestS19LineBreakInKey(t *testing.T) {
	sc := newScenario(t, 19, "Line break: a key with a line break inside exits 2 at start")
	r := newRig(t, sc, twistSandbox())
	file := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(file, []byte(apiKey[:10]+"\n"+apiKey[10:]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, variable string
		env            map[string]string
	}{
		{"AGENCY_API_KEY", "AGENCY_API_KEY", map[string]string{"AGENCY_API_KEY": apiKey[:10] + "\n" + apiKey[10:]}},
		{"AGENCY_COMMS_KEY", "AGENCY_COMMS_KEY", map[string]string{"AGENCY_COMMS_KEY": commsKey[:10] + "\r\n" + commsKey[10:]}},
		{"AGENCY_API_KEY_FILE", "AGENCY_API_KEY_FILE", map[string]string{"AGENCY_API_KEY_FILE": file}},
	}
	exits := 0
	for _, c := range cases {
		env := map[string]string{}
		for k, v := range r.env {
			env[k] = v
		}
		if c.name == "AGENCY_API_KEY_FILE" {
			delete(env, "AGENCY_API_KEY")
		}
		for k, v := range c.env {
			env[k] = v
		}
		before := r.sb.stats().Requests
		// Bad configuration ends at once, before any request; a worker
		// that retries requests it cannot send never ends, and is killed
		// (failing the test) when the test's deadline draws near.
		res := runWorker(t, env, "run")
		sent := r.sb.stats().Requests - before
		switch {
		case res.code == 2 && sent == 0 && strings.Contains(res.stderr+res.stdout, c.variable):
			exits++
		default:
			t.Errorf("%s with a line break: exit %d after %d requests (want exit 2, no request, the variable named)\n%s", c.name, res.code, sent, tail([]byte(res.stderr), 10))
		}
	}
	sc.fig("%d keys with a line break inside: %d exit 2 at start without a request", len(cases), exits)
}
