package reliability

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/patience"
)

// The twist scenarios (12 to 20, TestS12… to TestS20…): servers that follow the
// spec except for one twist each (sandbox/README.md, "Twists"). Each checks,
// from the sandbox's truth export and the warehouse alone, that every e-mail
// the service holds ends in the warehouse or in rejected_records with a reason,
// and that the exit codes are the README's: 0 complete, 75 incomplete and
// resuming, 2 bad configuration. A run that ends `succeeded` (exit 0) while the
// warehouse lacks records the service holds is the failure they hunt.

// twistSizes are the e-mails of the twist scenarios and of the SIGTERM one.
func twistSizes() (emails, stopEmails int) {
	if soak {
		return 5000, 5000
	}
	return 300, 600
}

// twistSandbox is a small agency whose communications come 50 to a page, so
// that a few hundred e-mails make several pages.
func twistSandbox() sandboxOptions {
	o := defaultSandbox()
	o.Emails, _ = twistSizes()
	o.Brands, o.ProjectsPerBrand, o.Users, o.HistoryDays = 3, 2, 40, 60
	o.Extra = []string{"--max-per-page", "50"}
	return o
}

// holdings compares the communications of the truth with the warehouse.
type holdings struct {
	truth    int      // e-mails the service holds
	stored   int      // of them, in emails
	rejected int      // of them, in rejected_records with a reason
	missing  []string // of them, in neither (record ids, ascending)
	noReason int      // rejects of the communications stream without a reason
}

func (h holdings) complete() bool { return len(h.missing) == 0 && h.noReason == 0 }

func (h holdings) String() string {
	s := fmt.Sprintf("%d of %d e-mails stored, %d rejected with a reason, %d missing", h.stored, h.truth, h.rejected, len(h.missing))
	if len(h.missing) > 0 {
		s += fmt.Sprintf(" (first %s)", strings.Join(h.missing[:min(5, len(h.missing))], ", "))
	}
	if h.noReason > 0 {
		s += fmt.Sprintf(", %d rejects without a reason", h.noReason)
	}
	return s
}

// emailHoldings reads the truth's communications keys and looks each up in
// the warehouse. Before the worker created its tables nothing is held.
func (r *rig) emailHoldings() holdings {
	r.t.Helper()
	tr := r.sb.truth()
	var h holdings
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(r.t))
	defer cancel()
	stored, rejected := map[string]bool{}, map[string]bool{}
	rows, err := r.pool.Query(ctx, "SELECT record_id::text FROM "+pgx.Identifier{r.schema, "emails"}.Sanitize())
	if err == nil {
		var ids []string
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err == nil {
			for _, id := range ids {
				stored[id] = true
			}
		}
	}
	if err != nil && !strings.Contains(err.Error(), "does not exist") {
		r.t.Fatalf("read the stored e-mails: %v", err)
	}
	rows, err = r.pool.Query(ctx, "SELECT record_key, coalesce(error, '') FROM "+pgx.Identifier{r.schema, "rejected_records"}.Sanitize()+
		" WHERE stream = 'communications' OR stream LIKE 'communications.%'")
	if err == nil {
		for rows.Next() {
			var key, reason string
			if err = rows.Scan(&key, &reason); err != nil {
				break
			}
			if strings.TrimSpace(reason) == "" {
				h.noReason++
				continue
			}
			rejected[key] = true
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil && !strings.Contains(err.Error(), "does not exist") {
		r.t.Fatalf("read the rejected e-mails: %v", err)
	}
	for _, l := range tr["communications"] {
		h.truth++
		switch {
		case stored[l.Key]:
			h.stored++
		case rejected[l.Key]:
			h.rejected++
		default:
			h.missing = append(h.missing, l.Key)
		}
	}
	slices.Sort(h.missing)
	return h
}

// honest checks one run's outcome against what the warehouse holds after
// it: exit 0 only with a complete run (succeeded, or warning: complete with
// notes) and nothing missing; a run that left records out ends partial with
// exit 75 (or failed, exit 1, on an error). It returns whether the run
// claimed completeness with a shortfall.
func honest(t *testing.T, what string, res *runResult, h holdings) (lied bool) {
	t.Helper()
	switch {
	case res.code == 0 && completed(res) && !h.complete():
		t.Errorf("%s: exit 0 %q while %s — a success with a shortfall", what, res.status(), h)
		return true
	case res.code == 0 && !completed(res) && res.status() != "skipped":
		t.Errorf("%s: exit 0 with status %q", what, res.status())
	case res.code == 75 && res.status() != "partial":
		t.Errorf("%s: exit 75 with status %q, want partial", what, res.status())
	case res.code != 0 && res.code != 75 && res.code != 1:
		t.Errorf("%s: exit %d (%q); the README documents 0, 75 or 1 here", what, res.code, res.status())
	}
	return false
}

// runUntilComplete runs the worker up to n times until a run exits 0
// complete; every run's outcome is checked with honest. It returns the runs
// made and the last result.
func (r *rig) runUntilComplete(n int, extra map[string]string, args ...string) (int, *runResult) {
	r.t.Helper()
	var res *runResult
	for k := 1; k <= n; k++ {
		res = r.run(extra, args...)
		h := r.emailHoldings()
		honest(r.t, fmt.Sprintf("run %d", k), res, h)
		if res.code == 0 && completed(res) {
			return k, res
		}
	}
	return n, res
}

// completed reports whether the run ran every task: succeeded, or warning
// (complete, with notes, coverage warnings or open rejects).
func completed(res *runResult) bool { return res.status() == "succeeded" || res.status() == "warning" }

// signal sends sig to a running worker.
func (w *workerProc) signal(sig syscall.Signal) {
	w.t.Helper()
	if err := w.p.Signal(sig); err != nil {
		w.t.Fatal(err)
	}
}

// twists sets sandbox twists (POST /_sandbox/twists).
func (s *sandboxProc) twists(body map[string]any) {
	s.t.Helper()
	s.admin("POST", "twists", body, nil)
}

// storedCount is the number of rows of emails (0 before the table exists).
func (r *rig) storedCount() int { return r.rows("emails") }

// runCount is the number of rows in sync_runs (0 before the schema exists).
func (r *rig) runCount() int { return r.rows("sync_runs") }

// rows is the number of rows of table, 0 when it cannot be read (before the
// schema exists, or while the database is away).
func (r *rig) rows(table string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := r.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{r.schema, table}.Sanitize()).Scan(&n); err != nil {
		return 0
	}
	return n
}
