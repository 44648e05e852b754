BEGIN;
INSERT INTO outbox (topic, key, value, headers, event_value) VALUES ('requests', 'bench/webhook/x', '{"v":1,"type":"notification.deliver","id":"x"}', jsonb_build_object('notification-id', 'x', 'tenant-id', 'bench', 'schema-version', '1'), '{"v":1,"type":"notification.queued"}');
COMMIT;
