package load

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Durability, statement by statement. A commit is synchronous when it
// returns only once its WAL is flushed (synchronous_commit on), asynchronous
// when it may return before (off: the WAL writer flushes it within about
// three wal_writer_delay, and any synchronous commit flushes all WAL before
// its own, since WAL is one ordered stream). A database crash (power loss,
// kill -9, immediate shutdown) loses the asynchronous commits not yet
// flushed, never a part of one, never one older than a synchronous commit
// that returned.
//
//   - Ledger.CountRequest: synchronous, whatever the server's or session's
//     setting (durableBegin), before the request is sent. A crash cannot
//     uncount a request the service may have answered; it can at most keep
//     the count of a request that was never sent (over-counting is safe).
//   - Store.FinishRun: synchronous, so a run that reports its end (exit
//     status, summary) has everything it wrote on disk.
//   - Store.Commit: asynchronous unless Config.SyncCommit. A page's rows
//     and the checkpoint that says they are stored commit together, so a
//     crash that loses a page loses its checkpoint too and the next run
//     fetches the page again (its request was counted). A later request's
//     count or FinishRun flushes it.
//   - Everything else (StartRun, RecordSkipped, SetState, the ANALYZE after
//     bulk loads): the session's setting; losing one costs a repeated step.
//
// reliability/s21_dbcrash_test.go crashes the server mid-sync with
// asynchronous commit as the server's default and checks this.

// durableBegin starts a transaction whose commit waits for its WAL to reach
// disk even when the server or session default is synchronous_commit=off;
// a stronger setting (remote_write, remote_apply) is kept.
const durableBegin = "BEGIN; SELECT set_config('synchronous_commit', " +
	"CASE current_setting('synchronous_commit') WHEN 'off' THEN 'on' ELSE current_setting('synchronous_commit') END, true)"

// durableExec runs one statement in its own transaction and commits it
// synchronously (durableBegin).
func durableExec(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{BeginQuery: durableBegin}, func(tx pgx.Tx) error {
		var err error
		tag, err = tx.Exec(ctx, sql, args...)
		return err
	})
	if err != nil {
		return tag, fmt.Errorf("durable commit: %w", err)
	}
	return tag, nil
}
