-- 0030: the management API (issue 14): template activation, sample data for previews, sealed
-- per-tenant webhook signing secrets with rotation, and bulk retries.

-- Which version of a template a notification without a pinned version renders. Without a row the
-- newest version renders (the behaviour before this migration). The foreign key keeps the active
-- version from being deleted.
CREATE TABLE template_activations (
  tenant_id    text        NOT NULL,
  name         text        NOT NULL,
  version      integer     NOT NULL,
  activated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, name),
  CONSTRAINT template_activations_version_exists FOREIGN KEY (tenant_id, name, version) REFERENCES templates (tenant_id, name, version)
);

-- Data a template was checked against at create time; the preview renders with it by default.
ALTER TABLE templates ADD COLUMN sample_data jsonb;

-- A tenant's webhook signing secrets, sealed with AES-256-GCM under NOTIFY_SECRETS_KEY
-- ("v1.<iv>.<tag>.<ciphertext>", base64url; the tenant id is the additional data, so a sealed value
-- copied to another tenant does not open). Every row whose expires_at is null or in the future
-- signs: after a rotation the old secret keeps signing until the grace period ends, next to the new
-- one (Standard Webhooks allows several signatures in one header).
CREATE TABLE tenant_webhook_secrets (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id  text        NOT NULL,
  sealed     text        NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  CONSTRAINT tenant_webhook_secrets_sealed_form CHECK (sealed LIKE 'v1.%')
);
-- The send-time read: a tenant's secrets that still sign.
CREATE INDEX tenant_webhook_secrets_tenant_idx ON tenant_webhook_secrets (tenant_id, id);
-- At most one secret without an end per tenant: the current one.
CREATE UNIQUE INDEX tenant_webhook_secrets_one_current ON tenant_webhook_secrets (tenant_id) WHERE expires_at IS NULL;

COMMENT ON COLUMN tenants.webhook_signing_secret IS
  'Legacy plaintext secret, read only until the tenant''s first rotation, which seals it into tenant_webhook_secrets (with the grace period) and clears this column.';

-- POST /v1/notifications/retry: one row per bulk retry, so a repeated Idempotency-Key answers with
-- the first run, and the re-queued notifications can be followed by the bulk id.
CREATE TABLE bulk_retries (
  id              text        PRIMARY KEY,            -- blk_<ULID>
  tenant_id       text        NOT NULL,
  idempotency_key text,
  filter          jsonb       NOT NULL,
  requeued        integer     NOT NULL,
  matched         integer     NOT NULL,
  api_key_id      text,
  created_at      timestamptz NOT NULL,
  CONSTRAINT bulk_retries_tenant_idempotency_key UNIQUE (tenant_id, idempotency_key)
);
