package load

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/transform"
)

// table is a spec bound to one warehouse schema, with its SQL built once.
type table struct {
	*spec
	target   pgx.Identifier // schema.table
	stage    pgx.Identifier // pg_temp.<staging table>
	colNames []string

	createStage  []string // create the staging table (once per connection)
	keyProbe     probe    // is any key of the batch stored?
	parentProbe  probe    // child tables: has any parent of the batch stored children?
	mergeSQL     string   // staging → target, unchanged rows filtered out; returns (inserted, updated)
	deleteAbsent string   // child tables: delete the parents' children missing from staging
	deleteAll    string   // child tables: delete every child of the parents
}

// bindTable binds s to a warehouse schema and builds its statements.
func bindTable(schema string, s *spec) *table {
	t := &table{spec: s, target: pgx.Identifier{schema, s.name}, colNames: s.columnNames()}
	tgt := t.target.Sanitize()
	t.stage, t.createStage = stagingTable(schema, s, t.colNames)
	t.keyProbe = newProbe(tgt, s.key)
	if s.parent != "" {
		t.parentProbe = newProbe(tgt, s.key[:1])
		t.deleteAll, t.deleteAbsent = childDeletes(tgt, t.stage.Sanitize(), s)
	}
	t.mergeSQL = mergeStatement(tgt, t.stage.Sanitize(), s)
	return t
}

// quoteName quotes a column name for SQL.
func quoteName(name string) string { return pgx.Identifier{name}.Sanitize() }

// sameKey is the condition that rows a and b have the same values of cols.
func sameKey(a, b string, cols []column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = a + "." + quoteName(c.name) + " = " + b + "." + quoteName(c.name)
	}
	return strings.Join(parts, " AND ")
}

// stagingTable names the connection's staging table of s and returns the
// statements that create it. The name depends on the schema and the column
// list, so a connection never reuses one built for another schema or binary.
func stagingTable(schema string, s *spec, colNames []string) (pgx.Identifier, []string) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(schema + "\x00" + strings.Join(colNames, ",")))
	stageName := "agencysync_stage_" + s.name + "_" + strconv.FormatUint(h.Sum64(), 36)
	stage := pgx.Identifier{"pg_temp", stageName}
	var defs, external []string
	for _, c := range s.columns() {
		defs = append(defs, quoteName(c.name)+" "+c.typ)
		if c.typ == "jsonb" {
			external = append(external, "ALTER COLUMN "+quoteName(c.name)+" SET STORAGE EXTERNAL")
		}
	}
	create := []string{fmt.Sprintf("CREATE TEMP TABLE IF NOT EXISTS %s (%s) ON COMMIT DELETE ROWS",
		pgx.Identifier{stageName}.Sanitize(), strings.Join(defs, ", "))}
	// A value the staging table compressed would be copied into the target
	// as it is, with the server's default method instead of the target
	// column's (lz4 on raw, migration 00016): the records as received are
	// staged uncompressed, and the target compresses them its own way.
	if len(external) > 0 {
		create = append(create, fmt.Sprintf("ALTER TABLE %s %s", stage.Sanitize(), strings.Join(external, ", ")))
	}
	return stage, create
}

// childDeletes returns the statements of a child table that delete every
// child of the parents in $1, and those of them missing from the staging
// table. Children are found by = ANY over the parents: the planner sees how
// many there are and keeps to the index however large the table grows.
func childDeletes(tgt, stage string, s *spec) (all, absent string) {
	ofParents := fmt.Sprintf("t.%s = ANY($1::%s[])", quoteName(s.parent), s.key[0].typ)
	all = fmt.Sprintf("DELETE FROM %s AS t WHERE %s", tgt, ofParents)
	absent = fmt.Sprintf("DELETE FROM %s AS t WHERE %s AND NOT EXISTS (SELECT 1 FROM %s AS s WHERE %s)",
		tgt, ofParents, stage, sameKey("s", "t", s.key))
	return all, absent
}

// mergeStatement is the merge of the staging table into the target, which
// returns how many rows it inserted and updated. Rows whose stored version
// equals the staged one are removed by the anti-join before INSERT sees
// them, so an unchanged re-sync locks and writes nothing. Sticky columns
// keep the stored value where the batch has NULL. The ON CONFLICT branch
// repeats the comparison for a row that appeared after the join (another
// writer). The stored row is looked up per staged row in a LATERAL subquery
// that OFFSET 0 keeps from being flattened: the staging table has no
// statistics, and a hash join would read the whole target for every page.
func mergeStatement(tgt, stage string, s *spec) string {
	var insCols, selCols, keyNames []string
	for _, c := range s.key {
		insCols = append(insCols, quoteName(c.name))
		selCols = append(selCols, "s."+quoteName(c.name))
		keyNames = append(keyNames, quoteName(c.name))
	}
	for _, c := range s.cols {
		insCols = append(insCols, quoteName(c.name))
	}
	m := mergeValues(s)
	selCols = append(selCols, m.sel...)
	where := fmt.Sprintf("o.%s IS NULL", quoteName(s.key[0].name))
	conflict := "DO NOTHING"
	if len(m.old) > 0 {
		where += fmt.Sprintf(" OR (%s) IS DISTINCT FROM (%s)", strings.Join(m.old, ", "), strings.Join(m.new, ", "))
		conflict = fmt.Sprintf("DO UPDATE SET %s, _synced_at = EXCLUDED._synced_at WHERE (%s) IS DISTINCT FROM (%s)",
			strings.Join(m.sets, ", "), strings.Join(m.stored, ", "), strings.Join(m.excluded, ", "))
	}
	return fmt.Sprintf(`WITH w AS (
	INSERT INTO %s AS t (%s)
	SELECT %s FROM %s AS s LEFT JOIN LATERAL (SELECT * FROM %s AS o WHERE %s OFFSET 0) AS o ON true
	WHERE %s
	ON CONFLICT (%s) %s
	RETURNING (t.xmax = 0) AS inserted
) SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM w`,
		tgt, strings.Join(insCols, ", "),
		strings.Join(selCols, ", "), stage, tgt, sameKey("o", "s", s.key),
		where,
		strings.Join(keyNames, ", "), conflict)
}

// mergeLists are the value lists of the merge's non-key columns (and
// _deleted_at of a soft-deleting table), one entry a column.
type mergeLists struct {
	sel      []string // what the INSERT takes from the staged row s and the stored row o
	old, new []string // stored (o) and incoming values: a row is written when they differ
	sets     []string // the ON CONFLICT assignments
	stored   []string // the conflicting row's values (t) ...
	excluded []string // ... and the incoming ones, compared again under the lock
}

// mergeValues builds the merge's value lists of s: a sticky column keeps its
// stored value where the staged one is NULL, and a column with a fallback
// takes the fallback column's value where both are NULL.
func mergeValues(s *spec) mergeLists {
	var m mergeLists
	for _, c := range s.cols {
		name := quoteName(c.name)
		sel, ex := "s."+name, "EXCLUDED."+name
		if c.sticky {
			sel = fmt.Sprintf("coalesce(s.%s, o.%s)", name, name)
			ex = fmt.Sprintf("coalesce(EXCLUDED.%s, t.%s)", name, name)
		}
		if c.fallback != "" {
			sel = fmt.Sprintf("coalesce(s.%s, o.%s, s.%s)", name, name, quoteName(c.fallback))
		}
		m.sel = append(m.sel, sel)
		m.old = append(m.old, "o."+name)
		m.new = append(m.new, sel)
		m.sets = append(m.sets, name+" = "+ex)
		m.excluded = append(m.excluded, ex)
		m.stored = append(m.stored, "t."+name)
	}
	if s.softDelete {
		m.old = append(m.old, "o._deleted_at")
		m.new = append(m.new, "NULL::timestamptz")
		m.sets = append(m.sets, "_deleted_at = NULL")
		m.excluded = append(m.excluded, "NULL::timestamptz")
		m.stored = append(m.stored, "t._deleted_at")
	}
	return m
}

// write stores the table's rows of batch b in tx and returns what changed.
//
// Fast path (unless fast is false): when none of the rows is stored yet
// (and, for a child table whose parents the batch names, none of those
// parents has children stored), the rows are copied straight into the table;
// tables whose rows recur across pages (users) skip the probe. Otherwise the
// rows are copied into the connection's staging table and merged: new rows
// inserted, changed rows updated, unchanged rows not touched. For a child
// table, stored children of the named parents that the batch no longer holds
// are deleted.
func (t *table) write(ctx context.Context, tx pgx.Tx, b *transform.Batch, stages *stageSet, fast bool) (TableCounts, error) {
	rows, err := t.rows(b)
	if err != nil {
		return TableCounts{}, fmt.Errorf("encode %s: %w", t.name, err)
	}
	rows = t.dedupe(rows)
	parents, orphans, err := t.replacedParents(b, rows)
	if err != nil {
		return TableCounts{}, err
	}
	if len(rows) == 0 && parents == nil {
		return TableCounts{}, nil
	}
	exists := t.recurring || !fast
	if !exists {
		if exists, err = t.anyStored(ctx, tx, rows, parents, orphans); err != nil {
			return TableCounts{}, fmt.Errorf("write %s: %w", t.name, err)
		}
	}
	switch {
	case !exists:
		return t.copyNew(ctx, tx, rows)
	case len(rows) == 0: // the parents lost all their children
		tag, err := tx.Exec(ctx, t.deleteAll, parents)
		if err != nil {
			return TableCounts{}, fmt.Errorf("delete %s: %w", t.name, err)
		}
		return TableCounts{Deleted: tag.RowsAffected()}, nil
	}
	return t.merge(ctx, tx, rows, parents, stages)
}

// replacedParents returns, for a child table, the typed array of the
// parents whose children batch b replaces (nil when b names none), and
// whether rows hold children of parents b does not name (orphans).
func (t *table) replacedParents(b *transform.Batch, rows [][]any) (parents any, orphans bool, err error) {
	if t.parent == "" {
		return nil, false, nil
	}
	ps := t.parents(b)
	if len(ps) == 0 {
		return nil, false, nil
	}
	if parents, err = typedArray(t.key[0].typ, ps); err != nil {
		return nil, false, fmt.Errorf("encode %s parents: %w", t.name, err)
	}
	named := make(map[any]struct{}, len(ps))
	for _, p := range ps {
		named[p] = struct{}{}
	}
	for _, r := range rows {
		if _, ok := named[r[0]]; !ok {
			return parents, true, nil
		}
	}
	return parents, false, nil
}

// anyStored tells whether the fast path must give way to the merge: whether
// any of the named parents has children stored, or — when the batch names
// no parents, or holds orphans — whether any of the rows' keys is stored.
func (t *table) anyStored(ctx context.Context, tx pgx.Tx, rows [][]any, parents any, orphans bool) (bool, error) {
	if parents != nil {
		if exists, err := t.parentProbe.any(ctx, tx, parents); exists || err != nil {
			return exists, err
		}
	}
	if len(rows) == 0 || (parents != nil && !orphans) {
		return false, nil
	}
	keys, err := t.keyArrays(rows)
	if err != nil {
		return false, err
	}
	return t.keyProbe.any(ctx, tx, keys...)
}

// copyNew copies rows none of which is stored straight into the table.
func (t *table) copyNew(ctx context.Context, tx pgx.Tx, rows [][]any) (TableCounts, error) {
	if len(rows) == 0 {
		return TableCounts{}, nil
	}
	t.fillFallbacks(rows)
	n, err := tx.CopyFrom(ctx, t.target, t.colNames, pgx.CopyFromRows(rows))
	if err != nil {
		return TableCounts{}, fmt.Errorf("copy into %s: %w", t.name, err)
	}
	return TableCounts{Inserted: n}, nil
}

// merge copies rows into the connection's staging table and merges them
// into the table; for a child table, it then deletes the stored children of
// parents that the batch no longer holds.
func (t *table) merge(ctx context.Context, tx pgx.Tx, rows [][]any, parents any, stages *stageSet) (TableCounts, error) {
	var c TableCounts
	if err := stages.ensure(ctx, tx, t); err != nil {
		return c, err
	}
	if _, err := tx.CopyFrom(ctx, t.stage, t.colNames, pgx.CopyFromRows(rows)); err != nil {
		return c, fmt.Errorf("copy into staging of %s: %w", t.name, err)
	}
	if err := tx.QueryRow(ctx, t.mergeSQL).Scan(&c.Inserted, &c.Updated); err != nil {
		return c, fmt.Errorf("merge %s: %w", t.name, err)
	}
	if parents != nil {
		tag, err := tx.Exec(ctx, t.deleteAbsent, parents)
		if err != nil {
			return c, fmt.Errorf("delete replaced %s: %w", t.name, err)
		}
		c.Deleted = tag.RowsAffected()
	}
	return c, nil
}

// probe finds out whether any of a batch's values of some columns is stored,
// to choose the fast path. It looks the values up through an unnest join,
// which plans cheaply however many there are; a single integer column is
// first probed over the values' range, where one index descent answers
// "none" for pages of new ascending ids.
type probe struct {
	exists    string
	rangeOnly string // single bigint column: any row BETWEEN $1 AND $2?
}

func newProbe(tgt string, cols []column) probe {
	var arrays, names, on []string
	for i, c := range cols {
		n := pgx.Identifier{c.name}.Sanitize()
		arrays = append(arrays, fmt.Sprintf("$%d::%s[]", i+1, c.typ))
		names = append(names, n)
		on = append(on, "t."+n+" = k."+n)
	}
	p := probe{exists: fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM unnest(%s) AS k(%s) JOIN %s AS t ON %s)",
		strings.Join(arrays, ", "), strings.Join(names, ", "), tgt, strings.Join(on, " AND "))}
	if len(cols) == 1 && cols[0].typ == "bigint" {
		p.rangeOnly = fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM %s WHERE %s BETWEEN $1 AND $2)", tgt, names[0])
	}
	return p
}

// any reports whether a row with the given column values (one typed array
// per column) is stored.
func (p probe) any(ctx context.Context, tx pgx.Tx, arrays ...any) (bool, error) {
	if ids, ok := arrays[0].([]int64); ok && p.rangeOnly != "" {
		var inRange bool
		if err := tx.QueryRow(ctx, p.rangeOnly, slices.Min(ids), slices.Max(ids)).Scan(&inRange); err != nil {
			return false, fmt.Errorf("probe key range: %w", err)
		}
		if !inRange {
			return false, nil
		}
	}
	var exists bool
	if err := tx.QueryRow(ctx, p.exists, arrays...).Scan(&exists); err != nil {
		return false, fmt.Errorf("probe keys: %w", err)
	}
	return exists, nil
}

// stageSet tracks the staging tables of one connection. They are temporary
// ON COMMIT DELETE ROWS tables, created when a table first needs one (most
// pages of a backfill need none) and kept for the connection's life: empty
// at every transaction's start and never WAL-logged. A table created by a
// transaction that rolls back is gone again, so it counts as known only
// once its transaction has committed.
type stageSet struct {
	known map[string]any // the connection's pgconn CustomData
	fresh []string       // created by the current transaction
}

func (st *stageSet) ensure(ctx context.Context, tx pgx.Tx, t *table) error {
	key := "agencysync/load:" + t.stage.Sanitize()
	if st.known[key] != nil || slices.Contains(st.fresh, key) {
		return nil
	}
	for _, stmt := range t.createStage {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("create staging table of %s: %w", t.name, err)
		}
	}
	st.fresh = append(st.fresh, key)
	return nil
}

// committed records the tables created by the transaction that committed.
func (st *stageSet) committed() {
	for _, key := range st.fresh {
		st.known[key] = true
	}
	st.fresh = nil
}

// rolledBack forgets the tables created by the transaction that rolled back.
func (st *stageSet) rolledBack() { st.fresh = nil }

// fillFallbacks fills NULLs of fallback columns from their fallback column,
// as the merge does for rows that are not stored: for rows copied straight in.
func (t *table) fillFallbacks(rows [][]any) {
	for i, c := range t.cols {
		if c.fallback == "" {
			continue
		}
		at := len(t.key) + i
		from := len(t.key) + slices.IndexFunc(t.cols, func(o column) bool { return o.name == c.fallback })
		for _, r := range rows {
			if r[at] == nil {
				r[at] = r[from]
			}
		}
	}
}

// rowKey is a row's key values (at most four columns) as a map key.
type rowKey [4]any

func (t *table) keyOf(row []any) rowKey {
	var k rowKey
	copy(k[:], row[:len(t.key)])
	return k
}

// dedupe collapses rows with the same key, keeping the last one; a sticky
// column that is NULL in the later row keeps the earlier row's value.
func (t *table) dedupe(rows [][]any) [][]any {
	if len(rows) < 2 {
		return rows
	}
	index := make(map[rowKey]int, len(rows))
	out := rows[:0]
	for _, r := range rows {
		k := t.keyOf(r)
		i, ok := index[k]
		if !ok {
			index[k] = len(out)
			out = append(out, r)
			continue
		}
		prev := out[i]
		for j, c := range t.cols {
			if c.sticky && r[len(t.key)+j] == nil {
				r[len(t.key)+j] = prev[len(t.key)+j]
			}
		}
		out[i] = r
	}
	return out
}

// keyArrays returns one typed array per key column of rows.
func (t *table) keyArrays(rows [][]any) ([]any, error) {
	out := make([]any, len(t.key))
	vals := make([]any, len(rows))
	for i, c := range t.key {
		for j, r := range rows {
			vals[j] = r[i]
		}
		arr, err := typedArray(c.typ, vals)
		if err != nil {
			return nil, fmt.Errorf("encode %s keys: %w", t.name, err)
		}
		out[i] = arr
	}
	return out, nil
}
