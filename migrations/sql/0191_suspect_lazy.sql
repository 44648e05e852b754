-- 0191: notify_intent_suspect checks an optional field only when the intent has it. Forward-only.
-- Same answer for every intent (test/sql-enqueue/validation.test.ts holds it to "never clears an
-- intent that notify_intent_issues refuses" on generated intents); numbers: BENCHMARKS.md
-- ("enqueue(), session 7").
--
-- 0006 wrote it as one SQL expression, inlined into notify_intent_check. plpgsql compiles an
-- expression (ExecInitExpr) the first time it evaluates it in a transaction, every node of it,
-- including the conditions of fields the intent does not have; an enqueue is usually a transaction
-- of its own, so that is every call: 171k of the 1.9M instructions of an enqueue of the bench's
-- webhook intent (callgrind, single-user backend). As plpgsql, each group of conditions is its own
-- expression, compiled only when reached: the fields every intent has (and body) first, then
-- idempotency_key and subject when one of them is there, then the rarer fields when one of them
-- is there. An enqueue of the bench's intent: 1.902M -> 1.815M instructions (-87k); of an email
-- intent with subject and idempotency key: 1.951M -> 1.885M (-65k).
--
-- Locks: none on tables (CREATE OR REPLACE FUNCTION).
CREATE OR REPLACE FUNCTION notify_intent_suspect(intent jsonb) RETURNS boolean
  LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  -- Not an object: `intent - …` below would raise for a scalar, as 0006's AND chain never let it.
  IF NOT coalesce(jsonb_typeof(intent) = 'object', false) THEN
    RETURN true;
  END IF;
  IF NOT coalesce(
        intent - notify_intent_fields() = '{}'
    AND jsonb_typeof(intent -> 'tenant_id') = 'string' AND octet_length(intent ->> 'tenant_id') BETWEEN 1 AND 200
    AND jsonb_typeof(intent -> 'channel') = 'string' AND octet_length(intent ->> 'channel') >= 1
    AND jsonb_typeof(intent -> 'to') = 'string' AND octet_length(intent ->> 'to') BETWEEN 1 AND 2048
    AND (NOT intent ? 'body' OR (jsonb_typeof(intent -> 'body') = 'string' AND octet_length(intent ->> 'body') >= 1))
    AND NOT jsonb_path_exists(intent - 'traceparent', 'strict $.*.**{32} ? (@.type() == "object" || @.type() == "array")'),
    false) THEN
    RETURN true;
  END IF;
  -- The optional fields, each group compiled only when the intent has one of its fields.
  IF intent ?| '{idempotency_key,subject}'::text[] THEN
    IF NOT coalesce(
          (NOT intent ? 'idempotency_key' OR (jsonb_typeof(intent -> 'idempotency_key') = 'string'
           AND octet_length(intent ->> 'idempotency_key') BETWEEN 1 AND 255))
      AND (NOT intent ? 'subject' OR (jsonb_typeof(intent -> 'subject') = 'string' AND octet_length(intent ->> 'subject') <= 998)),
      false) THEN
      RETURN true;
    END IF;
  END IF;
  IF NOT intent ?| '{template,template_version,data,category,expires_at,ttl_seconds,metadata}'::text[] THEN
    RETURN false;
  END IF;
  RETURN NOT coalesce(
        (NOT intent ? 'template' OR (jsonb_typeof(intent -> 'template') = 'string' AND octet_length(intent ->> 'template') BETWEEN 1 AND 200))
    AND (NOT intent ? 'template_version' OR CASE WHEN jsonb_typeof(intent -> 'template_version') = 'number'
         THEN (intent -> 'template_version')::numeric BETWEEN 1 AND 2147483647
          AND (intent -> 'template_version')::numeric = trunc((intent -> 'template_version')::numeric) END)
    AND (NOT intent ? 'data' OR jsonb_typeof(intent -> 'data') = 'object')
    AND (NOT intent ? 'category' OR (jsonb_typeof(intent -> 'category') = 'string' AND octet_length(intent ->> 'category') BETWEEN 1 AND 100))
    AND (NOT intent ? 'expires_at' OR (jsonb_typeof(intent -> 'expires_at') = 'string'
         AND notify_parse_instant(intent ->> 'expires_at') IS NOT NULL))
    AND (NOT intent ? 'ttl_seconds' OR CASE WHEN jsonb_typeof(intent -> 'ttl_seconds') = 'number'
         THEN (intent -> 'ttl_seconds')::numeric BETWEEN 1 AND 2592000
          AND (intent -> 'ttl_seconds')::numeric = trunc((intent -> 'ttl_seconds')::numeric) END)
    AND (NOT intent ? 'metadata' OR (jsonb_typeof(intent -> 'metadata') = 'object' AND pg_column_size(intent -> 'metadata') <= 100
         AND NOT jsonb_path_exists(intent -> 'metadata', 'strict $.* ? (@.type() != "string")'))),
    false);
END;
$$;
