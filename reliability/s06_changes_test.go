package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestS06Changes: after a first sync the source changes — new e-mails, a
// late edit of an old e-mail inside the lookback, a brand's changed
// financial summary, a deleted brand, a changed project — and the next run
// reflects each; the brand's return undeletes it.
func TestS06Changes(t *testing.T) {
	sc := newScenario(t, 6, "Changes: new, late-edited, changed, deleted and restored records")
	sz := currentSizes()
	o := agencyWith(sz.changeEmails)
	o.Brands, o.ProjectsPerBrand = 6, 4
	r := newRig(t, sc, o)
	ctx := context.Background()
	q := func(table string) string { return pgx.Identifier{r.schema, table}.Sanitize() }
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := r.pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}

	mustSucceed(t, "first run", r.run(nil))
	compareWithTruth(t, r.pool, r.schema, r.sb.truth())

	// A day passes on the sandbox. The worker takes its day from the
	// service's clock (the Date header), so the next run is the next day's:
	// a new snapshot date, the increment up to the sandbox's today.
	svcToday := r.sb.advance(24 * time.Hour).UTC().Format(time.DateOnly)
	tr := r.sb.truth()
	// The late edit: the newest e-mail (inside the 24h lookback of the
	// watermark) gets a new subject and new recipients.
	var late int64
	var lateAt time.Time
	for _, l := range tr["communications"] {
		var rec struct {
			Email struct {
				EmailAt time.Time `json:"email_at"`
			} `json:"email"`
		}
		if err := json.Unmarshal(l.Record, &rec); err != nil {
			t.Fatal(err)
		}
		if !rec.Email.EmailAt.Before(lateAt) {
			late, _ = strconv.ParseInt(l.Key, 10, 64)
			lateAt = rec.Email.EmailAt
		}
	}
	subject := "Revizuit: ofertă actualizată " + randomHex(3)
	r.sb.admin(http.MethodPost, fmt.Sprintf("emails/%d", late), map[string]any{"subject": subject, "to": []int64{1, 2}, "cc": []int64{}}, nil)
	var appended struct {
		Appended int   `json:"appended"`
		FirstID  int64 `json:"first_id"`
		LastID   int64 `json:"last_id"`
	}
	r.sb.admin(http.MethodPost, "emails", map[string]int{"append": 40}, &appended)
	changed, gone := tr["brands"][1].Key, tr["brands"][2].Key
	// A new status (a field of the brand's detail) with the new financial
	// summary: the brand edit also bumps the detail's metadata.updated_at,
	// which a summary change alone would leave to SYNC_DETAIL_MAX_AGE (the
	// list's aggregates do not make a detail due).
	r.sb.admin(http.MethodPost, "brands/"+changed, map[string]any{"status": "Inactiv",
		"financial_summary": map[string]any{"total_budget": "123456.78", "invoiced": 1000}}, nil)
	r.sb.admin(http.MethodPost, "brands/"+gone+"/delete", nil, nil)
	project := tr["projects"][0].Key
	r.sb.admin(http.MethodPost, "projects/"+project, map[string]any{"status": "finalizat"}, nil)

	before := r.sb.stats().Keyed()
	res := r.run(nil)
	mustSucceed(t, "run after the changes", res)
	sc.fig("incremental run: %d requests for 40 new e-mails, 1 late edit, 1 changed brand, 1 deleted brand, 1 changed project", r.sb.stats().Keyed()-before)
	checks, rows := compareWithTruth(t, r.pool, r.schema, r.sb.truth())
	sc.fig("after the changes: %s", summarize(checks, rows))

	var got string
	if err := r.pool.QueryRow(ctx, "SELECT subject FROM "+q("emails")+" WHERE record_id = $1", late).Scan(&got); err != nil || got != subject {
		t.Errorf("the late edit of e-mail %d (%s) was not synced: subject %q (%v)", late, lateAt, got, err)
	}
	if n := count("SELECT count(*) FROM "+q("email_recipients")+" WHERE record_id = $1 AND role = 'cc'", late); n != 0 {
		t.Errorf("e-mail %d keeps %d cc recipients after they were removed", late, n)
	}
	if n := count("SELECT count(*) FROM "+q("emails")+" WHERE record_id BETWEEN $1 AND $2", appended.FirstID, appended.LastID); n != appended.Appended {
		t.Errorf("%d of %d new e-mails synced", n, appended.Appended)
	}
	var snapshots int
	var oldBudget, newBudget string
	if err := r.pool.QueryRow(ctx, `SELECT count(*), coalesce(min(total_budget::text) FILTER (WHERE snapshot_date < $2::date), ''),
		coalesce(min(total_budget::text) FILTER (WHERE snapshot_date = $2::date), '') FROM `+q("brand_financial_snapshots")+` WHERE brand_id = $1`,
		changed, svcToday).Scan(&snapshots, &oldBudget, &newBudget); err != nil {
		t.Fatal(err)
	}
	if snapshots != 2 || newBudget != "123456.78" || oldBudget == newBudget {
		t.Errorf("brand %s: %d snapshots (yesterday's total_budget %s, today's %s), want 2 with today's 123456.78", changed, snapshots, oldBudget, newBudget)
	}
	if n := count("SELECT count(*) FROM "+q("brands")+" WHERE brand_id = $1 AND _deleted_at IS NOT NULL", gone); n != 1 {
		t.Errorf("the deleted brand %s is not soft-deleted", gone)
	}
	if n := count("SELECT count(*) FROM "+q("brand_contacts")+" WHERE brand_id = $1 AND _deleted_at IS NULL", gone); n != 0 {
		t.Errorf("the deleted brand %s keeps %d live contacts", gone, n)
	}
	if n := count("SELECT count(*) FROM "+q("project_history")+" WHERE project_id = $1 AND field = 'status' AND to_value = 'finalizat'", project); n != 1 {
		t.Errorf("project %s: %d history entries for its new status", project, n)
	}
	sc.fig("late edit synced, %d new e-mails, brand %s: 2 snapshots (%s → %s), brand %s soft-deleted", appended.Appended, changed, oldBudget, newBudget, gone)

	// The brand returns.
	r.sb.admin(http.MethodPost, "brands/"+gone+"/restore", nil, nil)
	mustSucceed(t, "run after the restore", r.run(nil))
	if n := count("SELECT count(*) FROM "+q("brands")+" WHERE brand_id = $1 AND _deleted_at IS NULL", gone); n != 1 {
		t.Errorf("the restored brand %s is still soft-deleted", gone)
	}
	contacts := 0
	for _, l := range tr["contacts"] {
		if l.BrandID == gone {
			contacts++
		}
	}
	if n := count("SELECT count(*) FROM "+q("brand_contacts")+" WHERE brand_id = $1 AND _deleted_at IS NULL", gone); n != contacts {
		t.Errorf("the restored brand %s has %d live contacts, the truth %d", gone, n, contacts)
	}
	checks, rows = compareWithTruth(t, r.pool, r.schema, r.sb.truth())
	sc.fig("after the restore: brand %s undeleted; %s", gone, summarize(checks, rows))
	checkIntegrity(t, r.pool, r.schema)
}
