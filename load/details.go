package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/stream"
)

// DetailState is the bookkeeping of the details and child lists of the
// entities of a list (table detail_state, by stream and entity id): which
// list entries changed since their detail was fetched, and which unchanged
// details are due for their staggered refresh.
//
// Refresh policy. A detail is due when
//   - its list entry changed: the hash of the entry's detail-owned fields
//     differs from the one its detail was fetched with (or it was never
//     fetched);
//   - it was not fetched since the start of its latest refresh day: every
//     entity has a fixed slot, seq mod D, where seq numbers entities in the
//     order they were first listed and D is the maximum age in whole days; its
//     refresh days are the days whose number (days since 1970-01-01, UTC) is
//     congruent to its slot. Consecutive seqs fill the slots evenly, so a
//     daily run refreshes at most ceil(N/D) details plus what changed, and no
//     detail ages past D days; a run after days without one (or that ran out
//     of budget) catches up on the slots of the days it missed;
//   - it is older than the maximum age (a safety net; with a maximum age
//     under a day, every detail is due daily and whenever it is that old).
type DetailState struct {
	schema string
	table  string
}

// NewDetailState returns the detail bookkeeping of schema.
func NewDetailState(schema string) (*DetailState, error) {
	if schema == "" {
		return nil, errors.New("create detail state: empty schema")
	}
	return &DetailState{schema: schema, table: pgx.Identifier{schema, "detail_state"}.Sanitize()}, nil
}

// ErrBadMaxAge is returned for a maximum detail age that is not positive.
var ErrBadMaxAge = errors.New("detail max age must be positive")

// RefreshPolicy is when unchanged details are refreshed: at most MaxAge old,
// staggered over the days of MaxAge.
type RefreshPolicy struct {
	// MaxAge is the maximum age of a detail (positive).
	MaxAge time.Duration
	// Now is the instant of the run (the engine's clock).
	Now time.Time
}

// refreshDay is the length of a refresh day; refresh days are UTC calendar
// days.
const refreshDay = 24 * time.Hour

// Days returns D, the number of refresh slots: MaxAge in whole days, at
// least 1 (a maximum age under a day refreshes every detail daily and
// whenever it is older than MaxAge).
func (p RefreshPolicy) Days() int64 { return max(1, int64(p.MaxAge/refreshDay)) }

// dayNumber is the number of the UTC day of t (days since 1970-01-01).
func dayNumber(t time.Time) int64 {
	s := t.Unix()
	n := s / 86400
	if s < 0 && s%86400 != 0 {
		n--
	}
	return n
}

func (p RefreshPolicy) args() (today, days int64, dayStart, overdue time.Time, err error) {
	if p.MaxAge <= 0 {
		return 0, 0, time.Time{}, time.Time{}, ErrBadMaxAge
	}
	today = dayNumber(p.Now)
	return today, p.Days(), time.Unix(today*86400, 0).UTC(), p.Now.Add(-p.MaxAge), nil
}

// dueWhere selects due entities: $1 stream, $2 today's day number, $3 D, $4
// the start of today, $5 the overdue cutoff. An entity's last refresh day is
// the latest day up to today whose number is congruent to seq modulo D: it
// is today ((today - seq) mod D = 0) or up to D-1 days ago, the days a
// worker that did not run then catches up on.
const dueWhere = `stream = $1 AND listed AND (detail_hash IS DISTINCT FROM list_hash
	OR detail_synced_at <= $5
	OR detail_synced_at < $4::timestamptz - ((($2::bigint - seq) % $3::bigint + $3) % $3) * interval '1 day')`

// ListedEntity is one entity as listed: its id and the hash of the list
// fields that belong to its detail (stream.Table.DetailFields).
type ListedEntity struct {
	ID   string
	Hash string
}

// columnsOf returns the ids and the list hashes of entries, in their order:
// the two arrays a statement unnests.
func columnsOf(entries []ListedEntity) (ids, hashes []string) {
	ids = make([]string, len(entries))
	hashes = make([]string, len(entries))
	for i, e := range entries {
		ids[i], hashes[i] = e.ID, e.Hash
	}
	return ids, hashes
}

// recordListed upserts the list hashes of a page's entities inside the page's
// transaction. Rows whose hash did not change and that are still listed are
// neither rewritten nor locked. A new entity takes the next seq, which
// decides its refresh slot.
func (d *DetailState) recordListed(ctx context.Context, tx pgx.Tx, stream string, entries []ListedEntity) error {
	if len(entries) == 0 {
		return nil
	}
	ids, hashes := columnsOf(entries)
	// Known entities are updated only when their hash changed or they
	// return (an UPDATE, not ON CONFLICT DO UPDATE, which would lock and so
	// write the rows it leaves alone, and would draw a seq for each of them:
	// seqs are drawn only by new entities, so consecutive ones fill the
	// refresh slots evenly).
	_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s AS d SET list_hash = u.h, list_seen_at = now(), listed = true, _synced_at = now(),
	detail_hash = CASE WHEN d.listed THEN d.detail_hash END -- a returning entity's detail is fetched again
FROM unnest($2::text[], $3::text[]) AS u(id, h)
WHERE d.stream = $1 AND d.entity_id = u.id AND (d.list_hash <> u.h OR NOT d.listed)`, d.table), stream, ids, hashes)
	if err != nil {
		return fmt.Errorf("record listed %s: %w", stream, err)
	}
	_, err = tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %[1]s (stream, entity_id, list_hash, list_seen_at, listed)
SELECT $1, id, h, now(), true FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(id, h, n)
WHERE NOT EXISTS (SELECT 1 FROM %[1]s AS o WHERE o.stream = $1 AND o.entity_id = u.id)
ORDER BY u.n
ON CONFLICT (stream, entity_id) DO NOTHING`, d.table), stream, ids, hashes)
	if err != nil {
		return fmt.Errorf("record listed %s: %w", stream, err)
	}
	return nil
}

// DueDetail is an entity whose detail must be fetched, with the list hash
// to record once it is.
type DueDetail struct {
	ID   string
	Hash string
	// Base is the entity's list record as its table stores it (see
	// ListRecords; nil when Due was not asked for it, or the entity has no
	// row): the detail's stream.Record.Base, which the detail's row reads
	// the fields it leaves out from.
	Base json.RawMessage
}

// ListRecords says where the entities of a stream keep their list records:
// the entity table (stream.Stream.Entities), its key column (and that
// column's SQL type) and the column that holds an entity's record as its
// list served it. The zero value names none.
type ListRecords struct {
	Table, Key, KeyType, Raw string
}

// ListRecordsOf returns where the entities of s keep their list records:
// the column of the entity table that holds the record as received
// (stream.DerivedRecord) and that the entity list fills. It is the zero
// ListRecords when s has no entity list, or its table keeps no list record
// or has a key of several columns.
func ListRecordsOf(s *stream.Stream) ListRecords {
	l, t, ok := s.Entities()
	if !ok || len(t.Key()) != 1 {
		return ListRecords{}
	}
	key := t.Key()[0]
	for _, c := range t.Columns {
		if c.Derived == stream.DerivedRecord && c.FillsFrom(l.Endpoint) {
			return ListRecords{Table: t.Name, Key: key.Name, KeyType: key.Type.SQL(), Raw: c.Name}
		}
	}
	return ListRecords{}
}

// Due lists the entities of stream whose detail is due under p (see
// DetailState), stalest first; with records set, each with its stored list
// record (DueDetail.Base).
//
// The list records are read by a left join of the due entities to their
// table on its primary key. Both tables may have been filled seconds
// earlier by a first sync and never analysed; the join must then not be
// planned as a nested loop that re-reads a whole table per due entity —
// without statistics PostgreSQL probes the key's index per due entity —
// which TestDueWithListRecordsPlansWithoutStatistics checks at 20 000
// projects. The records are held while the details are fetched: a few
// hundred bytes an entity (4 000 projects: about 2 MB).
func (d *DetailState) Due(ctx context.Context, pool *pgxpool.Pool, stream string, p RefreshPolicy, records ListRecords) ([]DueDetail, error) {
	today, days, dayStart, overdue, err := p.args()
	if err != nil {
		return nil, fmt.Errorf("list due details of %s: %w", stream, err)
	}
	rows, err := pool.Query(ctx, d.dueSQL(records), stream, today, days, dayStart, overdue)
	if err != nil {
		return nil, fmt.Errorf("list due details of %s: %w", stream, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DueDetail, error) {
		var dd DueDetail
		if records.Table == "" {
			return dd, r.Scan(&dd.ID, &dd.Hash)
		}
		var base []byte
		err := r.Scan(&dd.ID, &dd.Hash, &base)
		if len(base) > 0 {
			dd.Base = json.RawMessage(base)
		}
		return dd, err
	})
	if err != nil {
		return nil, fmt.Errorf("list due details of %s: %w", stream, err)
	}
	return out, nil
}

// dueSQL is Due's statement: the due entities (dueWhere), each with the
// list record records names when set.
func (d *DetailState) dueSQL(records ListRecords) string {
	if records.Table == "" {
		return fmt.Sprintf(`SELECT entity_id, list_hash FROM %s WHERE %s
ORDER BY detail_synced_at NULLS FIRST, entity_id`, d.table, dueWhere)
	}
	entities := pgx.Identifier{d.schema, records.Table}.Sanitize()
	key, raw := pgx.Identifier{records.Key}.Sanitize(), pgx.Identifier{records.Raw}.Sanitize()
	// The due rows are selected apart (dueWhere's columns are
	// detail_state's), then joined by the entity table's key.
	return fmt.Sprintf(`SELECT d.entity_id, d.list_hash, x.%[4]s
FROM (SELECT entity_id, list_hash, detail_synced_at FROM %[1]s WHERE %[2]s) AS d
LEFT JOIN %[3]s AS x ON x.%[5]s = d.entity_id::%[6]s
ORDER BY d.detail_synced_at NULLS FIRST, d.entity_id`, d.table, dueWhere, entities, raw, key, records.KeyType)
}

// CountDue counts what Due would return.
func (d *DetailState) CountDue(ctx context.Context, pool *pgxpool.Pool, stream string, p RefreshPolicy) (int, error) {
	today, days, dayStart, overdue, err := p.args()
	if err != nil {
		return 0, fmt.Errorf("count due details of %s: %w", stream, err)
	}
	var n int
	err = pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s`, d.table, dueWhere),
		stream, today, days, dayStart, overdue).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count due details of %s: %w", stream, err)
	}
	return n, nil
}

// fetched records, in the detail page's transaction, that the detail of an
// entity was fetched at instant at (the engine's clock) while its list entry
// had hash.
func (d *DetailState) fetched(ctx context.Context, tx pgx.Tx, stream, id, hash string, at time.Time) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s SET detail_hash = $3, detail_synced_at = $4, _synced_at = now()
WHERE stream = $1 AND entity_id = $2`, d.table), stream, id, hash, at)
	if err != nil {
		return fmt.Errorf("record detail of %s %s: %w", stream, id, err)
	}
	return nil
}

// unlistedTables is Unlisted as markUnlisted runs it: each table
// qualified, with the column holding the entity's id.
type unlistedTables struct {
	entities, key string
	children      [][2]string // table, column
}

// unlistedOf resolves u against the Store's tables (an unknown table, or a
// child table without a column taking the entity's id, is left out: the
// stream's declaration was checked at start-up).
func (s *Store) unlistedOf(u *Unlisted) unlistedTables {
	out := unlistedTables{}
	if t, ok := s.byName[u.Table]; ok {
		out.entities, out.key = t.target.Sanitize(), pgx.Identifier{t.key[0].name}.Sanitize()
	}
	for _, name := range u.Children {
		if t, ok := s.byName[name]; ok && t.paramKey != "" {
			out.children = append(out.children, [2]string{t.target.Sanitize(), pgx.Identifier{t.paramKey}.Sanitize()})
		}
	}
	return out
}

// markUnlisted marks as unlisted the entities of stream the warehouse
// soft-deleted in u's entity table — after a complete listing's
// MarkDeleted, in the same transaction — so their details are no longer
// fetched; the rows of their child lists are soft-deleted with them (they
// come back with the entity's next detail).
func (d *DetailState) markUnlisted(ctx context.Context, tx pgx.Tx, stream string, u unlistedTables) error {
	if u.entities == "" {
		return nil
	}
	_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s AS d SET listed = false, _synced_at = now()
FROM %s AS x WHERE d.stream = $1 AND d.listed AND x.%s = d.entity_id AND x._deleted_at IS NOT NULL`,
		d.table, u.entities, u.key), stream)
	if err != nil {
		return fmt.Errorf("record unlisted %s: %w", stream, err)
	}
	for _, c := range u.children {
		_, err = tx.Exec(ctx, fmt.Sprintf(`UPDATE %s AS c SET _deleted_at = now(), _synced_at = now()
FROM %s AS x WHERE x.%s = c.%s AND x._deleted_at IS NOT NULL AND c._deleted_at IS NULL`,
			c[0], u.entities, u.key, c[1]))
		if err != nil {
			return fmt.Errorf("soft-delete the child rows of deleted %s: %w", stream, err)
		}
	}
	return nil
}
