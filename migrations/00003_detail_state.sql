-- Which brands and projects need their detail (and contacts) fetched: the
-- sync engine compares each list entry's content hash with the hash seen when
-- the detail was last fetched, and re-fetches details older than a
-- configurable age, stalest first.

-- +goose Up
CREATE TABLE detail_state (
    stream           text        NOT NULL CHECK (stream IN ('brands', 'projects')),
    entity_id        text        NOT NULL,
    list_hash        text        NOT NULL,
    list_seen_at     timestamptz NOT NULL,
    listed           boolean     NOT NULL DEFAULT true,
    detail_hash      text,
    detail_synced_at timestamptz,
    _synced_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, entity_id)
);
CREATE INDEX detail_state_due_idx ON detail_state (stream, detail_synced_at NULLS FIRST) WHERE listed;

COMMENT ON TABLE  detail_state IS 'Per brand and project: the list entry last seen and when its detail was last fetched; drives incremental detail fetching.';
COMMENT ON COLUMN detail_state.stream IS 'brands or projects.';
COMMENT ON COLUMN detail_state.entity_id IS 'Brand or project id.';
COMMENT ON COLUMN detail_state.list_hash IS 'Hash of the list entry as last listed (changes when any listed field, updated_at included, changes).';
COMMENT ON COLUMN detail_state.list_seen_at IS 'When the entry was last listed.';
COMMENT ON COLUMN detail_state.listed IS 'False once a complete listing no longer contains the entity (soft-deleted).';
COMMENT ON COLUMN detail_state.detail_hash IS 'list_hash at the time the detail was last fetched; differs from list_hash when the detail is due.';
COMMENT ON COLUMN detail_state.detail_synced_at IS 'When the detail (and, for brands, the contacts) was last fetched; NULL: never.';
COMMENT ON COLUMN detail_state._synced_at IS 'When this row last changed.';

-- +goose Down
DROP TABLE detail_state;
