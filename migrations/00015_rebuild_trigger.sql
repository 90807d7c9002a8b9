-- agencysync rebuild re-derives the typed columns and child tables
-- of stored records with the current field map, under the sync lock, and
-- records itself in sync_runs like any run: its trigger is rebuild (0
-- requests). Its resumable cursor lives in sync_state under the stream
-- rebuild, one partition per table, and is deleted when the table is done.

-- +goose Up
ALTER TABLE sync_runs DROP CONSTRAINT sync_runs_trigger_check;
ALTER TABLE sync_runs ADD CONSTRAINT sync_runs_trigger_check CHECK (trigger IN ('run', 'serve', 'backfill', 'verify', 'rebuild', 'test'));
COMMENT ON COLUMN sync_runs.trigger IS 'What started the run: run (command line), serve (schedule), backfill, verify (reconciliation on demand), rebuild (re-derivation of stored records, 0 requests), test.';

-- +goose Down
ALTER TABLE sync_runs DROP CONSTRAINT sync_runs_trigger_check;
DELETE FROM sync_runs WHERE trigger = 'rebuild';
DELETE FROM sync_state WHERE stream = 'rebuild';
ALTER TABLE sync_runs ADD CONSTRAINT sync_runs_trigger_check CHECK (trigger IN ('run', 'serve', 'backfill', 'verify', 'test'));
COMMENT ON COLUMN sync_runs.trigger IS 'What started the run: run (command line), serve (schedule), backfill, verify (reconciliation on demand), test.';
