import type { Channel, SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationListOverdue`. */
export interface NotificationListOverdueParams {
  /** Queued notifications whose next attempt was due before this instant. */
  readonly dueBefore: Date;
  readonly limit: number;
}

/** What the repair sweep needs to re-publish a notification. */
export interface OverdueNotification {
  readonly id: string;
  readonly tenant_id: string;
  readonly channel: Channel;
  readonly recipient: string;
  readonly traceparent: string | null;
  readonly attempts: number;
  readonly next_attempt_at: Date;
}

/**
 * Locks and returns the most overdue queued notifications (oldest first) whose delivery request is
 * not still unpublished in the outbox, skipping rows another sweep or a delivery holds (SKIP
 * LOCKED): run it inside the transaction that re-publishes them.
 * Served by the partial index notifications_queued_due_idx.
 */
export async function notificationListOverdue(db: SqlExecutor, params: NotificationListOverdueParams): Promise<OverdueNotification[]> {
  const { rows } = await db.query<OverdueNotification>(
    `SELECT id, tenant_id, channel, recipient, traceparent, attempts, next_attempt_at
       FROM notifications
      WHERE state = 'queued' AND next_attempt_at < $1::timestamptz
        -- Still waiting in the outbox (relay or Kafka down): not lost, only late. Re-publishing it
        -- would add a copy per sweep for as long as the outage lasts (found by the chaos suite).
        AND NOT EXISTS (
          SELECT 1 FROM outbox o
           WHERE o.published_at IS NULL AND o.topic <> 'events' AND o.headers->>'notification-id' = notifications.id
        )
      ORDER BY next_attempt_at
      LIMIT $2
        FOR UPDATE SKIP LOCKED`,
    [params.dueBefore, params.limit],
  );
  return rows;
}
