package benchmark

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// rawTable is an unlogged, index-free copy of a warehouse table and which
// of a page's rows go into it (in oracle.Columns' layout).
type rawTable struct {
	name pgx.Identifier
	cols []string
	rows func(p *oracle.Comms) [][]any
}

// RawCopier copies the e-mail, recipient and user rows of pages by plain
// COPY into unlogged, index-free copies of the warehouse tables: the floor
// of what loading e-mails can cost (the approach of load's
// BenchmarkLoadEmails). The rows are the oracle's, built from the ground
// truth without the worker's decoders or transforms.
type RawCopier struct {
	tables []rawTable
}

// NewRawCopier creates raw_users, raw_emails and raw_email_recipients in
// schema (LIKE the warehouse tables, defaults included, no index, unlogged).
func NewRawCopier(ctx context.Context, pool *pgxpool.Pool, schema string) (*RawCopier, error) {
	r := &RawCopier{tables: []rawTable{
		{name: pgx.Identifier{schema, "raw_users"}, cols: oracle.Columns["users"],
			rows: func(p *oracle.Comms) [][]any { return p.Users() }},
		{name: pgx.Identifier{schema, "raw_emails"}, cols: oracle.Columns["emails"],
			rows: func(p *oracle.Comms) [][]any { return p.Emails }},
		{name: pgx.Identifier{schema, "raw_email_recipients"}, cols: oracle.Columns["email_recipients"],
			rows: func(p *oracle.Comms) [][]any { return p.Recipients }},
	}}
	for _, t := range r.tables {
		src := pgx.Identifier{schema, t.name[1][len("raw_"):]}
		if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE UNLOGGED TABLE %s (LIKE %s INCLUDING DEFAULTS)", t.name.Sanitize(), src.Sanitize())); err != nil {
			return nil, fmt.Errorf("create %s: %w", t.name.Sanitize(), err)
		}
	}
	return r, nil
}

// Copy writes a page's rows in one transaction, as a page commit would,
// and returns how long it took (the COPY's row encoding included).
func (r *RawCopier) Copy(ctx context.Context, pool *pgxpool.Pool, p *oracle.Comms) (time.Duration, error) {
	start := time.Now()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, t := range r.tables {
			if _, err := tx.CopyFrom(ctx, t.name, t.cols, pgx.CopyFromRows(t.rows(p))); err != nil {
				return fmt.Errorf("copy %s: %w", t.name.Sanitize(), err)
			}
		}
		return nil
	})
	return time.Since(start), err
}
