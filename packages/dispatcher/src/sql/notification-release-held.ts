import type { NotificationPriority, SqlExecutor } from '@notify/outbox';
import type { OverdueNotification } from './notification-list-overdue.js';

/** Parameters of `notificationReleaseHeld`. */
export interface NotificationReleaseHeldParams {
  /** Release held notifications due at or before this instant (now + the look-ahead). */
  readonly dueBy: Date;
  readonly limit: number;
}

/** A released notification: what its delivery request needs (as for the repair sweep), and its priority. */
export interface ReleasedNotification extends OverdueNotification {
  readonly priority: NotificationPriority;
}

/**
 * Clears `held_until` of the queued notifications held until `dueBy` at the latest (soonest
 * first, at most `limit`, skipping rows another pass or a delivery holds) and returns them: run
 * it inside the transaction that writes their delivery requests, so a release and its message
 * commit together. Served by the partial index notifications_held_due_idx (migration 0040).
 */
export async function notificationReleaseHeld(db: SqlExecutor, params: NotificationReleaseHeldParams): Promise<ReleasedNotification[]> {
  const { rows } = await db.query<ReleasedNotification>(
    `WITH due AS (
       SELECT id FROM notifications
        WHERE state = 'queued' AND held_until IS NOT NULL AND held_until <= $1::timestamptz
        ORDER BY held_until
        LIMIT $2
          FOR UPDATE SKIP LOCKED
     )
     UPDATE notifications AS n SET held_until = NULL
       FROM due WHERE n.id = due.id
     RETURNING n.id, n.tenant_id, n.channel, n.recipient, n.traceparent, n.attempts, n.next_attempt_at, n.priority`,
    [params.dueBy, params.limit],
  );
  return rows;
}
