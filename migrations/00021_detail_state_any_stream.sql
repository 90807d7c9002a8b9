-- detail_state keeps the entities of every stream whose entity list
-- declares detail fields (stream.Table.DetailFields): their details and
-- child lists are fetched when due. Which streams those are comes from the
-- stream declarations, so the column no longer checks for brands and
-- projects by name.

-- +goose Up
ALTER TABLE detail_state DROP CONSTRAINT detail_state_stream_check;

COMMENT ON TABLE  detail_state IS 'Per entity of a list whose entities have details or child lists (brands, projects): the list entry last seen and when its detail was last fetched; drives incremental detail fetching.';
COMMENT ON COLUMN detail_state.stream IS 'The stream whose list lists the entity (brands, projects).';
COMMENT ON COLUMN detail_state.entity_id IS 'The entity''s id (a brand or project id).';
COMMENT ON COLUMN detail_state.detail_synced_at IS 'When the detail and the child lists (a brand''s contacts) were last fetched; NULL: never.';

-- +goose Down
DELETE FROM detail_state WHERE stream NOT IN ('brands', 'projects');
ALTER TABLE detail_state ADD CONSTRAINT detail_state_stream_check CHECK (stream IN ('brands', 'projects'));

COMMENT ON TABLE  detail_state IS 'Per brand and project: the list entry last seen and when its detail was last fetched; drives incremental detail fetching.';
COMMENT ON COLUMN detail_state.stream IS 'brands or projects.';
COMMENT ON COLUMN detail_state.entity_id IS 'Brand or project id.';
COMMENT ON COLUMN detail_state.detail_synced_at IS 'When the detail (and, for brands, the contacts) was last fetched; NULL: never.';
