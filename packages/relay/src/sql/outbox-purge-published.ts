import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxPurgePublished`. */
export interface OutboxPurgePublishedParams {
  /** Rows published before this instant go. */
  readonly before: Date;
  /** At most this many rows per call: short transactions, bounded lock and WAL bursts. */
  readonly limit: number;
}

/**
 * Deletes up to `limit` rows published before `before`, oldest first (outbox_published_at_idx),
 * skipping rows another purge has locked. Returns how many it deleted; call again while it
 * returns `limit`.
 */
export async function outboxPurgePublished(db: SqlExecutor, params: OutboxPurgePublishedParams): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM outbox
        WHERE id IN (
          SELECT id FROM outbox
           WHERE published_at IS NOT NULL AND published_at < $1
           ORDER BY published_at
           LIMIT $2
           FOR UPDATE SKIP LOCKED)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [params.before, params.limit],
  );
  return rows[0]?.n ?? 0;
}
