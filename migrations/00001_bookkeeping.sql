-- Bookkeeping tables of the warehouse contract: runs, stream state, the quota
-- ledger and rejected records. Every statement is unqualified: the migration
-- runner sets search_path to the warehouse schema, so two schemas in one
-- database migrate independently.

-- +goose Up
CREATE TABLE sync_runs (
    run_id           uuid        PRIMARY KEY,
    trigger          text        NOT NULL CHECK (trigger IN ('run', 'serve', 'backfill', 'test')),
    started_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    status           text        NOT NULL DEFAULT 'running'
                     CHECK (status IN ('running', 'succeeded', 'partial', 'failed', 'skipped')),
    streams          text[]      NOT NULL DEFAULT '{}',
    requests_planned integer     NOT NULL DEFAULT 0 CHECK (requests_planned >= 0),
    requests_used    integer     NOT NULL DEFAULT 0 CHECK (requests_used >= 0),
    retries          integer     NOT NULL DEFAULT 0 CHECK (retries >= 0),
    rows_by_table    jsonb       NOT NULL DEFAULT '{}',
    rejected         integer     NOT NULL DEFAULT 0 CHECK (rejected >= 0),
    error            text,
    _synced_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sync_runs_started_at_idx ON sync_runs (started_at DESC);

COMMENT ON TABLE  sync_runs IS 'One row per agencysync run; run_id is sent as X-Workflow-Execution-Id.';
COMMENT ON COLUMN sync_runs.run_id IS 'Identifier of the run (UUID), also the X-Workflow-Execution-Id header of its requests.';
COMMENT ON COLUMN sync_runs.trigger IS 'What started the run: run (command line), serve (schedule), backfill, test.';
COMMENT ON COLUMN sync_runs.started_at IS 'When the run started.';
COMMENT ON COLUMN sync_runs.finished_at IS 'When the run ended; NULL while running or after a crash.';
COMMENT ON COLUMN sync_runs.status IS 'running, succeeded, partial (budget or quota ended it; the next run resumes), failed, skipped (another sync held the lock).';
COMMENT ON COLUMN sync_runs.streams IS 'Streams the run was asked to sync.';
COMMENT ON COLUMN sync_runs.requests_planned IS 'Requests the planner allotted to the run.';
COMMENT ON COLUMN sync_runs.requests_used IS 'Requests the run sent, retries included.';
COMMENT ON COLUMN sync_runs.retries IS 'Requests that were retries of a failed attempt.';
COMMENT ON COLUMN sync_runs.rows_by_table IS 'Rows written per warehouse table, as a JSON object {table: count}.';
COMMENT ON COLUMN sync_runs.rejected IS 'Records the run could not load (see rejected_records).';
COMMENT ON COLUMN sync_runs.error IS 'Why the run failed or stopped early; never contains a key.';
COMMENT ON COLUMN sync_runs._synced_at IS 'When this row last changed.';

CREATE TABLE sync_state (
    stream      text        NOT NULL,
    partition   text        NOT NULL DEFAULT '',
    watermark   timestamptz,
    cursor      jsonb       NOT NULL DEFAULT '{}',
    last_success_at timestamptz,
    last_run_id uuid,
    rows_total  bigint      NOT NULL DEFAULT 0,
    rejected_total bigint   NOT NULL DEFAULT 0,
    _synced_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, partition)
);

COMMENT ON TABLE  sync_state IS 'Per stream (and partition) watermark and resume cursor of the incremental sync.';
COMMENT ON COLUMN sync_state.stream IS 'Stream name: brands, projects, finance, communications.';
COMMENT ON COLUMN sync_state.partition IS 'Sub-stream (e.g. a finance list or a backfill range); empty for the whole stream.';
COMMENT ON COLUMN sync_state.watermark IS 'Latest source instant fully synced (communications: latest email_at).';
COMMENT ON COLUMN sync_state.cursor IS 'Resume cursor as JSON (range in progress, next page, totals seen).';
COMMENT ON COLUMN sync_state.last_success_at IS 'When the stream last completed without error.';
COMMENT ON COLUMN sync_state.last_run_id IS 'The run that last changed this state.';
COMMENT ON COLUMN sync_state.rows_total IS 'Rows written by this stream over all runs.';
COMMENT ON COLUMN sync_state.rejected_total IS 'Records of this stream rejected over all runs.';
COMMENT ON COLUMN sync_state._synced_at IS 'When this row last changed.';

CREATE TABLE api_quota_usage (
    day        date        PRIMARY KEY,
    requests   integer     NOT NULL DEFAULT 0 CHECK (requests >= 0),
    _synced_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE  api_quota_usage IS 'Requests this warehouse spent per quota day (the daily quota resets at midnight of the configured zone); survives restarts.';
COMMENT ON COLUMN api_quota_usage.day IS 'Quota day, in the quota time zone.';
COMMENT ON COLUMN api_quota_usage.requests IS 'Requests sent that day, retries included, counted before sending.';
COMMENT ON COLUMN api_quota_usage._synced_at IS 'When this row last changed.';

CREATE TABLE rejected_records (
    rejected_id   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream        text        NOT NULL,
    record_key    text        NOT NULL,
    payload       jsonb       NOT NULL,
    error         text        NOT NULL,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    occurrences   integer     NOT NULL DEFAULT 1 CHECK (occurrences >= 1),
    last_run_id   uuid,
    _synced_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (stream, record_key)
);
CREATE INDEX rejected_records_last_seen_idx ON rejected_records (last_seen_at DESC);

COMMENT ON TABLE  rejected_records IS 'Records that could not be loaded, with the payload as received and the reason.';
COMMENT ON COLUMN rejected_records.rejected_id IS 'Surrogate key.';
COMMENT ON COLUMN rejected_records.stream IS 'Stream (and list) the record came from, e.g. communications or finance.invoices.';
COMMENT ON COLUMN rejected_records.record_key IS 'The record''s key when known, otherwise a hash of its payload.';
COMMENT ON COLUMN rejected_records.payload IS 'The record as received (a JSON string when it was not JSON).';
COMMENT ON COLUMN rejected_records.error IS 'Why it was rejected.';
COMMENT ON COLUMN rejected_records.first_seen_at IS 'When the record was first rejected.';
COMMENT ON COLUMN rejected_records.last_seen_at IS 'When the record was last rejected.';
COMMENT ON COLUMN rejected_records.occurrences IS 'How many times it was rejected.';
COMMENT ON COLUMN rejected_records.last_run_id IS 'The run that last rejected it.';
COMMENT ON COLUMN rejected_records._synced_at IS 'When this row last changed.';

-- +goose Down
DROP TABLE rejected_records;
DROP TABLE api_quota_usage;
DROP TABLE sync_state;
DROP TABLE sync_runs;
