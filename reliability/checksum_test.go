package reliability

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestChecksumDetectsTampering tests the suite's own instrument: after a
// sync equal to the truth, single rows are lost, altered or added behind the
// worker's back, and the comparison must name exactly those — while a
// change of a number's scale alone (1250.5 and 1250.50 are one amount) must
// not count.
func TestChecksumDetectsTampering(t *testing.T) {
	sc := newScenario(t, 0, "the comparison with the truth detects tampering")
	t.Parallel()
	o := defaultSandbox()
	o.Brands, o.ProjectsPerBrand, o.Emails = 4, 3, 2000
	r := newRig(t, sc, o)
	mustSucceed(t, "sync", r.run(nil))
	tr := r.sb.truth()
	for _, c := range func() []tableCheck { c, _ := compareWithTruth(t, r.pool, r.schema, tr); return c }() {
		if !c.ok() {
			t.Fatalf("before tampering %s already differs", c.table)
		}
	}
	ctx := context.Background()
	q := func(table string) string { return pgx.Identifier{r.schema, table}.Sanitize() }
	type want struct{ missing, unexpected, differs int }
	tamper := []struct {
		sql   string
		table string
		want  want
	}{
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
	for _, x := range tamper {
		if _, err := r.pool.Exec(ctx, fmt.Sprintf(x.sql, q(x.table))); err != nil {
			t.Fatalf("tamper with %s: %v", x.table, err)
		}
	}
	// A soft-deleted brand takes its snapshot out of the comparison too.
	wants := map[string]want{"brand_financial_snapshots": {missing: 1}}
	for _, x := range tamper {
		w := wants[x.table]
		w.missing += x.want.missing
		w.unexpected += x.want.unexpected
		w.differs += x.want.differs
		wants[x.table] = w
	}
	checks, _ := diffWithTruth(t, r.pool, r.schema, tr)
	for _, c := range checks {
		w := wants[c.table]
		got := want{c.missing, c.unexpected, c.differs}
		if got != w || c.ok() != (w == want{}) {
			t.Errorf("%s: the comparison finds %+v (ok %v), the tampering made %+v", c.table, got, c.ok(), w)
		}
		if !c.ok() {
			t.Logf("%s: %d rows, checksum %s vs %s; %v", c.table, c.rows, c.digest, c.wantDigest, c.sample)
		}
	}
}
