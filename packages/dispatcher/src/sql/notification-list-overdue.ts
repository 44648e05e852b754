import { CHANNELS } from '@notify/contract';
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

// One branch per channel over notifications_queued_channel_due_idx (channel, next_attempt_at), each
// reading at most `limit` rows in due order, merged by due time; the channel a bound parameter of
// its own branch, so each is planned with that channel's statistics (notification-queue-age.ts
// found unnest() planned every channel alike). Then only the rows picked are locked, skipping those
// a delivery or another sweep holds, and read again under the lock: a row recorded meanwhile is no
// longer queued and overdue, and drops out.
const BRANCHES = CHANNELS.map(
  (_, i) => `(SELECT id, next_attempt_at FROM notifications AS n
      WHERE n.state = 'queued' AND n.channel = $${i + 3} AND n.next_attempt_at < $1::timestamptz
        -- Still waiting in the outbox (relay or Kafka down): not lost, only late. Re-publishing it
        -- would add a copy per sweep for as long as the outage lasts (found by the chaos suite).
        AND NOT EXISTS (
          SELECT 1 FROM outbox o
           WHERE o.published_at IS NULL AND o.topic <> 'events' AND o.headers->>'notification-id' = n.id
        )
      ORDER BY n.next_attempt_at
      LIMIT $2)`,
).join('\n    UNION ALL\n    ');

const QUERY = `WITH due AS (
    SELECT id FROM (
    ${BRANCHES}
    ) AS d
    ORDER BY next_attempt_at
    LIMIT $2
  )
  SELECT id, tenant_id, channel, recipient, traceparent, attempts, next_attempt_at
    FROM notifications
   WHERE id IN (SELECT id FROM due) AND state = 'queued' AND next_attempt_at < $1::timestamptz
   ORDER BY next_attempt_at
     FOR UPDATE OF notifications SKIP LOCKED`;

/**
 * Locks and returns the most overdue queued notifications (oldest first, at most `limit`) whose
 * delivery request is not still unpublished in the outbox, skipping rows another sweep or a
 * delivery holds (SKIP LOCKED): run it inside the transaction that re-publishes them. Served by
 * the partial index notifications_queued_channel_due_idx, one index-ordered read per channel.
 */
export async function notificationListOverdue(db: SqlExecutor, params: NotificationListOverdueParams): Promise<OverdueNotification[]> {
  const { rows } = await db.query<OverdueNotification>(QUERY, [params.dueBefore, params.limit, ...CHANNELS]);
  return rows;
}
