import type { SqlExecutor } from '@notify/outbox';

/** Dead notifications sharing a reason and the start of their last error. */
export interface DeadGroup {
  readonly dead_reason: string;
  /** The first 200 characters of the last error (null when none was recorded). */
  readonly error: string | null;
  readonly count: number;
  readonly last_at: Date;
}

/**
 * The tenant's dead notifications grouped by reason and the first 200 characters of the last
 * error, largest group first (at most `limit` groups). An index-only scan of the partial index
 * notifications_tenant_dead_idx (migration 0031) plus the heap for updated_at.
 */
export async function deadGroupList(db: SqlExecutor, params: { readonly tenantId: string; readonly limit: number }): Promise<DeadGroup[]> {
  const { rows } = await db.query<DeadGroup>(
    `SELECT dead_reason, left(last_error, 200) AS error, count(*)::int AS count, max(updated_at) AS last_at
       FROM notifications
      WHERE tenant_id = $1 AND state = 'dead'
      GROUP BY dead_reason, left(last_error, 200)
      ORDER BY count(*) DESC, dead_reason
      LIMIT $2`,
    [params.tenantId, params.limit],
  );
  return rows;
}
