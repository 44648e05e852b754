import type { Notification, SqlExecutor } from '@notify/outbox';

/** Parameters of `recipientNotificationsLock`. */
export interface RecipientNotificationsLockParams {
  readonly tenantId: string;
  /** Compared trimmed and case-insensitively: `Ada@Example.com` and `ada@example.com` are one recipient. */
  readonly to: string;
}

/**
 * Locks and returns every notification of the tenant addressed to `to`, in id order (so two
 * erasures lock in the same order). Case-insensitive, so it reads the tenant's rows through
 * notifications_tenant_id_asc_idx rather than an exact-match index: an erasure is rare, and an index
 * on lower(recipient) would cost every enqueue an index insert.
 */
export async function recipientNotificationsLock(db: SqlExecutor, params: RecipientNotificationsLockParams): Promise<Notification[]> {
  const { rows } = await db.query<Notification>(
    `SELECT * FROM notifications
      WHERE tenant_id = $1 AND lower(btrim(recipient)) = lower(btrim($2))
      ORDER BY id
        FOR UPDATE`,
    [params.tenantId, params.to],
  );
  return rows;
}
