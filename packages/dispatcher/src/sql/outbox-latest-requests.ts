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
 * the relay's retention purge has not removed yet. No index serves the header lookup: it scans
 * the outbox's retained rows (NOTIFY_OUTBOX_RETENTION_MS, 1 h by default), once per repair pass
 * that found overdue notifications, never on the delivery path.
 */
export async function outboxLatestRequests(db: SqlExecutor, params: OutboxLatestRequestsParams): Promise<LatestRequest[]> {
  if (params.notificationIds.length === 0) return [];
  const { rows } = await db.query<LatestRequest>(
    `SELECT DISTINCT ON (o.headers->>'notification-id') o.headers->>'notification-id' AS notification_id, o.topic, o.key, o.published_at
       FROM outbox o
      WHERE o.published_at IS NOT NULL AND o.topic NOT IN ('events', 'dlq') AND o.headers->>'notification-id' = ANY($1::text[])
      ORDER BY o.headers->>'notification-id', o.id DESC`,
    [params.notificationIds],
  );
  return rows;
}
