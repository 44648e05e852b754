-- 0080: the ledger of `notify dlq redrive` (issue 14). Forward-only. Design: docs/operations.md
-- ("Re-driving the dead-letter topic").
--
-- One row per dead letter that was re-published to its source topic, keyed by where it sits on
-- the DLQ. A second run over the same offsets skips these (unless --force), so re-running a
-- redrive after a partial failure re-publishes only what is missing. The row is written after
-- Kafka acknowledged the publish: a crash in between re-publishes on the next run, which the
-- dispatcher absorbs (a request for an attempt already made is skipped).
CREATE TABLE dlq_redrives (
  dlq_topic        text        NOT NULL,
  dlq_partition    integer     NOT NULL,
  dlq_offset       bigint      NOT NULL,
  target_topic     text        NOT NULL,          -- the dlq-source-topic it was re-published to
  notification_id  text,                          -- from the notification-id header, when it had one
  redrive_count    integer     NOT NULL DEFAULT 1, -- >1 only through --force
  redriven_at      timestamptz NOT NULL,
  CONSTRAINT dlq_redrives_pkey PRIMARY KEY (dlq_topic, dlq_partition, dlq_offset),
  CONSTRAINT dlq_redrives_count_positive CHECK (redrive_count >= 1)
);
