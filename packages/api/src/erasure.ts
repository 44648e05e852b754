import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { buildStatusEvent } from '@notify/contract';
import type { Database } from '@notify/migrations';
import { fromKysely, newNotificationId, outboxInsert } from '@notify/outbox';
import { erasureInsert } from './sql/erasure-insert.js';
import { notificationActionInsert } from './sql/notification-action-insert.js';
import { notificationCancel } from './sql/notification-cancel.js';
import { type RecipientEraseCounts, recipientErase } from './sql/recipient-erase.js';
import { recipientNotificationsLock } from './sql/recipient-notifications-lock.js';

/** What `eraseRecipient` needs. */
export interface EraseRecipientParams {
  readonly db: Kysely<Database>;
  readonly tenantId: string;
  readonly to: string;
  readonly deleteSuppressions: boolean;
  readonly apiKeyId: string | null;
  readonly now: Date;
}

/** The answer of an erasure. */
export interface ErasureResult extends RecipientEraseCounts {
  readonly id: string;
  /** Notifications addressed to the recipient: every one was erased. */
  readonly erased: number;
  /** Of those, the queued ones, cancelled first so nothing is sent to an erased address. */
  readonly cancelled: number;
  readonly recipient_sha256: string;
  readonly created_at: string;
}

/** sha256 (hex) of the trimmed, lower-cased address: what the erasure record keeps. */
function recipientHash(to: string): string {
  return createHash('sha256').update(to.trim().toLowerCase(), 'utf8').digest('hex');
}

/**
 * Erases a recipient from the tenant, in one transaction (docs/retention.md, "Erasure"): locks
 * every notification addressed to it, cancels the queued ones (each with its
 * `notification.cancelled` event and a history row, like POST …/cancel, so nothing more is sent),
 * then erases the address and content from every stored row (`recipientErase`) and records the
 * erasure without the address. Repeating it finds nothing left and answers 0: idempotent.
 */
export async function eraseRecipient(params: EraseRecipientParams): Promise<ErasureResult> {
  return params.db.transaction().execute(async (trx) => {
    const db = fromKysely(trx);
    const found = await recipientNotificationsLock(db, { tenantId: params.tenantId, to: params.to });
    let cancelled = 0;
    for (const n of found.filter((row) => row.state === 'queued')) {
      const updated = await notificationCancel(db, { id: n.id, now: params.now });
      if (!updated) continue; // locked above: cannot happen, but never cancel twice
      cancelled++;
      await outboxInsert(db, {
        messages: [
          buildStatusEvent(
            { id: n.id, tenant_id: n.tenant_id, channel: n.channel, recipient: n.recipient, traceparent: n.traceparent },
            // The event must not carry what is being erased.
            {
              type: 'notification.cancelled',
              state: 'cancelled',
              attempts: n.attempts,
              last_error: n.last_error === null ? null : '[erased]',
              occurred_at: params.now,
            },
          ),
        ],
      });
      await notificationActionInsert(db, {
        notificationId: n.id,
        action: 'cancel',
        fromState: 'queued',
        toState: 'cancelled',
        previousDeadReason: null,
        attempts: n.attempts,
        maxAttempts: n.max_attempts,
        apiKeyId: params.apiKeyId,
        now: params.now,
      });
    }
    const counts = await recipientErase(db, {
      tenantId: params.tenantId,
      ids: found.map((n) => n.id),
      to: params.to,
      deleteSuppressions: params.deleteSuppressions,
    });
    const id = newNotificationId(params.now).replace(/^ntf_/, 'ers_');
    const recipient_sha256 = recipientHash(params.to);
    const result = { ...counts, erased: found.length, cancelled };
    await erasureInsert(db, {
      id,
      tenantId: params.tenantId,
      recipientSha256: recipient_sha256,
      counts: result,
      apiKeyId: params.apiKeyId,
      now: params.now,
    });
    return { id, ...result, recipient_sha256, created_at: params.now.toISOString() };
  });
}
