package reliability

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/patience"
)

// TestS20VerifyGaps: on a two-year history with three single-day gaps made
// behind the worker's back, `agencysync verify` finds and fills all three for
// at most 3 × (2·log2(730) + the gaps' pages) communications requests; on a
// complete warehouse it costs one request for the whole history and writes
// nothing. Days are UTC days (the default day boundary).
func TestS20VerifyGaps(t *testing.T) {
	sc := newScenario(t, 20, "Verify: three one-day gaps in two years are found and filled")
	o := defaultSandbox()
	o.Emails, o.HistoryDays, o.Brands, o.ProjectsPerBrand, o.Users = 3000, 730, 3, 2, 40
	if soak {
		o.Emails = 30000
	}
	r := newRig(t, sc, o)
	mustSucceed(t, "first sync", r.run(nil))

	// Three distinct days that hold e-mails, chosen by a seeded draw.
	seed := killSeed(t)
	t.Logf("gap seed %d (replay with AGENCYSYNC_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 12))
	byDay := map[string]int{}
	for _, l := range r.sb.truth()["communications"] {
		var rec struct {
			Email struct {
				EmailAt string `json:"email_at"`
			} `json:"email"`
		}
		if err := json.Unmarshal(l.Record, &rec); err != nil || len(rec.Email.EmailAt) < 10 {
			t.Fatalf("truth record %s: %v", l.Key, err)
		}
		byDay[rec.Email.EmailAt[:10]]++
	}
	var days []string
	for d := range byDay {
		days = append(days, d)
	}
	slices.Sort(days)
	var gaps []string
	for len(gaps) < 3 {
		if d := days[rng.IntN(len(days))]; !slices.Contains(gaps, d) {
			gaps = append(gaps, d)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(t))
	defer cancel()
	emails, recipients := pgx.Identifier{r.schema, "emails"}.Sanitize(), pgx.Identifier{r.schema, "email_recipients"}.Sanitize()
	removed := 0
	for _, d := range gaps {
		if _, err := r.pool.Exec(ctx, "DELETE FROM "+recipients+" WHERE record_id IN (SELECT record_id FROM "+emails+
			" WHERE (email_at AT TIME ZONE 'UTC')::date = $1::date)", d); err != nil {
			t.Fatal(err)
		}
		tag, err := r.pool.Exec(ctx, "DELETE FROM "+emails+" WHERE (email_at AT TIME ZONE 'UTC')::date = $1::date", d)
		if err != nil {
			t.Fatal(err)
		}
		removed += int(tag.RowsAffected())
	}
	pages := 0
	for _, d := range gaps {
		pages += (byDay[d] + 999) / 1000
	}
	budget := 3 * (2*int(math.Ceil(math.Log2(730))) + pages)

	if err := r.sb.p.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
	res := r.run(nil, "verify")
	used := int(r.sb.stats().ByEndpoint["communications"])
	h := r.emailHoldings()
	sc.fig("3 one-day gaps (%v, %d e-mails removed): verify exit %d, %d communications requests (budget %d), %s", gaps, removed, res.code, used, budget, h)
	if res.code != 0 || !h.complete() || used > budget {
		t.Errorf("verify with 3 gaps: exit %d, %d requests (at most %d), %s\n%s", res.code, used, budget, h, tail([]byte(res.stderr), 10))
	}

	if !h.complete() {
		t.Log("the warehouse is not complete: the second verify (of a complete warehouse) is not run")
		return
	}
	if err := r.sb.p.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
	res = r.run(nil, "verify")
	used = int(r.sb.stats().ByEndpoint["communications"])
	sc.fig("complete warehouse: verify exit %d, %d communications requests, %d rows written", res.code, used, res.num("rows_written"))
	if res.code != 0 || used != 1 || res.num("rows_written") != 0 {
		t.Errorf("verify of a complete warehouse: exit %d, %d requests (want 1), %d rows written (want 0)", res.code, used, res.num("rows_written"))
	}
}
