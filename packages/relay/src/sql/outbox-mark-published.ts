import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxMarkPublished`. */
export interface OutboxMarkPublishedParams {
  /** Outbox ids (bigints as strings). */
  readonly ids: readonly string[];
  readonly now: Date;
}

/**
 * Marks rows published at `now`. Runs in the claim transaction after the broker acknowledged
 * them; the commit that follows makes it stick. This is the transaction's first write, so it
 * gets an xid only now, for the few milliseconds until the commit.
 */
export async function outboxMarkPublished(db: SqlExecutor, params: OutboxMarkPublishedParams): Promise<void> {
  if (params.ids.length === 0) return;
  await db.query(`UPDATE outbox SET published_at = $1 WHERE id = ANY($2::bigint[]) AND published_at IS NULL`, [params.now, params.ids]);
}
