-- 0040: delivery options on a notification: scheduled send (`send_at`), and the columns the next
-- options use (`priority`, `ordering`), plus batch enqueue. Forward-only. Guide: docs/scheduling.md,
-- docs/sql-enqueue.md ("Batches", "Scheduled send").
--
-- How it is layered on 0006 (kept additive, so the hot-path work on notify_enqueue_row stays
-- where it is): `notify_enqueue_item` validates the delivery options, calls notify_enqueue_row
-- for everything else (validation, id, idempotency, rows), and only when an option is present
-- adjusts what that wrote, in the same transaction. An intent without options costs one extra
-- plpgsql call. The request hash covers the options (notify_enqueue_row hashes the whole intent),
-- so repeating a key with another send_at is an idempotency_conflict.

-- A scheduled notification is `queued` from the start, with next_attempt_at = send_at. It has no
-- delivery request in Kafka until the dispatcher's schedule service releases it, shortly before
-- send_at, onto the delay topic that fits the remaining wait (docs/scheduling.md): a partition of
-- a delay topic is read in due order, so a message due in 30 days must not sit at its head.
ALTER TABLE notifications
  ADD COLUMN send_at    timestamptz,                 -- as asked; NULL: send now
  ADD COLUMN held_until timestamptz,                 -- not yet released to Kafka: due then
  ADD COLUMN priority   text NOT NULL DEFAULT 'normal',
  ADD COLUMN ordering   text NOT NULL DEFAULT 'relaxed',
  ADD CONSTRAINT notifications_priority_known CHECK (priority IN ('normal', 'high')),
  ADD CONSTRAINT notifications_ordering_known CHECK (ordering IN ('relaxed', 'strict')),
  ADD CONSTRAINT notifications_held_is_scheduled CHECK (held_until IS NULL OR send_at IS NOT NULL);

-- The schedule service reads the held notifications due soonest; the index holds only those
-- (a released or cancelled one leaves it), so sent rows piling up never slow it.
CREATE INDEX notifications_held_due_idx ON notifications (held_until) WHERE state = 'queued' AND held_until IS NOT NULL;

-- The intent's fields: 0006's plus send_at. (priority and ordering are added with the code that
-- honours them.)
CREATE OR REPLACE FUNCTION notify_intent_fields() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY['channel', 'to', 'subject', 'body', 'template', 'template_version', 'data', 'category',
               'expires_at', 'ttl_seconds', 'metadata', 'tenant_id', 'idempotency_key', 'traceparent', 'send_at'];

-- The delivery options of an intent, and nothing else.
CREATE FUNCTION notify_delivery_option_fields() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY['send_at', 'priority', 'ordering'];

-- The issues of the delivery options present in `intent` (types and ranges), as a JSON array.
CREATE FUNCTION notify_delivery_option_issues(intent jsonb, now timestamptz) RETURNS jsonb
  LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  issues jsonb := '[]';
  send_at_ timestamptz;
BEGIN
  IF intent ? 'send_at' THEN
    IF jsonb_typeof(intent -> 'send_at') <> 'string' THEN
      issues := issues || notify_type_issue(intent -> 'send_at', 'send_at', 'string');
    ELSE
      send_at_ := notify_parse_instant(intent ->> 'send_at');
      IF send_at_ IS NULL THEN
        issues := issues || notify_issue('send_at', 'Invalid ISO datetime');
      ELSIF send_at_ > now + interval '30 days' THEN
        issues := issues || notify_issue('send_at', 'must be at most 30 days ahead');
      END IF;
    END IF;
  END IF;
  IF intent ? 'priority' AND (intent -> 'priority') NOT IN ('"high"', '"normal"') THEN
    issues := issues || notify_issue('priority', 'must be "high" or "normal"');
  END IF;
  IF intent ? 'ordering' AND (intent -> 'ordering') NOT IN ('"strict"', '"relaxed"') THEN
    issues := issues || notify_issue('ordering', 'must be "strict" or "relaxed"');
  END IF;
  RETURN issues;
END;
$$;

-- Why `intent` cannot be queued at `now`, as a refusal, or NULL: notify_intent_check (0006) plus
-- the delivery options. Field issues of both come in one validation_failed refusal. Writes nothing.
CREATE FUNCTION notify_item_check(intent jsonb, now timestamptz) RETURNS jsonb
  LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  option_issues jsonb;
  base jsonb;
  all_issues jsonb;
BEGIN
  IF jsonb_typeof(intent) IS DISTINCT FROM 'object' OR NOT intent ?| notify_delivery_option_fields() THEN
    RETURN notify_intent_check(intent, now);
  END IF;
  option_issues := notify_delivery_option_issues(intent, now);
  IF option_issues = '[]' THEN
    base := notify_intent_check(intent, now);
    IF base IS NOT NULL THEN RETURN base; END IF;
    -- Nothing may be queued to expire before it is sent.
    IF intent ? 'send_at' AND intent ? 'expires_at'
       AND notify_parse_instant(intent ->> 'expires_at') <= notify_parse_instant(intent ->> 'send_at') THEN
      RETURN notify_refusal('bad_expiry', format('expires_at %s is not after send_at %s', intent ->> 'expires_at', intent ->> 'send_at'),
                            notify_issue('expires_at', 'must be after send_at'));
    END IF;
    RETURN NULL;
  END IF;
  -- Report the other fields' issues too; the options themselves are checked above.
  base := notify_intent_check(intent - notify_delivery_option_fields(), now);
  all_issues := CASE WHEN base ->> 'code' = 'validation_failed' THEN base -> 'errors' ELSE '[]' END || option_issues;
  RETURN notify_refusal('validation_failed',
                        'invalid notification: ' || (SELECT string_agg((i ->> 'path') || ': ' || (i ->> 'message'), '; ' ORDER BY n)
                                                       FROM jsonb_array_elements(all_issues) WITH ORDINALITY AS a(i, n)),
                        all_issues);
END;
$$;

-- notify_enqueue_row (0006) with the delivery options: the same OUT columns, the same
-- refusals. What an option changes, after notify_enqueue_row wrote the row:
-- - send_at in the future: next_attempt_at and held_until are send_at; the delivery request
--   notify_enqueue_row put in the outbox is removed (the schedule service writes it near the due
--   time); an expiry given as ttl_seconds or the default counts from send_at, not from now.
--   send_at in the past or now: sent at once, as without it.
-- - priority and ordering are stored; priority "high" moves the delivery request to
--   `requests.high`.
-- The outbox rows are found as this transaction's own unpublished rows (outbox_unpublished_txid_idx);
-- the relay cannot have read them, they are not committed.
CREATE FUNCTION notify_enqueue_item(intent jsonb, options jsonb DEFAULT '{}',
                                    OUT created boolean, OUT notification notifications, OUT refusal jsonb)
  LANGUAGE plpgsql VOLATILE
  SET search_path FROM CURRENT
  AS $$
DECLARE
  now_ timestamptz;
  send_at_ timestamptz;
  held boolean;
  priority_ text;
  tx xid8;
  base record;
BEGIN
  IF jsonb_typeof(intent) IS DISTINCT FROM 'object' OR NOT intent ?| notify_delivery_option_fields() THEN
    SELECT * INTO base FROM notify_enqueue_row(intent, options);
    created := base.created; notification := base.notification; refusal := base.refusal;
    RETURN;
  END IF;
  -- the instant notify_enqueue_row uses (it checks `options` itself)
  now_ := date_trunc('milliseconds', coalesce((coalesce(options, '{}') ->> 'now')::timestamptz, statement_timestamp()));
  refusal := notify_item_check(intent, now_);
  IF refusal IS NOT NULL THEN
    created := false;
    RETURN;
  END IF;
  SELECT * INTO base FROM notify_enqueue_row(intent, options);
  created := base.created; notification := base.notification; refusal := base.refusal;
  IF NOT coalesce(created, false) THEN RETURN; END IF;

  send_at_ := notify_parse_instant(intent ->> 'send_at');
  held := send_at_ > now_;
  priority_ := coalesce(intent ->> 'priority', 'normal');
  UPDATE notifications AS n
     SET send_at = send_at_,
         held_until = CASE WHEN held THEN send_at_ END,
         next_attempt_at = CASE WHEN held THEN send_at_ ELSE n.next_attempt_at END,
         expires_at = CASE WHEN held AND NOT intent ? 'expires_at' THEN n.expires_at + (send_at_ - now_) ELSE n.expires_at END,
         priority = priority_,
         ordering = coalesce(intent ->> 'ordering', 'relaxed')
   WHERE n.id = (notification).id
  RETURNING * INTO notification;

  tx := pg_current_xact_id();
  IF held THEN
    DELETE FROM outbox AS o
     WHERE o.txid = tx AND o.published_at IS NULL AND o.topic = 'requests' AND o.headers ->> 'notification-id' = (notification).id;
    -- the queued event says when it is due
    UPDATE outbox AS o
       SET value = replace(o.value, '"next_attempt_at":"' || notify_iso(now_) || '"', '"next_attempt_at":"' || notify_iso(send_at_) || '"')
     WHERE o.txid = tx AND o.published_at IS NULL AND o.topic = 'events' AND o.headers ->> 'notification-id' = (notification).id;
  ELSIF priority_ = 'high' THEN
    UPDATE outbox AS o SET topic = 'requests.high'
     WHERE o.txid = tx AND o.published_at IS NULL AND o.topic = 'requests' AND o.headers ->> 'notification-id' = (notification).id;
  END IF;
END;
$$;

-- The public function of 0006, now with the delivery options (same errors; see its comment).
CREATE OR REPLACE FUNCTION notify_enqueue(intent jsonb) RETURNS text
  LANGUAGE plpgsql VOLATILE
  SET search_path FROM CURRENT
  AS $$
DECLARE
  result record;
BEGIN
  SELECT * INTO result FROM notify_enqueue_item(intent, '{}');
  IF result.refusal IS NOT NULL THEN
    RAISE EXCEPTION USING
      ERRCODE = CASE result.refusal ->> 'code'
        WHEN 'validation_failed' THEN 'NT001'
        WHEN 'unknown_channel' THEN 'NT002'
        WHEN 'payload_too_large' THEN 'NT003'
        WHEN 'bad_expiry' THEN 'NT004'
        WHEN 'idempotency_conflict' THEN 'NT009'
        WHEN 'idempotency_in_progress' THEN 'NT010' END,
      MESSAGE = (result.refusal ->> 'code') || ': ' || (result.refusal ->> 'message'),
      DETAIL = (result.refusal - 'message')::text,
      HINT = CASE result.refusal ->> 'code'
        WHEN 'idempotency_conflict' THEN 'use a new idempotency_key for a new request'
        WHEN 'idempotency_in_progress' THEN 'roll back and retry the transaction'
        ELSE 'fix the intent; DETAIL lists every problem as JSON' END;
  END IF;
  RETURN (result.notification).id;
END;
$$;

-- Batch enqueue: every intent of the JSON array `intents` (1 to 1000), in order, in the caller's
-- transaction and in one round trip. One row per intent, `ord` from 1:
-- - created true/false with the notification (false: the original of a repeated key), or
-- - a refusal (notification NULL): that intent wrote nothing; the others are queued.
-- With `atomic` true, one refusal refuses the batch: nothing is written (the writes run in a
-- subtransaction that is rolled back), the refused intents come back with their refusals and the
-- others with created false, notification NULL and refusal NULL.
CREATE FUNCTION notify_enqueue_batch(intents jsonb, options jsonb DEFAULT '{}', atomic boolean DEFAULT false)
  RETURNS TABLE (ord integer, created boolean, notification notifications, refusal jsonb)
  LANGUAGE plpgsql VOLATILE
  SET search_path FROM CURRENT
  AS $$
DECLARE
  n integer;
  item record;
  results_created boolean[] := '{}';
  results_notification notifications[] := '{}';
  results_refusal jsonb[] := '{}';
  refused boolean := false;
  i integer;
BEGIN
  IF jsonb_typeof(intents) IS DISTINCT FROM 'array' THEN
    RAISE EXCEPTION 'notify_enqueue_batch: intents must be a JSON array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  n := jsonb_array_length(intents);
  IF n < 1 OR n > 1000 THEN
    RAISE EXCEPTION 'notify_enqueue_batch: 1 to 1000 intents, not %', n USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF atomic THEN
    BEGIN
      FOR i IN 0 .. n - 1 LOOP
        SELECT * INTO item FROM notify_enqueue_item(intents -> i, options);
        results_created := array_append(results_created, item.created);
        results_notification := array_append(results_notification, item.notification);
        results_refusal := array_append(results_refusal, item.refusal);
        refused := refused OR item.refusal IS NOT NULL;
      END LOOP;
      IF refused THEN
        RAISE EXCEPTION 'batch refused' USING ERRCODE = 'NT100';
      END IF;
    EXCEPTION WHEN SQLSTATE 'NT100' THEN
      -- rolled back: report the refusals only
      FOR i IN 1 .. n LOOP
        results_created[i] := false;
        results_notification[i] := NULL;
      END LOOP;
    END;
  ELSE
    FOR i IN 0 .. n - 1 LOOP
      SELECT * INTO item FROM notify_enqueue_item(intents -> i, options);
      results_created := array_append(results_created, item.created);
      results_notification := array_append(results_notification, item.notification);
      results_refusal := array_append(results_refusal, item.refusal);
    END LOOP;
  END IF;
  RETURN QUERY SELECT g.i, results_created[g.i], results_notification[g.i], results_refusal[g.i] FROM generate_series(1, n) AS g(i);
END;
$$;

COMMENT ON FUNCTION notify_enqueue_item(jsonb, jsonb) IS
  'Internal (used by @notify/outbox enqueue()): notify_enqueue_row with the delivery options (send_at, priority, ordering).';
COMMENT ON FUNCTION notify_enqueue_batch(jsonb, jsonb, boolean) IS
  'Queues a JSON array of 1-1000 intents in the caller''s transaction; one row per intent (created, notification, refusal). See docs/sql-enqueue.md.';
