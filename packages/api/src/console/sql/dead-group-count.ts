import type { SqlExecutor } from '@notify/outbox';
import { notificationFilterSql } from '../../sql/notification-search.js';

/** Parameters of `deadGroupCount`: a group of the dead page. */
export interface DeadGroupCountParams {
  readonly tenantId: string;
  readonly deadReason: string;
  /** The first 200 characters of the last error; undefined for the group without one. */
  readonly lastErrorPrefix: string | null;
  readonly now: Date;
}

/**
 * How many notifications a dead group holds now, and how many of them a bulk retry would re-queue
 * (the ones not expired at `now`): what the confirmation page says. The group is a range of the
 * partial index notifications_tenant_dead_idx (migration 0031); the expiry is read from each row.
 */
export async function deadGroupCount(db: SqlExecutor, params: DeadGroupCountParams): Promise<{ dead: number; retryable: number }> {
  const { where, values } = notificationFilterSql(
    { state: 'dead', deadReason: params.deadReason, lastErrorPrefix: params.lastErrorPrefix },
    3,
  );
  const { rows } = await db.query<{ dead: number; retryable: number }>(
    `SELECT count(*)::int AS dead, count(*) FILTER (WHERE expires_at > $2)::int AS retryable FROM notifications WHERE ${where}`,
    [params.tenantId, params.now, ...values],
  );
  return rows[0]!;
}
