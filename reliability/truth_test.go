package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/internal/testkit/patience"
)

// truth is the sandbox's dataset at one moment, by stream (oracle.Truth
// with the suite's helpers).
type truth map[string][]oracle.Line

// truth fetches the sandbox's ground truth. The answer is read whole first
// (hundreds of megabytes at soak sizes), then split by oracle.Parse.
func (s *sandboxProc) truth() truth {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(s.t))
	defer cancel()
	rc, err := s.p.Truth(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rc.Close()
	tr, err := oracle.Read(rc)
	if err != nil {
		s.t.Fatalf("fetch the truth: %v", err)
	}
	return truth(tr)
}

// counts returns the good and bad records of a stream.
func (tr truth) counts(stream string) (good, bad int) { return oracle.Truth(tr).Counts(stream) }

// bad counts the malformed records of every stream.
func (tr truth) bad() int { return oracle.Truth(tr).Bad() }

// emailIDs returns the record ids of the communications, ascending, with
// whether each is malformed.
func (tr truth) emailIDs() (ids []int64, bad []bool) {
	ids, bad, err := oracle.Truth(tr).EmailIDs()
	if err != nil {
		panic(err) // the sandbox's keys are its ids
	}
	return ids, bad
}

// minimumRequests is what a complete first sync of the truth costs at best
// (oracle.MinimumRequests), in total and by endpoint.
func (tr truth) minimumRequests() (total int, byEndpoint map[string]int) {
	m := oracle.MinimumRequests(oracle.Truth(tr).FirstSync())
	return m.Total, m.ByEndpoint
}

// compareWithTruth compares the warehouse in schema with the truth
// (oracle.Compare: the truth's rows copied into a scratch schema, counts and
// checksums of each side by the same SQL). Any difference fails the test,
// naming up to five keys. It returns the checks and the sum of the compared
// rows.
func compareWithTruth(t *testing.T, pool *pgxpool.Pool, schema string, tr truth) ([]oracle.Check, int) {
	t.Helper()
	checks, total := diffWithTruth(t, pool, schema, tr)
	for _, c := range checks {
		if !c.OK() {
			t.Errorf("%s differs from the truth: %d rows (%d distinct keys), truth %d; checksum %s, truth %s; %d missing, %d unexpected, %d differ; e.g.\n  %s",
				c.Table, c.Rows, c.Distinct, c.Want, c.Digest, c.WantDigest, c.Missing, c.Unexpected, c.Differs, strings.Join(c.Sample, "\n  "))
		}
	}
	return checks, total
}

// diffWithTruth is compareWithTruth without the verdict.
func diffWithTruth(t *testing.T, pool *pgxpool.Pool, schema string, tr truth) ([]oracle.Check, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(t))
	defer cancel()
	start := time.Now()
	checks, err := oracle.Compare(ctx, pool, schema, oracle.Truth(tr))
	if err != nil {
		t.Fatalf("compare with the truth: %v", err)
	}
	total := 0
	for _, c := range checks {
		total += c.Rows
	}
	t.Logf("compared %d tables (%d rows) with the truth in %s", len(checks), total, time.Since(start).Round(time.Millisecond))
	return checks, total
}

// summarize renders the checks for the results table: tables and rows compared.
func summarize(checks []oracle.Check, total int) string {
	bad := 0
	for _, c := range checks {
		if !c.OK() {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Sprintf("%d of %d tables differ from the truth", bad, len(checks))
	}
	return fmt.Sprintf("%d tables = truth (%d rows, counts and checksums)", len(checks), total)
}
