-- The field inventory: every source field path each stream's
-- records carried, the JSON types it came in, how often, when it was first
-- and last seen, and the warehouse column it maps to. Runs merge what they
-- saw into it (load.MergeSourceFields, one set-based statement); a path that
-- is not here before a run is a new field, announced once. sync_runs.warnings
-- keeps the coverage warnings of each run (a mapped column left NULL, a
-- stream mostly rejected, a field never seen before).

-- +goose Up
CREATE TABLE source_fields (
    stream        text        NOT NULL,
    path          text        NOT NULL,
    json_types    text[]      NOT NULL DEFAULT '{}',
    seen_count    bigint      NOT NULL DEFAULT 0 CHECK (seen_count >= 0),
    first_seen    timestamptz NOT NULL,
    last_seen     timestamptz NOT NULL,
    mapped_column text,
    _synced_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, path),
    CHECK (first_seen <= last_seen),
    CHECK (json_types <@ ARRAY['string', 'number', 'boolean', 'null', 'object', 'array']::text[])
);

COMMENT ON TABLE  source_fields IS 'Field inventory: every source field path seen per stream (top level, one nested level, and the user objects of e-mails), its JSON types, how often and when, and the warehouse column it maps to.';
COMMENT ON COLUMN source_fields.stream IS 'Stream whose records carried the field (brands, brand_details, contacts, projects, project_details, budgets, invoices, collections, payments, profitability, summary, communications).';
COMMENT ON COLUMN source_fields.path IS 'Field path in the record: name (top level), budget.amount (one nested level), team[].role (a field of the objects of an array), users.to[].email (a field of the objects of a collection keyed by id or address).';
COMMENT ON COLUMN source_fields.json_types IS 'JSON types the field came in, sorted: string, number, boolean, null, object, array (a PHP encoder may write "42" for 42 or false for null).';
COMMENT ON COLUMN source_fields.seen_count IS 'Records that carried the field, summed over all runs (a record counts once even when the field sits in several of its array elements).';
COMMENT ON COLUMN source_fields.first_seen IS 'When a run first saw the field.';
COMMENT ON COLUMN source_fields.last_seen IS 'When a run last saw the field.';
COMMENT ON COLUMN source_fields.mapped_column IS 'Warehouse column the field fills, as table.column, under the mapping of the last run that saw it; NULL when no column maps it (the value stays in raw).';
COMMENT ON COLUMN source_fields._synced_at IS 'When this row last changed.';

ALTER TABLE sync_runs ADD COLUMN warnings jsonb NOT NULL DEFAULT '[]';
COMMENT ON COLUMN sync_runs.warnings IS 'Coverage warnings of the run, as a JSON array of {kind, stream, column, field, share, records, count, reason, candidates, message}: kind null_column (a mapped column NULL in at least 95 % of the records received), rejected_stream (at least 50 % of a stream''s records rejected), new_field (a field never seen before). [] when there were none.';

-- +goose Down
ALTER TABLE sync_runs DROP COLUMN warnings;
DROP TABLE source_fields;
