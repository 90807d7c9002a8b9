package load

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TableMapping is a row of table_mappings: the field map a table's rows
// were derived under.
type TableMapping struct {
	// Table is the warehouse table.
	Table string
	// Mapping fingerprints the source fields of its columns (engine).
	Mapping string
	// FieldMap is the AGENCY_FIELD_MAP pairs of its columns then.
	FieldMap string
	// DerivedAt is when its rows were last derived under Mapping.
	DerivedAt time.Time
}

// TableMappings returns the recorded mapping of each table, by table.
func (s *Store) TableMappings(ctx context.Context) (map[string]TableMapping, error) {
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT table_name, mapping, field_map, derived_at FROM %s`, s.id("table_mappings")))
	if err != nil {
		return nil, fmt.Errorf("read table mappings: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TableMapping, error) {
		var m TableMapping
		return m, r.Scan(&m.Table, &m.Mapping, &m.FieldMap, &m.DerivedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("read table mappings: %w", err)
	}
	out := make(map[string]TableMapping, len(list))
	for _, m := range list {
		out[m.Table] = m
	}
	return out, nil
}

// SetTableMappings records that the tables' rows are derived under their
// mappings, now: a new or changed mapping gets derived_at now, an unchanged
// one only _synced_at (it was checked).
func (s *Store) SetTableMappings(ctx context.Context, ms []TableMapping) error {
	if len(ms) == 0 {
		return nil
	}
	tables := make([]string, len(ms))
	mappings := make([]string, len(ms))
	fieldMaps := make([]string, len(ms))
	for i, m := range ms {
		tables[i], mappings[i], fieldMaps[i] = m.Table, m.Mapping, m.FieldMap
	}
	_, err := s.pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s AS t (table_name, mapping, field_map)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
ON CONFLICT (table_name) DO UPDATE SET mapping = EXCLUDED.mapping, field_map = EXCLUDED.field_map,
	derived_at = CASE WHEN t.mapping = EXCLUDED.mapping THEN t.derived_at ELSE now() END, _synced_at = now()`,
		s.id("table_mappings")), tables, mappings, fieldMaps)
	if err != nil {
		return fmt.Errorf("record table mappings: %w", err)
	}
	return nil
}

// rekey records, in a rebuild page's transaction, the list hashes of
// entities re-derived under a new field map (see Page.Rekeyed): a detail
// that was current under the old hash stays current under the new one,
// one that was due stays due.
func (d *DetailState) rekey(ctx context.Context, tx pgx.Tx, stream string, entries []ListedEntity) error {
	if len(entries) == 0 {
		return nil
	}
	ids, hashes := columnsOf(entries)
	_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s AS d SET list_hash = u.h, _synced_at = now(),
	detail_hash = CASE WHEN d.detail_hash = d.list_hash THEN u.h ELSE d.detail_hash END
FROM unnest($2::text[], $3::text[]) AS u(id, h)
WHERE d.stream = $1 AND d.entity_id = u.id AND d.list_hash IS DISTINCT FROM u.h`, d.table), stream, ids, hashes)
	if err != nil {
		return fmt.Errorf("re-key listed %s: %w", stream, err)
	}
	return nil
}
