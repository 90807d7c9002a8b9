package cli

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// countRows counts the rows of table in the run's warehouse schema that
// match where.
func countRows(t *testing.T, vars map[string]string, table, where string) int {
	t.Helper()
	var n int
	q := "SELECT count(*) FROM " + pgx.Identifier{vars["WAREHOUSE_SCHEMA"], table}.Sanitize() + " WHERE " + where
	if err := warehousetest.Pool(t).QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunAfterAGapListsAgain: a run that ended partial because of one of
// its listings — deletions held back as a mass delete, or a service that
// caps its pages without saying so — did not complete that listing: the
// next run the same day lists it again rather than skipping it as
// "completed by the unfinished run", so held deletions are confirmed and a
// paging gap is still reported.
func TestRunAfterAGapListsAgain(t *testing.T) {
	t.Parallel()
	t.Run("held deletions", func(t *testing.T) {
		t.Parallel()
		sb, o := startSandbox(t, nil)
		vars := syncEnv(t, sb, o, nil)
		if code, _, errs := mainWith(vars, "run"); code != ExitOK {
			t.Fatalf("first run: exit %d\n%s", code, errs)
		}
		brand := truthCounts(t, sb)["brands"][0].Key
		id, err := strconv.ParseInt(brand, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := sb.DeleteBrand(id); err != nil { // one of 3 brands: more than SYNC_MASS_DELETE_SHARE
			t.Fatal(err)
		}
		if code, _, errs := mainWith(vars, "run"); code != ExitIncomplete {
			t.Fatalf("run with the deletion held: exit %d, want %d\n%s", code, ExitIncomplete, errs)
		}
		code, _, errs := mainWith(vars, "run")
		live := countRows(t, vars, "brands", "brand_id = '"+brand+"' AND _deleted_at IS NULL")
		if code != ExitOK || live != 0 {
			t.Fatalf("the next run the same day: exit %d, brand %s live %d; want exit 0 and the brand soft-deleted (the listing agreed)\n%s", code, brand, live, errs)
		}
	})
	t.Run("silent cap", func(t *testing.T) {
		t.Parallel()
		sb, o := startSandbox(t, func(o *sandbox.Options) {
			o.Brands, o.ProjectsPerBrand = 30, 1
			o.Variants = []string{sandbox.VariantSilentCap}
		})
		vars := syncEnv(t, sb, o, nil)
		for run := 1; run <= 2; run++ {
			if code, _, errs := mainWith(vars, "run"); code != ExitIncomplete {
				t.Fatalf("run %d against a service that caps its pages silently: exit %d, want %d until AGENCY_PAGING sets the cap\n%s",
					run, code, ExitIncomplete, errs)
			}
		}
	})
}
