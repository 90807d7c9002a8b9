package engine

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// detailRequests is what the sandbox served of brand details, contacts and
// project details since its last ResetStats.
func (h *harness) detailRequests() (brands, contacts, projects int64) {
	st := h.sb.Stats()
	return st.ByEndpoint["brand_detail"], st.ByEndpoint["contacts"], st.ByEndpoint["project_detail"]
}

func truthID(t *testing.T, line oracle.Line) int64 {
	t.Helper()
	id, err := strconv.ParseInt(line.Key, 10, 64)
	if err != nil {
		t.Fatalf("truth key %q: %v", line.Key, err)
	}
	return id
}

// Finance edits change only aggregates in the brand and project lists
// (projects_count, financial_summary, budget): they are stored, and no
// detail is fetched. A change in a detail-owned list field (a project's
// deadline, a brand's name) fetches exactly that entity's detail.
func TestDetailsOnlyWhenDetailFieldsChange(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Brands, o.ProjectsPerBrand = 4, 4
	h := newHarness(t, o, func(s *Settings) { s.DetailMaxAge = 30 * 24 * time.Hour })
	h.mustSucceed(Request{}, "first run")
	h.advance(24 * time.Hour)
	// Today's share of the staggered refresh is taken by a first run, so
	// that what follows on the same day shows only what the changes cost.
	h.mustSucceed(Request{}, "run")

	// Finance changes: a budget, an invoice, a collection and a payment of
	// several brands, and a deleted project (its brand's projects_count).
	tr := h.truth()
	amount := ptrAmount(t, "4321.09")
	for _, kind := range []string{sandbox.FinanceBudgets, sandbox.FinanceInvoices, sandbox.FinanceCollections, sandbox.FinancePayments} {
		lines := tr[kind]
		if len(lines) < 3 {
			t.Fatalf("sandbox has %d %s", len(lines), kind)
		}
		for _, l := range []oracle.Line{lines[0], lines[len(lines)/2], lines[len(lines)-1]} {
			if err := h.sb.EditFinance(kind, truthID(t, l), sandbox.FinanceEdit{Amount: amount}); err != nil {
				t.Fatal(err)
			}
		}
	}
	gone := truthID(t, tr["projects"][len(tr["projects"])-1])
	if err := h.sb.DeleteProject(gone); err != nil {
		t.Fatal(err)
	}
	before := h.truth()
	h.sb.ResetStats()
	h.mustSucceed(Request{}, "run after finance changes")
	if b, c, p := h.detailRequests(); b+c+p != 0 {
		t.Errorf("finance changes fetched %d brand details, %d contact lists, %d project details; want none", b, c, p)
	}
	// The aggregates are stored from the lists all the same.
	h.assertEqualsTruth()
	changedBrands := 0
	for i, l := range before["brands"] {
		if string(l.Record) != string(tr["brands"][i].Record) {
			changedBrands++
		}
	}
	if changedBrands == 0 {
		t.Fatal("the finance edits changed no brand list entry: the test shows nothing")
	}

	// Detail-owned fields: exactly those entities.
	project := truthID(t, tr["projects"][1])
	brand := truthID(t, tr["brands"][2])
	// (A brand's status, not its name: the sandbox's e-mails mention brand
	// names, and old e-mails are not re-read.)
	deadline, status := "2027-03-31", "Suspendat"
	if err := h.sb.EditProject(project, sandbox.ProjectEdit{Deadline: &deadline}); err != nil {
		t.Fatal(err)
	}
	if err := h.sb.EditBrand(brand, sandbox.BrandEdit{Status: &status}); err != nil {
		t.Fatal(err)
	}
	h.sb.ResetStats()
	h.mustSucceed(Request{}, "run after detail changes")
	if b, c, p := h.detailRequests(); b != 1 || c != 1 || p != 1 {
		t.Errorf("fetched %d brand details, %d contact lists, %d project details; want 1, 1, 1", b, c, p)
	}
	h.assertEqualsTruth()
	if n := h.count("SELECT count(*) FROM "+h.table("brands")+" WHERE brand_id = $1 AND status = $2", fmt.Sprint(brand), status); n != 1 {
		t.Errorf("the edited brand's status was not stored")
	}
	if n := h.count("SELECT count(*) FROM "+h.table("project_history")+" WHERE project_id = $1 AND field = 'deadline' AND to_value = $2",
		fmt.Sprint(project), deadline); n != 1 {
		t.Errorf("the edited project's detail (its deadline history entry) was not stored: %d entries", n)
	}
}

// SYNC_DETAIL_MAX_AGE is reached by refreshing a slice each day: over three
// cycles of daily runs no detail gets older than the maximum age and no day
// refreshes more than its even share (plus what changed), also on the days
// the first sync's details all reach the maximum age.
func TestDetailRefreshIsStaggered(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Brands, o.ProjectsPerBrand, o.Emails = 5, 6, 300
	const maxAgeDays = 7
	h := newHarness(t, o, func(s *Settings) { s.DetailMaxAge = maxAgeDays * 24 * time.Hour })
	h.mustSucceed(Request{}, "first run")
	tr := h.truth()
	brands, projects := len(tr["brands"]), len(tr["projects"])
	// Even share per stream, each rounded up.
	shareBrands := (brands + maxAgeDays - 1) / maxAgeDays
	shareProjects := (projects + maxAgeDays - 1) / maxAgeDays
	last := map[string]time.Time{} // the test's own record of each detail's last fetch
	for _, l := range tr["brands"] {
		last["b"+l.Key] = h.sb.Now()
	}
	for _, l := range tr["projects"] {
		last["p"+l.Key] = h.sb.Now()
	}
	for day := 1; day <= 3*maxAgeDays; day++ {
		h.advance(24 * time.Hour)
		h.sb.ResetStats()
		if res := h.run(Request{}); res.Status != StatusSucceeded {
			t.Fatalf("day %d: run %s: %v", day, res.Status, res.Err)
		}
		b, c, p := h.detailRequests()
		if b > int64(shareBrands) || c != b || p > int64(shareProjects) {
			t.Errorf("day %d: %d brand details (%d contact lists), %d project details; want at most %d and %d",
				day, b, c, p, shareBrands, shareProjects)
		}
		rows, err := h.pool.Query(context.Background(), "SELECT stream, entity_id, detail_synced_at FROM "+h.table("detail_state"))
		if err != nil {
			t.Fatal(err)
		}
		fetched := 0
		for rows.Next() {
			var stream, id string
			var at time.Time
			if err := rows.Scan(&stream, &id, &at); err != nil {
				t.Fatal(err)
			}
			k := stream[:1] + id
			if at.After(last[k]) {
				last[k] = at
				fetched++
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if int64(fetched) != b+p {
			t.Errorf("day %d: %d details recorded as fetched, the sandbox served %d", day, fetched, b+p)
		}
		for k, at := range last {
			if age := h.sb.Now().Sub(at); age > maxAgeDays*24*time.Hour {
				t.Errorf("day %d: detail %s is %s old, more than %d days", day, k, age, maxAgeDays)
			}
		}
	}
}
