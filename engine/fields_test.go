package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
)

// watchLogs makes the harness's engine log to an observer (warnings up).
func (h *harness) watchLogs() *observer.ObservedLogs {
	core, logs := observer.New(zapcore.WarnLevel)
	h.eng.log = zap.New(core)
	return logs
}

// warningLines returns the logged coverage warnings: lines with a kind field.
func warningLines(logs *observer.ObservedLogs) []observer.LoggedEntry {
	var out []observer.LoggedEntry
	for _, e := range logs.All() {
		if _, ok := e.ContextMap()["kind"]; ok {
			out = append(out, e)
		}
	}
	return out
}

func findWarning(ws []inventory.Warning, kind inventory.Kind, stream, column string) (inventory.Warning, bool) {
	for _, w := range ws {
		if w.Kind == kind && w.Stream == stream && w.Column == column {
			return w, true
		}
	}
	return inventory.Warning{}, false
}

// TestRunWarnsOfRenamedFields: against a service whose project fields are
// renamed, the run ends with a null_column warning per renamed mapped column
// naming its replacement; each is logged on one line, stored in
// sync_runs.warnings, counted by agencysync_source_field_warnings and shown
// by status. Against the canonical sandbox and the PHP encoder's, the same
// run has no warning and every record lands.
func TestRunWarnsOfRenamedFields(t *testing.T) {
	t.Parallel()
	renamedProjects := map[string]string{ // column → the renamed field
		"projects.name": "title", "projects.status": "state", "projects.deadline": "due_date",
		"projects.budget_amount": "budget_total", "projects.start_date": "starts_on",
	}
	for _, tc := range []struct {
		variant string
		clean   bool
	}{
		{sandbox.VariantRenamedFields, false},
		{"", true},
		{sandbox.VariantPHP, true},
	} {
		t.Run(cmpOr(tc.variant, "canonical"), func(t *testing.T) {
			t.Parallel()
			o := smallSandbox()
			if tc.variant != "" {
				o.Variants = []string{tc.variant}
			}
			h := newHarness(t, o, nil)
			logs := h.watchLogs()
			res := h.run(Request{})
			if want := map[bool]Status{true: StatusSucceeded, false: StatusWarning}[tc.clean]; res.Status != want {
				t.Fatalf("run ended %s: %v, want %s", res.Status, res.Err, want)
			}
			lines := warningLines(logs)
			for _, w := range res.Warnings {
				t.Logf("%s %s %s: %s", w.Stream, w.Kind, cmpOr(w.Column, w.Field), w.Message)
			}
			if len(lines) != len(res.Warnings) {
				t.Errorf("%d warning lines logged for %d warnings", len(lines), len(res.Warnings))
			}
			ctx := context.Background()
			id, stored, err := h.eng.store.(*load.Store).LastRunWarnings(ctx)
			if err != nil || id != res.RunID {
				t.Fatalf("LastRunWarnings = %s, %v; want run %s", id, err, res.RunID)
			}
			if len(stored) != len(res.Warnings) {
				t.Errorf("sync_runs.warnings holds %d warnings, the run returned %d", len(stored), len(res.Warnings))
			}
			rep, err := h.eng.Status(ctx, 3)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Warnings == nil || rep.Warnings.RunID != res.RunID || len(rep.Warnings.Warnings) != len(res.Warnings) {
				t.Errorf("status warnings = %+v, want the %d of run %s", rep.Warnings, len(res.Warnings), res.RunID)
			}
			g := h.eng.metrics.SourceFieldWarnings
			if tc.clean {
				for _, w := range res.Warnings {
					t.Errorf("unexpected warning: %s %s %s: %s", w.Stream, w.Kind, cmpOr(w.Column, w.Field), w.Message)
				}
				if res.Counts.Rejected != 0 {
					t.Errorf("%d records rejected, want none", res.Counts.Rejected)
				}
				h.assertEqualsTruth()
				if n := testutil.CollectAndCount(g); n == 0 {
					t.Errorf("no %s series after a run: want each stream's kinds at 0", inventory.WarningsMetric)
				}
				if v := testutil.ToFloat64(g.WithLabelValues("projects", string(inventory.KindNullColumn))); v != 0 {
					t.Errorf("metric projects/null_column = %v, want 0", v)
				}
				return
			}
			for _, stream := range []string{"projects", "project_details"} {
				for col, field := range renamedProjects {
					w, ok := findWarning(res.Warnings, inventory.KindNullColumn, stream, col)
					if !ok {
						t.Errorf("%s: no null_column warning for %s", stream, col)
						continue
					}
					if len(w.Candidates) == 0 || w.Candidates[0] != field {
						t.Errorf("%s %s: candidates %v, want %s first", stream, col, w.Candidates, field)
					}
					if w.Share != 1 {
						t.Errorf("%s %s: share %v, want 1", stream, col, w.Share)
					}
				}
				if n := testutil.ToFloat64(g.WithLabelValues(stream, string(inventory.KindNullColumn))); n < float64(len(renamedProjects)) {
					t.Errorf("metric %s{stream=%s,kind=null_column} = %v, want ≥ %d", inventory.WarningsMetric, stream, n, len(renamedProjects))
				}
			}
			// Contacts and invoices are renamed too: contacts' names go NULL;
			// invoices lose their required amount and are all rejected.
			if _, ok := findWarning(res.Warnings, inventory.KindNullColumn, "contacts", "brand_contacts.first_name"); !ok {
				t.Errorf("no warning for brand_contacts.first_name (firstname)")
			}
			w, ok := findWarning(res.Warnings, inventory.KindRejectedStream, "invoices", "")
			if !ok || !strings.Contains(w.Reason, "amount") || w.Share != 1 {
				t.Errorf("invoices: rejected_stream warning %+v, want every invoice rejected for its amount", w)
			}
			logged := map[string]bool{}
			for _, l := range lines {
				m := l.ContextMap()
				if m["kind"] == string(inventory.KindNullColumn) {
					cands, _ := m["candidates"].([]any)
					if len(cands) == 0 {
						cands = anySlice(m["candidates"])
					}
					logged[fmt.Sprint(m["stream"], " ", m["column"], " ", cands)] = true
				}
			}
			for col, field := range renamedProjects {
				key := fmt.Sprint("projects ", col, " ", []any{field})
				found := false
				for k := range logged {
					if strings.HasPrefix(k, "projects "+col+" [") && strings.Contains(k, "["+field) {
						found = true
					}
				}
				if !found {
					t.Errorf("no log line %q among %v", key, logged)
				}
			}
			var status strings.Builder
			if err := inventory.FormatWarnings(&status, rep.Warnings.RunID, rep.Warnings.Warnings); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(status.String(), "projects.name") || !strings.Contains(status.String(), "title") {
				t.Errorf("status warnings do not name projects.name and title:\n%s", status.String())
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// anySlice reads a logged []string (zap.Strings) as []any.
func anySlice(v any) []any {
	switch x := v.(type) {
	case []string:
		out := make([]any, len(x))
		for i := range x {
			out[i] = x[i]
		}
		return out
	case []any:
		return x
	}
	return nil
}

// TestNewFieldAnnouncedOnce: the warehouse was synced from the canonical
// service; the service then renames its project fields. The next run
// announces each new field once (a new_field warning), the run after it
// does not again; the null_column warnings stay while the mapping does.
func TestNewFieldAnnouncedOnce(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	h := newHarness(t, o, nil)
	h.eng.inventorySampling = &[2]int{0, 1}
	first := h.run(Request{Streams: []string{"projects"}})
	if len(first.Warnings) != 0 {
		t.Fatalf("first run warned: %+v", first.Warnings)
	}
	o.Variants = []string{sandbox.VariantRenamedFields}
	h2 := newHarnessOn(t, o, h.pool, h.schema, nil)
	h2.eng.inventorySampling = &[2]int{0, 1}
	second := h2.run(Request{Streams: []string{"projects"}, FullRefresh: []string{"projects"}})
	var news []string
	for _, w := range second.Warnings {
		if w.Kind == inventory.KindNewField {
			news = append(news, w.Stream+" "+w.Field)
		}
	}
	sort.Strings(news)
	for _, want := range []string{"projects title", "projects state", "projects due_date", "projects budget_total",
		"project_details title", "project_details budget_total"} {
		if !slices.Contains(news, want) {
			t.Errorf("second run: no new_field warning for %s (got %v)", want, news)
		}
	}
	third := h2.run(Request{Streams: []string{"projects"}, FullRefresh: []string{"projects"}})
	for _, w := range third.Warnings {
		if w.Kind == inventory.KindNewField {
			t.Errorf("third run announced %s %s again", w.Stream, w.Field)
		}
	}
	if _, ok := findWarning(third.Warnings, inventory.KindNullColumn, "projects", "projects.name"); !ok {
		t.Errorf("third run: projects.name no longer warned while still unmapped")
	}
}

// TestMostlyRejectedStreamWarns: with 90 % of the records malformed, each
// finance list and the e-mails end the run with a rejected_stream warning
// whose count is the stream's rejected records of the run and whose reason
// is their most common reason (values and positions left out) — computed
// here independently, in SQL, from rejected_records.
func TestMostlyRejectedStreamWarns(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.BadRecordRate = 0.9
	h := newHarness(t, o, nil)
	res := h.run(Request{})
	for name, d := range res.Tasks {
		t.Logf("task %s: %+v", name, d)
	}
	for stream, rejectStream := range map[string]string{"budgets": "finance.budgets", "invoices": "finance.invoices",
		"collections": "finance.collections", "payments": "finance.payments", "communications": "communications"} {
		w, ok := findWarning(res.Warnings, inventory.KindRejectedStream, stream, "")
		if !ok {
			t.Errorf("%s: no rejected_stream warning among %d", stream, len(res.Warnings))
			continue
		}
		n := h.count("SELECT count(*) FROM "+h.table("rejected_records")+" WHERE stream = $1", rejectStream)
		if w.Count != int64(n) || w.Share < inventory.RejectedShare {
			t.Errorf("%s: warning counts %d rejected (share %v), rejected_records holds %d", stream, w.Count, w.Share, n)
		}
		var mode string
		var modeN int
		err := h.pool.QueryRow(context.Background(), `SELECT r, count(*) FROM (
  SELECT regexp_replace(regexp_replace(error, '"([^"\\]|\\.)*"', '"…"', 'g'), '[0-9]+', 'N', 'g') AS r
  FROM `+h.table("rejected_records")+` WHERE stream = $1) x GROUP BY r ORDER BY count(*) DESC, r LIMIT 1`, rejectStream).Scan(&mode, &modeN)
		if err != nil {
			t.Fatal(err)
		}
		if w.Reason != mode {
			t.Errorf("%s: reason %q, the most common in rejected_records is %q (%d)", stream, w.Reason, mode, modeN)
		}
		if !strings.Contains(w.Message, w.Reason) {
			t.Errorf("%s: message %q does not name the reason", stream, w.Message)
		}
	}
}

// TestSourceFieldsListWhatTheSandboxServes: after a run, source_fields holds,
// per stream, exactly the field paths the sandbox's answers carry, found
// here by walking the served pages with encoding/json (Path syntax of
// package inventory: the <thing>_info wrapper read as the record, arrays and
// id-keyed objects as [], at most three names), with their JSON types.
func TestSourceFieldsListWhatTheSandboxServes(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"", sandbox.VariantPHP} {
		t.Run(cmpOr(variant, "canonical"), func(t *testing.T) {
			t.Parallel()
			o := smallSandbox()
			if variant != "" {
				o.Variants = []string{variant}
			}
			h := newHarness(t, o, nil)
			h.eng.inventorySampling = &[2]int{0, 1}
			h.run(Request{})
			want := servedFields(t, h)
			got, err := h.eng.store.(*load.Store).SourceFields(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]inventory.Field{}
			for _, f := range got {
				have[f.Stream+" "+f.Path] = f
			}
			for k, types := range want {
				f, ok := have[k]
				switch {
				case !ok:
					t.Errorf("source_fields lacks %s (%v)", k, types)
				case !slices.Equal(f.Types, types):
					t.Errorf("%s: json_types %v, served %v", k, f.Types, types)
				}
			}
			for k := range have {
				if _, ok := want[k]; !ok {
					t.Errorf("source_fields lists %s, which the sandbox does not serve", k)
				}
			}
			for _, c := range []struct{ key, column string }{
				{"projects name", "projects.name"}, {"project_details team[].role", "project_team_members.role"},
				{"brand_details financial_summary.invoiced", "brands.invoiced"}, {"contacts phone", "brand_contacts.phone"},
				{"communications email.subject", "emails.subject"}, {"communications users.from[].email", "users.email"},
				{"invoices amount", "invoices.amount"}, {"brand_details general_info.city", ""},
			} {
				if f := have[c.key]; f.MappedColumn != c.column {
					t.Errorf("%s maps to %q, want %q", c.key, f.MappedColumn, c.column)
				}
			}
			t.Logf("%d fields in %d streams", len(got), len(streamsOf(got)))
		})
	}
}

func streamsOf(fs []inventory.Field) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		out[f.Stream] = true
	}
	return out
}

// servedFields walks every answer of the sandbox a first sync reads and
// returns "stream path" → sorted JSON types.
func servedFields(t *testing.T, h *harness) map[string][]string {
	t.Helper()
	out := map[string]map[string]bool{}
	get := func(url string, body string) any {
		method := http.MethodGet
		if body != "" {
			method = http.MethodPost
		}
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", h.opts.APIKey)
		req.Header.Set("X-Workflow-Key", h.opts.CommsKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v any
		d := json.NewDecoder(resp.Body)
		d.UseNumber()
		if err := d.Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %v", method, url, resp.StatusCode, err)
		}
		return v
	}
	add := func(stream string, rec any) {
		m, ok := rec.(map[string]any)
		if !ok {
			return
		}
		if out[stream] == nil {
			out[stream] = map[string]bool{}
		}
		walkServed(out[stream], unwrapServed(m), "", 1)
	}
	list := func(path string) []any {
		v := get(h.sb.APIURL()+"/v1"+path, "")
		m, _ := v.(map[string]any)
		data, _ := m["data"].([]any)
		return data
	}
	for _, b := range list("/brands?per_page=1000") {
		add("brands", b)
		id := idOf(unwrapServed(b.(map[string]any)))
		add("brand_details", get(h.sb.APIURL()+"/v1/brands/"+id, ""))
		for _, s := range stream.All() {
			for _, ep := range s.EndpointsOf(stream.KindChild) {
				if ep.Parent != stream.EndpointBrands {
					continue
				}
				for _, c := range list(strings.TrimPrefix(strings.ReplaceAll(ep.Path, "{id}", id), "/v1") + "?per_page=1000") {
					add(ep.InventoryName(), c)
				}
			}
		}
	}
	for _, p := range list("/projects?per_page=1000") {
		add("projects", p)
		add("project_details", get(h.sb.APIURL()+"/v1/projects/"+idOf(p.(map[string]any)), ""))
	}
	for stream, path := range map[string]string{"budgets": "/finance/budgets", "invoices": "/finance/invoices",
		"collections": "/finance/collections", "payments": "/finance/payments", "summary": "/finance/summary"} {
		for _, r := range list(path + "?per_page=1000") {
			add(stream, r)
		}
	}
	for _, level := range []string{"project", "brand"} {
		for _, r := range list("/finance/profitability?per_page=1000&level=" + level) {
			add("profitability", r)
		}
	}
	users := make([]string, h.opts.Users)
	for i := range users {
		users[i] = fmt.Sprint(i + 1)
	}
	for page := 1; ; page++ {
		v := get(h.sb.CommsURL()+sandbox.CommsPath, fmt.Sprintf(`{"domain_id":%d,"user_id":[%s],"page":%d,"per_page":1000,"with_message":"0"}`,
			h.opts.DomainID, strings.Join(users, ","), page))
		data, _ := v.(map[string]any)["data"].(map[string]any)
		rows, _ := data["rows"].(map[string]any)
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			add("communications", r)
		}
	}
	res := map[string][]string{}
	for stream, paths := range out {
		for k := range paths {
			path, typ, _ := strings.Cut(k, "\x00")
			res[stream+" "+path] = append(res[stream+" "+path], typ)
		}
	}
	for k := range res {
		sort.Strings(res[k])
	}
	return res
}

func idOf(m map[string]any) string { return fmt.Sprint(m["id"]) }

// recordWrappers are the objects the sandbox wraps records in.
var recordWrappers = map[string]bool{"brand_info": true, "contact_info": true, "project_info": true, "budget_info": true,
	"invoice_info": true, "collection_info": true, "payment_info": true, "profitability_info": true, "summary_info": true}

// unwrapServed reads the members of a record's wrapper object as the
// record's own members.
func unwrapServed(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if inner, ok := v.(map[string]any); ok && recordWrappers[k] {
			for ik, iv := range inner {
				out[ik] = iv
			}
			continue
		}
		out[k] = v
	}
	return out
}

var collectionKey = regexp.MustCompile(`^[0-9]+$|@`)

// walkServed notes "path\x00type" of each member of m at prefix.
func walkServed(seen map[string]bool, m map[string]any, prefix string, depth int) {
	for k, v := range m {
		path, d := prefix+"."+k, depth
		if prefix == "" {
			path = k
		}
		if collectionKey.MatchString(k) {
			path, d = prefix+"[]", depth-1
		}
		valueServed(seen, v, path, d)
	}
}

func valueServed(seen map[string]bool, v any, path string, depth int) {
	typ := ""
	switch v.(type) {
	case string:
		typ = inventory.TypeString
	case json.Number:
		typ = inventory.TypeNumber
	case bool:
		typ = inventory.TypeBoolean
	case nil:
		typ = inventory.TypeNull
	case map[string]any:
		typ = inventory.TypeObject
	case []any:
		typ = inventory.TypeArray
	}
	seen[path+"\x00"+typ] = true
	if depth >= inventory.MaxDepth {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		walkServed(seen, x, path, depth+1)
	case []any:
		for _, e := range x {
			valueServed(seen, e, path+"[]", depth)
		}
	}
}

// TestFieldInventoryCost: in a communications sync of 20 000 e-mails (the
// pipeline benchmark's run, smaller), the field inventory — observing the
// records where they are transformed, counting each committed page, and at
// the end reading source_fields, computing the warnings and storing them —
// takes at most 3 % of the sync's own time. Both are the run's own
// measurements (its "field inventory" and "sync summary" log lines).
func TestFieldInventoryCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a timing ratio: run without -short and without -race")
	}
	o := smallSandbox()
	o.Emails, o.Users = 20000, 300
	h := newHarness(t, o, nil)
	core, logs := observer.New(zapcore.InfoLevel)
	h.eng.log = zap.New(core)
	res := h.run(Request{Streams: []string{"communications"}})
	if res.Status != StatusSucceeded {
		t.Fatalf("run ended %s: %v", res.Status, res.Err)
	}
	var inv, took float64
	for _, e := range logs.All() {
		m := e.ContextMap()
		switch e.Message {
		case "field inventory":
			inv = float64(m["observing"].(time.Duration) + m["recording"].(time.Duration))
		case "sync summary":
			took = float64(m["took"].(time.Duration))
		}
	}
	if inv == 0 || took == 0 {
		t.Fatalf("no field inventory (%v) or sync summary (%v) line", inv, took)
	}
	ratio := inv / took
	t.Logf("sync %s, field inventory %s: %.2f %%", time.Duration(took), time.Duration(inv), 100*ratio)
	if ratio > 0.03 {
		t.Errorf("the field inventory costs %.2f %% of the sync, more than 3 %%", 100*ratio)
	}
}
