import type { SqlExecutor } from '@notify/outbox';

/** The relay's backlog: unpublished rows and when the oldest was written. */
export interface OutboxBacklog {
  readonly unpublished: number;
  readonly oldest_created_at: Date | null;
}

/** Parameters of `outboxBacklog` (none). */
export type OutboxBacklogParams = Record<string, never>;

/** Reads only unpublished rows (the partial index outbox_unpublished_idx). */
export async function outboxBacklog(db: SqlExecutor, _params: OutboxBacklogParams = {}): Promise<OutboxBacklog> {
  const { rows } = await db.query<{ unpublished: string; oldest_created_at: Date | null }>(
    `SELECT count(*) AS unpublished,
            (SELECT created_at FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT 1) AS oldest_created_at
       FROM outbox WHERE published_at IS NULL`,
    [],
  );
  const row = rows[0];
  return { unpublished: Number(row?.unpublished ?? 0), oldest_created_at: row?.oldest_created_at ?? null };
}
