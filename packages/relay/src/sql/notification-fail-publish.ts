import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationFailPublish`. */
export interface NotificationFailPublishParams {
  /** Each notification and its `last_error` (why Kafka refused its request). */
  readonly notifications: readonly { readonly id: string; readonly error: string }[];
  readonly now: Date;
}

/** A notification `notificationFailPublish` made dead: what its status event needs. */
export interface PublishFailedNotification {
  readonly id: string;
  readonly tenant_id: string;
  readonly channel: string;
  readonly recipient: string;
  readonly traceparent: string | null;
  readonly attempts: number;
  readonly last_error: string;
}

/**
 * Ends still-queued notifications `dead` with reason `publish_failed`: their delivery request can
 * never reach Kafka, so no attempt will ever happen. Notifications no longer queued are left
 * alone. Returns the ones it changed.
 */
export async function notificationFailPublish(
  db: SqlExecutor,
  params: NotificationFailPublishParams,
): Promise<PublishFailedNotification[]> {
  if (params.notifications.length === 0) return [];
  const { rows } = await db.query<PublishFailedNotification & { last_error: string }>(
    `UPDATE notifications AS n
        SET state = 'dead', dead_reason = 'publish_failed', next_attempt_at = NULL, last_error = f.error, updated_at = $3
       FROM unnest($1::text[], $2::text[]) AS f(id, error)
      WHERE n.id = f.id AND n.state = 'queued'
      RETURNING n.id, n.tenant_id, n.channel, n.recipient, n.traceparent, n.attempts, n.last_error`,
    [params.notifications.map((x) => x.id), params.notifications.map((x) => x.error), params.now],
  );
  return rows;
}
