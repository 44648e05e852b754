-- 0041: `priority: "high" | "normal"` on an intent (the column and its handling in
-- notify_enqueue_item are 0040's). A high-priority notification's delivery request goes to
-- `requests.high`, which the dispatcher drains in a lane of its own (docs/delivery-options.md,
-- "Priority"). Forward-only.
CREATE OR REPLACE FUNCTION notify_intent_fields() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY['channel', 'to', 'subject', 'body', 'template', 'template_version', 'data', 'category',
               'expires_at', 'ttl_seconds', 'metadata', 'tenant_id', 'idempotency_key', 'traceparent', 'send_at', 'priority'];
