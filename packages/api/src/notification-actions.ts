import type { Kysely } from 'kysely';
import { type Database } from '@notify/migrations';
import { type MessageSubject, buildDeliveryRequest, buildStatusEvent } from '@notify/contract';
import { type Notification, fromKysely, newNotificationId, outboxInsert } from '@notify/outbox';
import { type BulkRetryRow, bulkRetryFinish, bulkRetryGet, bulkRetryInsert } from './sql/bulk-retry-store.js';
import { notificationActionInsertMany } from './sql/notification-action-insert-many.js';
import { notificationBulkRequeue, notificationDeadCount } from './sql/notification-bulk-requeue.js';
import type { NotificationFilter } from './sql/notification-search.js';
import { ProblemError } from './problem.js';
import { notificationActionInsert } from './sql/notification-action-insert.js';
import { notificationCancel } from './sql/notification-cancel.js';
import { notificationGet } from './sql/notification-get.js';
import { notificationRequeue } from './sql/notification-requeue.js';

/** Who and when, for a manual action. */
export interface ActionParams {
  readonly db: Kysely<Database>;
  readonly tenantId: string;
  readonly id: string;
  readonly now: Date;
  /** The key that asked; null from the command line. */
  readonly apiKeyId: string | null;
}

/** The notification after the action, and whether this call changed it. */
export interface ActionResult {
  readonly notification: Notification;
  readonly changed: boolean;
}

function subjectOf(n: Notification): MessageSubject {
  return { id: n.id, tenant_id: n.tenant_id, channel: n.channel, recipient: n.recipient, traceparent: n.traceparent };
}

/**
 * queued → cancelled, in one transaction with its `notification.cancelled` status event (through
 * the outbox, like every transition) and a history row. Cancelling a cancelled notification
 * changes nothing (`changed: false`), so a client may repeat the call. Returns undefined when the
 * tenant has no such notification; throws `invalid_transition` for sent and dead ones.
 *
 * A delivery request already on Kafka stays there: the dispatcher skips it, because the
 * notification is no longer queued.
 */
export async function cancelNotification(params: ActionParams): Promise<ActionResult | undefined> {
  return params.db.transaction().execute(async (trx) => {
    const db = fromKysely(trx);
    const current = await notificationGet(db, { tenantId: params.tenantId, id: params.id, forUpdate: true });
    if (!current) return undefined;
    if (current.state === 'cancelled') return { notification: current, changed: false };
    if (current.state !== 'queued') {
      throw new ProblemError(
        'invalid_transition',
        `notification ${current.id} is ${current.state}; only queued notifications can be cancelled`,
        {
          extensions: { state: current.state },
        },
      );
    }
    const updated = await notificationCancel(db, { id: current.id, now: params.now });
    // The row is locked FOR UPDATE above, so the guarded UPDATE cannot miss.
    if (!updated) throw new Error(`notification ${current.id} changed under its row lock`);
    await outboxInsert(db, {
      messages: [
        buildStatusEvent(subjectOf(updated), {
          type: 'notification.cancelled',
          state: 'cancelled',
          attempts: updated.attempts,
          last_error: updated.last_error,
          occurred_at: params.now,
        }),
      ],
    });
    await notificationActionInsert(db, {
      notificationId: updated.id,
      action: 'cancel',
      fromState: 'queued',
      toState: 'cancelled',
      previousDeadReason: null,
      attempts: updated.attempts,
      maxAttempts: updated.max_attempts,
      apiKeyId: params.apiKeyId,
      now: params.now,
    });
    return { notification: updated, changed: true };
  });
}

/** `retryNotification` also needs the retry budget. */
export interface RetryParams extends ActionParams {
  /** Attempts a manual retry grants: the cap becomes attempts made + budget (NOTIFY_MAX_ATTEMPTS). */
  readonly budget: number;
}

/**
 * dead → queued, due now: raises `max_attempts` to the attempts made plus the budget and, in the
 * same transaction, writes the delivery request for the next attempt, a `notification.requeued`
 * status event and a history row. Returns undefined when the tenant has no such notification;
 * throws `invalid_transition` unless it is dead, and `notification_expired` when its expiry has
 * passed (it would only die again as expired; enqueue a new one instead).
 */
export async function retryNotification(params: RetryParams): Promise<ActionResult | undefined> {
  return params.db.transaction().execute(async (trx) => {
    const db = fromKysely(trx);
    const current = await notificationGet(db, { tenantId: params.tenantId, id: params.id, forUpdate: true });
    if (!current) return undefined;
    if (current.state !== 'dead') {
      throw new ProblemError(
        'invalid_transition',
        `notification ${current.id} is ${current.state}; only dead notifications can be retried`,
        {
          extensions: { state: current.state },
        },
      );
    }
    if (new Date(current.expires_at).getTime() <= params.now.getTime()) {
      throw new ProblemError(
        'notification_expired',
        `notification ${current.id} expired at ${new Date(current.expires_at).toISOString()}; enqueue a new notification instead`,
      );
    }
    const maxAttempts = current.attempts + params.budget;
    const updated = await notificationRequeue(db, { id: current.id, now: params.now, maxAttempts });
    if (!updated) throw new Error(`notification ${current.id} changed under its row lock`);
    const subject = subjectOf(updated);
    await outboxInsert(db, {
      messages: [
        buildDeliveryRequest(subject, updated.attempts + 1, params.now),
        buildStatusEvent(subject, {
          type: 'notification.requeued',
          state: 'queued',
          attempts: updated.attempts,
          last_error: updated.last_error,
          next_attempt_at: params.now,
          occurred_at: params.now,
        }),
      ],
    });
    await notificationActionInsert(db, {
      notificationId: updated.id,
      action: 'retry',
      fromState: 'dead',
      toState: 'queued',
      previousDeadReason: current.dead_reason,
      attempts: updated.attempts,
      maxAttempts,
      apiKeyId: params.apiKeyId,
      now: params.now,
    });
    return { notification: updated, changed: true };
  });
}

/** Most notifications one bulk retry re-queues. */
export const BULK_RETRY_MAX = 10_000;

/** What `bulkRetry` needs. */
export interface BulkRetryParams {
  readonly db: Kysely<Database>;
  readonly tenantId: string;
  /** Which dead notifications (state is always dead). */
  readonly filter: NotificationFilter;
  /** The filter as the caller gave it, stored and compared on a repeated Idempotency-Key. */
  readonly filterJson: Record<string, unknown>;
  readonly limit: number;
  readonly idempotencyKey: string | null;
  readonly apiKeyId: string | null;
  readonly now: Date;
  readonly budget: number;
}

/** The outcome of a bulk retry; `replayed` when an earlier run with the same Idempotency-Key answered. */
export interface BulkRetryResult {
  readonly id: string;
  readonly requeued: number;
  /** Dead notifications the filter matched before the run (at most the limit + 1: more remain when it exceeds `requeued`). */
  readonly matched: number;
  readonly replayed: boolean;
  readonly createdAt: Date;
}

/**
 * Re-queues up to `limit` (≤ 10,000) dead notifications matching a filter, like `retryNotification`
 * for each (raised attempt cap, delivery request and `notification.requeued` event through the
 * outbox, a history row naming the bulk) but set-based: a handful of statements in one
 * transaction whatever the count. Expired ones are left dead. With an Idempotency-Key, a repeat
 * returns the first run (`replayed`); the same key with another filter is `idempotency_conflict`.
 */
export async function bulkRetry(params: BulkRetryParams): Promise<BulkRetryResult> {
  if (params.idempotencyKey !== null) {
    const earlier = await bulkRetryGet(fromKysely(params.db), { tenantId: params.tenantId, idempotencyKey: params.idempotencyKey });
    if (earlier) return replay(earlier, params);
  }
  const id = newNotificationId(params.now).replace(/^ntf_/, 'blk_');
  const result = await params.db.transaction().execute(async (trx) => {
    const db = fromKysely(trx);
    const claimed = await bulkRetryInsert(db, {
      id,
      tenantId: params.tenantId,
      idempotencyKey: params.idempotencyKey,
      filter: params.filterJson,
      apiKeyId: params.apiKeyId,
      now: params.now,
    });
    if (!claimed) return undefined; // a concurrent twin with the same key committed first
    const matched = await notificationDeadCount(db, { tenantId: params.tenantId, filter: params.filter, cap: params.limit + 1 });
    const rows = await notificationBulkRequeue(db, {
      tenantId: params.tenantId,
      filter: params.filter,
      now: params.now,
      budget: params.budget,
      limit: params.limit,
    });
    await outboxInsert(db, {
      messages: rows.flatMap((n) => [
        buildDeliveryRequest(subjectOf(n), n.attempts + 1, params.now),
        buildStatusEvent(subjectOf(n), {
          type: 'notification.requeued',
          state: 'queued',
          attempts: n.attempts,
          last_error: n.last_error,
          next_attempt_at: params.now,
          occurred_at: params.now,
        }),
      ]),
    });
    await notificationActionInsertMany(db, {
      bulkRetryId: id,
      actions: rows.map((n) => ({
        notificationId: n.id,
        action: 'retry' as const,
        fromState: 'dead',
        toState: 'queued',
        previousDeadReason: n.previous_dead_reason,
        attempts: n.attempts,
        maxAttempts: n.max_attempts,
        apiKeyId: params.apiKeyId,
        now: params.now,
      })),
    });
    await bulkRetryFinish(db, { id, requeued: rows.length, matched });
    return { id, requeued: rows.length, matched, replayed: false, createdAt: params.now };
  });
  if (result) return result;
  const earlier = await bulkRetryGet(fromKysely(params.db), { tenantId: params.tenantId, idempotencyKey: params.idempotencyKey! });
  return replay(earlier!, params);
}

function replay(earlier: BulkRetryRow, params: BulkRetryParams): BulkRetryResult {
  if (JSON.stringify(earlier.filter) !== JSON.stringify(sortKeys({ ...params.filterJson }))) {
    throw new ProblemError('idempotency_conflict', 'this Idempotency-Key was used for a bulk retry with another filter', {
      extensions: { existing_id: earlier.id },
    });
  }
  return { id: earlier.id, requeued: earlier.requeued, matched: earlier.matched, replayed: true, createdAt: new Date(earlier.created_at) };
}

// jsonb stores object keys in its own order (shorter keys first, then bytewise); compare in that order.
function sortKeys(o: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(o).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, o[k]]));
}
