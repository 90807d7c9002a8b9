-- Reconciliation (agencysync verify): e-mails the service no longer returns
-- for a re-fetched day are soft-deleted instead of removed, like every other
-- entity; runs started by `agencysync verify` are recorded with their own
-- trigger.

-- +goose Up
ALTER TABLE emails ADD COLUMN _deleted_at timestamptz;
COMMENT ON COLUMN emails._deleted_at IS 'Set when a re-fetched day (reconciliation) no longer contained the e-mail; cleared when it comes back.';

ALTER TABLE sync_runs DROP CONSTRAINT sync_runs_trigger_check;
ALTER TABLE sync_runs ADD CONSTRAINT sync_runs_trigger_check CHECK (trigger IN ('run', 'serve', 'backfill', 'verify', 'test'));
COMMENT ON COLUMN sync_runs.trigger IS 'What started the run: run (command line), serve (schedule), backfill, verify (reconciliation on demand), test.';

-- Analysts see the e-mails the service still holds.
CREATE OR REPLACE VIEW email_activity AS
SELECT e.record_id,
       e.email_at,
       e.subject,
       e.type_id,
       e.type_name,
       e.has_attachments,
       e.size_bytes,
       e.mailbox_thread,
       snd.user_key        AS sender_key,
       su.full_name        AS sender_name,
       su.platform_user_id AS sender_platform_user_id,
       coalesce(rc.to_count, 0)  AS to_count,
       coalesce(rc.cc_count, 0)  AS cc_count,
       coalesce(rc.bcc_count, 0) AS bcc_count,
       coalesce(rc.to_count + rc.cc_count + rc.bcc_count, 0) AS recipient_count,
       e.brand_id,
       b.name              AS brand_name,
       e.project_id,
       p.name              AS project_name
FROM emails e
LEFT JOIN LATERAL (
    SELECT r.user_key FROM email_recipients r
    WHERE r.record_id = e.record_id AND r.role = 'from'
    ORDER BY r.user_key LIMIT 1
) snd ON true
LEFT JOIN users su ON su.user_key = snd.user_key
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE r.role = 'to')  AS to_count,
           count(*) FILTER (WHERE r.role = 'cc')  AS cc_count,
           count(*) FILTER (WHERE r.role = 'bcc') AS bcc_count
    FROM email_recipients r
    WHERE r.record_id = e.record_id AND r.role <> 'from'
) rc ON true
LEFT JOIN brands b ON b.brand_id = e.brand_id
LEFT JOIN projects p ON p.project_id = e.project_id
WHERE e._deleted_at IS NULL;
COMMENT ON VIEW email_activity IS 'E-mails (not deleted) with their sender, recipient counts per role, and brand and project names.';

-- +goose Down
CREATE OR REPLACE VIEW email_activity AS
SELECT e.record_id,
       e.email_at,
       e.subject,
       e.type_id,
       e.type_name,
       e.has_attachments,
       e.size_bytes,
       e.mailbox_thread,
       snd.user_key        AS sender_key,
       su.full_name        AS sender_name,
       su.platform_user_id AS sender_platform_user_id,
       coalesce(rc.to_count, 0)  AS to_count,
       coalesce(rc.cc_count, 0)  AS cc_count,
       coalesce(rc.bcc_count, 0) AS bcc_count,
       coalesce(rc.to_count + rc.cc_count + rc.bcc_count, 0) AS recipient_count,
       e.brand_id,
       b.name              AS brand_name,
       e.project_id,
       p.name              AS project_name
FROM emails e
LEFT JOIN LATERAL (
    SELECT r.user_key FROM email_recipients r
    WHERE r.record_id = e.record_id AND r.role = 'from'
    ORDER BY r.user_key LIMIT 1
) snd ON true
LEFT JOIN users su ON su.user_key = snd.user_key
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE r.role = 'to')  AS to_count,
           count(*) FILTER (WHERE r.role = 'cc')  AS cc_count,
           count(*) FILTER (WHERE r.role = 'bcc') AS bcc_count
    FROM email_recipients r
    WHERE r.record_id = e.record_id AND r.role <> 'from'
) rc ON true
LEFT JOIN brands b ON b.brand_id = e.brand_id
LEFT JOIN projects p ON p.project_id = e.project_id;
COMMENT ON VIEW email_activity IS 'E-mails with their sender, recipient counts per role, and brand and project names.';
ALTER TABLE sync_runs DROP CONSTRAINT sync_runs_trigger_check;
DELETE FROM sync_runs WHERE trigger = 'verify';
ALTER TABLE sync_runs ADD CONSTRAINT sync_runs_trigger_check CHECK (trigger IN ('run', 'serve', 'backfill', 'test'));
COMMENT ON COLUMN sync_runs.trigger IS 'What started the run: run (command line), serve (schedule), backfill, test.';
ALTER TABLE emails DROP COLUMN _deleted_at;
