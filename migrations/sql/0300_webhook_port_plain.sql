-- 0300: the webhook fast path (0160) also clears a port of five digits up to 65535. Forward-only.
--
-- 0160's pattern took a port of at most 4 digits, so a URL with a port from 10000 up (a
-- Kubernetes NodePort, 30000-32767; an ephemeral port of a local receiver) went through
-- notify_webhook_url_problem's full parse on every enqueue, and enqueue() of such an intent left
-- its plain path for notify_enqueue_item (the end-to-end bench's generator, whose receiver has such
-- a port: its backends at 500/s 44 and 35 % of a core before, 19 and 20 % after; BENCHMARKS.md,
-- session 29). notify_webhook_url_problem accepts a port whose digits,
-- leading zeros dropped, are at most 5 and at most 65535: the pattern now also takes 5 digits
-- without a leading zero up to 65535, spelled out digit by digit. Every other URL still goes
-- through the full parse; test/sql-enqueue/validation.test.ts checks that the fast path never
-- clears a URL the full parse refuses (65535 against 65536 among its edges), and enqueue()'s
-- plain path (packages/outbox/src/enqueue-plain.ts, WEBHOOK_PLAIN) uses the same pattern.
CREATE OR REPLACE FUNCTION notify_webhook_url_plain() RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN '^https?://(?:(?:[A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*\.?'
         '|(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))'
         '(?::(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(?:[/?#].*)?$';
