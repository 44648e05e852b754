-- 0001: the core schema. Forward-only: never edit a migration that has shipped; add the next number.
-- The state sets below mirror packages/outbox/src/model/state.ts and docs/state-machine.md.

CREATE TABLE notifications (
  id               text PRIMARY KEY,               -- ntf_<ULID>: time-ordered, 80 random bits
  tenant_id        text        NOT NULL,
  channel          text        NOT NULL,
  recipient        text        NOT NULL,           -- "to" in the API and the intent
  subject          text,
  body             text,
  template         text,
  template_version integer,                        -- null: the newest version at send time
  data             jsonb,
  category         text,                           -- matched against suppressions at send time
  metadata         jsonb       NOT NULL DEFAULT '{}'::jsonb,
  idempotency_key  text,
  request_hash     text,                           -- sha256 of the canonical request, compared on key reuse
  state            text        NOT NULL DEFAULT 'queued',
  dead_reason      text,
  attempts         integer     NOT NULL DEFAULT 0,
  max_attempts     integer     NOT NULL,           -- a manual retry raises it by the configured budget
  next_attempt_at  timestamptz,
  last_error       text,
  expires_at       timestamptz NOT NULL,
  traceparent      text,                           -- W3C trace context of the request that created it
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  sent_at          timestamptz,
  CONSTRAINT notifications_channel_known CHECK (channel IN ('email', 'sms', 'webhook')),
  CONSTRAINT notifications_state_known CHECK (state IN ('queued', 'sent', 'dead', 'cancelled')),
  CONSTRAINT notifications_dead_reason_known CHECK (dead_reason IN ('permanent', 'exhausted', 'expired', 'suppressed')),
  CONSTRAINT notifications_dead_iff_reason CHECK ((state = 'dead') = (dead_reason IS NOT NULL)),
  CONSTRAINT notifications_sent_iff_sent_at CHECK ((state = 'sent') = (sent_at IS NOT NULL)),
  CONSTRAINT notifications_queued_iff_next_attempt CHECK ((state = 'queued') = (next_attempt_at IS NOT NULL)),
  CONSTRAINT notifications_body_xor_template CHECK ((body IS NULL) <> (template IS NULL)),
  CONSTRAINT notifications_key_has_hash CHECK ((idempotency_key IS NULL) = (request_hash IS NULL)),
  CONSTRAINT notifications_attempts_in_range CHECK (attempts >= 0 AND attempts <= max_attempts),
  -- The idempotency rule: one notification per (tenant, key). NULL keys never collide.
  CONSTRAINT notifications_tenant_idempotency_key UNIQUE (tenant_id, idempotency_key)
);

-- Listing newest first within a tenant: ids are time-ordered, so (tenant_id, id) serves the cursor.
CREATE INDEX notifications_tenant_id_idx ON notifications (tenant_id, id DESC);
-- "What did we send to this address?" lookups within a tenant.
CREATE INDEX notifications_tenant_recipient_idx ON notifications (tenant_id, recipient, id DESC);
-- The repair sweep and the oldest-queued-age metric read only queued rows; sent rows pile up and must not slow them.
CREATE INDEX notifications_queued_due_idx ON notifications (next_attempt_at) WHERE state = 'queued';

CREATE TABLE attempts (
  notification_id text        NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
  attempt         integer     NOT NULL,
  started_at      timestamptz NOT NULL,
  finished_at     timestamptz NOT NULL,
  outcome         text        NOT NULL,
  error           text,
  provider_status text,                            -- e.g. "503", "550 5.1.1", "ECONNRESET"
  PRIMARY KEY (notification_id, attempt),
  CONSTRAINT attempts_attempt_positive CHECK (attempt >= 1),
  CONSTRAINT attempts_outcome_known CHECK (outcome IN ('sent', 'transient', 'permanent', 'expired', 'suppressed')),
  CONSTRAINT attempts_finished_after_start CHECK (finished_at >= started_at)
);

-- Every Kafka message leaves through this table, so a state change and the message that follows
-- from it commit together. The relay is the only producer.
CREATE TABLE outbox (
  id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  topic        text        NOT NULL,               -- suffix after the topic prefix: requests | retry.<tier> | events
  key          text        NOT NULL,               -- Kafka message key: tenant/channel/hash(recipient)
  value        text        NOT NULL,               -- the message bytes exactly as published (JSON)
  headers      jsonb       NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  -- The writing transaction's id: the relay only reads rows whose transaction is older than its
  -- snapshot's xmin, so a slow transaction's lower ids are never overtaken (Watermill's forwarder does the same).
  txid         xid8        NOT NULL DEFAULT pg_current_xact_id(),
  published_at timestamptz
);

-- (The relay's claim index on unpublished rows, (txid, id), is in 0002 with the relay's ordering rule.)
-- The retention purge finds old published rows without scanning unpublished ones.
CREATE INDEX outbox_published_at_idx ON outbox (published_at) WHERE published_at IS NOT NULL;

CREATE TABLE api_keys (
  id         text        PRIMARY KEY,
  tenant_id  text        NOT NULL,
  key_hash   text        NOT NULL,                 -- sha256 of the key; the key itself is never stored
  name       text,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  CONSTRAINT api_keys_key_hash_unique UNIQUE (key_hash)
);

-- Templates are stored per tenant and versioned; notifications name a template and are rendered at send time.
CREATE TABLE templates (
  tenant_id  text        NOT NULL,
  name       text        NOT NULL,
  version    integer     NOT NULL,
  channel    text        NOT NULL,
  subject    text,
  body       text        NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, name, version),
  CONSTRAINT templates_version_positive CHECK (version >= 1),
  CONSTRAINT templates_channel_known CHECK (channel IN ('email', 'sms', 'webhook'))
);

-- Recipient opt-outs, checked at send time. category '*' suppresses every category of that channel.
CREATE TABLE suppressions (
  tenant_id  text        NOT NULL,
  channel    text        NOT NULL,
  recipient  text        NOT NULL,
  category   text        NOT NULL DEFAULT '*',
  reason     text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, channel, recipient, category),
  CONSTRAINT suppressions_channel_known CHECK (channel IN ('email', 'sms', 'webhook'))
);

-- Per-tenant settings; today the webhook signing secret (overrides NOTIFY_WEBHOOK_SECRET).
CREATE TABLE tenants (
  id                     text        PRIMARY KEY,
  webhook_signing_secret text,
  created_at             timestamptz NOT NULL DEFAULT now()
);
