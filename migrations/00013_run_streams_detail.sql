-- A richer run history: sync_runs.streams_detail holds, per task of the run,
-- its stream, the requests it spent, the records it read, how long it took,
-- and the communications date ranges it fetched. The engine fills it at the
-- end of each run; `agencysync status` shows it.
--
-- raw keeps the server's default compression (pglz): PostgreSQL compresses a
-- value only when its row passes about 2 kB (TOAST_TUPLE_THRESHOLD, fixed
-- when the server is built; toast_tuple_target does not lower it for
-- inserts), so an e-mail without body (about 1.3 kB a row) is stored as it
-- is whatever the column's method, and on e-mails with bodies lz4 stored 18 %
-- more bytes than pglz at the same load rate (BENCHMARKS.md).

-- +goose Up
ALTER TABLE sync_runs ADD COLUMN streams_detail jsonb NOT NULL DEFAULT '{}';
COMMENT ON COLUMN sync_runs.streams_detail IS 'Per task of the run, as a JSON object {task: {stream, requests, records_read, duration_seconds, ranges: [{from, to, pages, records, complete}]}}: requests spent, records read from the service (loaded or rejected), time taken, and the communications date ranges fetched. {} for runs before it was recorded and for skipped runs.';

-- +goose Down
ALTER TABLE sync_runs DROP COLUMN streams_detail;
