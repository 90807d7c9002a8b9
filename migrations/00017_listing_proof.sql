-- Listings proven whole: paging_state keeps, per list endpoint and paging
-- (style and parameter names), what the service was seen doing — the
-- largest page size it answered in full as asked, whether it names a next
-- page — so that a later listing's short last page is proven the last
-- without a request past the end. delete_candidates keeps the rows a
-- complete listing would have soft-deleted when they were more than
-- SYNC_MASS_DELETE_SHARE of their table's live rows: they are deleted only
-- when the next run's listing agrees.

-- +goose Up
CREATE TABLE paging_state (
    paging_key text        PRIMARY KEY,
    honoured   integer     NOT NULL DEFAULT 0 CHECK (honoured >= 0),
    names_next boolean     NOT NULL DEFAULT false,
    _synced_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE  paging_state IS 'What the service was seen doing when a list was paged, per endpoint and paging: the evidence later listings prove themselves complete with.';
COMMENT ON COLUMN paging_state.paging_key IS 'Endpoint, paging style and parameter names, e.g. "brands offset /limit/offset/".';
COMMENT ON COLUMN paging_state.honoured IS 'Largest page size the service answered in full as asked (a page of exactly that many rows): a shorter page asked with at most that size is the last.';
COMMENT ON COLUMN paging_state.names_next IS 'The service names a next page when more rows follow (cursor style): an answer that names none is the last.';
COMMENT ON COLUMN paging_state._synced_at IS 'When this row last changed.';

CREATE TABLE delete_candidates (
    table_name  text        NOT NULL,
    scope       text        NOT NULL DEFAULT '',
    row_key     text[]      NOT NULL,
    first_run   text,
    _synced_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (table_name, scope, row_key)
);

COMMENT ON TABLE  delete_candidates IS 'Rows a complete listing no longer held while they were more than SYNC_MASS_DELETE_SHARE of their table''s live rows: kept, and soft-deleted only when the next listing agrees.';
COMMENT ON COLUMN delete_candidates.table_name IS 'Warehouse table of the rows.';
COMMENT ON COLUMN delete_candidates.scope IS 'The listing''s scope within the table, e.g. level=project for profitability; empty for the whole table.';
COMMENT ON COLUMN delete_candidates.row_key IS 'The row''s key columns, as text, in key order.';
COMMENT ON COLUMN delete_candidates.first_run IS 'sync_runs.run_id of the run whose listing first left the row out.';
COMMENT ON COLUMN delete_candidates._synced_at IS 'When the row became a candidate.';

-- +goose Down
DROP TABLE delete_candidates;
DROP TABLE paging_state;
