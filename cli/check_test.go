package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
)

// checkJSON is the part of `check --json` the tests read.
type checkJSON struct {
	Outcome   string `json:"outcome"`
	Requests  int    `json:"requests"`
	Budget    int    `json:"budget"`
	Endpoints []struct {
		Paging *struct {
			Configured string `json:"configured"`
			Honoured   bool   `json:"honoured"`
			Requests   int    `json:"requests"`
		} `json:"paging"`
		Stream       string   `json:"stream"`
		Endpoint     string   `json:"endpoint"`
		Request      string   `json:"request"`
		Outcome      string   `json:"outcome"`
		Status       int      `json:"status"`
		Requests     int      `json:"requests"`
		Error        string   `json:"error"`
		Envelope     string   `json:"envelope"`
		PagingFields []string `json:"paging_fields"`
		Records      int      `json:"records"`
		Columns      []struct {
			Column     string   `json:"column"`
			Field      string   `json:"field"`
			State      string   `json:"state"`
			JSONType   string   `json:"json_type"`
			Candidates []string `json:"candidates"`
		} `json:"columns"`
		Unmapped []struct {
			Path  string   `json:"path"`
			Types []string `json:"json_types"`
		} `json:"unmapped"`
	} `json:"endpoints"`
}

func parseCheck(t *testing.T, out string) checkJSON {
	t.Helper()
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json printed no JSON report: %v\n%s", err, out)
	}
	return rep
}

// checkVariant starts the sandbox serving one variant, runs check --json
// against it and asserts its exit code; it returns the environment and the
// report.
func checkVariant(t *testing.T, variant string, want int) (map[string]string, checkJSON) {
	t.Helper()
	sb, o := startSandbox(t, func(o *sandbox.Options) { o.Variants = []string{variant} })
	vars := syncEnv(t, sb, o, nil)
	code, out, errs := mainWith(vars, "check", "--json")
	if code != want {
		t.Fatalf("check against the %s variant: exit %d, want %d\n%s\n%s", variant, code, want, out, errs)
	}
	return vars, parseCheck(t, out)
}

// quotaSpent reads the ledger's count of today's requests (status --json).
func quotaSpent(t *testing.T, vars map[string]string) int {
	t.Helper()
	code, out, errs := mainWith(vars, "status", "--json")
	if code != ExitOK {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	var st struct {
		QuotaSpent int `json:"quota_spent"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	return st.QuotaSpent
}

// wantEndpoints are the request kinds a check of every declared stream
// sends, in declaration order: one per endpoint, and a list whose table
// takes an enumerated request parameter (profitability's level) once per
// value.
var wantEndpoints = func() []string {
	var out []string
	for _, s := range stream.All() {
		for _, ep := range s.Endpoints {
			n := 1
			if t := s.RecordTable(ep.Name); t != nil && ep.Kind() == stream.KindList {
				for _, c := range t.Columns {
					if c.Param != "" && c.Derived == "" && len(c.OneOf) > 0 {
						n = len(c.OneOf)
					}
				}
			}
			for range n {
				out = append(out, ep.Name)
			}
		}
	}
	return out
}()

// TestCheckDefaultSandbox: against the canonical sandbox, check exits 0 in
// one request per endpoint, plus the paging test of each list (at most 3
// requests a list, profitability's second level one more), every one
// counted in the quota ledger; each endpoint says its status, the canonical
// envelope, its paging fields and columns all present, and each list that
// it pages as configured.
func TestCheckDefaultSandbox(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, nil)
	code, out, errs := mainWith(vars, "check", "--json")
	if code != ExitOK {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errs)
	}
	assertNoSecrets(t, out, errs)
	rep := parseCheck(t, out)
	var got []string
	for _, e := range rep.Endpoints {
		got = append(got, e.Endpoint)
		if e.Outcome != "ok" || e.Status != 200 || e.Records != 1 {
			t.Errorf("%s (%s): outcome %s, status %d, %d records; want ok, 200, 1 (%s)", e.Endpoint, e.Request, e.Outcome, e.Status, e.Records, e.Error)
		}
		wantEnv, wantPaging := "canonical", []string{"total", "per_page", "current_page", "last_page"}
		switch e.Endpoint {
		case "communications":
			wantEnv = "rows-keyed"
		case "brand", "project":
			wantEnv, wantPaging = "", []string{}
		}
		if e.Envelope != wantEnv || !slices.Equal(e.PagingFields, wantPaging) {
			t.Errorf("%s: envelope %q, paging %v; want %q, %v", e.Endpoint, e.Envelope, e.PagingFields, wantEnv, wantPaging)
		}
		if len(e.Columns) == 0 {
			t.Errorf("%s: no column checked", e.Endpoint)
		}
		for _, c := range e.Columns {
			if c.State == "missing" || c.State == "unparsed" || c.State == "not_seen" && e.Endpoint != "project" {
				t.Errorf("%s: column %s (%s) %s", e.Endpoint, c.Column, c.Field, c.State)
			}
		}
		if len(e.Unmapped) != 0 {
			t.Errorf("%s: unmapped fields %v in the canonical sandbox", e.Endpoint, e.Unmapped)
		}
	}
	if !slices.Equal(got, wantEndpoints) {
		t.Fatalf("endpoints checked %v, want %v", got, wantEndpoints)
	}
	st := sb.Stats()
	for ep, n := range st.ByEndpoint {
		// A list: its page of one row, then its paging test (the second
		// row's page, a page of the largest size); profitability's second
		// level one more.
		most, ok := map[string]int64{"brand_detail": 1, "project_detail": 1, "communications": 1, "profitability": 4}[ep]
		if !ok {
			most = 3
		}
		if n > most {
			t.Errorf("sandbox endpoint %s got %d requests, want at most 3 (profitability 4, details and e-mails 1)", ep, n)
		}
	}
	probes := 0
	for _, e := range rep.Endpoints {
		if e.Paging != nil {
			probes += e.Paging.Requests
			if !e.Paging.Honoured || e.Paging.Configured != "page" {
				t.Errorf("%s: paging %+v, want page honoured", e.Endpoint, *e.Paging)
			}
		}
	}
	keyed := int(st.Requests - st.Keyless)
	if keyed != len(wantEndpoints)+probes || rep.Requests != keyed {
		t.Errorf("sandbox saw %d keyed requests, check says %d; want %d and %d for the paging tests", keyed, rep.Requests, len(wantEndpoints), probes)
	}
	if spent := quotaSpent(t, vars); spent != keyed {
		t.Errorf("ledger counts %d requests today, the sandbox saw %d", spent, keyed)
	}
	// The terminal form: one line per endpoint and the verdict.
	code, out, errs = mainWith(vars, "check")
	if code != ExitOK || !strings.Contains(out, "canonical") || !strings.Contains(out, "profitability") || !strings.Contains(out, "everything maps") {
		t.Fatalf("check (table): exit %d\n%s\n%s", code, out, errs)
	}
}

// renamedEverywhere maps every field the renamed-fields variant renames.
const renamedEverywhere = "projects.name=title,projects.status=state,projects.deadline=due_date,projects.start_date=starts_on," +
	"projects.budget_amount=budget_total,projects.budget_currency=budget_currency," +
	"brand_contacts.first_name=firstname,brand_contacts.last_name=lastname,brand_contacts.position=job_title,brand_contacts.is_primary=primary," +
	"invoices.number=invoice_no,invoices.issue_date=issued_on,invoices.amount=total,invoices.due_date=payment_due"

// TestCheckRenamedFields: against a service that renames fields, check
// exits 1 naming each missing mapped field with its likely replacement;
// with AGENCY_FIELD_MAP mapping them, it exits 0.
func TestCheckRenamedFields(t *testing.T) {
	t.Parallel()
	vars, rep := checkVariant(t, sandbox.VariantRenamedFields, ExitFailure)
	if rep.Outcome != "mismatch" {
		t.Errorf("outcome %q, want mismatch", rep.Outcome)
	}
	want := map[string]string{ // missing column → its first candidate
		"projects.name": "title", "projects.status": "state", "projects.deadline": "due_date",
		"projects.start_date": "starts_on", "projects.budget_amount": "budget_total", "projects.budget_currency": "budget_currency",
		"brand_contacts.first_name": "firstname", "brand_contacts.last_name": "lastname",
		"brand_contacts.position": "job_title", "brand_contacts.is_primary": "primary",
		"invoices.number": "invoice_no", "invoices.issue_date": "issued_on", "invoices.amount": "total", "invoices.due_date": "payment_due",
	}
	seen := map[string]bool{}
	for _, e := range rep.Endpoints {
		for _, c := range e.Columns {
			cand, renamed := want[c.Column]
			switch {
			case renamed && (c.State != "missing" || len(c.Candidates) == 0 || c.Candidates[0] != cand):
				t.Errorf("%s: %s is %s with candidates %v; want missing, %s first", e.Endpoint, c.Column, c.State, c.Candidates, cand)
			case !renamed && (c.State == "missing" || c.State == "unparsed"):
				t.Errorf("%s: %s is %s, but the variant does not rename it", e.Endpoint, c.Column, c.State)
			case renamed:
				seen[c.Column] = true
			}
		}
		if e.Endpoint == "projects" && !slices.ContainsFunc(e.Unmapped, func(f struct {
			Path  string   `json:"path"`
			Types []string `json:"json_types"`
		}) bool {
			return f.Path == "budget_total" && slices.Equal(f.Types, []string{"number"})
		}) {
			t.Errorf("projects: unmapped %v, want budget_total (number) among them", e.Unmapped)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("missing columns named: %v; want all of %v", seen, want)
	}
	// The table names them too, each with its replacement.
	code, out, _ := mainWith(vars, "check")
	for _, line := range []string{"projects.name", "title", "projects.budget_amount", "budget_total", "AGENCY_FIELD_MAP"} {
		if code != ExitFailure || !strings.Contains(out, line) {
			t.Fatalf("check (table): exit %d, %q missing:\n%s", code, line, out)
		}
	}

	vars["AGENCY_FIELD_MAP"] = renamedEverywhere
	code, out, errs := mainWith(vars, "check", "--json")
	if code != ExitOK {
		t.Fatalf("check with the renames mapped: exit %d\n%s\n%s", code, out, errs)
	}
	if rep := parseCheck(t, out); rep.Outcome != "ok" {
		t.Fatalf("outcome %q with the renames mapped", rep.Outcome)
	}
}

// TestCheckPHPVariant: the PHP encoder's habits (false for missing values,
// numbers as strings, [] for empty objects, the paginator) all map.
func TestCheckPHPVariant(t *testing.T) {
	t.Parallel()
	_, rep := checkVariant(t, sandbox.VariantPHP, ExitOK)
	for _, e := range rep.Endpoints {
		if e.Endpoint != "brand" && e.Endpoint != "project" && e.Endpoint != "communications" && e.Envelope != "php-paginator" {
			t.Errorf("%s: envelope %q, want php-paginator", e.Endpoint, e.Envelope)
		}
	}
}

// TestCheckRefusedKeys: a refused main key exits 3 with the My Account
// hint, after one request (the interface's other endpoints are not asked);
// another agency's key (403) is named per endpoint and exits 1.
func TestCheckRefusedKeys(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, map[string]string{"AGENCY_API_KEY": o.RevokedKey})
	code, out, errs := mainWith(vars, "check", "--json")
	if code != ExitCredential || !strings.Contains(errs, "My Account") {
		t.Fatalf("revoked key: exit %d, want 3 with the My Account hint\n%s\n%s", code, out, errs)
	}
	rep := parseCheck(t, out)
	if rep.Outcome != "unauthorized" || rep.Endpoints[0].Status != 401 || rep.Endpoints[0].Outcome != "unauthorized" {
		t.Fatalf("revoked key: %+v", rep)
	}
	if st := sb.Stats(); st.ByEndpoint["brands"] != 1 || st.ByEndpoint["projects"] != 0 || st.ByEndpoint["communications"] != 1 {
		t.Fatalf("after a 401 the interface's other endpoints were asked: %v", st.ByEndpoint)
	}

	sb2, o2 := startSandbox(t, nil)
	vars = syncEnv(t, sb2, o2, map[string]string{"AGENCY_API_KEY": o2.ForeignKey})
	code, out, errs = mainWith(vars, "check")
	if code != ExitFailure || !strings.Contains(out, "forbidden") || !strings.Contains(out, "brands") {
		t.Fatalf("foreign key: exit %d, want 1 naming forbidden endpoints\n%s\n%s", code, out, errs)
	}
	assertNoSecrets(t, out, errs)
}

// TestCheckRespectsTheBudget: with the day's budget spent, check sends
// nothing and says so (exit 75); with a budget of 3 requests, it sends 3.
func TestCheckRespectsTheBudget(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, map[string]string{"AGENCY_DAILY_QUOTA": "100", "AGENCY_QUOTA_RESERVE": "100%"})
	code, out, errs := mainWith(vars, "check")
	if code != ExitIncomplete || !strings.Contains(out+errs, "budget") {
		t.Fatalf("budget spent: exit %d, want 75 saying so\n%s\n%s", code, out, errs)
	}
	if st := sb.Stats(); st.Requests != 0 {
		t.Fatalf("budget spent, yet %d requests sent", st.Requests)
	}
	vars = syncEnv(t, sb, o, map[string]string{"AGENCY_DAILY_QUOTA": "3", "AGENCY_QUOTA_RESERVE": "0%"})
	code, out, errs = mainWith(vars, "check", "--json")
	if code != ExitIncomplete {
		t.Fatalf("budget of 3: exit %d\n%s\n%s", code, out, errs)
	}
	if rep, st := parseCheck(t, out), sb.Stats(); rep.Requests != 3 || st.Requests != 3 || rep.Outcome != "budget" {
		t.Fatalf("budget of 3: check sent %d, sandbox saw %d, outcome %s", rep.Requests, st.Requests, rep.Outcome)
	}
}

// TestCheckEveryTolerantVariant: every variant the sandbox serves within
// the API assumptions maps (exit 0), its envelope named; only the variant
// that renames fields does not.
func TestCheckEveryTolerantVariant(t *testing.T) {
	t.Parallel()
	for _, v := range sandbox.Variants() {
		if v.Name == sandbox.VariantRenamedFields || sandbox.PagingSetting(v.Name) != "" {
			continue // the paging variants: TestPagingVariantsAcceptance
		}
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			_, rep := checkVariant(t, v.Name, ExitOK)
			for _, e := range rep.Endpoints {
				if e.Endpoint != "brand" && e.Endpoint != "project" && e.Envelope == "" {
					t.Errorf("%s: no envelope named", e.Endpoint)
				}
			}
		})
	}
}

// TestCheckOneInterface: --streams communications checks the e-mails with
// the communications variables alone; --streams finance sends nothing to
// the communications endpoint.
func TestCheckOneInterface(t *testing.T) {
	t.Parallel()
	sb, o := startSandbox(t, nil)
	vars := syncEnv(t, sb, o, nil)
	delete(vars, "AGENCY_API_KEY")
	delete(vars, "AGENCY_BASE_URL")
	code, out, errs := mainWith(vars, "check", "--streams", "communications", "--json")
	if code != ExitOK {
		t.Fatalf("check --streams communications: exit %d\n%s\n%s", code, out, errs)
	}
	if rep := parseCheck(t, out); len(rep.Endpoints) != 1 || rep.Endpoints[0].Endpoint != "communications" || rep.Requests != 1 {
		t.Fatalf("check --streams communications: %+v", rep)
	}
	vars = syncEnv(t, sb, o, nil)
	delete(vars, "AGENCY_COMMS_KEY")
	if code, out, errs := mainWith(vars, "check", "--streams", "finance"); code != ExitOK {
		t.Fatalf("check --streams finance: exit %d\n%s\n%s", code, out, errs)
	}
	if st := sb.Stats(); st.ByEndpoint["communications"] != 1 || st.ByEndpoint["budgets"] != 3 || st.ByEndpoint["brands"] != 0 {
		t.Fatalf("requests by endpoint: %v", st.ByEndpoint)
	}
}
