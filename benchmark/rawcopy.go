package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/transform"
)

// rawTable is an unlogged, index-free copy of a warehouse table and how a
// batch's rows are laid out in its columns (those of load's write path).
type rawTable struct {
	name pgx.Identifier
	cols []string
	rows func(b *transform.Batch) [][]any
}

// RawCopier copies the e-mail, recipient and user rows of batches by plain
// COPY into unlogged, index-free copies of the warehouse tables: the floor
// of what loading e-mails can cost (the approach of load's
// BenchmarkLoadEmails).
type RawCopier struct {
	tables []rawTable
}

func ptrVal[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func rawJSON(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return r
}

// NewRawCopier creates raw_users, raw_emails and raw_email_recipients in
// schema (LIKE the warehouse tables, defaults included, no index, unlogged).
func NewRawCopier(ctx context.Context, pool *pgxpool.Pool, schema string) (*RawCopier, error) {
	r := &RawCopier{tables: []rawTable{
		{name: pgx.Identifier{schema, "raw_users"},
			cols: []string{"user_key", "platform_user_id", "first_name", "last_name", "full_name", "email", "phone", "avatar_url", "status"},
			rows: func(b *transform.Batch) [][]any {
				out := make([][]any, len(b.Users))
				for i, u := range b.Users {
					out[i] = []any{u.UserKey, ptrVal(u.PlatformUserID), ptrVal(u.FirstName), ptrVal(u.LastName), ptrVal(u.FullName),
						ptrVal(u.Email), ptrVal(u.Phone), ptrVal(u.AvatarURL), ptrVal(u.Status)}
				}
				return out
			}},
		{name: pgx.Identifier{schema, "raw_emails"},
			cols: []string{"record_id", "type_id", "type_name", "brand_id", "project_id", "subject", "message",
				"has_attachments", "size_bytes", "mailbox_id", "mailbox_thread", "email_at", "raw"},
			rows: func(b *transform.Batch) [][]any {
				out := make([][]any, len(b.Emails))
				for i, e := range b.Emails {
					out[i] = []any{e.RecordID, ptrVal(e.TypeID), ptrVal(e.TypeName), ptrVal(e.BrandID), ptrVal(e.ProjectID),
						e.Subject, ptrVal(e.Message), e.HasAttachments, ptrVal(e.SizeBytes), ptrVal(e.MailboxID),
						ptrVal(e.MailboxThread), e.EmailAt, rawJSON(e.Raw)}
				}
				return out
			}},
		{name: pgx.Identifier{schema, "raw_email_recipients"},
			cols: []string{"record_id", "role", "user_key"},
			rows: func(b *transform.Batch) [][]any {
				out := make([][]any, len(b.EmailRecipients))
				for i, e := range b.EmailRecipients {
					out[i] = []any{e.RecordID, e.Role, e.UserKey}
				}
				return out
			}},
	}}
	for _, t := range r.tables {
		src := pgx.Identifier{schema, t.name[1][len("raw_"):]}
		if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE UNLOGGED TABLE %s (LIKE %s INCLUDING DEFAULTS)", t.name.Sanitize(), src.Sanitize())); err != nil {
			return nil, fmt.Errorf("create %s: %w", t.name.Sanitize(), err)
		}
	}
	return r, nil
}

// Copy writes a batch's rows in one transaction, as a page commit would,
// and returns how long it took (row encoding included).
func (r *RawCopier) Copy(ctx context.Context, pool *pgxpool.Pool, b *transform.Batch) (time.Duration, error) {
	start := time.Now()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, t := range r.tables {
			if _, err := tx.CopyFrom(ctx, t.name, t.cols, pgx.CopyFromRows(t.rows(b))); err != nil {
				return fmt.Errorf("copy %s: %w", t.name.Sanitize(), err)
			}
		}
		return nil
	})
	return time.Since(start), err
}
