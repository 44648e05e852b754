BEGIN;
SELECT r.created FROM notify_enqueue_item('{"tenant_id":"bench","channel":"webhook","to":"http://127.0.0.1:9/hook","body":"Your order has shipped."}'::jsonb, '{}'::jsonb) AS r;
COMMIT;
