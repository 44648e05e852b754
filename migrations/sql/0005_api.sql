-- 0005: the API's record of manual actions on a notification (cancel, retry), so support can see
-- who re-queued a dead notification, when, and why it had died. Forward-only.

CREATE TABLE notification_actions (
  id                   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  notification_id      text        NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
  action               text        NOT NULL,
  from_state           text        NOT NULL,
  to_state             text        NOT NULL,
  previous_dead_reason text,                         -- why it was dead, for a retry
  attempts             integer     NOT NULL,         -- attempts made when the action happened
  max_attempts         integer     NOT NULL,         -- the cap after the action (a retry raises it)
  api_key_id           text,                         -- who asked: the key's id, never the key; null from the CLI
  occurred_at          timestamptz NOT NULL,
  CONSTRAINT notification_actions_action_known CHECK (action IN ('cancel', 'retry')),
  -- Mirrors the state machine (packages/outbox/src/model/state.ts): the only manual transitions.
  CONSTRAINT notification_actions_transition_allowed CHECK (
    (action = 'cancel' AND from_state = 'queued' AND to_state = 'cancelled')
    OR (action = 'retry' AND from_state = 'dead' AND to_state = 'queued')
  ),
  CONSTRAINT notification_actions_retry_has_reason CHECK ((action = 'retry') = (previous_dead_reason IS NOT NULL)),
  CONSTRAINT notification_actions_attempts_in_range CHECK (attempts >= 0 AND attempts <= max_attempts)
);

-- GET /v1/notifications/{id}/actions reads one notification's history in order; the FK's cascade delete uses it too.
CREATE INDEX notification_actions_notification_idx ON notification_actions (notification_id, id);
