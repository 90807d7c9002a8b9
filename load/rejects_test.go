package load

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/internal/testkit/recordjson"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// TestRejectKeyTextMatchesTransform: for every table of whole records, a
// record that transform rejects and the same record once it fits name the
// same key: the reject's Key (made by transform from the raw record) equals
// the landed row's key as rejectKeyText renders it.
func TestRejectKeyTextMatchesTransform(t *testing.T) {
	t.Parallel()
	day := time.Date(2024, 11, 5, 0, 0, 0, 0, time.UTC)
	neg := int64(-1)
	one := int64(1)
	for _, tc := range []struct {
		table     string
		good, bad transform.Batch
	}{
		{"budgets", recordjson.Budgets([]fixture.Budget{{ID: "b1", Amount: "10", Currency: "RON"}}),
			recordjson.Budgets([]fixture.Budget{{ID: "b1", Amount: "n/a", Currency: "RON"}})},
		{"invoices", recordjson.Invoices([]fixture.Invoice{{ID: "i-7", Number: "F7", Amount: "10", Currency: "RON"}}),
			recordjson.Invoices([]fixture.Invoice{{ID: "i-7", Number: "F7", Amount: "ten", Currency: "RON"}})},
		{"profitability", recordjson.Profitabilities([]fixture.Profitability{{Level: "project", EntityID: "p/3", Period: "2024-10", Revenue: "1", Cost: "1", Margin: "0", Currency: "RON"}}),
			recordjson.Profitabilities([]fixture.Profitability{{Level: "project", EntityID: "p/3", Period: "2024-10", Revenue: "x", Cost: "1", Margin: "0", Currency: "RON"}})},
		{"agency_finance_summary", recordjson.AgencySummaries([]fixture.AgencySummary{{Period: "2024-09", TotalBudget: "1", Currency: "RON"}}),
			recordjson.AgencySummaries([]fixture.AgencySummary{{Period: "2024-09", TotalBudget: "x", Currency: "RON"}})},
		{"brands", recordjson.Brands([]fixture.Brand{{ID: "42", Name: "Acme", ProjectsCount: &one}}, day),
			recordjson.Brands([]fixture.Brand{{ID: "42", Name: "Acme", ProjectsCount: &neg}}, day)},
		{"brands", recordjson.BrandDetails([]fixture.BrandDetail{{Brand: fixture.Brand{ID: "43", Name: "Beta", ProjectsCount: &one}}}, day),
			recordjson.BrandDetails([]fixture.BrandDetail{{Brand: fixture.Brand{ID: "43", Name: "Beta", ProjectsCount: &neg}}}, day)},
		{"communications", recordjson.Communications([]fixture.Communication{comm(2701, ptr("Ofertă"))}),
			recordjson.Communications([]fixture.Communication{comm(2701, nil)})},
	} {
		good := specByName(t, tableOf(tc.table))
		rows, err := good.rows(&tc.good)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: good rows %v, %v (rejects %+v)", tc.table, rows, err, tc.good.Rejects)
		}
		if len(tc.bad.Rejects) != 1 {
			t.Fatalf("%s: bad record gave rejects %+v", tc.table, tc.bad.Rejects)
		}
		got, ok := good.rejectKeyText(rows[0])
		if want := tc.bad.Rejects[0].Key; !ok || got != want {
			t.Errorf("%s: landed key %q (%v), reject key %q", tc.table, got, ok, want)
		}
	}
}

// tableOf is the table of a test case: communications land in emails.
func tableOf(name string) string {
	if name == "communications" {
		return "emails"
	}
	return name
}

func comm(id int64, subject *string) fixture.Communication {
	return fixture.Communication{RecordID: id, Email: fixture.EmailFields{TypeID: ptr(int64(1)), TypeName: ptr("Email"),
		Subject: subject, EmailAt: time.Date(2024, 11, 4, 8, 15, 42, 0, time.UTC)},
		Users: fixture.Participants{From: []fixture.Participant{{FirstName: "Ioana", FullName: "Ioana Radu", Email: "ioana@client.ro"}}}}
}

// TestRejectsResolveWhenTheyLand: a rejected record leaves rejected_records
// in the transaction of the page that lands it under its key; a detail's
// reject is resolved by the detail landing, not by the list entry; a
// complete listing of the table resolves the rejects it no longer received
// (hash-keyed ones too); a rebuild's re-derived rows resolve nothing.
func TestRejectsResolveWhenTheyLand(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	open := func() []string {
		t.Helper()
		rows, err := pool.Query(ctx, "SELECT stream || ' ' || record_key FROM "+qualified(schema, "rejected_records")+" ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			if i := strings.Index(v, transform.HashKeyPrefix); i >= 0 {
				v = v[:i] + "hash"
			}
			out = append(out, v)
		}
		slices.Sort(out)
		return out
	}
	inv := func(id, amount string) fixture.Invoice {
		return fixture.Invoice{ID: extract.ID(id), Number: "F-" + id, Amount: fixture.Decimal(amount), Currency: "RON"}
	}
	// Three invoices rejected (one without key), and brand 42's detail.
	pg := recordjson.Invoices([]fixture.Invoice{inv("i1", "x"), inv("i2", "x"), inv("i3", "x")})
	pg.Rejects = append(pg.Rejects, transform.RecordErrors(stream.RejectInvoices,
		[]extract.RecordError{{Endpoint: "invoices", Raw: json.RawMessage(`{"total":5}`), Err: errors.New("no id")}})...)
	neg := int64(-1)
	detail := recordjson.BrandDetails([]fixture.BrandDetail{{Brand: fixture.Brand{ID: "42", Name: "Acme", ProjectsCount: &neg}}}, time.Now())
	pg.Append(detail)
	if c := commit(t, s, page{stream: "finance", batch: pg}); c.Rejected != 5 || c.Resolved != 0 {
		t.Fatalf("first page: %+v", c)
	}
	want := []string{"brands.details 42", "finance.invoices hash", "finance.invoices i1", "finance.invoices i2", "finance.invoices i3"}
	if got := open(); !slices.Equal(got, want) {
		t.Fatalf("open rejects %q, want %q", got, want)
	}

	// i1 lands (an incremental page), and brand 42's list entry: i1's
	// reject is resolved, the detail's is not.
	one := int64(1)
	b := recordjson.Invoices([]fixture.Invoice{inv("i1", "10")})
	b.Append(recordjson.Brands([]fixture.Brand{{ID: "42", Name: "Acme", ProjectsCount: &one}}, time.Now()))
	if c := commit(t, s, page{stream: "finance", batch: b}); c.Resolved != 1 {
		t.Errorf("landing i1: resolved %d, want 1", c.Resolved)
	}
	want = []string{"brands.details 42", "finance.invoices hash", "finance.invoices i2", "finance.invoices i3"}
	if got := open(); !slices.Equal(got, want) {
		t.Fatalf("after i1 landed: open rejects %q, want %q", got, want)
	}

	// A rebuild re-derives a stored i2 (landed long ago): its reject stays.
	if _, err := pool.Exec(ctx, "INSERT INTO "+qualified(schema, "invoices")+" (invoice_id, amount, currency, raw) VALUES ('i2', 1, 'RON', '{}')"); err != nil {
		t.Fatal(err)
	}
	if _, n, err := s.CommitRebuild(ctx, "", RebuildPage{Batch: recordjson.Invoices([]fixture.Invoice{inv("i2", "3")})}, nil); err != nil || n != 0 {
		t.Fatalf("rebuild page: %d, %v", n, err)
	}
	if got := open(); !slices.Equal(got, want) {
		t.Fatalf("after a rebuild page: open rejects %q, want %q", got, want)
	}

	// Brand 42's detail lands: its reject is resolved.
	det := recordjson.BrandDetails([]fixture.BrandDetail{{Brand: fixture.Brand{ID: "42", Name: "Acme", ProjectsCount: &one}}}, time.Now())
	if c := commit(t, s, page{stream: "brands", batch: det, detailTable: "brands", fetched: &FetchedDetail{ID: "42", Hash: "h", At: time.Now()}}); c.Resolved != 1 {
		t.Errorf("landing brand 42's detail: resolved %d, want 1", c.Resolved)
	}

	// A complete listing that lands i2 and rejects i3 again: the
	// hash-keyed reject it did not receive is resolved, i3 stays.
	l, err := s.NewListing("invoices", nil)
	if err != nil {
		t.Fatal(err)
	}
	// (It lists i1 too: a listing that would soft-delete most of the
	// table is a mass delete held for confirmation, which resolves nothing.)
	commit(t, s, page{stream: "finance", batch: recordjson.Invoices([]fixture.Invoice{inv("i1", "10"), inv("i2", "10"), inv("i3", "x")}), sees: l})
	c := commit(t, s, page{stream: "finance", batch: recordjson.Invoices([]fixture.Invoice{inv("i4", "10")}), ends: []*Listing{l}})
	if got, want := open(), []string{"finance.invoices i3"}; !slices.Equal(got, want) {
		t.Fatalf("after a complete listing: open rejects %q, want %q", got, want)
	}
	if c.Resolved != 1 {
		t.Errorf("the listing's last page resolved %d, want 1 (the hash-keyed reject)", c.Resolved)
	}

	// A short listing (fewer rows than announced) resolves nothing.
	l, _ = s.NewListing("invoices", nil)
	l.expect(10)
	commit(t, s, page{stream: "finance", batch: recordjson.Invoices([]fixture.Invoice{inv("i4", "10")}), ends: []*Listing{l}})
	if got, want := open(), []string{"finance.invoices i3"}; !slices.Equal(got, want) {
		t.Fatalf("after a short listing: open rejects %q, want %q", got, want)
	}
}
