BEGIN;
WITH n AS (INSERT INTO notifications (id, tenant_id, channel, recipient, body, metadata, state, attempts, max_attempts, next_attempt_at, expires_at, created_at, updated_at, priority, ordering) VALUES ('ntf_'||gen_random_uuid(), 'bench', 'webhook', 'http://127.0.0.1:9/hook', 'Your order has shipped.', '{}', 'queued', 0, 8, now(), now()+interval '1 day', now(), now(), 'normal', 'relaxed') RETURNING id, tenant_id)
INSERT INTO outbox (topic, key, value, headers, event_value) SELECT 'requests', 'bench/webhook/x', '{"v":1,"type":"notification.deliver","id":"'||id||'"}', jsonb_build_object('notification-id', id, 'tenant-id', tenant_id, 'schema-version', '1'), '{"v":1,"type":"notification.queued"}' FROM n;
COMMIT;
