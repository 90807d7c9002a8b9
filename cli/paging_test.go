package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// pagingReport is the part of `check --json` the paging tests read.
type pagingReport struct {
	Outcome       string `json:"outcome"`
	PagingSetting string `json:"paging_setting"`
	Endpoints     []struct {
		Endpoint string `json:"endpoint"`
		Outcome  string `json:"outcome"`
		Paging   *struct {
			Configured string `json:"configured"`
			Honoured   bool   `json:"honoured"`
			Found      string `json:"found"`
			Max        int    `json:"max"`
			Setting    string `json:"setting"`
			Requests   int    `json:"requests"`
		} `json:"paging"`
	} `json:"endpoints"`
}

// softDeleted counts the soft-deleted rows of every table that has them.
func softDeleted(t *testing.T, schema string) int {
	t.Helper()
	n := 0
	for _, table := range []string{"brands", "brand_contacts", "projects", "budgets", "invoices", "collections", "payments",
		"profitability", "agency_finance_summary"} {
		var k int
		q := "SELECT count(*) FROM " + pgx.Identifier{schema, table}.Sanitize() + " WHERE _deleted_at IS NOT NULL"
		if err := warehousetest.Pool(t).QueryRow(context.Background(), q).Scan(&k); err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}

// assertTruth compares the warehouse with the sandbox's truth, table by
// table (oracle.Compare).
func assertTruth(t *testing.T, sb *sandbox.Server, schema string) {
	t.Helper()
	var buf bytes.Buffer
	if err := sb.Truth(&buf); err != nil {
		t.Fatal(err)
	}
	tr, err := oracle.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := oracle.Compare(context.Background(), warehousetest.Pool(t), schema, tr)
	if err != nil {
		t.Fatal(err)
	}
	if ok, text := oracle.Summary(checks); !ok {
		t.Errorf("the warehouse differs from the truth:\n%s", text)
	}
}

// TestPagingVariantsAcceptance plays each paging convention the sandbox
// knows against the worker, as a new user would meet it. Before the paging
// is configured, check exits 1 naming the style and the setting, and run
// never exits 0 nor soft-deletes, even over a warehouse a canonical server
// filled; with the setting check names, check exits 0, run lands the
// truth exactly, and a second run soft-deletes nothing.
func TestPagingVariantsAcceptance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		variant string
		want    string // the setting check names, as a prefix
	}{
		{sandbox.VariantOffsetPaging, "*=offset"},
		{sandbox.VariantCursorPaging, "*=cursor"},
		{sandbox.VariantLinkPaging, "*=cursor"},
		{sandbox.VariantSilentCap, "*=page:max=25"},
		{sandbox.VariantIgnorePage, "*=offset:size=per_page"},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			t.Parallel()
			size := func(o *sandbox.Options) { o.Brands, o.ProjectsPerBrand, o.Users, o.Emails = 35, 2, 10, 800 }
			canonical, o := startSandbox(t, size)
			variant, _ := startSandbox(t, func(o *sandbox.Options) { size(o); o.Variants = []string{tc.variant} })
			vars := syncEnv(t, variant, o, nil)
			schema := vars["WAREHOUSE_SCHEMA"]
			point := func(sb *sandbox.Server) {
				vars["AGENCY_BASE_URL"], vars["AGENCY_COMMS_URL"] = sb.APIURL(), sb.CommsURL()
			}

			// Before configuring: check names the style and the setting.
			code, out, errs := mainWith(vars, "check", "--json")
			var rep pagingReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitFailure || rep.Outcome != "paging" ||
				!strings.HasPrefix(rep.PagingSetting, tc.want) {
				t.Fatalf("check before configuring: exit %d, outcome %s, setting %q (%v); want 1, paging, %s…\n%s\n%s",
					code, rep.Outcome, rep.PagingSetting, err, tc.want, out, errs)
			}
			for _, e := range rep.Endpoints {
				if e.Paging != nil && !e.Paging.Honoured && (e.Outcome != "paging" || e.Paging.Setting == "") {
					t.Errorf("%s: paging not honoured, outcome %s, setting %q", e.Endpoint, e.Outcome, e.Paging.Setting)
				}
			}
			_, text, errText := mainWith(vars, "check")
			if !strings.Contains(text, "AGENCY_PAGING='"+rep.PagingSetting+"'") {
				t.Errorf("check's verdict does not name AGENCY_PAGING='%s':\n%s", rep.PagingSetting, text)
			}
			if !strings.Contains(errText, "do not page as configured") || strings.Contains(errText, "0 endpoints failed") {
				t.Errorf("check's error does not say that lists do not page as configured:\n%s", errText)
			}
			// ... and run never exits 0: on a fresh warehouse, nor over one
			// a canonical server filled, where it soft-deletes nothing.
			if code, _, errs := mainWith(vars, "run"); code == ExitOK || !strings.Contains(errs, "AGENCY_PAGING") {
				t.Fatalf("unconfigured run on a fresh warehouse: exit %d, or no word of AGENCY_PAGING\n%s", code, errs)
			}
			point(canonical)
			if code, _, errs := mainWith(vars, "run"); code != ExitOK {
				t.Fatalf("canonical run: exit %d\n%s", code, errs)
			}
			point(variant)
			if code, _, errs := mainWith(vars, "run"); code != ExitIncomplete {
				t.Fatalf("unconfigured run over a full warehouse: exit %d, want %d\n%s", code, ExitIncomplete, errs)
			}
			if n := softDeleted(t, schema); n != 0 {
				t.Fatalf("an unconfigured run soft-deleted %d rows", n)
			}

			// Configured as check said: check passes, run lands the truth.
			vars["AGENCY_PAGING"] = rep.PagingSetting
			if code, out, errs := mainWith(vars, "check"); code != ExitOK {
				t.Fatalf("check with AGENCY_PAGING=%s: exit %d\n%s\n%s", rep.PagingSetting, code, out, errs)
			}
			for i := range 2 {
				if code, _, errs := mainWith(vars, "run"); code != ExitOK {
					t.Fatalf("configured run %d: exit %d\n%s", i+1, code, errs)
				}
				if n := softDeleted(t, schema); n != 0 {
					t.Fatalf("configured run %d soft-deleted %d rows", i+1, n)
				}
			}
			assertTruth(t, variant, schema)
		})
	}
}
