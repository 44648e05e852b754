import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxLatestRequests`. */
export interface OutboxLatestRequestsParams {
  readonly notificationIds: readonly string[];
}

/** The newest published delivery request of a notification still in the outbox. */
export interface LatestRequest {
  readonly notification_id: string;
  readonly topic: string;
  readonly key: string;
  readonly published_at: Date;
}

/**
 * For each notification, its newest published delivery request (`requests` or a retry tier) that
 * the relay's retention purge has not removed yet: from the relay's records in `outbox_published`
 * (migration 0280), and from outbox rows that a relay of an earlier version marked published
 * instead. No index serves the notification lookup: it scans the retained records
 * (NOTIFY_OUTBOX_RETENTION_MS, 1 h by default), once per repair pass that found overdue
 * notifications, never on the delivery path.
 */
export async function outboxLatestRequests(db: SqlExecutor, params: OutboxLatestRequestsParams): Promise<LatestRequest[]> {
  if (params.notificationIds.length === 0) return [];
  const { rows } = await db.query<LatestRequest>(
    `SELECT DISTINCT ON (r.notification_id) r.notification_id, r.topic, r.key, r.published_at
       FROM (SELECT p.outbox_id AS id, p.notification_id, p.topic, p.key, p.published_at
               FROM outbox_published p
              WHERE p.notification_id = ANY($1::text[])
             UNION ALL
             SELECT o.id, o.headers->>'notification-id', o.topic, o.key, o.published_at
               FROM outbox o
              WHERE o.published_at IS NOT NULL AND o.topic NOT IN ('events', 'dlq')
                AND o.headers->>'notification-id' = ANY($1::text[])) r
      ORDER BY r.notification_id, r.id DESC`,
    [params.notificationIds],
  );
  return rows;
}
