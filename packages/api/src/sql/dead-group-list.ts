import type { SqlExecutor } from '@notify/outbox';

/** Dead notifications sharing a reason and the start of their last error. */
export interface DeadGroup {
  readonly dead_reason: string;
  /** The first 200 characters of the last error (null when none was recorded). */
  readonly error: string | null;
  readonly count: number;
  /** The newest notification of the group (ids are time-ordered). */
  readonly newest_id: string;
  /** How many groups the tenant has in all, those past `limit` included. */
  readonly groups: number;
}

/**
 * The tenant's dead notifications grouped by reason and the first 200 characters of the last
 * error, largest group first (at most `limit` groups, each row saying how many there are in all). An index-only scan of the partial index
 * notifications_tenant_dead_idx (migration 0031): every column read is in it. (A max(updated_at)
 * needed the heap for each dead row: 298 ms p50 at 50,000 dead of 1M; docs/console.md.)
 */
export async function deadGroupList(db: SqlExecutor, params: { readonly tenantId: string; readonly limit: number }): Promise<DeadGroup[]> {
  const { rows } = await db.query<DeadGroup>(
    `SELECT dead_reason, left(last_error, 200) AS error, count(*)::int AS count, max(id) AS newest_id,
            (count(*) OVER ())::int AS groups
       FROM notifications
      WHERE tenant_id = $1 AND state = 'dead'
      GROUP BY dead_reason, left(last_error, 200)
      ORDER BY count(*) DESC, dead_reason
      LIMIT $2`,
    [params.tenantId, params.limit],
  );
  return rows;
}
