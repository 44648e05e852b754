import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxLag`. */
export interface OutboxLagParams {
  readonly now: Date;
}

/** How far the relay is behind. */
export interface OutboxLag {
  /** Rows not yet published. */
  readonly unpublished: number;
  /** Age of the oldest unpublished row at `now`; null when there is none. */
  readonly oldestAgeMs: number | null;
}

/**
 * The relay lag, for the metrics endpoint: unpublished rows and the age of the oldest one
 * (`created_at` is the inserting transaction's start). Reads the unpublished partial index only.
 */
export async function outboxLag(db: SqlExecutor, params: OutboxLagParams): Promise<OutboxLag> {
  const { rows } = await db.query<{ unpublished: number; oldest: Date | null }>(
    `SELECT count(*)::int AS unpublished, min(created_at) AS oldest FROM outbox WHERE published_at IS NULL`,
    [],
  );
  const row = rows[0];
  const oldest = row?.oldest ? new Date(row.oldest) : null;
  return {
    unpublished: row?.unpublished ?? 0,
    oldestAgeMs: oldest ? Math.max(0, params.now.getTime() - oldest.getTime()) : null,
  };
}
