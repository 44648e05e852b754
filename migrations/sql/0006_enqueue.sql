-- 0006: enqueue from any language. `notify_enqueue(intent jsonb)` is the one implementation of
-- "what a valid intent is and which rows it writes": a Java, Go or Python service calls it inside
-- its own transaction, and the TypeScript `enqueue()` (packages/outbox/src/enqueue.ts) is a thin
-- caller of `notify_enqueue_row`. Forward-only. Guide, error table and snippets: docs/sql-enqueue.md.
--
-- The rules are the ones the TypeScript validator (zod `IntentFields` + `validateIntent`) applied
-- before this migration, with its issue paths and messages; test/sql-enqueue/reference-intent.ts
-- keeps that validator as a test oracle and a property test checks that both accept exactly the
-- same intents with the same code and paths. Where this definition deliberately differs, it says
-- so below (search for "Differs:").
--
-- Errors of notify_enqueue (RAISE; MESSAGE starts with the code, DETAIL is JSON
-- {"code", "errors": [{"path", "message"}], "existing_id"?}):
--   NT001 validation_failed        every field issue in DETAIL.errors
--   NT002 unknown_channel
--   NT003 payload_too_large
--   NT004 bad_expiry
--   NT009 idempotency_conflict     DETAIL.existing_id: the notification that holds the key
--   NT010 idempotency_in_progress  the key is taken but its holder cannot be read: retry the transaction
-- (A REPEATABLE READ or SERIALIZABLE caller whose snapshot predates the key's holder gets
-- PostgreSQL's own 40001 serialization_failure from the INSERT first; retry the transaction too.)
--
-- The request hash stored with an idempotency key is now sha256 over the jsonb text of the intent
-- without idempotency_key and traceparent. Rows written by the TypeScript code before this
-- migration hashed a differently canonicalised JSON, so repeating such a request with its old key
-- would be an idempotency_conflict. Accepted: there is no production data yet.

-- ---------------------------------------------------------------------------------------------
-- Service-wide settings every enqueuer uses. `notify start` writes NOTIFY_MAX_ATTEMPTS and
-- NOTIFY_DEFAULT_TTL_MS here (INSERT … ON CONFLICT (id) DO UPDATE), so a notification queued by a
-- Java service through SQL gets the same attempt budget and expiry as one queued through the API.
-- The ranges are loadConfig's.
CREATE TABLE notify_settings (
  id             boolean     PRIMARY KEY DEFAULT true,
  max_attempts   integer     NOT NULL DEFAULT 8,
  default_ttl_ms bigint      NOT NULL DEFAULT 86400000,       -- 24 h: expiry when the intent names none
  updated_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT notify_settings_one_row CHECK (id),               -- with the boolean primary key: at most one row
  CONSTRAINT notify_settings_max_attempts_in_range CHECK (max_attempts BETWEEN 1 AND 100),
  CONSTRAINT notify_settings_default_ttl_in_range CHECK (default_ttl_ms BETWEEN 1000 AND 2592000000)
);
INSERT INTO notify_settings DEFAULT VALUES;

-- ... and exactly one: the row may be updated, never removed (enqueue would fall back to the
-- built-in defaults and silently stop following the service's configuration).
CREATE FUNCTION notify_settings_keep_row() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'notify_settings has exactly one row; update it instead of deleting it'
    USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER notify_settings_keep_row_delete BEFORE DELETE ON notify_settings
  FOR EACH ROW EXECUTE FUNCTION notify_settings_keep_row();
CREATE TRIGGER notify_settings_keep_row_truncate BEFORE TRUNCATE ON notify_settings
  FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_keep_row();

-- ---------------------------------------------------------------------------------------------
-- Small helpers: SQL-language one-expression functions, so that the planner inlines them into
-- the plpgsql expressions that call them. This is the hot path's main performance rule: a SQL
-- function that is *not* inlined is parsed and planned again on every call (PostgreSQL 15 keeps
-- no plan for it), which made a first version of this migration cost 5.5 ms of backend CPU per
-- enqueue transaction instead of about 1. Inlining needs: no STRICT (unless the body is strict),
-- STABLE rather than IMMUTABLE when the body calls a stable function (jsonb_build_object, to_char,
-- convert_to and pg_column_size are), no subquery, and a parameter used more than once must get a
-- cheap argument (a variable, not a volatile call). Everything else is plpgsql, whose plans are
-- cached. Cost today (callgrind, single-user backend, typical email intent with a key): 1.58M
-- instructions per enqueue, against 1.30M for the INSERT statement the TypeScript enqueue() sent
-- before; what the database does more (validation, id, hash, message text) the client no longer
-- does. Wall-clock figures: docs/sql-enqueue.md, "Cost".

-- Lengths are counted as the TypeScript validator counted them: the fields zod checked (channel,
-- to, subject, body, template, category, metadata keys and values) in characters, i.e. code
-- points, which is PostgreSQL's length(); tenant_id, idempotency_key and the email and webhook
-- recipient limits, which it checked with String#length, in UTF-16 code units, where an astral
-- character (an emoji) counts 2. The two functions below are for the latter.
CREATE FUNCTION notify_utf16_length(s text) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN length(s) + CASE WHEN octet_length(s) = length(s) THEN 0 ELSE regexp_count(s, '[\U00010000-\U0010FFFF]') END;

-- True when s has more than n UTF-16 code units. A code unit never takes fewer than one UTF-8
-- byte, so the byte length (free) settles almost every call without counting characters.
CREATE FUNCTION notify_too_long(s text, n integer) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN octet_length(s) > n AND notify_utf16_length(s) > n;

-- One issue, as enqueue reports it.
CREATE FUNCTION notify_issue(path text, message text) RETURNS jsonb
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN jsonb_build_array(jsonb_build_object('path', path, 'message', message));

-- zod's "Invalid input: expected X, received Y". jsonb_typeof names JSON types the way zod does.
CREATE FUNCTION notify_type_issue(v jsonb, path text, expected text) RETURNS jsonb
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN notify_issue(path, 'Invalid input: expected ' || expected || ', received ' || coalesce(jsonb_typeof(v), 'undefined'));

-- zod's z.string().min(min_len).max(max_len) (either bound may be NULL; lengths in characters),
-- as an array of issues.
-- Like zod, a JSON array in a string field also gets the length checks, counted in items.
CREATE FUNCTION notify_string_issues(v jsonb, path text, required boolean, min_len integer, max_len integer) RETURNS jsonb
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN v IS NULL THEN CASE WHEN required THEN notify_type_issue(v, path, 'string') ELSE '[]'::jsonb END
    WHEN jsonb_typeof(v) = 'string' THEN CASE
      WHEN length(v #>> '{}') < min_len
        THEN notify_issue(path, 'Too small: expected string to have >=' || min_len || ' characters')
      WHEN octet_length(v #>> '{}') > max_len AND length(v #>> '{}') > max_len
        THEN notify_issue(path, 'Too big: expected string to have <=' || max_len || ' characters')
      ELSE '[]'::jsonb END
    WHEN jsonb_typeof(v) = 'array' THEN notify_type_issue(v, path, 'string') || CASE
      WHEN jsonb_array_length(v) < min_len THEN notify_issue(path, 'Too small: expected array to have >=' || min_len || ' items')
      WHEN jsonb_array_length(v) > max_len THEN notify_issue(path, 'Too big: expected array to have <=' || max_len || ' items')
      ELSE '[]'::jsonb END
    ELSE notify_type_issue(v, path, 'string')
  END;

-- zod's z.int().min(min_val).max(max_val) on an optional field. JSON numbers are exact here
-- (numeric), so 5.0 is the integer 5 and 1.5 is not an integer.
CREATE FUNCTION notify_int_issues(v jsonb, path text, min_val numeric, max_val numeric) RETURNS jsonb
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN v IS NULL THEN '[]'::jsonb
    WHEN jsonb_typeof(v) <> 'number' THEN notify_type_issue(v, path, 'number')
    WHEN v::numeric <> trunc(v::numeric) THEN notify_issue(path, 'Invalid input: expected int, received number')
    ELSE CASE
        WHEN v::numeric > 9007199254740991 THEN notify_issue(path, 'Too big: expected int to be <=9007199254740991')
        WHEN v::numeric < -9007199254740991 THEN notify_issue(path, 'Too small: expected int to be >=-9007199254740991')
        ELSE '[]'::jsonb END
      || CASE
        WHEN v::numeric < min_val THEN notify_issue(path, 'Too small: expected number to be >=' || min_val)
        WHEN v::numeric > max_val THEN notify_issue(path, 'Too big: expected number to be <=' || max_val)
        ELSE '[]'::jsonb END
  END;

-- zod's z.record(z.string().max(100), z.string().max(1000)) for `metadata`.
-- Differs: keys come in jsonb order (shorter first, then bytewise), zod's in the JSON's order.
CREATE FUNCTION notify_metadata_issues(v jsonb) RETURNS jsonb
  LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  issues jsonb := '[]';
  entry record;
BEGIN
  IF v IS NULL THEN RETURN issues; END IF;
  IF jsonb_typeof(v) <> 'object' THEN RETURN notify_type_issue(v, 'metadata', 'record'); END IF;
  FOR entry IN SELECT e.key, e.value FROM jsonb_each(v) AS e LOOP
    IF length(entry.key) > 100 THEN
      issues := issues || notify_issue('metadata.' || entry.key, 'Invalid key in record');
    ELSE
      issues := issues || notify_string_issues(entry.value, 'metadata.' || entry.key, true, NULL, 1000);
    END IF;
  END LOOP;
  RETURN issues;
END;
$$;

-- The path of the first object or array nested deeper than 32 levels in v (v itself is level
-- `depth`), or NULL. Walks in jsonb key order. Only called once jsonb_path_exists found one.
CREATE FUNCTION notify_too_deep_path(v jsonb, path text, depth integer) RETURNS text
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  child_key text;
  child jsonb;
  found text;
BEGIN
  IF jsonb_typeof(v) NOT IN ('object', 'array') THEN RETURN NULL; END IF;
  IF depth > 32 THEN RETURN path; END IF;
  FOR child_key, child IN
    SELECT e.key, e.value FROM jsonb_each(CASE WHEN jsonb_typeof(v) = 'object' THEN v END) AS e
    UNION ALL
    SELECT (a.n - 1)::text, a.value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(v) = 'array' THEN v END) WITH ORDINALITY AS a(value, n)
  LOOP
    found := notify_too_deep_path(child, path || '.' || child_key, depth + 1);
    IF found IS NOT NULL THEN RETURN found; END IF;
  END LOOP;
  RETURN NULL;
END;
$$;

-- An ISO 8601 instant with an offset, exactly the strings zod's z.iso.datetime({ offset: true })
-- accepted (calendar-checked date, seconds required, any number of fraction digits, Z or ±hh:mm),
-- read the way JavaScript's Date read them: the fraction truncated to milliseconds, year 0000
-- allowed. NULL when s is not such a string. Parsed by hand because PostgreSQL's own input
-- refuses some of them (offsets beyond ±15:59, year 0).
CREATE FUNCTION notify_parse_instant(s text) RETURNS timestamptz
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  p text[];
BEGIN
  IF s !~ ('^(?:(?:[0-9][0-9][2468][048]|[0-9][0-9][13579][26]|[0-9][0-9]0[48]|[02468][048]00|[13579][26]00)-02-29'
           '|[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|(?:02)-(?:0[1-9]|1[0-9]|2[0-8])))'
           'T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$') THEN
    RETURN NULL;
  END IF;
  p := regexp_match(s, '^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,3})[0-9]*)?(?:Z|([+-])([0-9]{2}):([0-9]{2}))$');
  IF p[1] = '0000' THEN
    RETURN '-infinity'; -- 1 BC in PostgreSQL's calendar has no year 0; any such instant is long past
  END IF;
  RETURN make_timestamp(p[1]::int, p[2]::int, p[3]::int, p[4]::int, p[5]::int, p[6]::int + coalesce(rpad(p[7], 3, '0')::int, 0) / 1000.0)
           AT TIME ZONE 'UTC'
         - CASE p[8] WHEN '+' THEN 1 WHEN '-' THEN -1 ELSE 0 END * make_interval(hours => coalesce(p[9]::int, 0), mins => coalesce(p[10]::int, 0));
END;
$$;

-- A number in a WHATWG IPv4 address part: decimal, 0x-prefixed hex or 0-prefixed octal; NULL
-- when the part is not one. Values past 2^40 are capped (they only ever need to compare as large).
CREATE FUNCTION notify_ipv4_number(part text) RETURNS numeric
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  radix integer := 10;
  digits text := part;
  n numeric := 0;
  c text;
BEGIN
  IF part = '' THEN RETURN NULL; END IF;
  IF lower(left(part, 2)) = '0x' THEN
    radix := 16; digits := substr(part, 3);
  ELSIF length(part) >= 2 AND left(part, 1) = '0' THEN
    radix := 8; digits := substr(part, 2);
  END IF;
  IF digits !~ (CASE radix WHEN 16 THEN '^[0-9A-Fa-f]*$' WHEN 8 THEN '^[0-7]*$' ELSE '^[0-9]*$' END) THEN RETURN NULL; END IF;
  digits := ltrim(digits, '0');
  IF length(digits) > 14 THEN RETURN 1099511627776; END IF;
  FOREACH c IN ARRAY regexp_split_to_array(digits, '') LOOP
    n := n * radix + (strpos('0123456789abcdef', lower(c)) - 1);
  END LOOP;
  RETURN n;
END;
$$;

-- The text inside [...] of a URL host is an IPv6 address (RFC 4291 text form, an optional dotted
-- IPv4 tail, no zone id), as the WHATWG host parser requires.
CREATE FUNCTION notify_is_ipv6(a text) RETURNS boolean
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  m text[];
  extra integer := 0;
  head text[];
  tail text[];
BEGIN
  IF strpos(a, '.') > 0 THEN
    m := regexp_match(a, '^(.*:)((?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})$');
    IF m IS NULL THEN RETURN false; END IF;
    a := CASE WHEN right(m[1], 2) = '::' THEN m[1] ELSE left(m[1], -1) END;
    extra := 2;
  END IF;
  IF strpos(a, ':::') > 0 OR length(a) - length(replace(a, '::', '')) > 2 THEN RETURN false; END IF;
  IF strpos(a, '::') > 0 THEN
    head := CASE WHEN split_part(a, '::', 1) = '' THEN '{}' ELSE string_to_array(split_part(a, '::', 1), ':') END;
    tail := CASE WHEN split_part(a, '::', 2) = '' THEN '{}' ELSE string_to_array(split_part(a, '::', 2), ':') END;
    RETURN coalesce(array_length(head, 1), 0) + coalesce(array_length(tail, 1), 0) + extra <= 7
       AND NOT EXISTS (SELECT 1 FROM unnest(head || tail) AS g WHERE g !~ '^[0-9A-Fa-f]{1,4}$');
  END IF;
  head := string_to_array(a, ':');
  RETURN coalesce(array_length(head, 1), 0) + extra = 8
     AND NOT EXISTS (SELECT 1 FROM unnest(head) AS g WHERE g !~ '^[0-9A-Fa-f]{1,4}$');
END;
$$;

-- Why `url` is not a valid webhook URL, or NULL. The TypeScript check was `new URL(to)` (the
-- WHATWG URL parser) followed by: http or https, a host, no credentials. This is that parser's
-- path for the special schemes, by hand: strip surrounding C0 controls and spaces and every tab
-- and newline; a scheme; any run of / and \; the authority up to / \ ? #; credentials are what
-- precedes its last @; then the host, a port of digits ≤ 65535, and the host's own rules (an
-- [IPv6] address, or a domain without forbidden code points that, when its last label is a
-- number, must be a valid IPv4 address in any of its decimal, hex or octal spellings).
-- Differs: (1) a non-ASCII host (raw or percent-encoded) is accepted as is, where WHATWG applies
-- UTS #46 IDNA mapping and refuses some code points; the dispatcher parses the URL again at send
-- time and fails the notification permanently if it cannot. Labels starting with xn-- are not
-- punycode-checked either. (2) A URL whose scheme is not http, https, ws, wss or ftp is refused
-- for its scheme ('must use http or https') even where WHATWG would have failed to parse it.
CREATE FUNCTION notify_webhook_url_problem(url text) RETURNS text
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  invalid CONSTANT text := 'must be an absolute http or https URL';
  m text[];
  scheme text;
  authority text;
  userinfo text := '';
  hostport text;
  host text;
  port text;
  labels text[];
  n integer;
  value numeric;
BEGIN
  m := regexp_match(translate(regexp_replace(url, '^[\u0001-\u0020]+|[\u0001-\u0020]+$', '', 'g'), E'\t\n\r', ''),
                    '^([A-Za-z][A-Za-z0-9+.-]*):(.*)$');
  IF m IS NULL THEN RETURN invalid; END IF;
  scheme := lower(m[1]);
  IF scheme NOT IN ('http', 'https', 'ws', 'wss', 'ftp') THEN RETURN 'must use http or https'; END IF;

  authority := substring(ltrim(m[2], '/\') FROM '^[^/\\?#]*');
  hostport := authority;
  IF strpos(authority, '@') > 0 THEN
    userinfo := substring(authority FROM '^(.*)@');
    hostport := substring(authority FROM '@([^@]*)$');
  END IF;
  -- a colon inside [...] belongs to an IPv6 address, not to the port
  m := regexp_match(hostport, '^((?:[^:\[]|\[[^\]]*\]?)*)(.*)$');
  host := m[1];
  port := m[2];
  IF host = '' THEN RETURN invalid; END IF;
  IF port <> '' THEN
    IF port !~ '^:[0-9]*$' THEN RETURN invalid; END IF;
    port := ltrim(substr(port, 2), '0');
    IF length(port) > 5 THEN RETURN invalid; END IF;
    IF coalesce(nullif(port, ''), '0')::integer > 65535 THEN RETURN invalid; END IF;
  END IF;

  IF left(host, 1) = '[' THEN
    IF right(host, 1) <> ']' OR NOT notify_is_ipv6(substr(host, 2, length(host) - 2)) THEN RETURN invalid; END IF;
  ELSE
    IF strpos(host, '%') > 0 THEN
      -- percent-decode the ASCII escapes (%00 becomes U+0001: both are forbidden); an escape of a
      -- non-ASCII byte becomes a non-ASCII character (see "Differs" above)
      SELECT string_agg(CASE
               WHEN t.part[1] ~ '^%[0-7][0-9A-Fa-f]$' THEN chr(greatest(1, ('x' || lpad(substr(t.part[1], 2), 8, '0'))::bit(32)::integer))
               WHEN t.part[1] ~ '^%[89A-Fa-f][0-9A-Fa-f]$' THEN U&'\00E9'
               ELSE t.part[1] END, '' ORDER BY t.ord)
        INTO host
        FROM regexp_matches(host, '%[0-9A-Fa-f]{2}|[^%]+|%', 'g') WITH ORDINALITY AS t(part, ord);
    END IF;
    host := lower(host);
    IF host ~ '[\u0001-\u0020#%/:<>?@[\\\]^|\u007f]' THEN RETURN invalid; END IF;
    labels := string_to_array(host, '.');
    IF array_length(labels, 1) > 1 AND labels[array_length(labels, 1)] = '' THEN
      labels := labels[1:array_length(labels, 1) - 1];
    END IF;
    n := array_length(labels, 1);
    -- a host whose last label is a number is an IPv4 address, and must be a valid one
    IF labels[n] ~ '^[0-9]+$' OR notify_ipv4_number(labels[n]) IS NOT NULL THEN
      IF n > 4 THEN RETURN invalid; END IF;
      FOR i IN 1..n LOOP
        value := notify_ipv4_number(labels[i]);
        IF value IS NULL OR (i < n AND value > 255) OR (i = n AND value >= 256 ^ (5 - n)) THEN RETURN invalid; END IF;
      END LOOP;
    END IF;
  END IF;

  IF scheme NOT IN ('http', 'https') THEN RETURN 'must use http or https'; END IF;
  IF userinfo NOT IN ('', ':') THEN RETURN 'must not carry credentials'; END IF;
  IF notify_too_long(url, 2048) THEN RETURN 'must be at most 2048 characters'; END IF;
  RETURN NULL;
END;
$$;

-- Why `recipient` is not valid for `channel`, or NULL. The character classes spell out
-- JavaScript's \s and \d, which PostgreSQL's locale-dependent classes would not match exactly.
CREATE FUNCTION notify_recipient_problem(channel text, recipient text) RETURNS text
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
    WHEN 'webhook' THEN notify_webhook_url_problem(recipient)
  END;

-- ---------------------------------------------------------------------------------------------
-- Validation.

-- The fields an intent may carry: the API body's, plus who asks and how to dedupe.
CREATE FUNCTION notify_intent_fields() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY['channel', 'to', 'subject', 'body', 'template', 'template_version', 'data', 'category',
               'expires_at', 'ttl_seconds', 'metadata', 'tenant_id', 'idempotency_key', 'traceparent'];

-- Every field issue of an intent (the first stage: shapes, types and lengths), as a JSON array,
-- empty when there is none. Order: nesting, tenant_id, idempotency_key, then the API fields in
-- schema order, unknown keys last. This is the definition; notify_intent_suspect below only
-- decides when it need not run.
CREATE FUNCTION notify_intent_issues(intent jsonb) RETURNS jsonb
  LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  issues jsonb := '[]';
  unknown jsonb;
  field text;
  value jsonb;
  deep text;
BEGIN
  -- Differs: validateIntent took a typed object; anything else is now zod's "expected object".
  IF jsonb_typeof(intent) IS DISTINCT FROM 'object' THEN
    RETURN notify_type_issue(coalesce(intent, 'null'), '(root)', 'object');
  END IF;
  -- Nesting deeper than 32 levels anywhere but traceparent (a field's value is level 1). The
  -- jsonpath finds whether there is any; the walk, which is slower, runs only then.
  -- Differs: the walk goes in jsonb key order, so of two too-deep branches it may name the other.
  IF jsonb_path_exists(intent - 'traceparent', 'strict $.*.**{32} ? (@.type() == "object" || @.type() == "array")') THEN
    FOR field, value IN SELECT e.key, e.value FROM jsonb_each(intent - 'traceparent') AS e LOOP
      deep := notify_too_deep_path(value, field, 1);
      IF deep IS NOT NULL THEN issues := issues || notify_issue(deep, 'must not nest deeper than 32 levels'); END IF;
    END LOOP;
  END IF;
  value := intent -> 'tenant_id';
  IF jsonb_typeof(value) IS DISTINCT FROM 'string' OR value = '""' OR notify_too_long(value #>> '{}', 200) THEN
    issues := issues || notify_issue('tenant_id', 'must be a non-empty string of at most 200 characters');
  END IF;
  value := intent -> 'idempotency_key';
  IF value IS NOT NULL AND (jsonb_typeof(value) <> 'string' OR value = '""' OR notify_too_long(value #>> '{}', 255)) THEN
    issues := issues || notify_issue('idempotency_key', 'must be 1 to 255 characters');
  END IF;
  -- the API body's fields, in schema order
  issues := issues
    || notify_string_issues(intent -> 'channel', 'channel', true, 1, NULL)
    || notify_string_issues(intent -> 'to', 'to', true, 1, 2048)
    || notify_string_issues(intent -> 'subject', 'subject', false, NULL, 998)
    || notify_string_issues(intent -> 'body', 'body', false, 1, NULL)
    || notify_string_issues(intent -> 'template', 'template', false, 1, 200)
    -- Differs: zod allowed any safe integer; the column is an integer, so the bound is 2^31 - 1
    -- (above it the INSERT used to fail with a 500).
    || notify_int_issues(intent -> 'template_version', 'template_version', 1, 2147483647)
    || CASE WHEN intent ? 'data' AND jsonb_typeof(intent -> 'data') <> 'object'
            THEN notify_type_issue(intent -> 'data', 'data', 'record') ELSE '[]' END
    || notify_string_issues(intent -> 'category', 'category', false, 1, 100)
    || CASE WHEN NOT intent ? 'expires_at' THEN '[]'
            WHEN jsonb_typeof(intent -> 'expires_at') <> 'string' THEN notify_type_issue(intent -> 'expires_at', 'expires_at', 'string')
            WHEN notify_parse_instant(intent ->> 'expires_at') IS NULL THEN notify_issue('expires_at', 'Invalid ISO datetime')
            ELSE '[]' END
    || notify_int_issues(intent -> 'ttl_seconds', 'ttl_seconds', 1, 2592000)
    || notify_metadata_issues(intent -> 'metadata');
  -- Differs: the unknown keys are listed in jsonb order.
  unknown := intent - notify_intent_fields();
  IF unknown <> '{}' THEN
    issues := issues || (SELECT notify_issue('(root)', 'Unrecognized key' || CASE WHEN count(*) > 1 THEN 's' ELSE '' END || ': '
                                                       || string_agg('"' || k || '"', ', '))
                           FROM jsonb_object_keys(unknown) AS k);
  END IF;
  RETURN issues;
END;
$$;

-- False only for an intent in which notify_intent_issues surely finds nothing: cheap tests, each
-- at least as strict as the rule it stands for (a byte length within a bound is within it in
-- characters and in UTF-16 units too; metadata of at most 100 bytes cannot hold a key or a value
-- that is too long).
-- Anything it is unsure of is "suspect" and goes through notify_intent_issues, which decides;
-- test/sql-enqueue checks that it never clears an intent that notify_intent_issues refuses.
-- Why: plpgsql compiles each expression it evaluates once per transaction (about 1.5k CPU
-- instructions per function call in it), and an enqueue is usually a transaction of its own.
-- Measured with callgrind on a single-user backend, per call for a typical email intent:
-- notify_intent_issues about 720k instructions, this about 200k. (A jsonpath version was no
-- cheaper: its engine spends what the compilation saves.)
CREATE FUNCTION notify_intent_suspect(intent jsonb) RETURNS boolean
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN NOT coalesce(
        jsonb_typeof(intent) = 'object'
    AND intent - notify_intent_fields() = '{}'
    AND jsonb_typeof(intent -> 'tenant_id') = 'string' AND octet_length(intent ->> 'tenant_id') BETWEEN 1 AND 200
    AND (NOT intent ? 'idempotency_key' OR (jsonb_typeof(intent -> 'idempotency_key') = 'string'
         AND octet_length(intent ->> 'idempotency_key') BETWEEN 1 AND 255))
    AND jsonb_typeof(intent -> 'channel') = 'string' AND octet_length(intent ->> 'channel') >= 1
    AND jsonb_typeof(intent -> 'to') = 'string' AND octet_length(intent ->> 'to') BETWEEN 1 AND 2048
    AND (NOT intent ? 'subject' OR (jsonb_typeof(intent -> 'subject') = 'string' AND octet_length(intent ->> 'subject') <= 998))
    AND (NOT intent ? 'body' OR (jsonb_typeof(intent -> 'body') = 'string' AND octet_length(intent ->> 'body') >= 1))
    AND (NOT intent ? 'template' OR (jsonb_typeof(intent -> 'template') = 'string' AND octet_length(intent ->> 'template') BETWEEN 1 AND 200))
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
         AND NOT jsonb_path_exists(intent -> 'metadata', 'strict $.* ? (@.type() != "string")')))
    AND NOT jsonb_path_exists(intent - 'traceparent', 'strict $.*.**{32} ? (@.type() == "object" || @.type() == "array")'),
    false);

-- A refusal: the error code, the message (without the code), the issues, and extra members.
CREATE FUNCTION notify_refusal(code text, message text, errors jsonb, extra jsonb DEFAULT '{}') RETURNS jsonb
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN jsonb_build_object('code', code, 'message', message, 'errors', errors) || extra;

-- Why `intent` cannot be queued at instant `now`, as a refusal (code validation_failed,
-- unknown_channel, bad_expiry or payload_too_large), or NULL when it can. Writes nothing.
CREATE FUNCTION notify_intent_check(intent jsonb, now timestamptz) RETURNS jsonb
  LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  issues jsonb := CASE WHEN notify_intent_suspect(intent) THEN notify_intent_issues(intent) ELSE '[]' END;
  channel text;
  problem text;
  size bigint;
BEGIN
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

-- ---------------------------------------------------------------------------------------------
-- Ids and messages.

-- Crockford base32 of the low 40 bits of v: 8 characters.
CREATE FUNCTION notify_base32_40(v bigint) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((v >> 35) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((v >> 30) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((v >> 25) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((v >> 20) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((v >> 15) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((v >> 10) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((v >> 5) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', (v & 31)::integer + 1, 1);

-- A ULID (26 characters, the shape of newNotificationId's): the milliseconds since the epoch in
-- 10 characters, then 16 random ones. `random` is the 16 bytes of a version-4 UUID: dropping bytes
-- 6-8 (version and variant bits) leaves random bytes, and base64 of 12 of them is 16 characters of
-- 6 random bits; mapping the 64 base64 characters two to one onto the 32 Crockford ones keeps 5
-- random bits per character, 80 in all. One translate instead of 16 shifts and lookups: the
-- expression is small, and plpgsql compiles it again in every transaction.
CREATE FUNCTION notify_ulid(ms bigint, random bytea) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 45) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 40) & 31)::integer + 1, 1)
      || notify_base32_40(ms)
      || translate(encode(substring(overlay(random PLACING '' FROM 7 FOR 3) FROM 1 FOR 12), 'base64'),
                   'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/',
                   '0123456789ABCDEFGHJKMNPQRSTVWXYZ0123456789ABCDEFGHJKMNPQRSTVWXYZ');

-- The Kafka key of every message about a notification (messageKey in contract/messages.ts):
-- tenant/channel/ + the first 22 characters of base64url(sha256(recipient)).
CREATE FUNCTION notify_message_key(tenant_id text, channel text, recipient text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN tenant_id || '/' || channel || '/' || translate(left(encode(sha256(convert_to(recipient, 'UTF8')), 'base64'), 22), '+/', '-_');

-- An instant the way JavaScript's Date.prototype.toISOString() writes it: 2026-05-01T12:00:00.000Z.
CREATE FUNCTION notify_iso(at timestamptz) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

-- ---------------------------------------------------------------------------------------------
-- Enqueue.

-- What the TypeScript enqueue() calls. Validates `intent`, then writes the notifications row and
-- its two outbox rows, exactly as buildDeliveryRequest(subject, 1, now) and
-- buildStatusEvent(subject, {type: 'notification.queued', …}) write them (same JSON text, byte
-- for byte: the values are spelled out below rather than built with json functions, which would
-- add spaces or reorder keys). `options`: `now` (an instant; default the start of the calling
-- statement), `max_attempts`, `default_ttl_ms` (default notify_settings'); now is truncated to
-- milliseconds so rows and JavaScript clocks agree.
--
-- A refused intent is returned as `refusal` (created false, notification NULL) rather than raised:
-- an exception would abort the caller's transaction, and enqueue() has always let a caller catch
-- a ValidationError and go on. notify_enqueue raises it.
--
-- The hot path has no EXCEPTION block (each would start a subtransaction) and one round trip:
-- an idempotent repeat is found by ON CONFLICT DO NOTHING and then a lookup, never by catching a
-- unique violation. A concurrent insert of the same key makes the INSERT wait for that
-- transaction's outcome, as the TypeScript statement did.
CREATE FUNCTION notify_enqueue_row(intent jsonb, options jsonb DEFAULT '{}',
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
  random_ bytea;
  ms_ bigint;
  id_ text;
  at_ text;
  message_key text;
  tenant_json text;
  headers_ jsonb;
BEGIN
  created := false;
  options := coalesce(options, '{}');
  IF jsonb_typeof(options) <> 'object' OR options - ARRAY['now', 'max_attempts', 'default_ttl_ms'] <> '{}' THEN
    RAISE EXCEPTION 'notify_enqueue_row: options must be an object with now, max_attempts and default_ttl_ms only, not %', options
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  now_ := date_trunc('milliseconds', coalesce((options ->> 'now')::timestamptz, statement_timestamp()));

  refusal := notify_intent_check(intent, now_);
  IF refusal IS NOT NULL THEN RETURN; END IF;

  max_attempts_ := (options ->> 'max_attempts')::integer;
  default_ttl_ms_ := (options ->> 'default_ttl_ms')::bigint;
  IF max_attempts_ < 1 OR default_ttl_ms_ < 1 THEN
    RAISE EXCEPTION 'notify_enqueue_row: max_attempts and default_ttl_ms must be positive, not % and %', max_attempts_, default_ttl_ms_
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
  random_ := uuid_send(gen_random_uuid()); -- a variable: inlined notify_ulid reads it more than once
  ms_ := (extract(epoch FROM now_) * 1000)::bigint; -- a variable too, or inlining would compute it ten times
  id_ := 'ntf_' || notify_ulid(ms_, random_);
  at_ := notify_iso(now_);
  message_key := notify_message_key(tenant_id_, channel_, intent ->> 'to');
  tenant_json := to_json(tenant_id_)::text; -- escapes exactly as JSON.stringify does
  headers_ := jsonb_build_object('notification-id', id_, 'tenant-id', tenant_id_, 'schema-version', '1')
           || CASE WHEN traceparent_ IS NOT NULL THEN jsonb_build_object('traceparent', traceparent_) ELSE '{}' END;

  -- One statement, like the TypeScript one it replaces. The settings are read only when the
  -- options do not give them. When the key is taken, ON CONFLICT inserts neither the notification
  -- nor, since `o` reads `n`, the messages; the outbox rows take ascending ids in `ord` order, and
  -- the outbox trigger fires once.
  WITH n AS (
    INSERT INTO notifications (id, tenant_id, channel, recipient, subject, body, template, template_version, data,
                               category, metadata, idempotency_key, request_hash, state, attempts, max_attempts,
                               next_attempt_at, expires_at, traceparent, created_at, updated_at)
    VALUES (id_, tenant_id_, channel_, intent ->> 'to', intent ->> 'subject', intent ->> 'body', intent ->> 'template',
            (intent -> 'template_version')::numeric::integer, intent -> 'data', intent ->> 'category',
            coalesce(intent -> 'metadata', '{}'), key_, hash_, 'queued', 0,
            coalesce(max_attempts_, (SELECT s.max_attempts FROM notify_settings AS s), 8),
            now_,
            CASE WHEN intent ? 'expires_at' THEN notify_parse_instant(intent ->> 'expires_at')
                 WHEN intent ? 'ttl_seconds' THEN now_ + (intent -> 'ttl_seconds')::numeric * interval '1 second'
                 ELSE now_ + coalesce(default_ttl_ms_, (SELECT s.default_ttl_ms FROM notify_settings AS s), 86400000)
                             * interval '1 millisecond' END,
            traceparent_, now_, now_)
    ON CONFLICT ON CONSTRAINT notifications_tenant_idempotency_key DO NOTHING
    RETURNING *
  ), o AS (
    INSERT INTO outbox (topic, key, value, headers)
    SELECT m.topic, message_key, m.value, m.headers
      FROM n, (VALUES
        (1, 'requests',
         '{"v":1,"type":"notification.deliver","id":"' || id_ || '","tenant_id":' || tenant_json
           || ',"channel":"' || channel_ || '","attempt":1,"due_at":"' || at_ || '"}',
         headers_ || jsonb_build_object('message-type', 'notification.deliver', 'attempt', '1', 'due-at', at_)),
        (2, 'events',
         '{"v":1,"type":"notification.queued","id":"' || id_ || '","tenant_id":' || tenant_json
           || ',"channel":"' || channel_ || '","state":"queued","attempts":0,"dead_reason":null,"last_error":null,'
           || '"next_attempt_at":"' || at_ || '","occurred_at":"' || at_ || '"}',
         headers_ || jsonb_build_object('message-type', 'notification.queued'))
      ) AS m(ord, topic, value, headers)
     ORDER BY m.ord
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

-- The public function: queues `intent` in the caller's transaction and returns the notification
-- id (the original one when the idempotency key was used before for the same request). Uses the
-- database clock and notify_settings. Raises the refusals (see the table at the top).
CREATE FUNCTION notify_enqueue(intent jsonb) RETURNS text
  LANGUAGE plpgsql VOLATILE
  SET search_path FROM CURRENT
  AS $$
DECLARE
  result record;
BEGIN
  SELECT * INTO result FROM notify_enqueue_row(intent, '{}');
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

COMMENT ON FUNCTION notify_enqueue(jsonb) IS
  'Queues a notification intent in the caller''s transaction; returns its id. Errors NT001-NT004, NT009, NT010: see docs/sql-enqueue.md.';
COMMENT ON FUNCTION notify_enqueue_row(jsonb, jsonb) IS
  'Internal (used by @notify/outbox enqueue()): returns (created, notification, refusal) instead of raising.';
COMMENT ON TABLE notify_settings IS
  'One row: the service-wide max_attempts and default expiry used by notify_enqueue; written by notify start.';
