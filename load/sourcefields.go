package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/inventory"
)

// MergeSourceFields merges a run's field inventory into source_fields in one
// set-based statement: new paths are inserted with first_seen = last_seen =
// seenAt; known ones add their counts, gain the new JSON types, move
// last_seen and take the mapped column of this run's mapping. A field listed
// twice (two observers of one stream) is merged first. Zero fields is a no-op.
func (s *Store) MergeSourceFields(ctx context.Context, seenAt time.Time, fields []inventory.Field) error {
	if len(fields) == 0 {
		return nil
	}
	if seenAt.IsZero() {
		return errors.New("merge source fields: zero seen time")
	}
	type key struct{ stream, path string }
	idx := make(map[key]int, len(fields))
	var streams, paths, types, mapped []string
	var counts []int64
	for _, f := range fields {
		if f.Stream == "" || f.Path == "" {
			return fmt.Errorf("merge source fields: a field needs a stream and a path, got %q %q", f.Stream, f.Path)
		}
		k := key{f.Stream, f.Path}
		if i, ok := idx[k]; ok {
			ts := append(strings.Split(types[i], ","), f.Types...)
			slices.Sort(ts)
			types[i] = strings.Join(slices.Compact(ts), ",")
			counts[i] += f.Count
			if f.MappedColumn != "" {
				mapped[i] = f.MappedColumn
			}
			continue
		}
		idx[k] = len(streams)
		ts := slices.Clone(f.Types)
		slices.Sort(ts)
		streams, paths, mapped = append(streams, f.Stream), append(paths, f.Path), append(mapped, f.MappedColumn)
		types, counts = append(types, strings.Join(slices.Compact(ts), ",")), append(counts, f.Count)
	}
	q := fmt.Sprintf(`INSERT INTO %s AS f (stream, path, json_types, seen_count, first_seen, last_seen, mapped_column)
SELECT i.stream, i.path, coalesce(string_to_array(NULLIF(i.types, ''), ','), '{}'), i.seen, $6, $6, NULLIF(i.mapped, '')
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) AS i(stream, path, types, seen, mapped)
ON CONFLICT (stream, path) DO UPDATE SET
	json_types = ARRAY(SELECT DISTINCT t FROM unnest(f.json_types || EXCLUDED.json_types) AS u(t) ORDER BY t),
	seen_count = f.seen_count + EXCLUDED.seen_count,
	first_seen = LEAST(f.first_seen, EXCLUDED.first_seen),
	last_seen = GREATEST(f.last_seen, EXCLUDED.last_seen),
	mapped_column = EXCLUDED.mapped_column,
	_synced_at = now()`, pgx.Identifier{s.schema, "source_fields"}.Sanitize())
	if _, err := s.pool.Exec(ctx, q, streams, paths, types, counts, mapped, seenAt); err != nil {
		return fmt.Errorf("merge source fields: %w", err)
	}
	return nil
}

// SourceFields reads source_fields, sorted by stream and path: the streams
// named, or all of them when none is.
func (s *Store) SourceFields(ctx context.Context, streams ...string) ([]inventory.Field, error) {
	q := fmt.Sprintf(`SELECT stream, path, json_types, seen_count, first_seen, last_seen, coalesce(mapped_column, '')
FROM %s WHERE cardinality($1::text[]) = 0 OR stream = ANY($1::text[]) ORDER BY stream, path`,
		pgx.Identifier{s.schema, "source_fields"}.Sanitize())
	rows, err := s.pool.Query(ctx, q, nonNil(streams))
	if err != nil {
		return nil, fmt.Errorf("read source fields: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (inventory.Field, error) {
		var f inventory.Field
		err := r.Scan(&f.Stream, &f.Path, &f.Types, &f.Count, &f.FirstSeen, &f.LastSeen, &f.MappedColumn)
		f.FirstSeen, f.LastSeen = f.FirstSeen.UTC(), f.LastSeen.UTC()
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("read source fields: %w", err)
	}
	return out, nil
}

// SetRunWarnings stores the coverage warnings of run runID
// (sync_runs.warnings), replacing what was stored; nil stores [].
func (s *Store) SetRunWarnings(ctx context.Context, runID string, ws []inventory.Warning) error {
	if ws == nil {
		ws = []inventory.Warning{}
	}
	return s.setRunJSON(ctx, runID, "warnings", "warnings", ws)
}

// LastRunWarnings returns the latest finished sync (not skipped, not a
// rebuild, which observes no field) and its warnings, for status; ErrNoRun
// when there is none.
func (s *Store) LastRunWarnings(ctx context.Context) (string, []inventory.Warning, error) {
	q := fmt.Sprintf(`SELECT run_id::text, warnings FROM %s
WHERE status IN ('succeeded', 'warning', 'partial', 'failed') AND trigger <> 'rebuild' ORDER BY started_at DESC, run_id DESC LIMIT 1`,
		pgx.Identifier{s.schema, "sync_runs"}.Sanitize())
	var id string
	var b []byte
	if err := s.pool.QueryRow(ctx, q).Scan(&id, &b); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			err = ErrNoRun
		}
		return "", nil, fmt.Errorf("read last run warnings: %w", err)
	}
	var ws []inventory.Warning
	if err := json.Unmarshal(b, &ws); err != nil {
		return "", nil, fmt.Errorf("read last run warnings: %w", err)
	}
	return id, ws, nil
}
