-- raw and detail_raw (the records as received, which `agencysync rebuild`
-- needs) are compressed with lz4 where the server was built with it; a
-- server without lz4 keeps pglz, its default, and says so in a NOTICE.
--
-- Only values written anew use lz4: a value already stored keeps the
-- compression it was written with (VACUUM FULL copies compressed values as
-- they are), and so does a compressed value copied from another table.
-- PostgreSQL compresses a value only when its row passes about 2 kB
-- (TOAST_TUPLE_THRESHOLD, fixed when the server is built; toast_tuple_target
-- does not lower it for inserts): e-mails with bodies
-- (AGENCY_COMMS_WITH_MESSAGE=1) and large details are compressed, an e-mail
-- without body (about 1.3 kB a row) is stored as it is whatever the method.
-- ALTER COLUMN SET COMPRESSION rewrites nothing: it changes the catalogue
-- only.

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    col text[];
BEGIN
    -- Servers before 14 have neither lz4 nor SET COMPRESSION: nothing to do there.
    IF NOT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        RAISE NOTICE 'this PostgreSQL server was built without lz4: raw and detail_raw stay compressed with pglz';
        RETURN;
    END IF;
    FOREACH col SLICE 1 IN ARRAY ARRAY[
        ['brands', 'raw'], ['brands', 'detail_raw'], ['brand_contacts', 'raw'],
        ['projects', 'raw'], ['projects', 'detail_raw'],
        ['budgets', 'raw'], ['invoices', 'raw'], ['collections', 'raw'], ['payments', 'raw'],
        ['profitability', 'raw'], ['agency_finance_summary', 'raw'], ['emails', 'raw']]
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET COMPRESSION lz4', col[1], col[2]);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
        EXECUTE 'ALTER TABLE brands ALTER COLUMN raw SET COMPRESSION default, ALTER COLUMN detail_raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE brand_contacts ALTER COLUMN raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE projects ALTER COLUMN raw SET COMPRESSION default, ALTER COLUMN detail_raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE budgets ALTER COLUMN raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE invoices ALTER COLUMN raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE collections ALTER COLUMN raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE payments ALTER COLUMN raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE profitability ALTER COLUMN raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE agency_finance_summary ALTER COLUMN raw SET COMPRESSION default';
        EXECUTE 'ALTER TABLE emails ALTER COLUMN raw SET COMPRESSION default';
    END IF;
END
$$;
-- +goose StatementEnd
