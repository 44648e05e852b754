BEGIN;
INSERT INTO bench_plain_insert (id, tenant_id, channel, recipient, body, created_at) VALUES (gen_random_uuid()::text, 'bench', 'webhook', 'http://127.0.0.1:9/hook', 'Your order has shipped.', now());
COMMIT;
