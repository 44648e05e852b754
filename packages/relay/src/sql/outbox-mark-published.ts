import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxMarkPublished`. */
export interface OutboxMarkPublishedParams {
  /** Outbox ids (bigints as strings). */
  readonly ids: readonly string[];
  readonly now: Date;
}

/** Marks rows published at `now`. Runs in the claim transaction, after the broker acknowledged them. */
export async function outboxMarkPublished(db: SqlExecutor, params: OutboxMarkPublishedParams): Promise<void> {
  if (params.ids.length === 0) return;
  await db.query(`UPDATE outbox SET published_at = $1 WHERE id = ANY($2::bigint[])`, [params.now, params.ids]);
}
