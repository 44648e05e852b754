import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxPurgePublished`. */
export interface OutboxPurgePublishedParams {
  /** Rows published before this instant go. */
  readonly before: Date;
  /** At most this many rows per call: short transactions, bounded lock and WAL bursts. */
  readonly limit: number;
}

/**
 * Deletes up to `limit` records of `outbox_published` published before `before`, oldest first
 * (outbox_published_published_at_idx), and up to `limit` outbox rows that a relay of an earlier
 * version marked published before `before` (outbox_published_at_idx; none once every relay runs
 * migration 0280's code), skipping rows another purge has locked. Returns how many it deleted in
 * all: fewer than `limit` means both are done for now.
 */
export async function outboxPurgePublished(db: SqlExecutor, params: OutboxPurgePublishedParams): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH records AS (
       DELETE FROM outbox_published
        WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM outbox_published
           WHERE published_at < $1
           ORDER BY published_at
           LIMIT $2
           FOR UPDATE SKIP LOCKED))
       RETURNING 1),
     marked AS (
       DELETE FROM outbox
        WHERE id IN (
          SELECT id FROM outbox
           WHERE published_at IS NOT NULL AND published_at < $1
           ORDER BY published_at
           LIMIT $2
           FOR UPDATE SKIP LOCKED)
       RETURNING 1)
     SELECT (SELECT count(*) FROM records)::int + (SELECT count(*) FROM marked)::int AS n`,
    [params.before, params.limit],
  );
  return rows[0]?.n ?? 0;
}
