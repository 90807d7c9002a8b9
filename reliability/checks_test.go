package reliability

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/patience"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// backfillState is what the communications cursor says of the backfill.
type backfillState struct {
	started bool // the stream has a cursor
	done    bool // the backfill completed
	pages   int  // pages committed in the range under way
	perPage int  // rows a page
}

// readBackfill reads the communications cursor (sync_state). Before the
// worker created its tables it reports nothing started.
func readBackfill(ctx context.Context, pool *pgxpool.Pool, schema string) (backfillState, error) {
	var raw []byte
	err := pool.QueryRow(ctx, "SELECT cursor FROM "+pgx.Identifier{schema, "sync_state"}.Sanitize()+
		" WHERE stream = 'communications' AND partition = ''").Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return backfillState{}, nil
	}
	if err != nil {
		return backfillState{}, err
	}
	var c struct {
		Backfill *struct {
			Done    bool `json:"done"`
			Current *struct {
				NextPage int `json:"next_page"`
				PerPage  int `json:"per_page"`
			} `json:"current"`
		} `json:"backfill"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return backfillState{}, fmt.Errorf("read the communications cursor %s: %w", raw, err)
	}
	st := backfillState{started: true, perPage: 1000}
	if b := c.Backfill; b != nil {
		st.done = b.Done
		if b.Current != nil {
			st.pages = max(b.Current.NextPage-1, 0)
			if b.Current.PerPage > 0 {
				st.perPage = b.Current.PerPage
			}
		}
	}
	return st, nil
}

// checkWholePages checks that an interrupted backfill left whole pages: the
// e-mails stored are exactly the good records of the pages the cursor says
// were committed (the first pages×per_page records of the range, in id
// order), the rejected e-mails exactly the bad ones among them; and that no
// e-mail lacks its sender or has recipients without it. It returns the number
// of committed pages. Valid while the backfill is one range and no increment
// ran (a first sync on one day).
func checkWholePages(t *testing.T, pool *pgxpool.Pool, schema string, ids []int64, bad []bool) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(t))
	defer cancel()
	st, err := readBackfill(ctx, pool, schema)
	if err != nil {
		t.Fatalf("read the backfill cursor: %v", err)
	}
	n := min(st.pages*st.perPage, len(ids))
	if st.done {
		n = len(ids)
	}
	var want, wantBad []string
	for k := range n {
		if bad[k] {
			wantBad = append(wantBad, strconv.FormatInt(ids[k], 10))
		} else {
			want = append(want, strconv.FormatInt(ids[k], 10))
		}
	}
	digest := func(xs []string) string {
		h := md5.Sum([]byte(strings.Join(xs, ",")))
		return hex.EncodeToString(h[:])
	}
	var stored, rejected int
	var storedDigest, rejectedDigest string
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s.emails),
		(SELECT md5(coalesce(string_agg(record_id::text, ',' ORDER BY record_id), '')) FROM %[1]s.emails),
		(SELECT count(*) FROM %[1]s.rejected_records WHERE stream = 'communications'),
		(SELECT md5(coalesce(string_agg(record_key, ',' ORDER BY record_key::bigint), '')) FROM %[1]s.rejected_records WHERE stream = 'communications')`,
		pgx.Identifier{schema}.Sanitize())
	if err := pool.QueryRow(ctx, q).Scan(&stored, &storedDigest, &rejected, &rejectedDigest); err != nil {
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) && pgErr.SQLState() == "42P01" && !st.started {
			return 0 // killed before its tables existed
		}
		t.Fatalf("read the stored e-mails: %v", err)
	}
	if stored != len(want) || storedDigest != digest(want) || rejected != len(wantBad) || rejectedDigest != digest(wantBad) {
		t.Errorf("after the stop the warehouse does not hold whole pages: cursor %+v; %d e-mails stored (want %d, ids match: %v), %d rejected (want %d, keys match: %v)",
			st, stored, len(want), storedDigest == digest(want), rejected, len(wantBad), rejectedDigest == digest(wantBad))
	}
	checkIntegrity(t, pool, schema)
	return st.pages
}

// checkIntegrity checks that no page was half written: every e-mail has its
// sender, no recipient row lacks its e-mail, and every recipient is a known
// person; every contact, team member and deliverable belongs to a stored
// brand or project.
func checkIntegrity(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience.Left(t))
	defer cancel()
	for what, q := range map[string]string{
		"e-mails without a sender":            "SELECT count(*) FROM %[1]s.emails e WHERE NOT EXISTS (SELECT 1 FROM %[1]s.email_recipients r WHERE r.record_id = e.record_id AND r.role = 'from')",
		"recipients without their e-mail":     "SELECT count(*) FROM %[1]s.email_recipients r WHERE NOT EXISTS (SELECT 1 FROM %[1]s.emails e WHERE e.record_id = r.record_id)",
		"recipients who are not users":        "SELECT count(*) FROM %[1]s.email_recipients r WHERE NOT EXISTS (SELECT 1 FROM %[1]s.users u WHERE u.user_key = r.user_key)",
		"contacts of unknown brands":          "SELECT count(*) FROM %[1]s.brand_contacts c WHERE NOT EXISTS (SELECT 1 FROM %[1]s.brands b WHERE b.brand_id = c.brand_id)",
		"team members of unknown projects":    "SELECT count(*) FROM %[1]s.project_team_members m WHERE NOT EXISTS (SELECT 1 FROM %[1]s.projects p WHERE p.project_id = m.project_id)",
		"deliverables of unknown projects":    "SELECT count(*) FROM %[1]s.project_deliverables d WHERE NOT EXISTS (SELECT 1 FROM %[1]s.projects p WHERE p.project_id = d.project_id)",
		"snapshots of unknown brands":         "SELECT count(*) FROM %[1]s.brand_financial_snapshots s WHERE NOT EXISTS (SELECT 1 FROM %[1]s.brands b WHERE b.brand_id = s.brand_id)",
		"history entries of unknown projects": "SELECT count(*) FROM %[1]s.project_history h WHERE NOT EXISTS (SELECT 1 FROM %[1]s.projects p WHERE p.project_id = h.project_id)",
	} {
		var n int
		if err := pool.QueryRow(ctx, fmt.Sprintf(q, pgx.Identifier{schema}.Sanitize())).Scan(&n); err != nil {
			t.Fatalf("check %s: %v", what, err)
		}
		if n != 0 {
			t.Errorf("half-written data: %d %s", n, what)
		}
	}
}

// ledgerTotal is the sum of the worker's quota ledger (api_quota_usage).
func ledgerTotal(t *testing.T, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT coalesce(sum(requests), 0) FROM "+
		pgx.Identifier{schema, "api_quota_usage"}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("read the quota ledger: %v", err)
	}
	return n
}

// runStatuses counts sync_runs rows by status.
func runStatuses(t *testing.T, pool *pgxpool.Pool, schema string) map[string]int {
	t.Helper()
	return warehousetest.Counts[int](t, pool, "SELECT status, count(*) FROM "+pgx.Identifier{schema, "sync_runs"}.Sanitize()+" GROUP BY status")
}
