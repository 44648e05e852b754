import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import { buildDeliveryRequest, buildStatusEvent, type OutboxMessage } from './contract/messages.js';
import { prepared, toExecutor, type TransactionLike } from './db/executor.js';
import type { Notification } from './db/schema.js';
import { IdempotencyConflictError, IdempotencyInProgressError } from './errors.js';
import { requestHash } from './idempotency.js';
import { validateIntent, type NotificationIntent } from './model/intent.js';
import { newNotificationId } from './model/id.js';

/** What `enqueue` needs besides the transaction. */
export interface EnqueueOptions {
  readonly clock?: Clock;
  /** Attempts before a notification is declared dead (NOTIFY_MAX_ATTEMPTS). Default 8. */
  readonly maxAttempts?: number;
  /** Expiry when the intent names none (NOTIFY_DEFAULT_TTL_MS). Default 24 h. */
  readonly defaultTtlMs?: number;
}

/** The notification, and whether this call created it (false: an earlier request with the same key did). */
export interface EnqueueResult {
  readonly notification: Notification;
  readonly created: boolean;
}

const COLUMNS = [
  'id', 'tenant_id', 'channel', 'recipient', 'subject', 'body', 'template', 'template_version', 'data',
  'category', 'metadata', 'idempotency_key', 'request_hash', 'state', 'attempts', 'max_attempts',
  'next_attempt_at', 'expires_at', 'traceparent', 'created_at', 'updated_at',
] as const;

// One round trip: the notification row and its outbox rows are written by one statement. When the
// (tenant, key) already exists, ON CONFLICT DO NOTHING inserts neither (the outbox CTE reads `n`).
// A concurrent insert of the same key makes this statement wait for that transaction's outcome.
const INSERT_SQL = prepared('notify_enqueue_v1', `
WITH n AS (
  INSERT INTO notifications (${COLUMNS.join(', ')})
  VALUES (${COLUMNS.map((c, i) => (c === 'data' || c === 'metadata' ? `$${i + 1}::jsonb` : `$${i + 1}`)).join(', ')})
  ON CONFLICT ON CONSTRAINT notifications_tenant_idempotency_key DO NOTHING
  RETURNING *
), o AS (
  INSERT INTO outbox (topic, key, value, headers)
  SELECT m.topic, m.key, m.value, m.headers
    FROM n, unnest($${COLUMNS.length + 1}::text[], $${COLUMNS.length + 2}::text[], $${COLUMNS.length + 3}::text[], $${COLUMNS.length + 4}::jsonb[])
         WITH ORDINALITY AS m(topic, key, value, headers, ord)
   ORDER BY m.ord
)
SELECT * FROM n`);

/**
 * Records a notification intent in the caller's transaction: the `notifications` row (state
 * `queued`, due now) and its outbox rows (the delivery request and a `notification.queued`
 * status event). If the caller rolls back, nothing is queued.
 *
 * `tx` may be a Kysely `Transaction` (or `Kysely`), or a `pg` client inside `BEGIN`.
 *
 * With an idempotency key, a repeat of the same request returns the original with
 * `created: false`; the same key with a different request throws `IdempotencyConflictError`.
 * Validation failures throw `ValidationError` with a stable `code`.
 */
export async function enqueue(tx: TransactionLike, intent: NotificationIntent, options: EnqueueOptions = {}): Promise<EnqueueResult> {
  const clock = options.clock ?? systemClock;
  const now = clock.now();
  const valid = validateIntent(intent, now);
  const db = toExecutor(tx);
  const id = newNotificationId(now);
  const expiresAt = valid.expires_at
    ? new Date(valid.expires_at)
    : new Date(now.getTime() + (valid.ttl_seconds !== undefined ? valid.ttl_seconds * 1000 : (options.defaultTtlMs ?? 86_400_000)));
  const hash = valid.idempotency_key !== undefined ? requestHash(valid) : null;
  const subject = { id, tenant_id: valid.tenant_id, channel: valid.channel, recipient: valid.to, traceparent: valid.traceparent };
  const messages: OutboxMessage[] = [
    buildDeliveryRequest(subject, 1, now),
    buildStatusEvent(subject, { type: 'notification.queued', state: 'queued', attempts: 0, next_attempt_at: now, occurred_at: now }),
  ];
  const values: unknown[] = [
    id, valid.tenant_id, valid.channel, valid.to, valid.subject ?? null, valid.body ?? null, valid.template ?? null,
    valid.template_version ?? null, valid.data === undefined ? null : JSON.stringify(valid.data), valid.category ?? null,
    JSON.stringify(valid.metadata ?? {}), valid.idempotency_key ?? null, hash, 'queued', 0, options.maxAttempts ?? 8,
    now, expiresAt, valid.traceparent ?? null, now, now,
    messages.map((m) => m.topic), messages.map((m) => m.key), messages.map((m) => m.value), messages.map((m) => JSON.stringify(m.headers)),
  ];
  const inserted = await db.query<Notification>(INSERT_SQL, values);
  const row = inserted.rows[0];
  if (row) return { notification: row, created: true };

  const existing = await db.query<Notification>('SELECT * FROM notifications WHERE tenant_id = $1 AND idempotency_key = $2', [
    valid.tenant_id,
    valid.idempotency_key,
  ]);
  const original = existing.rows[0];
  // Only possible when the caller's snapshot predates the other transaction (REPEATABLE READ or stricter).
  if (!original) throw new IdempotencyInProgressError();
  if (original.request_hash !== hash) throw new IdempotencyConflictError(original.id);
  return { notification: original, created: false };
}
