-- One freshness definition, and views that cost what the tables cost.
--
-- sync_freshness is the one place where a stream's last success and lag are
-- defined: `agencysync status`, the /metrics gauge
-- agencysync_last_success_timestamp_seconds and analysts all read this view
-- (load.Store.Freshness). A stream's last success is the oldest
-- last_success_at among its regular partitions, the ones every sync of the
-- stream completes (brands and projects: list; finance: its seven lists;
-- communications: the main partition of the increment and backfill). The
-- partitions that complete only now and then — details (only when some were
-- due), backfill (a manual range), verify (reconciliation) — do not age it;
-- otherwise a run that had no detail to fetch left the stream looking minutes
-- or days stale right after a success. A regular partition that never
-- succeeded leaves last_success_at NULL. The lag is measured on the
-- database's clock, the one that wrote last_success_at.
--
-- email_activity's sender comes from an aggregate (min of the from
-- addresses, the same as the first in order) rather than ORDER BY … LIMIT 1:
-- the planner drops an aggregate LATERAL join whose columns a query does not
-- use, but never a LIMIT one, which cost one index probe per e-mail (and,
-- through its cost estimate, JIT compilation) on every query of the view.
-- project_status joins its deliverable and team counts as aggregates per
-- project (hash joins), no longer computed project by project; unused, they
-- are dropped the same way.

-- +goose Up
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
    SELECT min(r.user_key) AS user_key FROM email_recipients r
    WHERE r.record_id = e.record_id AND r.role = 'from'
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

CREATE OR REPLACE VIEW project_status AS
SELECT p.project_id,
       p.name,
       p.status,
       p.brand_id,
       b.name AS brand_name,
       p.start_date,
       p.deadline,
       p.closed_at,
       (p.closed_at IS NULL AND p.deadline < CURRENT_DATE) AS overdue,
       CASE WHEN p.closed_at IS NULL THEN p.deadline - CURRENT_DATE END AS days_to_deadline,
       coalesce(d.deliverables, 0)         AS deliverables,
       coalesce(d.open_deliverables, 0)    AS open_deliverables,
       coalesce(d.overdue_deliverables, 0) AS overdue_deliverables,
       d.next_due_date,
       coalesce(t.team_size, 0)            AS team_size,
       p.budget_amount,
       p.budget_currency,
       p.updated_at
FROM projects p
LEFT JOIN brands b ON b.brand_id = p.brand_id
LEFT JOIN (
    SELECT pd.project_id,
           count(*) AS deliverables,
           count(*) FILTER (WHERE pd.delivered_at IS NULL) AS open_deliverables,
           count(*) FILTER (WHERE pd.delivered_at IS NULL AND pd.due_date < CURRENT_DATE) AS overdue_deliverables,
           min(pd.due_date) FILTER (WHERE pd.delivered_at IS NULL) AS next_due_date
    FROM project_deliverables pd GROUP BY pd.project_id
) d ON d.project_id = p.project_id
LEFT JOIN (
    SELECT tm.project_id, count(*) AS team_size FROM project_team_members tm GROUP BY tm.project_id
) t ON t.project_id = p.project_id
WHERE p._deleted_at IS NULL;

CREATE OR REPLACE VIEW sync_freshness AS
SELECT s.stream,
       s.partitions,
       s.last_success_at,
       now() - s.last_success_at             AS lag,
       s.watermark,
       s.rows_total,
       s.rejected_total,
       lr.run_id                             AS last_run_id,
       lr.status                             AS last_run_status,
       lr.started_at                         AS last_run_started_at,
       q.day                                 AS quota_day,
       coalesce(q.requests, 0)               AS quota_requests
FROM (
    SELECT st.stream,
           count(*) AS partitions,
           CASE WHEN bool_and(st.last_success_at IS NOT NULL) FILTER (WHERE st.partition NOT IN ('details', 'backfill', 'verify'))
                THEN min(st.last_success_at) FILTER (WHERE st.partition NOT IN ('details', 'backfill', 'verify')) END AS last_success_at,
           max(st.watermark)              AS watermark,
           sum(st.rows_total)::bigint     AS rows_total,
           sum(st.rejected_total)::bigint AS rejected_total
    FROM sync_state st
    GROUP BY st.stream
) s
LEFT JOIN LATERAL (
    SELECT r.run_id, r.status, r.started_at
    FROM sync_runs r WHERE s.stream = ANY (r.streams)
    ORDER BY r.started_at DESC LIMIT 1
) lr ON true
LEFT JOIN LATERAL (
    SELECT u.day, u.requests FROM api_quota_usage u ORDER BY u.day DESC LIMIT 1
) q ON true;

COMMENT ON VIEW sync_freshness IS 'Per stream: last complete sync, lag since then, rows written, the latest run, and the requests spent on the latest quota day. The one definition of freshness: agencysync status and /metrics read it.';
COMMENT ON COLUMN sync_freshness.last_success_at IS 'When the stream last completed: the oldest last success among its regular partitions (details, backfill and verify partitions excluded); NULL until every regular partition completed once.';
COMMENT ON COLUMN sync_freshness.lag IS 'Time since last_success_at, on the database''s clock.';

-- +goose Down
CREATE OR REPLACE VIEW sync_freshness AS
SELECT st.stream,
       count(*)                              AS partitions,
       max(st.last_success_at)               AS last_success_at,
       now() - max(st.last_success_at)       AS lag,
       max(st.watermark)                     AS watermark,
       sum(st.rows_total)::bigint            AS rows_total,
       sum(st.rejected_total)::bigint        AS rejected_total,
       lr.run_id                             AS last_run_id,
       lr.status                             AS last_run_status,
       lr.started_at                         AS last_run_started_at,
       q.day                                 AS quota_day,
       coalesce(q.requests, 0)               AS quota_requests
FROM sync_state st
LEFT JOIN LATERAL (
    SELECT r.run_id, r.status, r.started_at
    FROM sync_runs r WHERE st.stream = ANY (r.streams)
    ORDER BY r.started_at DESC LIMIT 1
) lr ON true
LEFT JOIN LATERAL (
    SELECT u.day, u.requests FROM api_quota_usage u ORDER BY u.day DESC LIMIT 1
) q ON true
GROUP BY st.stream, lr.run_id, lr.status, lr.started_at, q.day, q.requests;
COMMENT ON VIEW sync_freshness IS 'Per stream: last successful sync, lag since then, rows written, the latest run, and the requests spent on the latest quota day.';
COMMENT ON COLUMN sync_freshness.last_success_at IS 'When a partition of the stream last completed without error.';
COMMENT ON COLUMN sync_freshness.lag IS 'Time since last_success_at.';

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

CREATE OR REPLACE VIEW project_status AS
SELECT p.project_id,
       p.name,
       p.status,
       p.brand_id,
       b.name AS brand_name,
       p.start_date,
       p.deadline,
       p.closed_at,
       (p.closed_at IS NULL AND p.deadline < CURRENT_DATE) AS overdue,
       CASE WHEN p.closed_at IS NULL THEN p.deadline - CURRENT_DATE END AS days_to_deadline,
       coalesce(d.deliverables, 0)         AS deliverables,
       coalesce(d.open_deliverables, 0)    AS open_deliverables,
       coalesce(d.overdue_deliverables, 0) AS overdue_deliverables,
       d.next_due_date,
       coalesce(t.team_size, 0)            AS team_size,
       p.budget_amount,
       p.budget_currency,
       p.updated_at
FROM projects p
LEFT JOIN brands b ON b.brand_id = p.brand_id
LEFT JOIN LATERAL (
    SELECT count(*) AS deliverables,
           count(*) FILTER (WHERE pd.delivered_at IS NULL) AS open_deliverables,
           count(*) FILTER (WHERE pd.delivered_at IS NULL AND pd.due_date < CURRENT_DATE) AS overdue_deliverables,
           min(pd.due_date) FILTER (WHERE pd.delivered_at IS NULL) AS next_due_date
    FROM project_deliverables pd WHERE pd.project_id = p.project_id
) d ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS team_size FROM project_team_members tm WHERE tm.project_id = p.project_id
) t ON true
WHERE p._deleted_at IS NULL;
