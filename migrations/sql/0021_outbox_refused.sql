-- 0021: a way out for an outbox row Kafka will never accept (larger than the broker takes, or
-- refused as an invalid record). Before, such a row was retried forever: it blocked its key's
-- slot and showed only as outbox lag. Forward-only. Design: docs/relay.md ("Refused rows").

-- The relay copies a refused row here, with the reason, in the claim transaction that marks it
-- published (so the slot moves on and the purge removes the outbox row later). The value is kept
-- so an operator can inspect or re-send it; nothing reads this table on a hot path.
CREATE TABLE outbox_refused (
  outbox_id       bigint      PRIMARY KEY,           -- outbox.id of the refused row
  topic           text        NOT NULL,
  key             text        NOT NULL,
  value           text        NOT NULL,
  headers         jsonb       NOT NULL,
  notification_id text,                               -- from the row's notification-id header
  reason          text        NOT NULL,               -- e.g. "message_too_large: 2097412 bytes > 1000000"
  refused_at      timestamptz NOT NULL
);
CREATE INDEX outbox_refused_notification_idx ON outbox_refused (notification_id) WHERE notification_id IS NOT NULL;

-- A notification whose delivery request was refused ends dead with reason publish_failed.
ALTER TABLE notifications DROP CONSTRAINT notifications_dead_reason_known;
ALTER TABLE notifications ADD CONSTRAINT notifications_dead_reason_known
  CHECK (dead_reason IN ('permanent', 'exhausted', 'expired', 'suppressed', 'publish_failed'));
