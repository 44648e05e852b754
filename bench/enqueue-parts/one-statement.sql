-- enqueue()'s plain path (migration 0270's notify_enqueue_item for a webhook intent without options) as one
-- statement without plpgsql: the same validation, id, instants, message texts, headers and key.
-- A copy as of migration 0280, for measuring only: it can drift from the function.
-- (pgbench reads :name as a variable, so the JSON texts write ": null" with a space.)
BEGIN;
WITH a AS (
  SELECT i.intent, date_trunc('milliseconds', coalesce((i.options ->> 'now')::timestamptz, statement_timestamp())) AS now_,
         uuid_send(gen_random_uuid()) AS random_, (i.options ->> 'max_attempts')::integer AS max_attempts_,
         (i.options ->> 'default_ttl_ms')::bigint AS default_ttl_ms_
    FROM (SELECT '{"tenant_id":"bench","channel":"webhook","to":"http://127.0.0.1:9/hook","body":"Your order has shipped."}'::jsonb AS intent, '{}'::jsonb AS options) AS i
), b AS (
  SELECT a.*, 'ntf_' || notify_ulid((extract(epoch FROM a.now_) * 1000)::bigint, a.random_) AS id_, notify_iso(a.now_) AS at_,
         a.intent ->> 'tenant_id' AS tenant_id_, a.intent ->> 'channel' AS channel_, a.intent ->> 'idempotency_key' AS key_,
         CASE WHEN a.intent ->> 'traceparent' LIKE '__-________________________________-________________-__'
               AND ltrim(a.intent ->> 'traceparent', '0123456789abcdef-') = ''
               AND octet_length(replace(a.intent ->> 'traceparent', '-', '')) = 52
              THEN a.intent ->> 'traceparent' END AS traceparent_,
         coalesce(CASE WHEN jsonb_typeof(a.intent) = 'object' THEN
        a.intent - '{tenant_id,channel,to,body,subject,idempotency_key,traceparent}'::text[] = '{}'
    AND jsonb_typeof(a.intent -> 'tenant_id') = 'string' AND octet_length(a.intent ->> 'tenant_id') BETWEEN 1 AND 200
    AND jsonb_typeof(a.intent -> 'channel') = 'string' AND a.intent ->> 'channel' IN ('email', 'sms', 'webhook')
    AND jsonb_typeof(a.intent -> 'to') = 'string' AND octet_length(a.intent ->> 'to') BETWEEN 1 AND 2048
    AND notify_recipient_problem(a.intent ->> 'channel', a.intent ->> 'to') IS NULL
    AND jsonb_typeof(a.intent -> 'body') = 'string' AND octet_length(a.intent ->> 'body') >= 1
    AND (NOT a.intent ? 'idempotency_key' OR (jsonb_typeof(a.intent -> 'idempotency_key') = 'string'
         AND octet_length(a.intent ->> 'idempotency_key') BETWEEN 1 AND 255))
    AND (NOT a.intent ? 'subject' OR (jsonb_typeof(a.intent -> 'subject') = 'string' AND octet_length(a.intent ->> 'subject') <= 998
         AND a.intent ->> 'channel' = 'email'))
    AND coalesce(octet_length(a.intent ->> 'subject'), 0) + octet_length(a.intent ->> 'body') <= 65536 END, false)
         AND coalesce(a.max_attempts_, 1) >= 1 AND coalesce(a.default_ttl_ms_, 1) >= 1 AS plain
    FROM a
), c AS (
  SELECT b.*, CASE WHEN b.key_ IS NOT NULL THEN encode(sha256(convert_to((b.intent - 'idempotency_key' - 'traceparent')::text, 'UTF8')), 'hex') END AS hash_,
         coalesce(b.max_attempts_, s.max_attempts, 8) AS max_attempts, 
         b.now_ + coalesce(b.default_ttl_ms_, s.default_ttl_ms, 86400000) * interval '1 millisecond' AS expires_at,
         coalesce(s.events, 'all') AS events
    FROM b LEFT JOIN notify_settings AS s ON true
), n AS (
  INSERT INTO notifications (id, tenant_id, channel, recipient, subject, body, metadata, idempotency_key, request_hash, state, attempts,
                             max_attempts, next_attempt_at, expires_at, traceparent, created_at, updated_at, priority, ordering)
  SELECT c.id_, c.tenant_id_, c.channel_, c.intent ->> 'to', c.intent ->> 'subject', c.intent ->> 'body', '{}', c.key_, c.hash_, 'queued', 0,
         c.max_attempts, c.now_, c.expires_at, c.traceparent_, c.now_, c.now_, 'normal', 'relaxed'
    FROM c WHERE c.plain
  ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
  RETURNING id, recipient
), o AS (
  INSERT INTO outbox (topic, key, value, headers, event_value)
  SELECT 'requests', notify_message_key(c.tenant_id_, c.channel_, n.recipient),
         format('{"v":1,"type":"notification.deliver","id":"%s","tenant_id":%s,"channel":"%s","attempt":1,"due_at":"%s"}', c.id_, to_json(c.tenant_id_), c.channel_, c.at_),
         CASE WHEN c.traceparent_ IS NULL
              THEN jsonb_build_object('notification-id', c.id_, 'tenant-id', c.tenant_id_, 'schema-version', '1', 'message-type', 'notification.deliver', 'attempt', '1', 'due-at', c.at_)
              ELSE jsonb_build_object('notification-id', c.id_, 'tenant-id', c.tenant_id_, 'schema-version', '1', 'message-type', 'notification.deliver', 'attempt', '1', 'due-at', c.at_, 'traceparent', c.traceparent_) END,
         CASE WHEN c.events = 'all' THEN format('{"v":1,"type":"notification.queued","id":"%s","tenant_id":%s,"channel":"%s","state":"queued","attempts":0,"dead_reason": null,"last_error": null,"next_attempt_at":"%s","occurred_at":"%s"}', c.id_, to_json(c.tenant_id_), c.channel_, c.at_, c.at_) END
    FROM n, c
)
SELECT c.plain, n.id IS NOT NULL AS created, c.id_, c.hash_, c.max_attempts, c.expires_at, c.traceparent_, c.now_ FROM c LEFT JOIN n ON true;
COMMIT;
