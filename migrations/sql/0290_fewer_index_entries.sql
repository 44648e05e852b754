-- 0290: fewer index entries per notification. Forward-only.
--
-- Every enqueue wrote 9 entries into notifications' indexes and every non-HOT outcome UPDATE 7
-- (BENCHMARKS.md, session 23). Two of them served nothing:
-- - The idempotency key's UNIQUE constraint indexed every row, and most rows have no key (the
--   NULLs never conflict). A partial unique index over the keyed rows enforces the same rule and
--   serves the same lookups (`tenant_id = $1 AND idempotency_key = $2` implies the predicate):
--   one entry fewer per keyless enqueue and per outcome of a keyless notification.
--   notify_enqueue_item names it by its columns and predicate in ON CONFLICT (below, otherwise
--   0270's function unchanged), since a partial index is not a constraint.
-- - notifications_queued_due_idx (next_attempt_at, queued rows) duplicated, across channels, what
--   notifications_queued_channel_due_idx (0120) holds per channel: the repair sweep now reads the
--   latter once per channel (packages/dispatcher/src/sql/notification-list-overdue.ts), as the
--   queue-age gauge already did. One entry fewer per enqueue and per retry scheduled.
--
-- CREATE UNIQUE INDEX here takes a SHARE lock on notifications (writes wait) while it reads the
-- table; on a large table, build it first by hand with CONCURRENTLY and the same name (IF NOT
-- EXISTS then skips it here), as for 0120.
CREATE UNIQUE INDEX IF NOT EXISTS notifications_tenant_idempotency_key_idx ON notifications (tenant_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

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
  event_ text;
BEGIN
  -- NULL options: as '{}' (each read below is NULL, and so is this condition)
  IF jsonb_typeof(options) <> 'object' OR options - ARRAY['now', 'max_attempts', 'default_ttl_ms'] <> '{}' THEN
    RAISE EXCEPTION 'notify_enqueue_item: options must be an object with now, max_attempts and default_ttl_ms only, not %', options
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  now_ := date_trunc('milliseconds', coalesce((options ->> 'now')::timestamptz, statement_timestamp()));

  -- A plain intent (only the keys below, each a string of an allowed size, a known channel and
  -- a recipient it accepts) passes every test of notify_intent_check and notify_intent_suspect:
  -- one expression instead of their nine, and no call of either. Any other intent, valid or
  -- not, is checked as before (notify_item_check's own first test sends an intent without
  -- delivery options to notify_intent_check directly).
  IF NOT coalesce(CASE WHEN jsonb_typeof(intent) = 'object' THEN
        intent - '{tenant_id,channel,to,body,subject,idempotency_key,traceparent}'::text[] = '{}'
    AND jsonb_typeof(intent -> 'tenant_id') = 'string' AND octet_length(intent ->> 'tenant_id') BETWEEN 1 AND 200
    AND jsonb_typeof(intent -> 'channel') = 'string' AND intent ->> 'channel' IN ('email', 'sms', 'webhook')
    AND jsonb_typeof(intent -> 'to') = 'string' AND octet_length(intent ->> 'to') BETWEEN 1 AND 2048
    AND notify_recipient_problem(intent ->> 'channel', intent ->> 'to') IS NULL
    AND jsonb_typeof(intent -> 'body') = 'string' AND octet_length(intent ->> 'body') >= 1
    AND (NOT intent ? 'idempotency_key' OR (jsonb_typeof(intent -> 'idempotency_key') = 'string'
         AND octet_length(intent ->> 'idempotency_key') BETWEEN 1 AND 255))
    AND (NOT intent ? 'subject' OR (jsonb_typeof(intent -> 'subject') = 'string' AND octet_length(intent ->> 'subject') <= 998
         AND intent ->> 'channel' = 'email'))
    AND coalesce(octet_length(intent ->> 'subject'), 0) + octet_length(intent ->> 'body') <= 65536 END, false) THEN
    refusal := CASE WHEN jsonb_typeof(intent) = 'object' AND intent ?| notify_delivery_option_fields()
                    THEN notify_item_check(intent, now_) ELSE notify_intent_check(intent, now_) END;
    IF refusal IS NOT NULL THEN
      created := false;
      RETURN;
    END IF;
  END IF;

  IF options ?| '{max_attempts,default_ttl_ms}' THEN
    max_attempts_ := (options ->> 'max_attempts')::integer;
    default_ttl_ms_ := (options ->> 'default_ttl_ms')::bigint;
    IF max_attempts_ < 1 OR default_ttl_ms_ < 1 THEN
      RAISE EXCEPTION 'notify_enqueue_item: max_attempts and default_ttl_ms must be positive, not % and %', max_attempts_, default_ttl_ms_
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END IF;
  SELECT * INTO settings FROM notify_settings AS s; -- one row (notify_settings_one_row); none: the built-in defaults below

  tenant_id_ := intent ->> 'tenant_id';
  channel_ := intent ->> 'channel';
  key_ := intent ->> 'idempotency_key';
  -- kept only when it has the W3C form; anything else is dropped, never refused
  -- The W3C form ^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$ without the regular
  -- expression (its bounded repetitions cost ~66k a call): 55 characters with a '-' at 3, 36 and
  -- 53, each a lowercase hex digit or '-', exactly three '-'.
  -- (Two IFs, so that an intent without one sets up only the first test.)
  IF jsonb_typeof(intent -> 'traceparent') = 'string' THEN
    IF intent ->> 'traceparent' LIKE '__-________________________________-________________-__'
       AND ltrim(intent ->> 'traceparent', '0123456789abcdef-') = ''
       AND octet_length(replace(intent ->> 'traceparent', '-', '')) = 52 THEN
      traceparent_ := intent ->> 'traceparent';
    END IF;
  END IF;
  IF key_ IS NOT NULL THEN
    hash_ := encode(sha256(convert_to((intent - 'idempotency_key' - 'traceparent')::text, 'UTF8')), 'hex');
  END IF;
  -- send_at in the past or now: sent at once, as without it (and stored as asked)
  -- held_ stays NULL without send_at: every test of it below reads NULL as false.
  IF intent ? 'send_at' THEN
    send_at_ := notify_parse_instant(intent ->> 'send_at');
    held_ := send_at_ > now_;
  END IF;
  due_ := CASE WHEN held_ THEN send_at_ ELSE now_ END;
  random_ := uuid_send(gen_random_uuid()); -- a variable: inlined notify_ulid reads it more than once
  ms_ := (extract(epoch FROM now_) * 1000)::bigint; -- a variable too, or inlining would compute it ten times
  id_ := 'ntf_' || notify_ulid(ms_, random_);
  at_ := notify_iso(now_);
  -- format, not a chain of ||: one function to set up per transaction instead of twelve operators
  event_ := format('{"v":1,"type":"notification.queued","id":"%s","tenant_id":%s,"channel":"%s","state":"queued","attempts":0,'
                   '"dead_reason":null,"last_error":null,"next_attempt_at":"%s","occurred_at":"%s"}',
                   id_, to_json(tenant_id_), channel_, notify_iso(due_), at_); -- to_json escapes as JSON.stringify does

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
    ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *
  ), o AS (
    INSERT INTO outbox (topic, key, value, headers, event_value)
    SELECT CASE WHEN held_ THEN 'events' WHEN n.priority = 'high' THEN 'requests.high' ELSE 'requests' END,
           notify_message_key(tenant_id_, channel_, n.recipient),
           CASE WHEN held_ THEN event_
                ELSE format('{"v":1,"type":"notification.deliver","id":"%s","tenant_id":%s,"channel":"%s","attempt":1,"due_at":"%s"}',
                            id_, to_json(tenant_id_), channel_, at_) END,
           -- one object, not three joined: jsonb orders keys itself, so the value is the same
           CASE WHEN held_ AND traceparent_ IS NULL
                THEN jsonb_build_object('notification-id', id_, 'tenant-id', tenant_id_, 'schema-version', '1',
                                        'message-type', 'notification.queued')
                WHEN held_
                THEN jsonb_build_object('notification-id', id_, 'tenant-id', tenant_id_, 'schema-version', '1',
                                        'message-type', 'notification.queued', 'traceparent', traceparent_)
                WHEN traceparent_ IS NULL
                THEN jsonb_build_object('notification-id', id_, 'tenant-id', tenant_id_, 'schema-version', '1',
                                        'message-type', 'notification.deliver', 'attempt', '1', 'due-at', at_)
                ELSE jsonb_build_object('notification-id', id_, 'tenant-id', tenant_id_, 'schema-version', '1',
                                        'message-type', 'notification.deliver', 'attempt', '1', 'due-at', at_,
                                        'traceparent', traceparent_) END,
           CASE WHEN held_ IS NOT TRUE AND settings.events = 'all' THEN event_ END
      FROM n
  )
  SELECT * INTO notification FROM n;
  IF FOUND THEN
    created := true;
    RETURN;
  END IF;

  -- The key is taken: the original if it is the same request, else a conflict.
  created := false;
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

ALTER TABLE notifications DROP CONSTRAINT notifications_tenant_idempotency_key;
DROP INDEX notifications_queued_due_idx;
