import type { SqlExecutor } from '@notify/outbox';
import type { NotificationActionInsertParams } from './notification-action-insert.js';

/** Appends many manual actions in one statement (a bulk retry), each naming the bulk. */
export async function notificationActionInsertMany(
  db: SqlExecutor,
  params: { readonly actions: readonly NotificationActionInsertParams[]; readonly bulkRetryId: string },
): Promise<void> {
  const a = params.actions;
  if (a.length === 0) return;
  await db.query(
    `INSERT INTO notification_actions
       (notification_id, action, from_state, to_state, previous_dead_reason, attempts, max_attempts, api_key_id, occurred_at, bulk_retry_id)
     SELECT *, $10 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::text[], $9::timestamptz[])`,
    [
      a.map((x) => x.notificationId),
      a.map((x) => x.action),
      a.map((x) => x.fromState),
      a.map((x) => x.toState),
      a.map((x) => x.previousDeadReason),
      a.map((x) => x.attempts),
      a.map((x) => x.maxAttempts),
      a.map((x) => x.apiKeyId),
      a.map((x) => x.now),
      params.bulkRetryId,
    ],
  );
}
