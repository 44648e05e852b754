import type { Notification, SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationGet`. */
export interface NotificationGetParams {
  readonly id: string;
}

/** The notification with this id, or undefined. The dispatcher's source of truth for every message it reads. */
export async function notificationGet(db: SqlExecutor, params: NotificationGetParams): Promise<Notification | undefined> {
  const { rows } = await db.query<Notification>('SELECT * FROM notifications WHERE id = $1', [params.id]);
  return rows[0];
}
