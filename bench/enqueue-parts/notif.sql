BEGIN;
INSERT INTO notifications (id, tenant_id, channel, recipient, body, metadata, state, attempts, max_attempts, next_attempt_at, expires_at, created_at, updated_at, priority, ordering) VALUES ('ntf_'||gen_random_uuid(), 'bench', 'webhook', 'http://127.0.0.1:9/hook', 'Your order has shipped.', '{}', 'queued', 0, 8, now(), now()+interval '1 day', now(), now(), 'normal', 'relaxed');
COMMIT;
