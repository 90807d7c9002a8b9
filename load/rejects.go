package load

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// Rejects resolve themselves. rejected_records holds the records that are
// still rejected: in the transaction of a page that lands a record under the
// key it was rejected with (from the same source: a list's page resolves the
// list's rejects, a detail page the details'), the reject is deleted, and a
// complete listing of a whole table deletes the rejects of its stream it no
// longer received (the record landed, or the service stopped serving it).
// A rebuild's pages resolve nothing this way: they re-derive what was stored,
// which is no newer than the reject (the rebuild resolves the rejects it
// retries itself, see CommitRebuild).

// rejectKeyText renders the key of an encoded row (spec.rows) as transform
// names a rejected record of the table (transform.Reject.Key): the key's
// values joined by "/", months YYYY-MM, dates YYYY-MM-DD. false when a value
// has no such rendering.
func (s *spec) rejectKeyText(row []any) (string, bool) {
	var b strings.Builder
	for i := range s.key {
		if i > 0 {
			b.WriteByte('/')
		}
		switch v := row[i].(type) {
		case string:
			b.WriteString(v)
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case int32:
			b.WriteString(strconv.FormatInt(int64(v), 10))
		case time.Time:
			switch s.types[i] {
			case stream.Month:
				b.WriteString(v.Format("2006-01"))
			case stream.Date:
				b.WriteString(v.Format(time.DateOnly))
			default:
				b.WriteString(v.UTC().Format(time.RFC3339Nano))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// resolveLanded deletes, in tx, the rejected records that b's rows land: for
// each table with a reject stream, the rejects of that stream (of the
// detail's stream for the entity a detail page carries, detail naming its
// table) whose key is a key of the table's rows in b. It returns how many it
// deleted.
func (s *Store) resolveLanded(ctx context.Context, tx pgx.Tx, b *transform.Batch, detail string) (int64, error) {
	var n int64
	for _, t := range s.tables {
		rs := t.stream
		if t.name == detail && t.detailStream != "" {
			rs = t.detailStream
		}
		if rs == "" || t.parent != "" {
			continue
		}
		rows, err := t.rows(b)
		if err != nil || len(rows) == 0 {
			continue // rows that do not encode fail the page's write first
		}
		keys := make([]string, 0, len(rows))
		for _, r := range rows {
			if k, ok := t.rejectKeyText(r); ok {
				keys = append(keys, k)
			}
		}
		if s.red != nil {
			for i, k := range keys {
				keys[i] = s.red.String(k) // as upsertRejects stored them
			}
		}
		tag, err := tx.Exec(ctx, s.resolveLandedSQL, rs, keys)
		if err != nil {
			return n, fmt.Errorf("resolve landed rejects of %s: %w", rs, err)
		}
		n += tag.RowsAffected()
	}
	return n, nil
}

// resolveUnlisted deletes, in tx, the rejects of a complete listing's stream
// that the listing did not receive again: their record landed or is gone.
// Only a listing of a whole table (no scope) speaks for all of its stream's
// rejects. It returns how many it deleted.
func (s *Store) resolveUnlisted(ctx context.Context, tx pgx.Tx, l *Listing) (int64, error) {
	if len(l.scope) > 0 || l.spec.stream == "" {
		return 0, nil
	}
	keys := make([]string, 0, len(l.rejected))
	for k := range l.rejected {
		if s.red != nil {
			k = s.red.String(k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	tag, err := tx.Exec(ctx, s.resolveUnlistedSQL, l.spec.stream, keys)
	if err != nil {
		return 0, fmt.Errorf("resolve rejects of %s no longer listed: %w", l, err)
	}
	return tag.RowsAffected(), nil
}

func (s *Store) buildRejectsSQL() {
	rr := s.id("rejected_records")
	// One index descent per key: (stream, record_key) is unique.
	s.resolveLandedSQL = fmt.Sprintf(`DELETE FROM %s WHERE stream = $1 AND record_key = ANY($2::text[])`, rr)
	s.resolveUnlistedSQL = fmt.Sprintf(`DELETE FROM %s WHERE stream = $1 AND record_key <> ALL($2::text[])`, rr)
}
