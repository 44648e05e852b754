import type { SqlExecutor } from '@notify/outbox';

/** Per channel: the oldest queued notification's creation and the earliest due attempt. */
export interface NotificationQueueAge {
  readonly channel: string;
  readonly oldest_created_at: Date;
  readonly earliest_due_at: Date;
}

/** Parameters of `notificationQueueAge` (none). */
export type NotificationQueueAgeParams = Record<string, never>;

/** Reads only queued rows (the partial index notifications_queued_due_idx covers state = 'queued'). */
export async function notificationQueueAge(db: SqlExecutor, _params: NotificationQueueAgeParams = {}): Promise<NotificationQueueAge[]> {
  const { rows } = await db.query<NotificationQueueAge>(
    `SELECT channel, min(created_at) AS oldest_created_at, min(next_attempt_at) AS earliest_due_at
       FROM notifications WHERE state = 'queued' GROUP BY channel`,
    [],
  );
  return rows;
}
