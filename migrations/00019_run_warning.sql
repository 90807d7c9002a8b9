-- Green means complete. A run that synced everything it was asked but whose
-- records did not all fit ends `warning`, not `succeeded`: it raised
-- coverage warnings (sync_runs.warnings: null_column, rejected_stream,
-- new_field) or notes (sync_runs.error after "notes: "), or its streams
-- still hold open rejected records. Its data is as current as a succeeded
-- run's: every task it ran completed, so the streams' last success
-- (sync_state.last_success_at, read by sync_freshness) moved as it would
-- have; what the status adds is that something needs a look.
--
-- sync_freshness reads no run status: a stream's last success is the oldest
-- last success of its regular partitions, which a task sets only when it
-- completed — and a list whose records were all rejected (nothing landed)
-- no longer completes, so such a stream is never shown as fresh.
-- last_run_status may now be warning.
--
-- rejected_records holds the open rejects only: a rejected record that
-- later lands (by a run, a full refresh, a rebuild, or a complete listing
-- that no longer serves it) leaves the table in the transaction that
-- resolves it; sync_runs.rejects_resolved counts them per run, and
-- sync_runs.open_rejects keeps how many of the run's streams' rejects were
-- still open when it ended.
--
-- table_mappings keeps, per table of whole records, the fingerprint of the
-- field map its rows were derived under. A run that finds the field map
-- changed re-derives the table from raw first (a rebuild, 0 requests), which
-- also re-keys the detail bookkeeping of brands and projects: a field map
-- decides how records are read, not whether an entity changed, so it makes
-- no detail due.

-- +goose Up
ALTER TABLE sync_runs DROP CONSTRAINT sync_runs_status_check;
ALTER TABLE sync_runs ADD CONSTRAINT sync_runs_status_check
    CHECK (status IN ('running', 'succeeded', 'warning', 'partial', 'failed', 'skipped'));
COMMENT ON COLUMN sync_runs.status IS 'running; succeeded (everything asked was synced and every record fit: no coverage warning, no note, no open reject); warning (everything asked was synced, but the run raised coverage warnings (warnings) or notes (error after "notes: "), or its streams hold open rejects (open_rejects): the data is as current as after a success, something needs a look); partial (budget, quota or a signal ended it, or a range was not landed whole; the next run resumes); failed; skipped (another sync held the lock).';

ALTER TABLE sync_runs ADD COLUMN open_rejects integer NOT NULL DEFAULT 0 CHECK (open_rejects >= 0);
COMMENT ON COLUMN sync_runs.open_rejects IS 'Rejected records of the run''s streams still open (in rejected_records) when the run ended, made by this run or earlier ones; any makes a run warning. 0 for runs before it was recorded.';

ALTER TABLE sync_runs ADD COLUMN rejects_resolved integer NOT NULL DEFAULT 0 CHECK (rejects_resolved >= 0);
COMMENT ON COLUMN sync_runs.rejects_resolved IS 'Rejected records the run resolved: records rejected earlier that landed in this run (same stream and key), or that a complete listing of their table no longer served; they left rejected_records. 0 for runs before it was recorded.';

CREATE TABLE table_mappings (
    table_name text        PRIMARY KEY,
    mapping    text        NOT NULL,
    field_map  text        NOT NULL DEFAULT '',
    derived_at timestamptz NOT NULL DEFAULT now(),
    _synced_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE  table_mappings IS 'Per table of whole records (brands, projects, invoices, emails, ...), the field map its rows were derived under; a run under another one re-derives the table from raw first (a rebuild, 0 requests).';
COMMENT ON COLUMN table_mappings.table_name IS 'The warehouse table.';
COMMENT ON COLUMN table_mappings.mapping IS 'Fingerprint of the source fields of the table''s columns (and of the tables derived from the same records) under the field map in force.';
COMMENT ON COLUMN table_mappings.field_map IS 'The AGENCY_FIELD_MAP pairs of the table''s columns in force then, table.column=source.path, comma-separated; empty when every column read its declared field.';
COMMENT ON COLUMN table_mappings.derived_at IS 'When the rows were last derived under this mapping (first recorded, or rebuilt).';
COMMENT ON COLUMN table_mappings._synced_at IS 'When a run or rebuild last checked the table''s rows against the field map in force.';

COMMENT ON TABLE rejected_records IS 'Open rejects: records that could not be loaded, with the payload as received and the reason. A record that later lands (a run, a full refresh, a rebuild) or that a complete listing of its table no longer serves leaves the table (sync_runs.rejects_resolved counts them).';
COMMENT ON COLUMN sync_freshness.last_run_status IS 'Status of that run: running, succeeded, warning (complete, but with coverage warnings, notes or open rejects), partial, failed or skipped.';
COMMENT ON COLUMN sync_freshness.last_success_at IS 'When the stream last completed: the oldest last success among its regular partitions (details, backfill and verify partitions excluded); NULL until every regular partition completed once. A list whose records were all rejected does not complete, so a stream whose records were all rejected is never fresh.';

-- +goose Down
DROP TABLE table_mappings;
COMMENT ON COLUMN sync_freshness.last_success_at IS 'When the stream last completed: the oldest last success among its regular partitions (details, backfill and verify partitions excluded); NULL until every regular partition completed once.';
COMMENT ON COLUMN sync_freshness.last_run_status IS 'Status of that run.';
COMMENT ON TABLE rejected_records IS 'Records that could not be loaded, with the payload as received and the reason.';
ALTER TABLE sync_runs DROP COLUMN rejects_resolved;
ALTER TABLE sync_runs DROP COLUMN open_rejects;
ALTER TABLE sync_runs DROP CONSTRAINT sync_runs_status_check;
UPDATE sync_runs SET status = 'succeeded' WHERE status = 'warning';
ALTER TABLE sync_runs ADD CONSTRAINT sync_runs_status_check
    CHECK (status IN ('running', 'succeeded', 'partial', 'failed', 'skipped'));
COMMENT ON COLUMN sync_runs.status IS 'running, succeeded, partial (budget or quota ended it; the next run resumes), failed, skipped (another sync held the lock).';
