-- 0022: token buckets of the API's rate limits (NOTIFY_API_RATE_LIMIT per key,
-- NOTIFY_API_TENANT_RATE_LIMIT per tenant), shared by every API process. Forward-only.
-- Design: docs/api.md ("Rate limits").
--
-- UNLOGGED: a bucket is worth nothing after a crash (it would only refill), and skipping the WAL
-- keeps a limited request's extra write cheap. Nothing reads it when the limits are off.
CREATE UNLOGGED TABLE api_rate_buckets (
  bucket     text             PRIMARY KEY,       -- 'key:<api key id>' or 'tenant:<tenant id>'
  tokens     double precision NOT NULL,          -- after the last request, refilled lazily
  updated_at timestamptz      NOT NULL,
  allowed    boolean          NOT NULL           -- whether the last request took a token
);
