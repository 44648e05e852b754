import type { Notification, SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationCancel`. */
export interface NotificationCancelParams {
  readonly id: string;
  readonly now: Date;
}

/**
 * queued → cancelled. Guarded by `state = 'queued'` so a concurrent write-back that got there
 * first wins; returns the updated row, or undefined when the notification was not queued.
 */
export async function notificationCancel(db: SqlExecutor, params: NotificationCancelParams): Promise<Notification | undefined> {
  const { rows } = await db.query<Notification>(
    `UPDATE notifications SET state = 'cancelled', next_attempt_at = NULL, updated_at = $2
      WHERE id = $1 AND state = 'queued'
      RETURNING *`,
    [params.id, params.now],
  );
  return rows[0];
}
