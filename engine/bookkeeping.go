package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// bookkeeping holds the engine's own SQL: detail_state (which details are
// due), stream resets and the figures the planner estimates from. Tables are
// qualified with the warehouse schema.
type bookkeeping struct {
	schema string
}

func newBookkeeping(schema string) *bookkeeping { return &bookkeeping{schema: schema} }

func (b *bookkeeping) t(name string) string { return pgx.Identifier{b.schema, name}.Sanitize() }

// listEntry is one brand or project as listed, for detail_state.
type listEntry struct {
	ID   string
	Hash string
}

// hashRaw is the content hash of a list entry.
func hashRaw(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// recordListed upserts the list hashes of a page's entities inside the page's
// transaction. Rows whose hash did not change and that are still listed are
// neither rewritten nor locked.
func (b *bookkeeping) recordListed(ctx context.Context, tx pgx.Tx, stream string, entries []listEntry) error {
	if len(entries) == 0 {
		return nil
	}
	ids := make([]string, len(entries))
	hashes := make([]string, len(entries))
	for i, e := range entries {
		ids[i], hashes[i] = e.ID, e.Hash
	}
	// Unchanged entries are filtered out before the upsert: ON CONFLICT DO
	// UPDATE locks the rows its WHERE refuses, which writes them (xmax) and
	// their WAL on every run.
	_, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %[1]s AS d (stream, entity_id, list_hash, list_seen_at, listed)
SELECT $1, id, h, now(), true FROM unnest($2::text[], $3::text[]) AS u(id, h)
WHERE NOT EXISTS (SELECT 1 FROM %[1]s AS o WHERE o.stream = $1 AND o.entity_id = u.id AND o.list_hash = u.h AND o.listed)
ON CONFLICT (stream, entity_id) DO UPDATE SET list_hash = EXCLUDED.list_hash, list_seen_at = now(), listed = true, _synced_at = now(),
	detail_hash = CASE WHEN d.listed THEN d.detail_hash END -- a returning entity's detail is fetched again
WHERE d.list_hash <> EXCLUDED.list_hash OR NOT d.listed`, b.t("detail_state")), stream, ids, hashes)
	if err != nil {
		return fmt.Errorf("record listed %s: %w", stream, err)
	}
	return nil
}

// syncUnlisted marks as unlisted the entities the warehouse soft-deleted
// (after a complete listing's MarkDeleted, in the same transaction), so their
// details are no longer fetched; the contacts of a deleted brand are
// soft-deleted with it (they come back with its next detail).
func (b *bookkeeping) syncUnlisted(ctx context.Context, tx pgx.Tx, stream string) error {
	table, key := "brands", "brand_id"
	if stream == StreamProjects {
		table, key = "projects", "project_id"
	}
	_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s AS d SET listed = false, _synced_at = now()
FROM %s AS x WHERE d.stream = $1 AND d.listed AND x.%s = d.entity_id AND x._deleted_at IS NOT NULL`,
		b.t("detail_state"), b.t(table), pgx.Identifier{key}.Sanitize()), stream)
	if err != nil {
		return fmt.Errorf("record unlisted %s: %w", stream, err)
	}
	if stream == StreamBrands {
		_, err = tx.Exec(ctx, fmt.Sprintf(`UPDATE %s AS c SET _deleted_at = now(), _synced_at = now()
FROM %s AS b WHERE b.brand_id = c.brand_id AND b._deleted_at IS NOT NULL AND c._deleted_at IS NULL`,
			b.t("brand_contacts"), b.t("brands")))
		if err != nil {
			return fmt.Errorf("soft-delete contacts of deleted brands: %w", err)
		}
	}
	return nil
}

// dueDetail is an entity whose detail must be fetched.
type dueDetail struct {
	ID   string
	Hash string
}

// dueDetails lists the listed entities whose list entry changed since their
// detail was fetched, or whose detail is older than maxAge, stalest first.
func (b *bookkeeping) dueDetails(ctx context.Context, pool *pgxpool.Pool, stream string, maxAge time.Duration) ([]dueDetail, error) {
	rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT entity_id, list_hash FROM %s
WHERE stream = $1 AND listed AND (detail_hash IS DISTINCT FROM list_hash OR detail_synced_at < now() - $2::interval)
ORDER BY detail_synced_at NULLS FIRST, entity_id`, b.t("detail_state")), stream, maxAge.String())
	if err != nil {
		return nil, fmt.Errorf("list due details of %s: %w", stream, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dueDetail, error) {
		var d dueDetail
		return d, r.Scan(&d.ID, &d.Hash)
	})
	if err != nil {
		return nil, fmt.Errorf("list due details of %s: %w", stream, err)
	}
	return out, nil
}

// countDue counts what dueDetails would return.
func (b *bookkeeping) countDue(ctx context.Context, pool *pgxpool.Pool, stream string, maxAge time.Duration) (int, error) {
	var n int
	err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s
WHERE stream = $1 AND listed AND (detail_hash IS DISTINCT FROM list_hash OR detail_synced_at < now() - $2::interval)`,
		b.t("detail_state")), stream, maxAge.String()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count due details of %s: %w", stream, err)
	}
	return n, nil
}

// detailFetched records, in the detail page's transaction, that the detail of
// an entity was fetched while its list entry had hash.
func (b *bookkeeping) detailFetched(ctx context.Context, tx pgx.Tx, stream, id, hash string) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s SET detail_hash = $3, detail_synced_at = now(), _synced_at = now()
WHERE stream = $1 AND entity_id = $2`, b.t("detail_state")), stream, id, hash)
	if err != nil {
		return fmt.Errorf("record detail of %s %s: %w", stream, id, err)
	}
	return nil
}

// resetStream forgets a stream's state, so its next sync starts from scratch
// (a full refresh). Warehouse rows stay; the refresh rewrites only what changed.
func (b *bookkeeping) resetStream(ctx context.Context, pool *pgxpool.Pool, stream string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE stream = $1", b.t("sync_state")), stream); err != nil {
			return fmt.Errorf("reset state of %s: %w", stream, err)
		}
		if stream == StreamBrands || stream == StreamProjects {
			if _, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET detail_hash = NULL WHERE stream = $1", b.t("detail_state")), stream); err != nil {
				return fmt.Errorf("reset details of %s: %w", stream, err)
			}
		}
		return nil
	})
}

// liveCount counts the rows of a table that are not soft-deleted.
func (b *bookkeeping) liveCount(ctx context.Context, pool *pgxpool.Pool, table string, where string, args ...any) (int, error) {
	q := fmt.Sprintf("SELECT count(*) FROM %s WHERE _deleted_at IS NULL", b.t(table))
	if where != "" {
		q += " AND " + where
	}
	var n int
	if err := pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", table, err)
	}
	return n, nil
}

// closeDeadRuns marks as failed the runs still recorded as running: the
// caller holds the sync lock, so no such run is alive (its worker was
// killed or lost its database before recording its end).
func (b *bookkeeping) closeDeadRuns(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET status = 'failed', _synced_at = now(),
	error = coalesce(error || '; ', '') || 'the worker stopped without recording the end of the run (killed or lost its database)'
WHERE status = 'running'`, b.t("sync_runs")))
	if err != nil {
		return fmt.Errorf("close dead runs: %w", err)
	}
	return nil
}
