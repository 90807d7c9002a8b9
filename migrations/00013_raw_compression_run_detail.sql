-- raw compressed with lz4, and a richer run history.
--
-- raw (the record as received, which `agencysync rebuild` needs) and
-- detail_raw are compressed with lz4 where the server was built with it
-- (pglz, the default, otherwise): lz4 compresses and decompresses several
-- times faster than pglz at a similar ratio. PostgreSQL compresses a value
-- only when its row is longer than about 2 kB (TOAST_TUPLE_THRESHOLD, fixed
-- when the server is built; the table option toast_tuple_target does not
-- lower it for inserts): e-mails with bodies (AGENCY_COMMS_WITH_MESSAGE=1),
-- project details with their history and large lists are; an e-mail without
-- body (about 1.9 kB a row) stays as it is — see BENCHMARKS.md for the bytes
-- per e-mail. Rows written before this migration keep their old form until
-- rewritten (the next change of the record, or VACUUM FULL).
--
-- sync_runs.streams_detail: per task of the run, its stream, requests spent,
-- records read, duration, and the communications ranges it fetched.

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    method text := 'pglz';
    col record;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        method := 'lz4';
    ELSE
        RAISE NOTICE 'this PostgreSQL server was built without lz4: raw stays compressed with pglz';
    END IF;
    FOR col IN
        SELECT c.relname, a.attname FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
          AND a.attname IN ('raw', 'detail_raw') AND NOT a.attisdropped
        ORDER BY c.relname, a.attname
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET COMPRESSION %s', col.relname, col.attname, method);
    END LOOP;
END
$$;
-- +goose StatementEnd

ALTER TABLE sync_runs ADD COLUMN streams_detail jsonb NOT NULL DEFAULT '{}';
COMMENT ON COLUMN sync_runs.streams_detail IS 'Per task of the run, as a JSON object {task: {stream, requests, records_read, duration_seconds, ranges: [{from, to, pages, records, complete}]}}: requests spent, records read from the service (loaded or rejected), time taken, and the communications date ranges fetched. {} for runs before it was recorded and for skipped runs.';

-- +goose Down
ALTER TABLE sync_runs DROP COLUMN streams_detail;
-- +goose StatementBegin
DO $$
DECLARE
    col record;
BEGIN
    FOR col IN
        SELECT c.relname, a.attname FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
          AND a.attname IN ('raw', 'detail_raw') AND NOT a.attisdropped
        ORDER BY c.relname, a.attname
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET COMPRESSION default', col.relname, col.attname);
    END LOOP;
END
$$;
-- +goose StatementEnd
