import type { Notification, SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationGet`. */
export interface NotificationGetParams {
  /** Scopes the lookup: another tenant's id is not found (never "forbidden"). */
  readonly tenantId: string;
  readonly id: string;
  /** Take a row lock (`FOR UPDATE`) for a state change in the caller's transaction. */
  readonly forUpdate?: boolean;
}

/** The tenant's notification with this id, or undefined. */
export async function notificationGet(db: SqlExecutor, params: NotificationGetParams): Promise<Notification | undefined> {
  const { rows } = await db.query<Notification>(
    `SELECT * FROM notifications WHERE id = $1 AND tenant_id = $2${params.forUpdate ? ' FOR UPDATE' : ''}`,
    [params.id, params.tenantId],
  );
  return rows[0];
}
