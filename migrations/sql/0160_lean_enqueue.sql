-- 0160: a cheaper enqueue, same rules and same rows. Forward-only. Numbers: BENCHMARKS.md
-- ("enqueue: where the time goes"), counted with callgrind on a single-user backend (instructions
-- per enqueue of the bench's webhook intent, each call its own transaction).
--
-- 1. A fast path for ordinary webhook URLs. notify_webhook_url_problem (0006) parses a URL the
--    way the WHATWG parser does, in plpgsql, which compiles each of its expressions again in every
--    transaction: for `http://127.0.0.1:9/hook` about 330k instructions, one seventh of the whole
--    enqueue. An http or https URL with a plain host (letters, digits, dots and hyphens, its last
--    label starting with a letter, or a dotted-decimal IPv4 address without leading zeros), an
--    optional port of at most 4 digits and nothing else before the path is a URL that function
--    accepts; one regular expression (compiled once per backend) clears it, and every other URL
--    still goes through the full parse. test/sql-enqueue/validation.test.ts checks that the fast
--    path never clears a URL the full parse refuses.
-- 2. notify_enqueue_item reads notify_settings once, not in three subqueries, and writes the
--    outbox row from one SELECT instead of two UNION ALL branches: fewer plan nodes to start in
--    every call.

-- The plain webhook URLs of the fast path (1. above). Every URL it matches is one
-- notify_webhook_url_problem accepts: scheme http or https (lower case, nothing before it), `//`,
-- no credentials, a host that is either a DNS-style name whose last label starts with a letter
-- (so not an IPv4 number in any spelling) or four decimal parts of 0-255 without leading zeros,
-- a port of at most 4 digits, then the end or the start of the path, query or fragment.
CREATE FUNCTION notify_webhook_url_plain() RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN '^https?://(?:(?:[A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*\.?'
         '|(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))'
         '(?::[0-9]{1,4})?(?:[/?#].*)?$';

-- 0006's definition, with the webhook fast path in front of notify_webhook_url_problem.
CREATE OR REPLACE FUNCTION notify_recipient_problem(channel text, recipient text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE channel
    WHEN 'email' THEN CASE
      -- Deliberately simple: one @, no spaces, a dot in the domain. The SMTP server is the final judge.
      WHEN NOT notify_too_long(recipient, 254)
       AND recipient ~ ('^[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff@<>()[\]\\,;:"]+'
                        '@[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff@<>()[\]\\,;:"]+'
                        '\.[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff@<>()[\]\\,;:"]+$')
      THEN NULL ELSE 'must be an email address' END
    WHEN 'sms' THEN CASE WHEN recipient ~ '^\+[1-9][0-9]{6,14}$' THEN NULL
      ELSE 'must be a phone number in E.164 form, e.g. +14155550100' END
    WHEN 'webhook' THEN CASE
      WHEN octet_length(recipient) <= 2048 AND recipient ~ notify_webhook_url_plain() THEN NULL
      ELSE notify_webhook_url_problem(recipient) END
  END;

-- 0150's function, with the same arguments, checks, rows and answers. What changed (2. above):
-- notify_settings is read once, into a variable, where three subqueries of the write statement
-- read it before (each a plan node started in every call); the outbox row
-- comes from one SELECT whose CASEs pick the held notification's queued event or the delivery
-- request. The comments of 0150 on the hot path (no EXCEPTION block, ON CONFLICT then a lookup,
-- the forced generic plan) hold as they were.
CREATE OR REPLACE FUNCTION notify_enqueue_item(intent jsonb, options jsonb DEFAULT '{}',
                                               OUT created boolean, OUT notification notifications, OUT refusal jsonb)
  LANGUAGE plpgsql VOLATILE
  SET search_path FROM CURRENT -- callers in other schemas (a Java service's search_path) still find the tables
  -- The write statement takes variables as parameters. Left to choose, the plan cache sometimes
  -- kept making a custom plan for it, planning it again on every call (a third of the call).
  SET plan_cache_mode = force_generic_plan
  AS $$
DECLARE
  now_ timestamptz;
  max_attempts_ integer;
  default_ttl_ms_ bigint;
  settings notify_settings;
  tenant_id_ text;
  channel_ text;
  key_ text;
  hash_ text;
  traceparent_ text;
  send_at_ timestamptz;
  held_ boolean;
  due_ timestamptz;
  random_ bytea;
  ms_ bigint;
  id_ text;
  at_ text;
  headers_ jsonb;
  event_ text;
BEGIN
  created := false;
  options := coalesce(options, '{}');
  IF jsonb_typeof(options) <> 'object' OR options - ARRAY['now', 'max_attempts', 'default_ttl_ms'] <> '{}' THEN
    RAISE EXCEPTION 'notify_enqueue_item: options must be an object with now, max_attempts and default_ttl_ms only, not %', options
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  now_ := date_trunc('milliseconds', coalesce((options ->> 'now')::timestamptz, statement_timestamp()));

  refusal := notify_item_check(intent, now_);
  IF refusal IS NOT NULL THEN RETURN; END IF;

  max_attempts_ := (options ->> 'max_attempts')::integer;
  default_ttl_ms_ := (options ->> 'default_ttl_ms')::bigint;
  IF max_attempts_ < 1 OR default_ttl_ms_ < 1 THEN
    RAISE EXCEPTION 'notify_enqueue_item: max_attempts and default_ttl_ms must be positive, not % and %', max_attempts_, default_ttl_ms_
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO settings FROM notify_settings AS s; -- one row (notify_settings_one_row); none: the built-in defaults below

  tenant_id_ := intent ->> 'tenant_id';
  channel_ := intent ->> 'channel';
  key_ := intent ->> 'idempotency_key';
  -- kept only when it has the W3C form; anything else is dropped, never refused
  IF jsonb_typeof(intent -> 'traceparent') = 'string'
     AND intent ->> 'traceparent' ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN
    traceparent_ := intent ->> 'traceparent';
  END IF;
  IF key_ IS NOT NULL THEN
    hash_ := encode(sha256(convert_to((intent - 'idempotency_key' - 'traceparent')::text, 'UTF8')), 'hex');
  END IF;
  -- send_at in the past or now: sent at once, as without it (and stored as asked)
  send_at_ := notify_parse_instant(intent ->> 'send_at');
  held_ := coalesce(send_at_ > now_, false);
  due_ := CASE WHEN held_ THEN send_at_ ELSE now_ END;
  random_ := uuid_send(gen_random_uuid()); -- a variable: inlined notify_ulid reads it more than once
  ms_ := (extract(epoch FROM now_) * 1000)::bigint; -- a variable too, or inlining would compute it ten times
  id_ := 'ntf_' || notify_ulid(ms_, random_);
  at_ := notify_iso(now_);
  headers_ := jsonb_build_object('notification-id', id_, 'tenant-id', tenant_id_, 'schema-version', '1')
           || CASE WHEN traceparent_ IS NOT NULL THEN jsonb_build_object('traceparent', traceparent_) ELSE '{}' END;
  event_ := '{"v":1,"type":"notification.queued","id":"' || id_ || '","tenant_id":' || to_json(tenant_id_)::text -- escapes as JSON.stringify does
         || ',"channel":"' || channel_ || '","state":"queued","attempts":0,"dead_reason":null,"last_error":null,'
         || '"next_attempt_at":"' || notify_iso(due_) || '","occurred_at":"' || at_ || '"}';

  -- One statement. When the key is taken, ON CONFLICT inserts neither the notification nor, since
  -- `o` reads `n`, the outbox row; the outbox trigger fires once. Held (send_at ahead): the queued
  -- event alone, on `events`. Due now: the delivery request, carrying the queued event when the
  -- event policy is `all`.
  WITH n AS (
    INSERT INTO notifications (id, tenant_id, channel, recipient, subject, body, template, template_version, data,
                               category, metadata, idempotency_key, request_hash, state, attempts, max_attempts,
                               next_attempt_at, expires_at, traceparent, created_at, updated_at,
                               send_at, held_until, priority, ordering)
    VALUES (id_, tenant_id_, channel_, intent ->> 'to', intent ->> 'subject', intent ->> 'body', intent ->> 'template',
            (intent -> 'template_version')::numeric::integer, intent -> 'data', intent ->> 'category',
            coalesce(intent -> 'metadata', '{}'), key_, hash_, 'queued', 0,
            coalesce(max_attempts_, settings.max_attempts, 8),
            due_,
            CASE WHEN intent ? 'expires_at' THEN notify_parse_instant(intent ->> 'expires_at')
                 WHEN intent ? 'ttl_seconds' THEN due_ + (intent -> 'ttl_seconds')::numeric * interval '1 second'
                 ELSE due_ + coalesce(default_ttl_ms_, settings.default_ttl_ms, 86400000) * interval '1 millisecond' END,
            traceparent_, now_, now_,
            send_at_, CASE WHEN held_ THEN send_at_ END, coalesce(intent ->> 'priority', 'normal'), coalesce(intent ->> 'ordering', 'relaxed'))
    ON CONFLICT ON CONSTRAINT notifications_tenant_idempotency_key DO NOTHING
    RETURNING *
  ), o AS (
    INSERT INTO outbox (topic, key, value, headers, event_value)
    SELECT CASE WHEN held_ THEN 'events' WHEN n.priority = 'high' THEN 'requests.high' ELSE 'requests' END,
           notify_message_key(tenant_id_, channel_, n.recipient),
           CASE WHEN held_ THEN event_
                ELSE '{"v":1,"type":"notification.deliver","id":"' || id_ || '","tenant_id":' || to_json(tenant_id_)::text
                       || ',"channel":"' || channel_ || '","attempt":1,"due_at":"' || at_ || '"}' END,
           headers_ || CASE WHEN held_ THEN jsonb_build_object('message-type', 'notification.queued')
                            ELSE jsonb_build_object('message-type', 'notification.deliver', 'attempt', '1', 'due-at', at_) END,
           CASE WHEN NOT held_ AND settings.events = 'all' THEN event_ END
      FROM n
  )
  SELECT * INTO notification FROM n;
  IF FOUND THEN
    created := true;
    RETURN;
  END IF;

  -- The key is taken: the original if it is the same request, else a conflict.
  SELECT * INTO notification FROM notifications AS n WHERE n.tenant_id = tenant_id_ AND n.idempotency_key = key_;
  IF NOT FOUND THEN
    notification := NULL;
    -- The conflict was with a row this statement cannot read: deleted since, or (were PostgreSQL to
    -- let it through rather than raise 40001) committed after a REPEATABLE READ snapshot.
    refusal := notify_refusal('idempotency_in_progress',
                              'a concurrent request with the same Idempotency-Key has not finished; retry shortly', '[]');
  ELSIF notification.request_hash IS DISTINCT FROM hash_ THEN
    refusal := notify_refusal('idempotency_conflict',
                              format('this Idempotency-Key was already used for a different request (notification %s); use a new key for a new request', notification.id),
                              '[]', jsonb_build_object('existing_id', notification.id));
    notification := NULL;
  END IF;
END;
$$;
