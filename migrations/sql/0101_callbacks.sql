-- 0101: status callbacks (issue 15): a tenant registers one URL that receives its notifications'
-- status events as signed Standard Webhooks. Forward-only. Design: docs/callbacks.md.

-- One callback URL per tenant and the status event types it wants (StatusEventV1 `type`s).
-- `dropped` counts events not queued because the tenant's backlog was full (shown by GET /v1/callbacks).
CREATE TABLE callback_endpoints (
  tenant_id       text        PRIMARY KEY,
  url             text        NOT NULL,
  events          text[]      NOT NULL,
  dropped         bigint      NOT NULL DEFAULT 0,
  last_dropped_at timestamptz,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  CONSTRAINT callback_endpoints_events_nonempty CHECK (cardinality(events) >= 1),
  CONSTRAINT callback_endpoints_events_known CHECK (events <@ ARRAY['notification.queued', 'notification.retry_scheduled',
    'notification.sent', 'notification.dead', 'notification.cancelled', 'notification.requeued']::text[]),
  CONSTRAINT callback_endpoints_url_http CHECK (url ~ '^https?://')
);

-- One status event to deliver to one tenant's callback URL. The callback consumer (its own Kafka
-- consumer group on <prefix>.events) inserts it; the sender claims due rows, POSTs, and records the
-- outcome here. Deliveries of notifications never touch this table, so a failing callback cannot
-- slow them. `event_id` is the webhook-id (stable across retries and across a re-read of the same
-- Kafka message: a hash of the event bytes), unique per tenant so a replayed event is queued once.
CREATE TABLE callback_deliveries (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id       text        NOT NULL,
  event_id        text        NOT NULL,
  notification_id text        NOT NULL,
  event_type      text        NOT NULL,
  payload         text        NOT NULL,            -- the StatusEventV1 JSON as published: no body, no recipient
  state           text        NOT NULL DEFAULT 'pending',
  attempts        integer     NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,                     -- pending: due then (a claim moves it forward by the claim's lease)
  last_error      text,
  last_status     text,                            -- HTTP status or errno of the last attempt
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  CONSTRAINT callback_deliveries_event_unique UNIQUE (tenant_id, event_id),
  CONSTRAINT callback_deliveries_state_known CHECK (state IN ('pending', 'delivered', 'failed')),
  CONSTRAINT callback_deliveries_pending_iff_due CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL))
);
-- The sender's claim: due pending rows, soonest first; finished rows leave the index.
CREATE INDEX callback_deliveries_due_idx ON callback_deliveries (next_attempt_at) WHERE state = 'pending';
-- The per-tenant backlog bound counts a tenant's pending rows.
CREATE INDEX callback_deliveries_tenant_pending_idx ON callback_deliveries (tenant_id) WHERE state = 'pending';
-- Retention and erasure find a notification's callback rows.
CREATE INDEX callback_deliveries_notification_idx ON callback_deliveries (notification_id);
