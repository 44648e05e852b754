-- 0120: bounded reads for the queue-age gauges (issue 13 follow-up; RELIABILITY.md, finding 2).
-- Forward-only.

-- notify_oldest_queued_age_seconds and notify_queued_overdue_seconds used to take min(created_at)
-- and min(next_attempt_at) over every queued row, GROUP BY channel: 1.2-1.4 s per read with
-- 120,000 queued rows, every refresh, in every process that serves /metrics. With these two
-- partial indexes each gauge is one index-ordered `LIMIT 1` per channel (packages/cli/src/sql/
-- notification-queue-age.ts), a few index pages whatever the backlog. notifications_queued_due_idx
-- (next_attempt_at) cannot serve the per-channel read: for a channel with nothing queued it would
-- walk every queued row of the other channels.
--
-- Both are partial on queued rows, so they stay as small as the queue and cost an enqueue two
-- index inserts. The migrator runs every file in one transaction, where CREATE INDEX CONCURRENTLY
-- is refused: this build takes a SHARE lock on notifications (writes wait) for as long as it
-- reads the table. On a large table, create them first by hand with CONCURRENTLY and the same
-- names; IF NOT EXISTS then skips them here.
CREATE INDEX IF NOT EXISTS notifications_queued_channel_created_idx ON notifications (channel, created_at) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS notifications_queued_channel_due_idx ON notifications (channel, next_attempt_at) WHERE state = 'queued';
