-- 0110: the operator's actions on an endpoint (issue 15 item 5): enable, disable, set or clear its
-- rate limit through /v1/endpoints, recorded like the manual actions on a notification (0005), so
-- support can see who re-enabled an endpoint and when. Forward-only.

CREATE TABLE endpoint_actions (
  id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id text        NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
  action      text        NOT NULL,
  from_state  text        NOT NULL,
  to_state    text        NOT NULL,
  rate_limit  text,                       -- set_rate_limit: the new override (null: cleared, the default applies)
  api_key_id  text,                       -- who asked: the key's id, never the key
  occurred_at timestamptz NOT NULL,
  CONSTRAINT endpoint_actions_action_known CHECK (action IN ('enable', 'disable', 'set_rate_limit')),
  CONSTRAINT endpoint_actions_states_known CHECK (from_state IN ('ok', 'open', 'disabled') AND to_state IN ('ok', 'open', 'disabled')),
  CONSTRAINT endpoint_actions_outcome CHECK (
    (action = 'enable' AND to_state = 'ok')
    OR (action = 'disable' AND to_state = 'disabled')
    OR (action = 'set_rate_limit' AND to_state = from_state)
  )
);

-- GET /v1/endpoints/{id}/actions reads one endpoint's history in order.
CREATE INDEX endpoint_actions_endpoint_idx ON endpoint_actions (endpoint_id, id);
