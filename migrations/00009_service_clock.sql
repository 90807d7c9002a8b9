-- The service's clock as the worker last saw it (its offset from the
-- worker's clock, read off the Date header of the service's answers), so that
-- a new process plans the service's quota day before its first request.

-- +goose Up
CREATE TABLE service_clock (
    id             boolean     PRIMARY KEY DEFAULT true CHECK (id),
    offset_seconds bigint      NOT NULL,
    _synced_at     timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE  service_clock IS 'One row: how far the service''s clock (its Date header) runs ahead of the worker''s; the daily quota resets at the service''s midnight.';
COMMENT ON COLUMN service_clock.id IS 'Always true: the table holds one row.';
COMMENT ON COLUMN service_clock.offset_seconds IS 'Service clock minus worker clock, in seconds (negative: the service is behind).';
COMMENT ON COLUMN service_clock._synced_at IS 'When the saved offset last changed (worker clock).';

-- +goose Down
DROP TABLE service_clock;
