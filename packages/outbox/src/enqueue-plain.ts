import { createHash } from 'node:crypto';
import { prepared } from './db/executor.js';
import type { EnqueueOptions } from './enqueue-options.js';
import { jsonbKeyOrder, nonFiniteIssue } from './jsonb.js';
import { newNotificationId } from './model/id.js';
import type { NotificationIntent } from './model/intent.js';

// enqueue()'s fast path: a plain intent's rows computed in this process and written by one INSERT.
//
// notify_enqueue_item spends more on computing and checking the rows in SQL (ulid, instants,
// message texts, headers, key, the intent check) than on writing them: pgbench measured the two
// rows with constant values at 0.59x a plain one-row INSERT and the function at 0.36x
// (bench/enqueue-parts, BENCHMARKS.md "session 16"). So for the intent most callers pass inside
// their own transaction (tenant_id, channel, to, body, optionally subject, traceparent and data;
// no idempotency key, delivery option, template, category, metadata or expiry), enqueue()
// computes here exactly what the function would write and sends the values. Everything else,
// valid or not, still goes to notify_enqueue_item, which stays the only judge of refusals:
// `plainWrite` answers null unless the intent passes 0270's plain-intent expression (the
// conjunction of every test the function applies to such an intent) and its data, if any, is an
// object the function's own check (notify_intent_check: an object, nested less than 32 deep,
// within the content limit) accepts, so it never accepts what the function refuses.
// test/sql-enqueue/differential.test.ts holds the rows equal to the function's, byte for byte.
//
// One difference, documented in docs/sql-enqueue.md: without `options.now` the instants come
// from this process's clock, not the database's.

/** The statement parameters of a plain intent's write, and what `createdNotification` needs of them. */
export interface PlainWrite {
  readonly id: string;
  readonly createdAt: Date;
  readonly traceparent: string | null;
  /** The stored `data` as pg reads it back (keys in jsonb's order), or null. */
  readonly data: Record<string, unknown> | null;
  /** PLAIN_ENQUEUE_SQL's parameters, in order. */
  readonly values: readonly unknown[];
}

// Positions in PlainWrite.values (plainWrite's `values`, $1 = 0) of what every row of a batch
// shares: the instant ($7) and both settings ($9, $10). A batch passes these once and each other
// parameter as an array of the rows' values.
const SHARED_VALUES = new Set([6, 8, 9]);

// notify_settings supplies what the options ($9, $10) leave out (its one row; none: the built-in
// defaults, as in notify_enqueue_item), and its event policy decides whether the request carries
// the queued event. $7 is the instant.
//
// LIMIT 1 changes no result (notify_settings_one_row) but tells the planner so. Autovacuum never
// analyzes a one-row table, and PostgreSQL takes a never-analyzed one for as many rows as its
// size suggests (1,000): a batch of n intents was planned as n × 1,000 rows, and from ~170 intents
// its estimated cost passed jit_above_cost, so each custom plan (the first five on a connection)
// was compiled by LLVM: 1,000 intents ~290 ms a call instead of ~55 (BENCHMARKS.md, session 35).
const SETTINGS_CTE = `s AS (
     SELECT coalesce($9::integer, t.max_attempts, 8) AS max_attempts,
            $7::timestamptz + coalesce($10::bigint, t.default_ttl_ms, 86400000) * interval '1 millisecond' AS expires_at,
            coalesce(t.events, 'all') = 'all' AS all_events
       FROM (SELECT) AS one LEFT JOIN notify_settings AS t ON true
      LIMIT 1
   )`;

/**
 * Both rows in one statement, with the settings of SETTINGS_CTE. The other columns take their
 * defaults: metadata '{}', state queued, attempts 0, priority normal, ordering relaxed.
 */
export const PLAIN_ENQUEUE_SQL = prepared(
  'notify_enqueue_plain_v3',
  `WITH ${SETTINGS_CTE}, n AS (
     INSERT INTO notifications (id, tenant_id, channel, recipient, subject, body, data, max_attempts, next_attempt_at, expires_at,
                                traceparent, created_at, updated_at)
     SELECT $1, $2, $3, $4, $5, $6, $15::jsonb, s.max_attempts, $7::timestamptz, s.expires_at, $8, $7::timestamptz, $7::timestamptz
       FROM s
   ), o AS (
     INSERT INTO outbox (topic, key, value, headers, event_value)
     SELECT 'requests', $11, $12, $13::jsonb, CASE WHEN s.all_events THEN $14 END FROM s
   )
   SELECT s.max_attempts, s.expires_at FROM s`,
);

/**
 * A batch of plain intents (enqueueMany, the API's group commit) in one statement: the rows
 * PLAIN_ENQUEUE_SQL writes for each, from one array parameter per column, inserted in the
 * batch's order (so outbox ids, and a recipient's order, follow it). The parameters are
 * PLAIN_ENQUEUE_SQL's, each per-row one an array; every row shares the instant ($7) and the
 * settings, so one result row serves them all.
 */
export const PLAIN_BATCH_SQL = prepared(
  'notify_enqueue_plain_batch_v3',
  `WITH ${SETTINGS_CTE}, i AS (
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $8::text[],
                          $11::text[], $12::text[], $13::text[], $14::text[], $15::text[])
       WITH ORDINALITY AS i(id, tenant_id, channel, recipient, subject, body, traceparent, key, request, headers, event, data, ord)
   ), n AS (
     INSERT INTO notifications (id, tenant_id, channel, recipient, subject, body, data, max_attempts, next_attempt_at, expires_at,
                                traceparent, created_at, updated_at)
     SELECT i.id, i.tenant_id, i.channel, i.recipient, i.subject, i.body, i.data::jsonb, s.max_attempts, $7::timestamptz, s.expires_at,
            i.traceparent, $7::timestamptz, $7::timestamptz
       FROM i, s ORDER BY i.ord
   ), o AS (
     INSERT INTO outbox (topic, key, value, headers, event_value)
     SELECT 'requests', i.key, i.request, i.headers::jsonb, CASE WHEN s.all_events THEN i.event END FROM i, s ORDER BY i.ord
   )
   SELECT s.max_attempts, s.expires_at FROM s`,
);

// U+0000 and unpaired surrogates, which PostgreSQL's text and jsonb cannot store.
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what PostgreSQL cannot store
export const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// JSON.stringify writes U+0000 as \u0000 and an unpaired surrogate as \udXXX (paired ones as
// themselves). PostgreSQL's jsonb input refuses both.
export const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/;

// The string fields a plain intent may carry (0270's first test); `data` is checked apart (plainData).
const PLAIN_FIELDS = new Set(['tenant_id', 'channel', 'to', 'body', 'subject', 'traceparent']);
// The deepest object or array inside `data` (data itself at 0) the plain path takes. The
// function refuses one at 32 (notify_intent_suspect's `$.*.**{32}`): well below it, no question.
const PLAIN_DATA_DEPTH = 16;
// notify_recipient_problem's email and sms expressions, the same character classes.
const SPACELESS = '[^\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff@<>()[\\]\\\\,;:"]+';
const EMAIL = new RegExp(`^${SPACELESS}@${SPACELESS}\\.${SPACELESS}$`);
const SMS = /^\+[1-9][0-9]{6,14}$/;
// notify_webhook_url_plain() (0160, its port up to 65535 since 0300): every URL it matches
// notify_webhook_url_problem accepts. In JavaScript `.` stops at line terminators, where
// PostgreSQL's does not: this one matches fewer.
const WEBHOOK_PLAIN =
  /^https?:\/\/(?:(?:[A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*\.?|(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))(?::(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(?:[/?#].*)?$/;
// The W3C form notify_enqueue_item keeps; anything else is dropped.
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const MAX_INT4 = 2_147_483_647;

function bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function recipientAccepted(channel: string, to: string): boolean {
  switch (channel) {
    case 'email':
      // notify_too_long(to, 254): UTF-8 bytes and UTF-16 units both over; units never exceed bytes.
      return to.length <= 254 && EMAIL.test(to);
    case 'sms':
      return SMS.test(to);
    case 'webhook':
      return WEBHOOK_PLAIN.test(to);
    default:
      return false;
  }
}

// What notify_enqueue_item would accept as an option; anything else takes its path (and its error).
function optionsPlain(options: EnqueueOptions): boolean {
  const { now, maxAttempts, defaultTtlMs } = options;
  return (
    (now === undefined || (now instanceof Date && Number.isFinite(now.getTime()))) &&
    (maxAttempts === undefined || (Number.isInteger(maxAttempts) && maxAttempts >= 1 && maxAttempts <= MAX_INT4)) &&
    (defaultTtlMs === undefined || (Number.isSafeInteger(defaultTtlMs) && defaultTtlMs >= 1))
  );
}

/**
 * The write of a plain intent, or null: then notify_enqueue_item decides (it validates, refuses,
 * and handles idempotency keys, delivery options, templates, data and expiries).
 */
export function plainWrite(intent: NotificationIntent, options: EnqueueOptions): PlainWrite | null {
  if (intent === null || typeof intent !== 'object') return null;
  // A plain object, so its JSON is its own keys (a class instance may have a toJSON of its own).
  const prototype: unknown = Object.getPrototypeOf(intent);
  if (prototype !== Object.prototype && prototype !== null) return null;
  if (!optionsPlain(options)) return null;
  let data: PlainData | null = null;
  for (const field of Object.keys(intent)) {
    const value: unknown = (intent as unknown as Record<string, unknown>)[field];
    if (value === undefined) continue; // JSON.stringify leaves it out, and so does the function
    if (field === 'data') {
      if ((data = plainData(value)) === null) return null;
      continue;
    }
    if (!PLAIN_FIELDS.has(field) || typeof value !== 'string') return null;
    if (field !== 'traceparent' && UNSTORABLE.test(value)) return null;
  }
  const { tenant_id: tenantId, channel, to, body, subject } = intent;
  // Each present one is a string (above); these four must be present.
  if (tenantId === undefined || channel === undefined || to === undefined || body === undefined) return null;
  const tenantBytes = bytes(tenantId);
  const bodyBytes = bytes(body);
  const subjectBytes = subject === undefined ? 0 : bytes(subject);
  if (tenantBytes < 1 || tenantBytes > 200 || bodyBytes < 1) return null;
  if (subject !== undefined && (channel !== 'email' || subjectBytes > 998)) return null;
  if (subjectBytes + bodyBytes + (data?.jsonbBytes ?? 0) > 65_536) return null;
  const toBytes = bytes(to);
  if (toBytes < 1 || toBytes > 2048 || !recipientAccepted(channel, to)) return null;

  const createdAt = options.now === undefined ? new Date() : new Date(options.now.getTime());
  const id = newNotificationId(createdAt);
  const at = createdAt.toISOString();
  const traceparent = intent.traceparent !== undefined && TRACEPARENT.test(intent.traceparent) ? intent.traceparent : null;
  const tenantJson = JSON.stringify(tenantId);
  // The texts notify_enqueue_item formats (0270), which are buildDeliveryRequest's and
  // buildStatusEvent's (@notify/contract) byte for byte.
  const request = `{"v":1,"type":"notification.deliver","id":"${id}","tenant_id":${tenantJson},"channel":"${channel}","attempt":1,"due_at":"${at}"}`;
  const event =
    `{"v":1,"type":"notification.queued","id":"${id}","tenant_id":${tenantJson},"channel":"${channel}","state":"queued",` +
    `"attempts":0,"dead_reason":null,"last_error":null,"next_attempt_at":"${at}","occurred_at":"${at}"}`;
  const headers: Record<string, string> = {
    'notification-id': id,
    'tenant-id': tenantId,
    'schema-version': '1',
    'message-type': 'notification.deliver',
    attempt: '1',
    'due-at': at,
  };
  if (traceparent !== null) headers.traceparent = traceparent;
  // notify_message_key: tenant/channel/ + the first 22 characters of base64url(sha256(recipient)).
  const key = `${tenantId}/${channel}/${createHash('sha256').update(to).digest('base64url').slice(0, 22)}`;
  return {
    id,
    createdAt,
    traceparent,
    data: data === null ? null : data.stored,
    values: [
      id,
      tenantId,
      channel,
      to,
      subject ?? null,
      body,
      at,
      traceparent,
      options.maxAttempts ?? null,
      options.defaultTtlMs ?? null,
      key,
      request,
      JSON.stringify(headers),
      event,
      data === null ? null : data.text,
    ],
  };
}

/** `data` the plain path writes: its JSON text, the value pg will read back, and the length of jsonb's text of it. */
interface PlainData {
  readonly text: string;
  /** That text parsed, every object's keys in jsonb's order: what pg parses from the stored column. */
  readonly stored: Record<string, unknown>;
  /** octet_length((intent -> 'data')::text): what the function counts towards the 64 KiB content limit. */
  readonly jsonbBytes: number;
}

/**
 * `data` as the plain path writes it, or null: then the function decides. It takes an object of
 * JSON values (a plain object without a toJSON of its own) whose JSON text PostgreSQL's jsonb
 * input stores as written: no U+0000 or unpaired surrogate, no key `__proto__`, nothing nested
 * deeper than PLAIN_DATA_DEPTH, and every number printed without an exponent. jsonb keeps such a
 * number's digits as written (numeric; 1e21 would come back as 22 digits) and prints strings with
 * JSON.stringify's escapes, so its text is JSON.stringify's with a space after every `:` and `,`:
 * its length is known here, and the 64 KiB content limit applied exactly as the function applies
 * it. The column gets the same jsonb either way: the function stores `intent -> 'data'`, parsed
 * from the intent's JSON, of which this text is the part.
 */
function plainData(data: unknown): PlainData | null {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return null;
  const prototype: unknown = Object.getPrototypeOf(data);
  if (prototype !== Object.prototype && prototype !== null) return null;
  if (typeof (data as { toJSON?: unknown }).toJSON === 'function') return null;
  // Infinity or NaN would be written as null: the function's path refuses it (intentJson).
  if (nonFiniteIssue(data, 'data', 0) !== null) return null;
  let text: string;
  try {
    text = JSON.stringify(data);
  } catch {
    return null; // a BigInt or a cycle: the function's path names it
  }
  if (UNSTORABLE_ESCAPE.test(text)) return null;
  const size = { spaces: 0 };
  const stored = jsonbCopy(JSON.parse(text), 0, size) as Record<string, unknown> | undefined;
  return stored === undefined ? null : { text, stored, jsonbBytes: bytes(text) + size.spaces };
}

/**
 * One walk of `value`, a JSON.parse result: its copy with every object's keys in jsonb's order,
 * adding to `size.spaces` the separators (`:` and `,`) of its JSON text, each of which jsonb's text
 * follows with a space; undefined (never a JSON value) when plainData does not take it.
 */
function jsonbCopy(value: unknown, depth: number, size: { spaces: number }): unknown {
  if (typeof value === 'number') return String(value).includes('e') ? undefined : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth > PLAIN_DATA_DEPTH) return undefined;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      const inner = jsonbCopy(item, depth + 1, size);
      if (inner === undefined) return undefined;
      out.push(inner);
    }
    if (out.length > 1) size.spaces += out.length - 1;
    return out;
  }
  const keys = Object.keys(value).sort(jsonbKeyOrder);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    if (key === '__proto__') return undefined;
    const inner = jsonbCopy((value as Record<string, unknown>)[key], depth + 1, size);
    if (inner === undefined) return undefined;
    out[key] = inner;
  }
  // one ':' per key, and a ',' between two
  if (keys.length > 0) size.spaces += 2 * keys.length - 1;
  return out;
}

/** The writes of a batch whose every intent is plain, and PLAIN_BATCH_SQL's parameters. */
export interface PlainBatch {
  readonly writes: readonly PlainWrite[];
  readonly values: readonly unknown[];
}

/**
 * A batch's plain write, or null when any intent of it is not plain (then notify_enqueue_batch
 * decides for all of them, as before). Every row takes one instant, `options.now` or this
 * process's clock once, as notify_enqueue_batch gives every item its statement's.
 */
export function plainBatch(intents: readonly NotificationIntent[], options: EnqueueOptions): PlainBatch | null {
  if (!optionsPlain(options)) return null;
  const shared: EnqueueOptions = { ...options, now: options.now === undefined ? new Date() : options.now };
  const writes: PlainWrite[] = [];
  for (const intent of intents) {
    const write = plainWrite(intent, shared);
    if (write === null) return null;
    writes.push(write);
  }
  return {
    writes,
    values: writes[0]!.values.map((value, at) => (SHARED_VALUES.has(at) ? value : writes.map((w) => w.values[at]))),
  };
}
