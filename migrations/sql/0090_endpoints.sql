-- 0090: endpoint health (issue 15 items 5 and 8). Forward-only. Design: docs/endpoints.md.
--
-- An endpoint is what a tenant's deliveries go to: a webhook origin (scheme://host:port) or the
-- SMTP / SMS provider of a channel. Its row holds the circuit breaker shared by every dispatcher
-- process, the auto-disable state and the endpoint's own rate limit. The id is derived from
-- (tenant, channel, origin) (`ep_` + 24 hex of sha256), so a dispatcher can upsert a row without
-- looking it up first.
CREATE TABLE endpoints (
  id                   text        PRIMARY KEY,
  tenant_id            text        NOT NULL,
  channel              text        NOT NULL,
  origin               text        NOT NULL,               -- https://host:443, or smtp://host:25 / sms:https://gw:443 (no credentials)
  provider             text        NOT NULL DEFAULT 'primary', -- primary | fallback (the SMTP / SMS provider it is)
  state                text        NOT NULL DEFAULT 'ok',  -- ok | open | disabled
  consecutive_failures integer     NOT NULL DEFAULT 0,     -- transient failures since the last success
  failing_since        timestamptz,                        -- first failure of the current streak
  last_error_code      text,                               -- provider status of the last failure ("503", "ECONNREFUSED")
  last_failure_at      timestamptz,
  last_success_at      timestamptz,
  opened_at            timestamptz,                        -- when the circuit opened (state open)
  probe_at             timestamptz,                        -- state open: a probe may go from then on (claimed by moving it)
  disabled_at          timestamptz,
  disabled_by          text,                               -- auto | operator
  rate_limit           text,                               -- override of NOTIFY_ENDPOINT_RATE_LIMIT, '<n>/<s|m|h>[,burst=<n>]'
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT endpoints_identity_unique UNIQUE (tenant_id, channel, origin),
  CONSTRAINT endpoints_channel_known CHECK (channel IN ('email', 'sms', 'webhook')),
  CONSTRAINT endpoints_provider_known CHECK (provider IN ('primary', 'fallback')),
  CONSTRAINT endpoints_state_known CHECK (state IN ('ok', 'open', 'disabled')),
  CONSTRAINT endpoints_open_has_probe CHECK ((state = 'open') = (probe_at IS NOT NULL)),
  CONSTRAINT endpoints_disabled_has_time CHECK ((state = 'disabled') = (disabled_at IS NOT NULL AND disabled_by IN ('auto', 'operator'))),
  CONSTRAINT endpoints_failures_nonnegative CHECK (consecutive_failures >= 0)
);

-- GET /v1/endpoints: a tenant's endpoints, id order (the cursor).
CREATE INDEX endpoints_tenant_idx ON endpoints (tenant_id, id);
-- notify_endpoint_circuits_open: counts the few endpoints that are not ok.
CREATE INDEX endpoints_not_ok_idx ON endpoints (channel) WHERE state <> 'ok';

-- Token buckets of the delivery rate limits (per tenant, per endpoint), shared by every
-- dispatcher. A dispatcher takes several tokens per statement and spends them locally (see
-- packages/providers/src/endpoints/rate-buckets.ts). UNLOGGED for the reason given in 0022.
CREATE UNLOGGED TABLE delivery_rate_buckets (
  bucket     text             PRIMARY KEY,   -- 'tenant:<tenant id>' or 'endpoint:<endpoint id>'
  tokens     double precision NOT NULL,          -- after the last take, refilled lazily
  updated_at timestamptz      NOT NULL,
  granted    integer          NOT NULL,           -- tokens the last take got (0 = refused)
  per_second double precision NOT NULL,           -- the rate and burst of the last take (config may change)
  burst      double precision NOT NULL
);

-- Per-tenant override of NOTIFY_TENANT_RATE_LIMIT (same format); null = the default.
ALTER TABLE tenants ADD COLUMN delivery_rate_limit text;

-- Which provider answered an attempt: primary, or the channel's fallback (NOTIFY_SMTP_FALLBACK_URL,
-- NOTIFY_SMS_FALLBACK_URL). Null when no provider was called (expired, suppressed, rows before 0090).
ALTER TABLE attempts ADD COLUMN provider text;
ALTER TABLE attempts ADD CONSTRAINT attempts_provider_known CHECK (provider IN ('primary', 'fallback'));

-- A notification to a disabled endpoint ends dead with reason endpoint_disabled.
ALTER TABLE notifications DROP CONSTRAINT notifications_dead_reason_known;
ALTER TABLE notifications ADD CONSTRAINT notifications_dead_reason_known
  CHECK (dead_reason IN ('permanent', 'exhausted', 'expired', 'suppressed', 'publish_failed', 'endpoint_disabled'));
