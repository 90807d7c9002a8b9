package reliability

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// TestChecksumDetectsTampering tests the suite's own instrument: after a
// sync equal to the truth, single rows are lost, altered or added behind the
// worker's back, and the comparison must name exactly those — while a
// change of a number's scale alone (1250.5 and 1250.50 are one amount) must
// not count.
func TestChecksumDetectsTampering(t *testing.T) {
	sc := newScenario(t, 0, "the comparison with the truth detects tampering")
	o := defaultSandbox()
	o.Brands, o.ProjectsPerBrand, o.Emails = 4, 3, 2000
	r := newRig(t, sc, o)
	mustSucceed(t, "sync", r.run(nil))
	tr := r.sb.truth()
	for _, c := range func() []oracle.Check { c, _ := compareWithTruth(t, r.pool, r.schema, tr); return c }() {
		if !c.OK() {
			t.Fatalf("before tampering %s already differs", c.Table)
		}
	}
	type want = tamperWant
	tamper := []tampering{
		{"DELETE FROM %s WHERE record_id = (SELECT min(record_id) FROM %[1]s)", "emails", want{missing: 1}},
		{"UPDATE %s SET subject = subject || ' ' WHERE record_id = (SELECT min(record_id) FROM %[1]s)", "emails", want{differs: 1}},
		{"INSERT INTO %s (record_id, role, user_key) SELECT record_id, 'bcc', 'intruder@example.com' FROM %[1]s LIMIT 1", "email_recipients", want{unexpected: 1}},
		{"UPDATE %s SET amount = amount + 0.01 WHERE invoice_id = (SELECT min(invoice_id) FROM %[1]s)", "invoices", want{differs: 1}},
		{"UPDATE %s SET amount = amount * 1.000 WHERE budget_id = (SELECT min(budget_id) FROM %[1]s)", "budgets", want{}},
		{"UPDATE %s SET raw = raw || '{\"x\":1}' WHERE payment_id = (SELECT min(payment_id) FROM %[1]s)", "payments", want{differs: 1}},
		{"UPDATE %s SET phone = NULL WHERE user_key = (SELECT min(user_key) FROM %[1]s WHERE phone IS NOT NULL)", "users", want{differs: 1}},
		{"UPDATE %s SET _deleted_at = now() WHERE brand_id = (SELECT min(brand_id) FROM %[1]s)", "brands", want{missing: 1}},
		{"DELETE FROM %s WHERE ctid = (SELECT min(ctid) FROM %[1]s)", "project_history", want{missing: 1}},
		{"UPDATE %s SET email_at = email_at + interval '1 microsecond' WHERE record_id = (SELECT max(record_id) FROM %[1]s)", "emails", want{differs: 1}},
	}
	// A soft-deleted brand takes its snapshot out of the comparison too.
	tamperAndCompare(t, r, tr, tamper, map[string]tamperWant{"brand_financial_snapshots": {missing: 1}})
}

// TestOracleCatchesPlantedTransformBugs is the control of the oracle's
// independence: after a sync equal to the truth, one column of one row is
// altered the way a plausible transform bug would write it — a name not
// trimmed, a recipient's kind swapped, a decimal rounded, a phone stored as
// "" instead of NULL, a date shifted by a time zone — and the comparison
// must report exactly those rows. (The oracle builds its rows without
// package transform, so such a bug in the worker cannot appear on both
// sides; TestOracleSharesNothingWithTheWorker holds it to that.)
func TestOracleCatchesPlantedTransformBugs(t *testing.T) {
	sc := newScenario(t, 0, "the oracle catches planted transform bugs")
	o := defaultSandbox()
	o.Brands, o.ProjectsPerBrand, o.Emails = 4, 3, 2000
	r := newRig(t, sc, o)
	mustSucceed(t, "sync", r.run(nil))
	tr := r.sb.truth()
	type want = tamperWant
	tamper := []tampering{
		// full_name not trimmed: the source's trailing space kept.
		{"UPDATE %s SET full_name = full_name || ' ' WHERE user_key = (SELECT max(user_key) FROM %[1]s WHERE full_name IS NOT NULL)", "users", want{differs: 1}},
		{"UPDATE %s SET first_name = ' ' || first_name WHERE (brand_id, contact_id) = (SELECT brand_id, contact_id FROM %[1]s WHERE first_name IS NOT NULL ORDER BY 1, 2 LIMIT 1)", "brand_contacts", want{differs: 1}},
		// A to recipient recorded as cc: its key changes, so one row is missing and one unexpected.
		{"UPDATE %s x SET role = 'cc' WHERE (record_id, role, user_key) = (SELECT record_id, role, user_key FROM %[1]s y WHERE role = 'to' AND NOT EXISTS (SELECT FROM %[1]s z WHERE z.record_id = y.record_id AND z.role = 'cc' AND z.user_key = y.user_key) ORDER BY 1, 3 LIMIT 1)", "email_recipients", want{missing: 1, unexpected: 1}},
		// An amount rounded to whole units.
		{"UPDATE %s SET amount = round(amount) WHERE invoice_id = (SELECT max(invoice_id) FROM %[1]s WHERE amount <> round(amount))", "invoices", want{differs: 1}},
		// An empty phone stored as '' rather than NULL.
		{"UPDATE %s SET phone = '' WHERE user_key = (SELECT min(user_key) FROM %[1]s WHERE phone IS NULL)", "users", want{differs: 1}},
		// An instant read in local time rather than UTC (two hours off).
		{"UPDATE %s SET updated_at = updated_at - interval '2 hours' WHERE project_id = (SELECT min(project_id) FROM %[1]s)", "projects", want{differs: 1}},
	}
	tamperAndCompare(t, r, tr, tamper, nil)
}

// tamperWant is what a comparison should find in one table.
type tamperWant struct{ missing, unexpected, differs int }

// tampering is one statement (%s is the table) and what it does to table.
type tampering struct {
	sql   string
	table string
	want  tamperWant
}

// tamperAndCompare runs the statements on the rig's warehouse, then checks
// that the comparison with the truth finds, table by table, exactly what
// they did (plus extra), and nothing in the other tables.
func tamperAndCompare(t *testing.T, r *rig, tr truth, tamper []tampering, extra map[string]tamperWant) {
	t.Helper()
	ctx := context.Background()
	q := func(table string) string { return pgx.Identifier{r.schema, table}.Sanitize() }
	for _, x := range tamper {
		tag, err := r.pool.Exec(ctx, fmt.Sprintf(x.sql, q(x.table)))
		if err != nil {
			t.Fatalf("tamper with %s: %v", x.table, err)
		}
		if tag.RowsAffected() != 1 {
			t.Fatalf("tamper with %s: %d rows changed, want 1: %s", x.table, tag.RowsAffected(), x.sql)
		}
	}
	wants := map[string]tamperWant{}
	for k, w := range extra {
		wants[k] = w
	}
	for _, x := range tamper {
		w := wants[x.table]
		w.missing += x.want.missing
		w.unexpected += x.want.unexpected
		w.differs += x.want.differs
		wants[x.table] = w
	}
	checks, _ := diffWithTruth(t, r.pool, r.schema, tr)
	for _, c := range checks {
		w := wants[c.Table]
		got := tamperWant{c.Missing, c.Unexpected, c.Differs}
		if got != w || c.OK() != (w == tamperWant{}) {
			t.Errorf("%s: the comparison finds %+v (ok %v), the tampering made %+v", c.Table, got, c.OK(), w)
		}
		if !c.OK() {
			t.Logf("%s: %d rows, checksum %s vs %s; %v", c.Table, c.Rows, c.Digest, c.WantDigest, c.Sample)
		}
	}
}
