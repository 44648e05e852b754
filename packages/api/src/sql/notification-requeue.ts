import type { Notification, SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationRequeue`. */
export interface NotificationRequeueParams {
  readonly id: string;
  readonly now: Date;
  /** The new attempt cap: the attempts made so far plus the retry budget. */
  readonly maxAttempts: number;
}

/**
 * dead → queued, due now, with a raised attempt cap. `last_error` stays (it is history until the
 * next attempt replaces it). Guarded by `state = 'dead'`; returns undefined when it was not dead.
 */
export async function notificationRequeue(db: SqlExecutor, params: NotificationRequeueParams): Promise<Notification | undefined> {
  const { rows } = await db.query<Notification>(
    `UPDATE notifications
        SET state = 'queued', dead_reason = NULL, next_attempt_at = $2, max_attempts = $3, updated_at = $2
      WHERE id = $1 AND state = 'dead'
      RETURNING *`,
    [params.id, params.now, params.maxAttempts],
  );
  return rows[0];
}
