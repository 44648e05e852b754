-- 0100: retention of terminal notifications (NOTIFY_RETENTION_DAYS, issue 15). Forward-only.
-- Design and measured delete rate: docs/retention.md.

-- The retention service deletes terminal notifications (sent, dead, cancelled) whose last change
-- is older than the retention, oldest first, LIMIT n per statement. This index serves that
-- ORDER BY updated_at LIMIT as a range scan that never visits queued rows. The predicate is
-- `state <> 'queued'` (not an IN list) so the service's WHERE clause matches it word for word.
CREATE INDEX notifications_terminal_updated_idx ON notifications (updated_at) WHERE state <> 'queued';

-- A periodic chore that one process at a time should run (retention): the holder renews its row
-- every round; another process takes over once it expired. A row, not a session advisory lock,
-- because every role works through a connection pool and a session lock would pin a connection.
CREATE TABLE maintenance_leases (
  name       text        PRIMARY KEY,
  owner      text        NOT NULL,
  expires_at timestamptz NOT NULL
);
