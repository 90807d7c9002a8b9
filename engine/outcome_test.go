package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/inventory"
)

// renamedEverywhere maps every field the renamed-fields variant renames.
const renamedEverywhere = "projects.name=title,projects.status=state,projects.deadline=due_date,projects.start_date=starts_on," +
	"projects.budget_amount=budget_total,projects.budget_currency=budget_currency," +
	"brand_contacts.first_name=firstname,brand_contacts.last_name=lastname,brand_contacts.position=job_title,brand_contacts.is_primary=primary," +
	"invoices.number=invoice_no,invoices.issue_date=issued_on,invoices.amount=total,invoices.due_date=payment_due"

// runRow reads a run's status, open_rejects and rejects_resolved.
func (h *harness) runRow(id string) (status string, open, resolved int) {
	h.t.Helper()
	if err := h.pool.QueryRow(context.Background(), "SELECT status, open_rejects, rejects_resolved FROM "+h.table("sync_runs")+
		" WHERE run_id = $1", id).Scan(&status, &open, &resolved); err != nil {
		h.t.Fatal(err)
	}
	return status, open, resolved
}

// TestRejectedInvoicesEndWarningUntilTheyLand: against a service whose
// invoices all fail to decode (renamed fields), the run completes but ends
// warning — coverage warnings and every invoice an open reject — in its
// Result and in sync_runs, and finance is not fresh (the invoices list
// landed nothing). The next run, still unmapped, made no new reject of an
// invoice it did not list again, yet is warning again: the rejects are
// open. With the field map in force, the invoices land, their rejects
// resolve themselves, status counts 0 open rejects, finance is fresh, and
// the run after that one succeeds.
func TestRejectedInvoicesEndWarningUntilTheyLand(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Emails, o.HistoryDays = 300, 20
	o.Variants = []string{sandbox.VariantRenamedFields}
	h := newHarness(t, o, nil)
	invoices := 0
	for _, l := range h.truth()["invoices"] {
		if !l.Bad {
			invoices++
		}
	}
	if invoices == 0 {
		t.Fatal("the sandbox has no invoice")
	}
	ctx := context.Background()
	runRow := h.runRow
	finance := func() StreamStatus {
		t.Helper()
		rep, err := h.eng.Status(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rep.Streams {
			if s.Stream == "finance" {
				return s
			}
		}
		t.Fatal("no finance in status")
		return StreamStatus{}
	}

	first := h.run(Request{})
	if first.Status != StatusWarning || first.Err != nil {
		t.Fatalf("first run: %s %v, want warning", first.Status, first.Err)
	}
	if kinds := first.WarningKinds(); !slices.Equal(kinds, []WarningKind{WarnWarnings, WarnRejects}) {
		t.Errorf("first run's kinds %v, want warnings and rejects", kinds)
	}
	if _, ok := findWarning(first.Warnings, inventory.KindRejectedStream, "invoices", ""); !ok {
		t.Errorf("no rejected_stream warning for invoices: %+v", first.Warnings)
	}
	if n := first.OpenRejects["finance"]; n != int64(invoices) {
		t.Errorf("first run: %d open rejects of finance, want the %d invoices", n, invoices)
	}
	if st, open, _ := runRow(first.RunID); st != "warning" || open != invoices {
		t.Errorf("sync_runs: %s with %d open rejects, want warning with %d", st, open, invoices)
	}
	if f := finance(); f.LastSuccess != nil || f.Rejected != int64(invoices) {
		t.Errorf("finance after every invoice was rejected: last success %v, %d rejected; want never fresh, %d", f.LastSuccess, f.Rejected, invoices)
	}

	// Unmapped still: no invoice is new, the rejects are still open.
	second := h.run(Request{Streams: []string{"finance"}})
	if second.Status != StatusWarning || !slices.Contains(second.WarningKinds(), WarnRejects) {
		t.Errorf("second run: %s %v, want warning with open rejects", second.Status, second.WarningKinds())
	}

	// The field map in force: the run re-derives the invoices from raw
	// first (a rebuild, which retries their rejects), so they land and
	// their rejects resolve.
	h.eng = h.engine(func(s *Settings) { s.Streams = mappedStreams(t, renamedEverywhere) })
	third := h.run(Request{Streams: []string{"finance"}})
	if third.OpenRejectsTotal() != 0 {
		t.Errorf("mapped run: %d open rejects, want 0", third.OpenRejectsTotal())
	}
	if st, open, _ := runRow(third.RunID); open != 0 || st != "succeeded" {
		t.Errorf("sync_runs of the mapped run: %s, %d open; want succeeded, 0", st, open)
	}
	if n := h.count("SELECT sum(rejects_resolved) FROM "+h.table("sync_runs")+" WHERE started_at > (SELECT started_at FROM "+
		h.table("sync_runs")+" WHERE run_id = $1)", second.RunID); n != invoices {
		t.Errorf("the runs after the unmapped one resolved %d rejects, want the %d invoices", n, invoices)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("rejected_records")); n != 0 {
		t.Errorf("%d rows left in rejected_records", n)
	}
	if f := finance(); f.LastSuccess == nil || f.Rejected != 0 {
		t.Errorf("finance after the invoices landed: last success %v, %d rejected; want fresh, 0", f.LastSuccess, f.Rejected)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("invoices") + " WHERE amount IS NOT NULL AND _deleted_at IS NULL"); n != invoices {
		t.Errorf("%d invoices landed, want %d", n, invoices)
	}
	fourth := h.run(Request{Streams: []string{"finance"}})
	if fourth.Status != StatusSucceeded {
		t.Errorf("the run after: %s (%s), want succeeded", fourth.Status, fourth.WarningSummary())
	}
}

// TestRejectsResolvedByAFullRefresh: records the service served malformed
// are open rejects, and the run is warning; once the service serves them
// well, a full refresh lands them — by their keys (e-mails, finance) and by
// the complete listings — and their rejects leave rejected_records in that
// run: 0 open, the run succeeded.
func TestRejectsResolvedByAFullRefresh(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Emails, o.HistoryDays = 600, 20
	o.BadRecordRate = 0.05
	h := newHarness(t, o, nil)
	first := h.run(Request{})
	open := first.OpenRejectsTotal()
	if first.Status != StatusWarning || open == 0 || open != first.Counts.Rejected {
		t.Fatalf("first run: %s, %d open rejects of %d rejected; want warning with all open", first.Status, open, first.Counts.Rejected)
	}
	if err := h.sb.SetBadRecordRate(0); err != nil {
		t.Fatal(err)
	}
	res := h.run(Request{FullRefresh: []string{"finance", "communications"}})
	if res.Status != StatusSucceeded || res.RejectsResolved != open || res.OpenRejectsTotal() != 0 {
		t.Fatalf("full refresh: %s (%s), resolved %d of %d open", res.Status, res.WarningSummary(), res.RejectsResolved, open)
	}
	if n := h.count("SELECT count(*) FROM " + h.table("rejected_records")); n != 0 {
		t.Errorf("%d rejects left", n)
	}
	if st, _, resolved := h.runRow(res.RunID); st != "succeeded" || resolved != int(open) {
		t.Errorf("sync_runs: %s, %d resolved; want succeeded, %d", st, resolved, open)
	}
	h.assertEqualsTruth()
}

// TestRunErrorTextSaysEachThingOnce: a gap is a note too (r.gap notes it),
// and the run's error already carries it: sync_runs.error says it once, and
// the other notes after "notes: ".
func TestRunErrorTextSaysEachThingOnce(t *testing.T) {
	gap := "brands.list: listing not proven complete (the server ignores the page parameter)"
	for _, c := range []struct {
		name  string
		err   error
		notes []string
		want  string
	}{
		{"gap and note", gapError([]string{gap}), []string{gap, "clock unread"}, gapError([]string{gap}).Error() + "; notes: clock unread"},
		{"only the gap", gapError([]string{gap}), []string{gap}, gapError([]string{gap}).Error()},
		{"notes alone", nil, []string{"a", "b"}, "notes: a; b"},
		{"neither", nil, nil, ""},
	} {
		if got := runErrorText(c.err, c.notes, func(s string) string { return s }); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
