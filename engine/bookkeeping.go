package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/load"
)

// bookkeeping holds the engine's own SQL: detail_state (which details are
// due, its statements in load.DetailState), stream resets and the figures the planner estimates from. Tables are
// qualified with the warehouse schema.
type bookkeeping struct {
	schema  string
	details *load.DetailState
}

func newBookkeeping(schema string) (*bookkeeping, error) {
	ds, err := load.NewDetailState(schema)
	if err != nil {
		return nil, err
	}
	return &bookkeeping{schema: schema, details: ds}, nil
}

func (b *bookkeeping) t(name string) string { return pgx.Identifier{b.schema, name}.Sanitize() }

// listEntry is one brand or project as listed, for detail_state.
type listEntry = load.ListedEntity

// recordListed upserts the list hashes of a page's entities inside the page's
// transaction (see load.DetailState.RecordListed).
func (b *bookkeeping) recordListed(ctx context.Context, tx pgx.Tx, stream string, entries []listEntry) error {
	return b.details.RecordListed(ctx, tx, stream, entries)
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
type dueDetail = load.DueDetail

// dueDetails lists the listed entities whose detail-owned list fields changed
// since their detail was fetched, whose staggered refresh day is today, or
// whose detail is older than maxAge, stalest first (see load.DetailState).
func (b *bookkeeping) dueDetails(ctx context.Context, pool *pgxpool.Pool, stream string, maxAge time.Duration, now time.Time) ([]dueDetail, error) {
	return b.details.Due(ctx, pool, stream, load.RefreshPolicy{MaxAge: maxAge, Now: now})
}

// countDue counts what dueDetails would return.
func (b *bookkeeping) countDue(ctx context.Context, pool *pgxpool.Pool, stream string, maxAge time.Duration, now time.Time) (int, error) {
	return b.details.CountDue(ctx, pool, stream, load.RefreshPolicy{MaxAge: maxAge, Now: now})
}

// detailFetched records, in the detail page's transaction, that the detail of
// an entity was fetched at instant at while its list entry had hash.
func (b *bookkeeping) detailFetched(ctx context.Context, tx pgx.Tx, stream, id, hash string, at time.Time) error {
	return b.details.Fetched(ctx, tx, stream, id, hash, at)
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
