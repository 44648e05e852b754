import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationFindQueuedPredecessor`. */
export interface NotificationFindQueuedPredecessorParams {
  readonly tenantId: string;
  readonly channel: string;
  readonly recipient: string;
  /** The notification asking; "earlier" is a smaller (created_at, id). */
  readonly id: string;
  readonly createdAt: Date;
}

/** The earliest queued predecessor, when there is one. */
export interface QueuedPredecessor {
  readonly id: string;
  readonly next_attempt_at: Date;
}

/**
 * The earliest notification of the same tenant, channel and recipient created before `id` that
 * is still `queued` (waiting for its first attempt, a retry or its `send_at`), or undefined.
 * Dead, sent and cancelled ones do not count. What `ordering: "strict"` waits for. Served by
 * notifications_tenant_recipient_asc_idx (tenant_id, recipient, id).
 */
export async function notificationFindQueuedPredecessor(
  db: SqlExecutor,
  params: NotificationFindQueuedPredecessorParams,
): Promise<QueuedPredecessor | undefined> {
  const { rows } = await db.query<QueuedPredecessor>(
    `SELECT id, next_attempt_at FROM notifications
      WHERE tenant_id = $1 AND recipient = $2 AND channel = $3 AND state = 'queued'
        AND id < $4 AND (created_at, id) < ($5::timestamptz, $4)
      ORDER BY id
      LIMIT 1`,
    [params.tenantId, params.recipient, params.channel, params.id, params.createdAt],
  );
  return rows[0];
}
