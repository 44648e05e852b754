import type { Notification, SqlExecutor } from '@notify/outbox';
import { type NotificationFilter, notificationFilterSql } from './notification-search.js';

/** Parameters of `notificationList`. */
export interface NotificationListParams {
  readonly tenantId: string;
  readonly filter?: NotificationFilter | undefined;
  /** Only ids strictly older than this one (the cursor). */
  readonly beforeId?: string | undefined;
  readonly limit: number;
}

/**
 * A page of the tenant's notifications, newest first. Ids are time-ordered ULIDs, so `id DESC`
 * is creation order and the last id of a page is the next page's cursor (keyset pagination:
 * no OFFSET, stable while rows are added). Served by a backward scan of notifications_tenant_id_asc_idx,
 * or of notifications_tenant_recipient_asc_idx when `recipient` is given (or _state_asc_idx for a
 * state, or notifications_tenant_dead_idx for a dead group: see notificationFilterSql).
 */
export async function notificationList(db: SqlExecutor, params: NotificationListParams): Promise<Notification[]> {
  const { where, values, orderBy } = notificationFilterSql(params.filter ?? {});
  const all: unknown[] = [params.tenantId, ...values];
  const bind = (v: unknown) => `$${all.push(v)}`;
  const before = params.beforeId !== undefined ? ` AND id < ${bind(params.beforeId)}` : '';
  const { rows } = await db.query<Notification>(
    `SELECT * FROM notifications WHERE ${where}${before} ORDER BY ${orderBy('DESC')} LIMIT ${bind(params.limit)}`,
    all,
  );
  return rows;
}
