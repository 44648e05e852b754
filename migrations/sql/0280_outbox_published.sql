-- 0280: outbox_published, the narrow record of a published delivery request. Forward-only.
--
-- The relay used to mark a published delivery request (`requests`, `requests.high`, a retry
-- tier) with `UPDATE outbox SET published_at`, so the dispatcher's repair sweep could look it up
-- for the retention (1 h by default). That UPDATE cannot be HOT (published_at is in the
-- predicates of both outbox indexes): it writes a whole new version of the row (value, headers
-- and event_value copied, into the WAL too) and two index entries, and the purge deletes that
-- version later. The sweep needs four fields of it. So the relay now deletes every published row
-- and, in the same statement, writes those four fields here for the delivery requests
-- (packages/relay/src/sql/outbox-mark-published.ts). Numbers: BENCHMARKS.md, session 15.
--
-- No primary key and one index: the relay appends, the purge deletes oldest first by
-- published_at, and the repair sweep, which runs only for notifications overdue by
-- NOTIFY_REPAIR_AFTER_MS, scans the retained rows (as it scanned the outbox's before).
--
-- Rows a relay of an earlier version marked in the outbox stay readable by the sweep and are
-- purged as before (docs/relay.md, "Retention").
CREATE TABLE outbox_published (
  outbox_id       bigint      NOT NULL, -- the outbox row's id: the order of one notification's requests
  notification_id text,                 -- the row's notification-id header (NULL when it had none)
  topic           text        NOT NULL,
  key             text        NOT NULL,
  published_at    timestamptz NOT NULL
);

CREATE INDEX outbox_published_published_at_idx ON outbox_published (published_at);
