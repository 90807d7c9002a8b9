-- raw stored compressed, and a richer run history.
--
-- raw (the record as received, which `agencysync rebuild` needs) was most of
-- the warehouse, stored uncompressed: PostgreSQL compresses a value only when
-- its row passes toast_tuple_target (about 2 kB by default), and an e-mail's
-- row (about 1.9 kB) never did. Every table with raw now compresses it
-- inline: storage MAIN (compressed, kept in the row rather than moved to the
-- TOAST table, so reading raw costs no extra lookup), lz4 where the server
-- was built with it (faster than pglz at a similar ratio; pglz otherwise),
-- and toast_tuple_target 128 so that rows of ordinary size are compressed.
-- Rows written before this migration keep their old form until rewritten
-- (the next change of the record, or VACUUM FULL).
--
-- sync_runs.streams_detail: per task of the run, its stream, requests spent,
-- records read, duration, and the communications ranges it fetched.

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    method text := 'pglz';
    t text;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        method := 'lz4';
    ELSE
        RAISE NOTICE 'this PostgreSQL server was built without lz4: raw is compressed with pglz';
    END IF;
    FOR t IN
        SELECT c.relname FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
          AND a.attname = 'raw' AND NOT a.attisdropped
        ORDER BY c.relname
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN raw SET STORAGE MAIN, ALTER COLUMN raw SET COMPRESSION %s', t, method);
        IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = format('%I', t)::regclass AND attname = 'detail_raw' AND NOT attisdropped) THEN
            EXECUTE format('ALTER TABLE %I ALTER COLUMN detail_raw SET COMPRESSION %s', t, method);
        END IF;
        EXECUTE format('ALTER TABLE %I SET (toast_tuple_target = 128)', t);
    END LOOP;
END
$$;
-- +goose StatementEnd

ALTER TABLE sync_runs ADD COLUMN streams_detail jsonb NOT NULL DEFAULT '{}';
COMMENT ON COLUMN sync_runs.streams_detail IS 'Per task of the run, as a JSON object {task: {stream, requests, records_read, duration_seconds, ranges: [{from, to, pages, records, complete}]}}: requests spent, records read from the service (loaded or rejected), time taken, and the communications date ranges fetched. {} for runs before it was recorded and skipped runs.';

-- +goose Down
ALTER TABLE sync_runs DROP COLUMN streams_detail;
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN
        SELECT c.relname FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
          AND a.attname = 'raw' AND NOT a.attisdropped
        ORDER BY c.relname
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN raw SET STORAGE EXTENDED, ALTER COLUMN raw SET COMPRESSION default', t);
        IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = format('%I', t)::regclass AND attname = 'detail_raw' AND NOT attisdropped) THEN
            EXECUTE format('ALTER TABLE %I ALTER COLUMN detail_raw SET COMPRESSION default', t);
        END IF;
        EXECUTE format('ALTER TABLE %I RESET (toast_tuple_target)', t);
    END LOOP;
END
$$;
-- +goose StatementEnd
