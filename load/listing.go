package load

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/transform"
)

// ErrIncompleteListing means a listing saw a rejected record without a key,
// so it cannot tell which stored rows are really gone: MarkDeleted refuses.
var ErrIncompleteListing = errors.New("listing saw a rejected record without key")

// ErrShortListing means a listing saw fewer distinct rows than the total the
// service announced for it (paging fields that lie, rows that moved between
// pages): MarkDeleted refuses, since the rows it did not see may exist. It
// wraps ErrIncompleteListing, so a page that ends such a listing commits
// without deletions.
var ErrShortListing = fmt.Errorf("listing saw fewer rows than the service announced (%w)", ErrIncompleteListing)

// Listing collects the keys seen by one complete listing of a soft-deletable
// table (a list's table, or one entity's rows of a list asked per entity),
// across its pages. Rejected records with a key count as seen: a record the
// warehouse could not load is not a deleted one. The Store owns its state:
// a committed ListPage adds its rows and announced total, a ListEnd or a
// DetailPage ends it; its owner only reads it.
type Listing struct {
	spec     *spec
	scope    []scopeValue
	seen     map[rowKey]struct{}
	rejected map[string]struct{} // keys of the rejects of the table's stream received
	unkeyed  int
	expected int // the largest total the service announced for the listing
}

type scopeValue struct {
	col   column
	value any
}

// NewListing starts a listing of table. scope restricts it to the rows whose
// columns equal the given values, e.g. {"brand_id": "42"} for one brand's
// rows of a list asked per entity or {"level": "project"} for
// project-level profitability; nil means the whole table.
func (s *Store) NewListing(table string, scope map[string]any) (*Listing, error) {
	t, ok := s.byName[table]
	if !ok || !t.softDelete {
		return nil, fmt.Errorf("start listing: %q is not a table with soft deletes", table)
	}
	l := &Listing{spec: t.spec, seen: make(map[rowKey]struct{}), rejected: make(map[string]struct{})}
	for _, name := range slices.Sorted(maps.Keys(scope)) {
		i := slices.IndexFunc(t.columns(), func(c column) bool { return c.name == name })
		if i < 0 {
			return nil, fmt.Errorf("start listing of %s: no column %q", table, name)
		}
		l.scope = append(l.scope, scopeValue{col: t.columns()[i], value: scope[name]})
	}
	return l, nil
}

// String names the listing: its table, and its scope in brackets
// ("profitability[level=brand]").
func (l *Listing) String() string {
	if len(l.scope) == 0 {
		return l.spec.name
	}
	parts := make([]string, len(l.scope))
	for i, sc := range l.scope {
		parts[i] = fmt.Sprintf("%s=%v", sc.col.name, sc.value)
	}
	return l.spec.name + "[" + strings.Join(parts, ",") + "]"
}

// Seen returns the number of distinct keys seen so far.
func (l *Listing) Seen() int { return len(l.seen) }

// expect records the total number of rows the service announced for the
// listing (a page's total); the largest one counts. 0 announces nothing.
func (l *Listing) expect(total int) { l.expected = max(l.expected, total) }

// Expected is the largest total announced (0 when none was).
func (l *Listing) Expected() int { return l.expected }

// Short reports whether the listing saw fewer distinct rows (keyed, plus
// rejected ones without a key) than the service announced: then it must not
// soft-delete.
func (l *Listing) Short() bool { return len(l.seen)+l.unkeyed < l.expected }

// see records the keys of b's rows of the listing's table, and of b's
// rejects of the table's stream, once the page carrying them committed.
func (l *Listing) see(b *transform.Batch) {
	if rows, err := l.spec.rows(b); err == nil {
		for _, r := range rows {
			var k rowKey
			copy(k[:], r[:len(l.spec.key)])
			l.seen[k] = struct{}{}
		}
	}
	for _, r := range b.Rejects {
		if r.Stream != l.spec.stream {
			continue
		}
		l.rejected[r.Key] = struct{}{}
		vals, ok := l.spec.rejectKey(r.Key)
		if !ok {
			l.unkeyed++
			continue
		}
		var k rowKey
		copy(k[:], vals)
		l.seen[k] = struct{}{}
	}
}

// with returns a copy of l that has also seen b.
func (l *Listing) with(b *transform.Batch) *Listing {
	c := &Listing{spec: l.spec, scope: l.scope, seen: maps.Clone(l.seen), rejected: maps.Clone(l.rejected),
		unkeyed: l.unkeyed, expected: l.expected}
	c.see(b)
	return c
}

// MarkDeleted ends a complete listing: rows of its table (within its scope)
// that it did not see get _deleted_at (and _synced_at) set to the
// transaction's time; rows already marked keep their time. Rows are never
// removed, and the merge clears _deleted_at of a row that comes back.
//
// When the unseen rows are more than the store's MassDeleteShare of the
// table's live rows (an empty listing of a table that held rows, say), those
// an earlier listing of the same scope left out too (its
// delete_candidates) are marked, and the rest, if still more than the
// share, become the listing's candidates, marked when the next listing
// agrees; the returned HeldDeletion says so. Otherwise the listing's
// candidates are cleared. It returns the number of rows
// marked, or ErrIncompleteListing (or ErrShortListing, which wraps it).
//
// The unseen rows are found with a set difference (EXCEPT) of the stored
// keys and the seen ones, then updated through the primary key. EXCEPT is
// computed by hashing or sorting both inputs once, whatever the planner
// believes about their sizes, so the statement does not depend on
// statistics: an anti-join (NOT EXISTS … unnest …) may be planned, on a
// table filled seconds earlier and never analysed, as a nested loop that
// re-scans the seen keys for every stored row, thousands of times slower
// at 20 000 rows. TestStatementsPlanWithoutStatistics checks the plan's
// shape.
func (s *Store) MarkDeleted(ctx context.Context, tx pgx.Tx, l *Listing) (int64, *HeldDeletion, error) {
	return s.markDeleted(ctx, tx, l, "")
}

// HeldDeletion is a listing whose unseen rows were too many to mark at
// once (see MarkDeleted).
type HeldDeletion struct {
	// Listing names the listing (Listing.String).
	Listing string
	// Table is the listing's table.
	Table string
	// Held is the rows recorded as candidates, Live the table's live rows
	// before the listing ended, Confirmed the earlier candidates marked now.
	Held, Live, Confirmed int
	// Share is the share of Live a listing may mark at once.
	Share float64
}

func (s *Store) markDeleted(ctx context.Context, tx pgx.Tx, l *Listing, runID string) (int64, *HeldDeletion, error) {
	if l.unkeyed > 0 {
		return 0, nil, fmt.Errorf("mark deleted in %s: %w", l, ErrIncompleteListing)
	}
	if l.Short() {
		return 0, nil, fmt.Errorf("mark deleted in %s: %w: saw %d of %d", l, ErrShortListing, len(l.seen), l.expected)
	}
	fail := func(err error) (int64, *HeldDeletion, error) {
		return 0, nil, fmt.Errorf("mark deleted in %s: %w", l, err)
	}
	t := s.byName[l.spec.name]
	gone, err := s.goneKeys(ctx, tx, l)
	if err != nil {
		return fail(err)
	}
	cand := &candidates{store: s, table: t, scope: l.scopeText()}
	if len(gone) == 0 {
		return 0, nil, cand.clear(ctx, tx)
	}
	var live int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+t.target.Sanitize()+" WHERE _deleted_at IS NULL").Scan(&live); err != nil {
		return fail(err)
	}
	within := func(n int) bool { return float64(n) <= s.massShare*float64(live) }
	var confirmed, fresh [][]string
	if within(len(gone)) {
		fresh = gone
	} else {
		earlier, err := cand.read(ctx, tx)
		if err != nil {
			return fail(err)
		}
		for _, k := range gone {
			if earlier[strings.Join(k, "\x00")] {
				confirmed = append(confirmed, k)
			} else {
				fresh = append(fresh, k)
			}
		}
	}
	if within(len(fresh)) {
		// The rows earlier listings left out too, and few new ones.
		n, err := s.markKeys(ctx, tx, t, gone)
		if err != nil {
			return fail(err)
		}
		return n, nil, cand.clear(ctx, tx)
	}
	n, err := s.markKeys(ctx, tx, t, confirmed)
	if err != nil {
		return fail(err)
	}
	if err := cand.replace(ctx, tx, fresh, runID); err != nil {
		return fail(err)
	}
	if len(fresh) == 0 {
		return n, nil, nil
	}
	return n, &HeldDeletion{Listing: l.String(), Table: t.name, Held: len(fresh), Live: live, Confirmed: int(n), Share: s.massShare}, nil
}

// Unseen counts the live rows of l's table within its scope that l has
// not seen so far: those its end would soft-delete (or hold as candidates).
func (s *Store) Unseen(ctx context.Context, l *Listing) (int, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, fmt.Errorf("count unseen rows of %s: %w", l, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	gone, err := s.goneKeys(ctx, tx, l)
	if err != nil {
		return 0, fmt.Errorf("count unseen rows of %s: %w", l, err)
	}
	return len(gone), nil
}

// goneKeys are the keys, as text, of the live rows of l's table within its
// scope that l did not see.
func (s *Store) goneKeys(ctx context.Context, tx pgx.Tx, l *Listing) ([][]string, error) {
	t := s.byName[l.spec.name]
	q := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	var conds, arrays, stored, names, texts []string
	var args []any
	keys := make([][]any, 0, len(l.seen))
	for k := range l.seen {
		keys = append(keys, k[:len(t.key)])
	}
	keyArrays, err := t.keyArrays(keys)
	if err != nil {
		return nil, err
	}
	for i, c := range t.key {
		args = append(args, keyArrays[i])
		arrays = append(arrays, fmt.Sprintf("$%d::%s[]", len(args), c.typ))
		stored = append(stored, "s."+q(c.name))
		names = append(names, q(c.name))
		texts = append(texts, "gone."+q(c.name)+"::text")
	}
	for _, sc := range l.scope {
		args = append(args, sc.value)
		conds = append(conds, fmt.Sprintf("s.%s = $%d::%s", q(sc.col.name), len(args), sc.col.typ))
	}
	sql := fmt.Sprintf(`SELECT ARRAY[%s] FROM (SELECT %s FROM %s AS s WHERE s._deleted_at IS NULL%s
	EXCEPT SELECT * FROM unnest(%s)) AS gone(%s)`,
		strings.Join(texts, ", "), strings.Join(stored, ", "), t.target.Sanitize(), prefixAll(" AND ", conds),
		strings.Join(arrays, ", "), strings.Join(names, ", "))
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[[]string])
}

// keyColumns passes keys (as text, in key order) as one text array per key
// column: the arguments from $first on, and the unnest expression and
// column names that read them.
func keyColumns(t *table, keys [][]string, first int) (args []any, unnest string, names []string) {
	var arrays []string
	for i, c := range t.key {
		col := make([]string, len(keys))
		for j, k := range keys {
			col[j] = k[i]
		}
		args = append(args, col)
		arrays = append(arrays, fmt.Sprintf("$%d::text[]", first+i))
		names = append(names, pgx.Identifier{c.name}.Sanitize())
	}
	return args, "unnest(" + strings.Join(arrays, ", ") + ")", names
}

// markKeys marks the live rows of t with the given keys deleted.
func (s *Store) markKeys(ctx context.Context, tx pgx.Tx, t *table, keys [][]string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	args, unnest, names := keyColumns(t, keys, 1)
	var match []string
	for i, c := range t.key {
		match = append(match, fmt.Sprintf("t.%s = gone.%s::%s", names[i], names[i], c.typ))
	}
	sql := fmt.Sprintf(`UPDATE %s AS t SET _deleted_at = now(), _synced_at = now()
FROM %s AS gone(%s)
WHERE %s AND t._deleted_at IS NULL`, t.target.Sanitize(), unnest, strings.Join(names, ", "), strings.Join(match, " AND "))
	tag, err := tx.Exec(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// candidates are the delete_candidates of one listing (table and scope).
type candidates struct {
	store *Store
	table *table
	scope string
}

func (c *candidates) name() string {
	return pgx.Identifier{c.store.schema, "delete_candidates"}.Sanitize()
}

// clear forgets the listing's candidates.
func (c *candidates) clear(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "DELETE FROM "+c.name()+" WHERE table_name = $1 AND scope = $2", c.table.name, c.scope)
	if err != nil {
		return fmt.Errorf("clear delete candidates: %w", err)
	}
	return nil
}

// read returns the listing's candidates, keys joined by NUL.
func (c *candidates) read(ctx context.Context, tx pgx.Tx) (map[string]bool, error) {
	rows, err := tx.Query(ctx, "SELECT row_key FROM "+c.name()+" WHERE table_name = $1 AND scope = $2", c.table.name, c.scope)
	if err != nil {
		return nil, fmt.Errorf("read delete candidates: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
	if err != nil {
		return nil, fmt.Errorf("read delete candidates: %w", err)
	}
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[strings.Join(k, "\x00")] = true
	}
	return out, nil
}

// replace makes keys the listing's candidates, first left out by run.
func (c *candidates) replace(ctx context.Context, tx pgx.Tx, keys [][]string, run string) error {
	if err := c.clear(ctx, tx); err != nil || len(keys) == 0 {
		return err
	}
	args, unnest, names := keyColumns(c.table, keys, 4)
	sql := fmt.Sprintf(`INSERT INTO %s (table_name, scope, row_key, first_run)
SELECT $1, $2, ARRAY[%s], NULLIF($3, '') FROM %s AS k(%s)`, c.name(), "k."+strings.Join(names, ", k."), unnest, strings.Join(names, ", "))
	if _, err := tx.Exec(ctx, sql, append([]any{c.table.name, c.scope, run}, args...)...); err != nil {
		return fmt.Errorf("record delete candidates: %w", err)
	}
	return nil
}

// scopeText is the listing's scope as delete_candidates keeps it:
// "brand_id=42", "" for the whole table.
func (l *Listing) scopeText() string {
	parts := make([]string, len(l.scope))
	for i, sc := range l.scope {
		parts[i] = fmt.Sprintf("%s=%v", sc.col.name, sc.value)
	}
	return strings.Join(parts, ",")
}

func prefixAll(prefix string, parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(prefix)
		b.WriteString(p)
	}
	return b.String()
}
