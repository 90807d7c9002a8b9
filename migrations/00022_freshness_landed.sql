-- A stream that never landed a row while records of it were rejected is
-- never fresh, whatever its partitions' last success says: a stream whose
-- every record was rejected landed nothing (an empty list, with nothing
-- rejected, still is).

-- +goose Up
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
           CASE WHEN bool_and(st.last_success_at IS NOT NULL) FILTER (WHERE st.partition NOT IN ('details', 'backfill', 'verify', 'refresh'))
                 AND (sum(st.rows_total) > 0 OR sum(st.rejected_total) = 0)
                THEN min(st.last_success_at) FILTER (WHERE st.partition NOT IN ('details', 'backfill', 'verify', 'refresh')) END AS last_success_at,
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

COMMENT ON COLUMN sync_freshness.last_success_at IS 'When the stream last completed: the oldest last success among its regular partitions (details, backfill, verify and refresh partitions excluded); NULL until every regular partition completed once, and while the stream has landed no row but had records rejected.';

-- +goose Down
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
           CASE WHEN bool_and(st.last_success_at IS NOT NULL) FILTER (WHERE st.partition NOT IN ('details', 'backfill', 'verify', 'refresh'))
                THEN min(st.last_success_at) FILTER (WHERE st.partition NOT IN ('details', 'backfill', 'verify', 'refresh')) END AS last_success_at,
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

COMMENT ON COLUMN sync_freshness.last_success_at IS 'When the stream last completed: the oldest last success among its regular partitions (details, backfill, verify and refresh partitions excluded); NULL until every regular partition completed once.';
