package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The engine's bookkeeping reads and writes: stream resets, live row
// counts, runs a dead worker left running, what an unfinished run
// completed, the status report's figures and the sync lock. The engine
// decides; the statements are here.

// ResetStream forgets the state of stream (every partition of sync_state),
// and the hashes its entities' details were fetched with (detail_state),
// so its next sync starts from scratch (a full refresh). Warehouse rows
// stay; the refresh rewrites only what changed.
func (s *Store) ResetStream(ctx context.Context, stream string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE stream = $1", s.id("sync_state")), stream); err != nil {
			return fmt.Errorf("reset state of %s: %w", stream, err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET detail_hash = NULL WHERE stream = $1", s.id("detail_state")), stream); err != nil {
			return fmt.Errorf("reset details of %s: %w", stream, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reset stream %s: %w", stream, err)
	}
	return nil
}

// ErrUnknownTable is returned for a table name the model does not have.
var ErrUnknownTable = errors.New("unknown table")

// LiveRows counts the rows of a soft-deletable table that are not deleted,
// restricted to the rows whose columns equal scope's values (nil: all),
// e.g. {"level": "project"} for project-level profitability.
func (s *Store) LiveRows(ctx context.Context, table string, scope map[string]any) (int, error) {
	t, ok := s.byName[table]
	if !ok || !t.softDelete {
		return 0, fmt.Errorf("count %s: %w (or without soft deletes)", table, ErrUnknownTable)
	}
	q := fmt.Sprintf("SELECT count(*) FROM %s WHERE _deleted_at IS NULL", t.target.Sanitize())
	var args []any
	for _, name := range slices.Sorted(maps.Keys(scope)) {
		if !slices.Contains(t.colNames, name) {
			return 0, fmt.Errorf("count %s: no column %q: %w", table, name, ErrUnknownTable)
		}
		args = append(args, scope[name])
		q += fmt.Sprintf(" AND %s = $%d", pgx.Identifier{name}.Sanitize(), len(args))
	}
	var n int
	if err := s.pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", table, err)
	}
	return n, nil
}

// CloseDeadRuns marks as failed the runs still recorded as running. Only a
// caller that holds the sync lock may call it: then no such run is alive
// (its worker was killed or lost its database before recording its end).
func (s *Store) CloseDeadRuns(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET status = 'failed', _synced_at = now(),
	error = coalesce(error || '; ', '') || 'the worker stopped without recording the end of the run (killed or lost its database)'
WHERE status = 'running'`, s.id("sync_runs")))
	if err != nil {
		return fmt.Errorf("close dead runs: %w", err)
	}
	return nil
}

// UnfinishedRunStarts returns the start of each run that did not complete
// since the last one that did (succeeded or warning: both ran every task;
// skipped runs aside; a "running" row while the caller holds the sync lock
// is a run that died), within the last two days, oldest first. Rebuilds (trigger rebuild) are no syncs and are not
// counted either way.
func (s *Store) UnfinishedRunStarts(ctx context.Context) ([]time.Time, error) {
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT started_at FROM %[1]s WHERE status <> 'skipped' AND trigger <> 'rebuild'
AND started_at > coalesce((SELECT max(started_at) FROM %[1]s WHERE status IN ('succeeded', 'warning') AND trigger <> 'rebuild'), '-infinity')
AND started_at > now() - interval '2 days' ORDER BY started_at`, s.id("sync_runs")))
	if err != nil {
		return nil, fmt.Errorf("read previous runs: %w", err)
	}
	starts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, fmt.Errorf("read previous runs: %w", err)
	}
	return starts, nil
}

// PartitionsSucceededSince returns which of stream's partitions last
// succeeded at or after since.
func (s *Store) PartitionsSucceededSince(ctx context.Context, stream string, partitions []string, since time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT partition FROM %s
WHERE stream = $1 AND partition = ANY($2) AND last_success_at >= $3`, s.id("sync_state")),
		stream, partitions, since)
	if err != nil {
		return nil, fmt.Errorf("read completed lists of %s: %w", stream, err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read completed lists of %s: %w", stream, err)
	}
	return parts, nil
}

// StreamInProgress reports whether a partition of stream holds a cursor
// that a run resumes: a date-windowed increment, an unfinished backfill, a
// manual range or a refresh range.
func (s *Store) StreamInProgress(ctx context.Context, stream string) (bool, error) {
	q := fmt.Sprintf(`SELECT bool_or(cursor::text NOT IN ('{}', 'null') AND (cursor ? 'increment' OR cursor->'backfill'->>'done' = 'false' OR cursor ? 'manual' OR cursor->'refresh' ? 'current'))
FROM %s WHERE stream = $1`, s.id("sync_state"))
	var inProgress *bool
	if err := s.pool.QueryRow(ctx, q, stream).Scan(&inProgress); err != nil {
		return false, fmt.Errorf("read state of %s: %w", stream, err)
	}
	return inProgress != nil && *inProgress, nil
}

// RejectedCount counts the rejected records of stream and of its
// sub-streams (stream "s" counts "s.details", "s.contacts" too: a
// declaration names its reject streams so).
func (s *Store) RejectedCount(ctx context.Context, stream string) (int64, error) {
	var n int64
	q := "SELECT count(*) FROM " + s.id("rejected_records") + " WHERE stream = $1 OR stream LIKE $1 || '.%'"
	if err := s.pool.QueryRow(ctx, q, stream).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rejects of %s: %w", stream, err)
	}
	return n, nil
}

// RunSummary is one row of sync_runs as `agencysync status` shows it.
type RunSummary struct {
	RunID        string     `json:"run_id"`
	Trigger      string     `json:"trigger"`
	Status       string     `json:"status"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	RequestsUsed int        `json:"requests_used"`
	Rejected     int        `json:"rejected"`
	// OpenRejects is sync_runs.open_rejects: the rejected records of the
	// run's streams still open when it ended.
	OpenRejects int `json:"open_rejects"`
	// RejectsResolved is sync_runs.rejects_resolved: earlier rejects the
	// run resolved.
	RejectsResolved int            `json:"rejects_resolved"`
	RowsByTable     map[string]int `json:"rows_by_table"`
	Error           string         `json:"error,omitempty"`
	// StreamsDetail is sync_runs.streams_detail: per task, the stream,
	// requests, records read, duration and date ranges fetched.
	StreamsDetail map[string]TaskDetail `json:"streams_detail"`
}

// RecentRuns returns the last n runs, newest first.
func (s *Store) RecentRuns(ctx context.Context, n int) ([]RunSummary, error) {
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT run_id::text, trigger, status, started_at, finished_at, requests_used, rejected, rows_by_table, coalesce(error, ''), streams_detail,
	open_rejects, rejects_resolved
FROM %s ORDER BY started_at DESC LIMIT $1`, s.id("sync_runs")), n)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunSummary, error) {
		var rs RunSummary
		var byTable, detail []byte
		err := r.Scan(&rs.RunID, &rs.Trigger, &rs.Status, &rs.StartedAt, &rs.FinishedAt, &rs.RequestsUsed, &rs.Rejected, &byTable, &rs.Error, &detail,
			&rs.OpenRejects, &rs.RejectsResolved)
		if err == nil {
			err = json.Unmarshal(byTable, &rs.RowsByTable)
		}
		if err == nil {
			err = json.Unmarshal(detail, &rs.StreamsDetail)
		}
		return rs, err
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// SessionLock is a session advisory lock held on a connection of its own
// until Release.
type SessionLock struct {
	conn *pgxpool.Conn
	key  int64
}

// TryLock takes the session advisory lock key (e.g. warehouse.SyncLockID:
// one sync per warehouse schema, across processes and machines) without
// waiting: ok is false when another session holds it.
func (s *Store) TryLock(ctx context.Context, key int64) (lock *SessionLock, ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("acquire lock connection: %w", err)
	}
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, fmt.Errorf("take sync lock: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return &SessionLock{conn: conn, key: key}, true, nil
}

// Release unlocks and returns the connection to the pool. When the unlock
// fails the session is suspect: it is closed, which releases the lock too.
func (l *SessionLock) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", l.key); err != nil {
		_ = l.conn.Conn().Close(ctx)
	}
	l.conn.Release()
}

// id qualifies a table name with the Store's schema.
func (s *Store) id(name string) string { return pgx.Identifier{s.schema, name}.Sanitize() }
