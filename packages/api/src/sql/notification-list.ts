import type { Notification, NotificationState, SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationList`. */
export interface NotificationListParams {
  readonly tenantId: string;
  readonly state?: NotificationState | undefined;
  /** Exact recipient ("to"). */
  readonly recipient?: string | undefined;
  /** Only ids strictly older than this one (the cursor). */
  readonly beforeId?: string | undefined;
  readonly limit: number;
}

/**
 * A page of the tenant's notifications, newest first. Ids are time-ordered ULIDs, so `id DESC`
 * is creation order and the last id of a page is the next page's cursor (keyset pagination:
 * no OFFSET, stable while rows are added). Served by a backward scan of notifications_tenant_id_asc_idx,
 * or of notifications_tenant_recipient_asc_idx when `recipient` is given (or _state_asc_idx for a state).
 */
export async function notificationList(db: SqlExecutor, params: NotificationListParams): Promise<Notification[]> {
  const { rows } = await db.query<Notification>(
    `SELECT * FROM notifications
      WHERE tenant_id = $1
        AND ($2::text IS NULL OR state = $2)
        AND ($3::text IS NULL OR recipient = $3)
        AND ($4::text IS NULL OR id < $4)
      ORDER BY id DESC
      LIMIT $5`,
    [params.tenantId, params.state ?? null, params.recipient ?? null, params.beforeId ?? null, params.limit],
  );
  return rows;
}
