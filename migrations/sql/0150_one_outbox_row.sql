-- 0150: one outbox row per enqueue, and one enqueue function. Forward-only. Design and numbers:
-- docs/relay.md ("One row, two messages"), BENCHMARKS.md (lever table).
--
-- Before this migration an enqueue wrote two outbox rows, the delivery request and the
-- `notification.queued` event, and 0040's notify_enqueue_item then rewrote them (an UPDATE of the
-- notification, a DELETE or UPDATE of the request row) when a delivery option was present. Each
-- outbox row costs an insert with its index entries, an UPDATE of published_at by the relay and a
-- DELETE by the purge. Now:
-- - The request row carries the queued event's value in `event_value`. The relay publishes the
--   event right after the request, with the request's headers less `attempt` and `due-at` and
--   with `message-type` notification.queued (outbox_queued_event_headers): the same topic, key,
--   value and headers, byte for byte, as the second row had (test/sql-enqueue/differential.test.ts
--   compares them with the contract builders).
-- - A scheduled notification (send_at ahead) has no request row until the schedule service
--   releases it; its queued event is still a row of its own on `events`, as before.
-- - notify_enqueue_item is the one enqueue function: it validates, computes send_at, priority and
--   ordering first and writes the final rows in one statement. notify_enqueue_row (0006) and
--   notify_enqueue call it; the refusal is raised by one function, notify_refusal_raise.
-- - The event policy (0060) drops the queued event under `terminal` and `none`: event_value is
--   written only under `all`. The outbox_event_policy trigger still applies the policy to every
--   row of topic `events` (the scheduled notification's queued event, the dispatcher's and the
--   API's events); it does not fire for the request row.

ALTER TABLE outbox ADD COLUMN event_value text; -- the notification.queued event published after this row (requests rows of enqueue only)

COMMENT ON COLUMN outbox.event_value IS
  'When set: the value of the notification.queued event the relay publishes to `events` right after this row, with outbox_queued_event_headers(headers).';

-- The headers of the queued event published with a request row: the request's headers without
-- the request-only `attempt` and `due-at`, and its message-type. jsonb keeps keys in one order
-- (shorter first, then bytewise), so the result is the headers object the second row had.
CREATE FUNCTION outbox_queued_event_headers(request_headers jsonb) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN (request_headers - 'attempt' - 'due-at') || '{"message-type": "notification.queued"}';

-- Every Kafka message the outbox holds, one row each: a row's own message (part 0) and, when it
-- carries one, its queued event (part 1). What the relay publishes, in the order it publishes a
-- key's messages: ORDER BY txid, id, part. For tests, audits and operators; the relay reads the
-- table itself.
CREATE VIEW outbox_messages AS
  SELECT o.id, m.part, m.topic, o.key, m.value, m.headers, o.created_at, o.txid, o.published_at
    FROM outbox AS o
   CROSS JOIN LATERAL (VALUES (0, o.topic, o.value, o.headers),
                              (1, 'events', o.event_value, CASE WHEN o.event_value IS NOT NULL THEN outbox_queued_event_headers(o.headers) END))
         AS m(part, topic, value, headers)
   WHERE m.value IS NOT NULL;

COMMENT ON VIEW outbox_messages IS
  'One row per Kafka message in the outbox: each row (part 0) and the queued event it carries (part 1). Order: txid, id, part.';

-- Raises a refusal of notify_enqueue_item (see 0006's table of codes): the one place that maps
-- a refusal to its SQLSTATE, message, detail and hint.
CREATE FUNCTION notify_refusal_raise(refusal jsonb) RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = CASE refusal ->> 'code'
      WHEN 'validation_failed' THEN 'NT001'
      WHEN 'unknown_channel' THEN 'NT002'
      WHEN 'payload_too_large' THEN 'NT003'
      WHEN 'bad_expiry' THEN 'NT004'
      WHEN 'idempotency_conflict' THEN 'NT009'
      WHEN 'idempotency_in_progress' THEN 'NT010' END,
    MESSAGE = (refusal ->> 'code') || ': ' || (refusal ->> 'message'),
    DETAIL = (refusal - 'message')::text,
    HINT = CASE refusal ->> 'code'
      WHEN 'idempotency_conflict' THEN 'use a new idempotency_key for a new request'
      WHEN 'idempotency_in_progress' THEN 'roll back and retry the transaction'
      ELSE 'fix the intent; DETAIL lists every problem as JSON' END;
END;
$$;

-- What the TypeScript enqueue() and notify_enqueue_batch call, and what notify_enqueue raises
-- from. Validates `intent` (notify_item_check: 0006's rules and the delivery options), then
-- writes the notifications row and, in the same statement, its one outbox row:
-- - due now: the delivery request (topic `requests`, or `requests.high` for priority high),
--   exactly as buildDeliveryRequest(subject, 1, now) writes it, with the queued event
--   (buildStatusEvent(subject, {type: 'notification.queued', …})) in event_value when the event
--   policy is `all`;
-- - send_at ahead: held (next_attempt_at and held_until are send_at, an expiry given as
--   ttl_seconds or the default counts from send_at) and only the queued event, on `events`, whose
--   next_attempt_at says send_at. The schedule service writes the request near the due time.
-- The values are spelled out rather than built with json functions, which would add spaces or
-- reorder keys. `options`: `now` (an instant; default the start of the calling statement),
-- `max_attempts`, `default_ttl_ms` (default notify_settings'); now is truncated to milliseconds
-- so rows and JavaScript clocks agree.
--
-- A refused intent is returned as `refusal` (created false, notification NULL) rather than raised:
-- an exception would abort the caller's transaction, and enqueue() has always let a caller catch
-- a ValidationError and go on. notify_enqueue raises it.
--
-- The hot path has no EXCEPTION block (each would start a subtransaction) and one round trip:
-- an idempotent repeat is found by ON CONFLICT DO NOTHING and then a lookup, never by catching a
-- unique violation. A concurrent insert of the same key makes the INSERT wait for that
-- transaction's outcome. (Inlining rules for the helpers it calls: 0006's header.)
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
  message_key text;
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
  message_key := notify_message_key(tenant_id_, channel_, intent ->> 'to');
  headers_ := jsonb_build_object('notification-id', id_, 'tenant-id', tenant_id_, 'schema-version', '1')
           || CASE WHEN traceparent_ IS NOT NULL THEN jsonb_build_object('traceparent', traceparent_) ELSE '{}' END;
  event_ := '{"v":1,"type":"notification.queued","id":"' || id_ || '","tenant_id":' || to_json(tenant_id_)::text -- escapes as JSON.stringify does
         || ',"channel":"' || channel_ || '","state":"queued","attempts":0,"dead_reason":null,"last_error":null,'
         || '"next_attempt_at":"' || notify_iso(due_) || '","occurred_at":"' || at_ || '"}';

  -- One statement. The settings are read only when the options do not give them. When the key is
  -- taken, ON CONFLICT inserts neither the notification nor, since `o` reads `n`, the outbox row;
  -- the outbox trigger fires once.
  WITH n AS (
    INSERT INTO notifications (id, tenant_id, channel, recipient, subject, body, template, template_version, data,
                               category, metadata, idempotency_key, request_hash, state, attempts, max_attempts,
                               next_attempt_at, expires_at, traceparent, created_at, updated_at,
                               send_at, held_until, priority, ordering)
    VALUES (id_, tenant_id_, channel_, intent ->> 'to', intent ->> 'subject', intent ->> 'body', intent ->> 'template',
            (intent -> 'template_version')::numeric::integer, intent -> 'data', intent ->> 'category',
            coalesce(intent -> 'metadata', '{}'), key_, hash_, 'queued', 0,
            coalesce(max_attempts_, (SELECT s.max_attempts FROM notify_settings AS s), 8),
            due_,
            CASE WHEN intent ? 'expires_at' THEN notify_parse_instant(intent ->> 'expires_at')
                 WHEN intent ? 'ttl_seconds' THEN due_ + (intent -> 'ttl_seconds')::numeric * interval '1 second'
                 ELSE due_ + coalesce(default_ttl_ms_, (SELECT s.default_ttl_ms FROM notify_settings AS s), 86400000)
                             * interval '1 millisecond' END,
            traceparent_, now_, now_,
            send_at_, CASE WHEN held_ THEN send_at_ END, coalesce(intent ->> 'priority', 'normal'), coalesce(intent ->> 'ordering', 'relaxed'))
    ON CONFLICT ON CONSTRAINT notifications_tenant_idempotency_key DO NOTHING
    RETURNING *
  ), o AS (
    INSERT INTO outbox (topic, key, value, headers, event_value)
    SELECT 'events', message_key, event_, headers_ || jsonb_build_object('message-type', 'notification.queued'), NULL
      FROM n WHERE held_
    UNION ALL
    SELECT CASE WHEN n.priority = 'high' THEN 'requests.high' ELSE 'requests' END, message_key,
           '{"v":1,"type":"notification.deliver","id":"' || id_ || '","tenant_id":' || to_json(tenant_id_)::text
             || ',"channel":"' || channel_ || '","attempt":1,"due_at":"' || at_ || '"}',
           headers_ || jsonb_build_object('message-type', 'notification.deliver', 'attempt', '1', 'due-at', at_),
           CASE WHEN (SELECT s.events FROM notify_settings AS s) = 'all' THEN event_ END
      FROM n WHERE NOT held_
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

-- 0006's name for it, kept for callers of that name: now the same function, delivery options included.
CREATE OR REPLACE FUNCTION notify_enqueue_row(intent jsonb, options jsonb DEFAULT '{}',
                                              OUT created boolean, OUT notification notifications, OUT refusal jsonb)
  LANGUAGE sql VOLATILE
  SET search_path FROM CURRENT
  AS $$ SELECT i.created, i.notification, i.refusal FROM notify_enqueue_item(intent, options) AS i $$;

-- The public function (0006): queues `intent` in the caller's transaction and returns the
-- notification id (the original one when the idempotency key was used before for the same
-- request). Uses the database clock and notify_settings. Raises the refusals.
CREATE OR REPLACE FUNCTION notify_enqueue(intent jsonb) RETURNS text
  LANGUAGE plpgsql VOLATILE
  SET search_path FROM CURRENT
  AS $$
DECLARE
  result record;
BEGIN
  SELECT * INTO result FROM notify_enqueue_item(intent, '{}');
  IF result.refusal IS NOT NULL THEN PERFORM notify_refusal_raise(result.refusal); END IF;
  RETURN (result.notification).id;
END;
$$;

COMMENT ON FUNCTION notify_enqueue_item(jsonb, jsonb) IS
  'Internal (used by @notify/outbox enqueue()): validates and queues an intent, delivery options included; returns (created, notification, refusal) instead of raising.';
COMMENT ON FUNCTION notify_enqueue_row(jsonb, jsonb) IS
  'Internal, kept for callers of its name: notify_enqueue_item.';
