-- 0231: notify_enqueue_item (0160) with fewer plpgsql expressions on the path of an ordinary
-- intent; same arguments, checks, rows, answers and errors. Forward-only. Numbers: BENCHMARKS.md
-- ("enqueue(), session 9").
--
-- plpgsql compiles each expression it evaluates again in every transaction (its executor state
-- lives in the transaction's memory), so a single-row enqueue pays for every expression it runs.
-- An intent without delivery options, due now, with the options '{}' no longer evaluates:
-- `created := false` and `options := coalesce(options, '{}')` before anything happens (created is
-- set where the function returns without creating; NULL options read as '{}' everywhere); the call
-- of notify_item_check, whose first test sends such an intent to notify_intent_check (the same
-- test now picks the function here); the two casts of max_attempts and default_ttl_ms and their
-- check when options has neither; notify_parse_instant of an absent send_at and held_'s
-- coalesce (held_ stays NULL, which each CASE reads as false, and the outbox row's event test
-- is `held_ IS NOT TRUE`).
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
  -- NULL options: as '{}' (each read below is NULL, and so is this condition)
  IF jsonb_typeof(options) <> 'object' OR options - ARRAY['now', 'max_attempts', 'default_ttl_ms'] <> '{}' THEN
    RAISE EXCEPTION 'notify_enqueue_item: options must be an object with now, max_attempts and default_ttl_ms only, not %', options
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  now_ := date_trunc('milliseconds', coalesce((options ->> 'now')::timestamptz, statement_timestamp()));

  -- notify_item_check's own first test: an intent without delivery options goes to
  -- notify_intent_check directly, without a call of notify_item_check.
  refusal := CASE WHEN jsonb_typeof(intent) = 'object' AND intent ?| notify_delivery_option_fields()
                  THEN notify_item_check(intent, now_) ELSE notify_intent_check(intent, now_) END;
  IF refusal IS NOT NULL THEN
    created := false;
    RETURN;
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
  IF jsonb_typeof(intent -> 'traceparent') = 'string'
     AND intent ->> 'traceparent' ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN
    traceparent_ := intent ->> 'traceparent';
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

-- 0006's notify_intent_check with the common case first: an intent notify_intent_suspect clears
-- and that passes every later test is answered by one expression instead of fifteen (each
-- compiled again in every transaction). The expression is the conjunction of the tests below,
-- each the negation of one refusal, so it is true only when the rest of the function would
-- return NULL; any other intent (a refusal, or one the quick filter cannot clear) goes through
-- the tests as before, with the same issues, messages and order.
CREATE OR REPLACE FUNCTION notify_intent_check(intent jsonb, now timestamptz) RETURNS jsonb
  LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  issues jsonb;
  channel text;
  problem text;
  size bigint;
BEGIN
  IF NOT notify_intent_suspect(intent)
     AND intent ->> 'channel' IN ('email', 'sms', 'webhook')
     AND notify_recipient_problem(intent ->> 'channel', intent ->> 'to') IS NULL
     AND (intent ? 'body') <> (intent ? 'template')
     AND NOT (intent ? 'template_version' AND NOT intent ? 'template')
     AND NOT (intent ? 'subject' AND intent ->> 'channel' <> 'email')
     AND NOT (intent ? 'expires_at' AND intent ? 'ttl_seconds')
     AND coalesce(notify_parse_instant(intent ->> 'expires_at') > now, true)
     AND coalesce(octet_length(intent ->> 'subject'), 0) + coalesce(octet_length(intent ->> 'body'), 0)
         + coalesce(octet_length((intent -> 'data')::text), 0) + coalesce(octet_length((intent -> 'metadata')::text), 0) <= 65536 THEN
    RETURN NULL;
  END IF;
  issues := CASE WHEN notify_intent_suspect(intent) THEN notify_intent_issues(intent) ELSE '[]' END;
  IF issues = '[]' THEN
    channel := intent ->> 'channel';
    IF channel NOT IN ('email', 'sms', 'webhook') THEN
      RETURN notify_refusal('unknown_channel', format('unknown channel "%s"; expected one of email, sms, webhook', channel),
                            notify_issue('channel', 'must be one of email, sms, webhook'));
    END IF;
    problem := notify_recipient_problem(channel, intent ->> 'to');
    IF problem IS NOT NULL THEN issues := issues || notify_issue('to', problem); END IF;
    IF (intent ? 'body') = (intent ? 'template') THEN
      issues := issues || notify_issue('body', 'give exactly one of body or template');
    END IF;
    IF intent ? 'template_version' AND NOT intent ? 'template' THEN
      issues := issues || notify_issue('template_version', 'only with template');
    END IF;
    IF intent ? 'subject' AND channel <> 'email' THEN
      issues := issues || notify_issue('subject', 'only the email channel has a subject');
    END IF;
  END IF;
  IF issues <> '[]' THEN
    RETURN notify_refusal('validation_failed',
                          'invalid notification: ' || (SELECT string_agg((i ->> 'path') || ': ' || (i ->> 'message'), '; ' ORDER BY n)
                                                         FROM jsonb_array_elements(issues) WITH ORDINALITY AS a(i, n)),
                          issues);
  END IF;
  IF intent ? 'expires_at' AND intent ? 'ttl_seconds' THEN
    RETURN notify_refusal('bad_expiry', 'give expires_at or ttl_seconds, not both', notify_issue('expires_at', 'conflicts with ttl_seconds'));
  END IF;
  IF notify_parse_instant(intent ->> 'expires_at') <= now THEN
    RETURN notify_refusal('bad_expiry', format('expires_at %s is not in the future', intent ->> 'expires_at'),
                          notify_issue('expires_at', 'must be in the future'));
  END IF;
  -- Differs: the content size is the UTF-8 bytes of subject and body plus those of the jsonb text
  -- of data and metadata (PostgreSQL's spelling: ", " and ": " separators, keys in jsonb order,
  -- numbers as numeric prints them). TypeScript measured JSON.stringify([subject, body, data, metadata]).
  size := coalesce(octet_length(intent ->> 'subject'), 0) + coalesce(octet_length(intent ->> 'body'), 0)
        + coalesce(octet_length((intent -> 'data')::text), 0) + coalesce(octet_length((intent -> 'metadata')::text), 0);
  IF size > 65536 THEN
    RETURN notify_refusal('payload_too_large', format('the notification content is %s bytes; at most 65536 are allowed', size),
                          notify_issue('body', 'content over 65536 bytes'));
  END IF;
  RETURN NULL;
END;
$$;
