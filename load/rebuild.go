package load

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/transform"
)

// The reads and writes of `agencysync rebuild`, which re-derives the rows of
// stored records under the current field map: a table's stored records in
// key order (keyset paging), its rejected records by id, which keys are
// stored, a page that also resolves rejected records, and the cursor's end.

// RebuildStream is the sync_state stream of rebuild cursors: one partition
// per table, deleted when the table's rebuild finishes. It is no stream of a
// sync, so freshness and status never read it.
const RebuildStream = "rebuild"

// StoredRecords returns up to limit stored records of table (a table of
// whole records, one a stream fills from raw JSON) in key order, starting
// after the key after (its key columns' values as text, in order; nil
// starts at the first): each with its key columns as text by name (dates
// YYYY-MM-DD) and its raw JSON columns ("raw", "detail_raw") by name.
// Soft-deleted rows are left out: writing them again would bring them back.
func (s *Store) StoredRecords(ctx context.Context, table string, after []string, limit int) ([]transform.Stored, error) {
	t, ok := s.byName[table]
	if !ok || t.parent != "" || len(t.raws) == 0 {
		return nil, fmt.Errorf("read stored records of %s: %w (or not a table of records with their raw JSON)", table, ErrUnknownTable)
	}
	raws := t.raws
	if after != nil && len(after) != len(t.key) {
		return nil, fmt.Errorf("read stored records of %s: cursor of %d values for a key of %d", table, len(after), len(t.key))
	}
	if limit <= 0 {
		return nil, fmt.Errorf("read stored records of %s: limit %d is not positive", table, limit)
	}
	var sel, keys, params []string
	for _, c := range t.key {
		n := pgx.Identifier{c.name}.Sanitize()
		sel = append(sel, keyText(n, c.typ))
		keys = append(keys, n)
	}
	for _, r := range raws {
		sel = append(sel, pgx.Identifier{r}.Sanitize())
	}
	var where []string
	var args []any
	if t.softDelete {
		where = append(where, "_deleted_at IS NULL")
	}
	if after != nil {
		for i, c := range t.key {
			args = append(args, after[i])
			params = append(params, fmt.Sprintf("$%d::%s", len(args), c.typ))
		}
		where = append(where, fmt.Sprintf("(%s) > (%s)", strings.Join(keys, ", "), strings.Join(params, ", ")))
	}
	args = append(args, limit)
	sql := fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, ", "), t.target.Sanitize())
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += fmt.Sprintf(" ORDER BY %s LIMIT $%d", strings.Join(keys, ", "), len(args))

	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read stored records of %s: %w", table, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (transform.Stored, error) {
		keyVals := make([]string, len(t.key))
		rawVals := make([][]byte, len(raws))
		dest := make([]any, 0, len(keyVals)+len(rawVals))
		for i := range keyVals {
			dest = append(dest, &keyVals[i])
		}
		for i := range rawVals {
			dest = append(dest, &rawVals[i])
		}
		if err := r.Scan(dest...); err != nil {
			return transform.Stored{}, err
		}
		st := transform.Stored{Key: make(map[string]string, len(keyVals)), Raw: make(map[string]json.RawMessage, len(raws))}
		for i, c := range t.key {
			st.Key[c.name] = keyVals[i]
		}
		for i, name := range raws {
			if rawVals[i] != nil {
				st.Raw[name] = json.RawMessage(rawVals[i])
			}
		}
		return st, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read stored records of %s: %w", table, err)
	}
	return out, nil
}

// keyText renders a key column as text that casts back to its type.
func keyText(col, typ string) string {
	switch typ {
	case "text":
		return col
	case "date":
		return fmt.Sprintf("to_char(%s, 'YYYY-MM-DD')", col)
	case "timestamptz":
		return fmt.Sprintf(`to_char(%s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, col)
	default:
		return col + "::text"
	}
}

// RejectedRecord is a rejected_records row of a table's records, read for a
// retry.
type RejectedRecord struct {
	// ID is rejected_records.rejected_id.
	ID int64
	// Key is rejected_records.record_key.
	Key string
	// KeyValues holds the record's key columns as text by name (as
	// StoredRecords gives them), parsed from Key; nil when Key is a hash of
	// the payload or does not parse.
	KeyValues map[string]string
	// Payload is the record as received.
	Payload json.RawMessage
}

// RejectedRecords returns up to limit rejected records of table's reject
// stream (stream.Table.Reject) with rejected_id above afterID, by id.
func (s *Store) RejectedRecords(ctx context.Context, table string, afterID int64, limit int) ([]RejectedRecord, error) {
	t, ok := s.byName[table]
	if !ok || t.stream == "" {
		return nil, fmt.Errorf("read rejected records of %s: %w (or without rejected records of its own)", table, ErrUnknownTable)
	}
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT rejected_id, record_key, payload FROM %s
WHERE stream = $1 AND rejected_id > $2 ORDER BY rejected_id LIMIT $3`, s.id("rejected_records")), t.stream, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("read rejected records of %s: %w", table, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RejectedRecord, error) {
		var rr RejectedRecord
		var payload []byte
		if err := r.Scan(&rr.ID, &rr.Key, &payload); err != nil {
			return rr, err
		}
		rr.Payload = payload
		if vals, ok := t.rejectKey(rr.Key); ok {
			rr.KeyValues = make(map[string]string, len(vals))
			for i, c := range t.key {
				rr.KeyValues[c.name] = valueText(vals[i])
			}
		}
		return rr, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read rejected records of %s: %w", table, err)
	}
	return out, nil
}

// valueText renders a parsed key value as StoredRecords does.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case time.Time:
		return x.Format(time.DateOnly)
	}
	return fmt.Sprint(v)
}

// KeysStored reports, for each key (the key columns' values of a row of
// table, as transform makes them), whether table holds a row with it,
// soft-deleted or not.
func (s *Store) KeysStored(ctx context.Context, table string, keys [][]any) ([]bool, error) {
	t, ok := s.byName[table]
	if !ok {
		return nil, fmt.Errorf("look up keys of %s: %w", table, ErrUnknownTable)
	}
	out := make([]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	arrays, err := t.keyArrays(keys)
	if err != nil {
		return nil, fmt.Errorf("look up keys of %s: %w", table, err)
	}
	var cols, on []string
	var unnest []string
	for i, c := range t.key {
		n := pgx.Identifier{c.name}.Sanitize()
		cols = append(cols, n)
		on = append(on, fmt.Sprintf("t.%s = k.%s", n, n))
		unnest = append(unnest, fmt.Sprintf("$%d::%s[]", i+1, c.typ))
	}
	sql := fmt.Sprintf("SELECT k.ord FROM unnest(%s) WITH ORDINALITY AS k(%s, ord) WHERE EXISTS (SELECT 1 FROM %s AS t WHERE %s)",
		strings.Join(unnest, ", "), strings.Join(cols, ", "), t.target.Sanitize(), strings.Join(on, " AND "))
	rows, err := s.pool.Query(ctx, sql, arrays...)
	if err != nil {
		return nil, fmt.Errorf("look up keys of %s: %w", table, err)
	}
	ords, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("look up keys of %s: %w", table, err)
	}
	for _, o := range ords {
		out[o-1] = true
	}
	return out, nil
}

// CommitRebuild commits a page of a rebuild for run runID as Commit does
// and, in the same transaction, deletes the rejected records resolved
// (rejected_ids of records whose retry landed in the page). It returns the
// page's counts and the number of rejected records deleted.
func (s *Store) CommitRebuild(ctx context.Context, runID string, rp RebuildPage, resolved []int64) (Counts, int64, error) {
	var deleted int64
	p := rp.lower()
	p.runID = runID
	if len(resolved) > 0 {
		del := fmt.Sprintf("DELETE FROM %s WHERE rejected_id = ANY($1)", s.id("rejected_records"))
		then := p.then
		p.then = func(ctx context.Context, tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, del, resolved)
			if err != nil {
				return fmt.Errorf("delete resolved rejected records: %w", err)
			}
			deleted = tag.RowsAffected()
			if then != nil {
				return then(ctx, tx)
			}
			return nil
		}
	}
	c, err := s.commitPage(ctx, p)
	if err != nil {
		return c, 0, err
	}
	c.Resolved += deleted
	return c, deleted, nil
}

// DeleteState deletes the sync_state row of stream's partition (a finished
// rebuild's cursor); a missing row is no error.
func (s *Store) DeleteState(ctx context.Context, stream, partition string) error {
	if _, err := s.pool.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE stream = $1 AND partition = $2", s.id("sync_state")), stream, partition); err != nil {
		return fmt.Errorf("delete state of %s/%s: %w", stream, partition, err)
	}
	return nil
}
