-- 0042: `ordering: "strict" | "relaxed"` on an intent (the column and its handling in
-- notify_enqueue_item are 0040's). A strict notification is not attempted while an earlier one
-- of the same tenant, channel and recipient is still queued (docs/delivery-options.md,
-- "Ordering"). Forward-only.
CREATE OR REPLACE FUNCTION notify_intent_fields() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY['channel', 'to', 'subject', 'body', 'template', 'template_version', 'data', 'category',
               'expires_at', 'ttl_seconds', 'metadata', 'tenant_id', 'idempotency_key', 'traceparent', 'send_at', 'priority',
               'ordering'];
