import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxHeldBack`. */
export interface OutboxHeldBackParams {
  readonly slots: readonly number[];
  readonly slotCount: number;
  /** Rows whose transaction started longer ago than this are not held back (the claim reads them). */
  readonly orderWaitMs: number;
}

/**
 * Whether committed, unpublished rows of these slots exist that the snapshot rule holds back
 * (their transaction is not below xmin because an older transaction is still open, and it
 * started less than `orderWaitMs` ago: older ones the claim reads anyway). The relay
 * then re-polls soon instead of sleeping a full poll interval: the open transaction may never
 * write to the outbox, so no notification would wake it.
 */
export async function outboxHeldBack(db: SqlExecutor, params: OutboxHeldBackParams): Promise<boolean> {
  if (params.slots.length === 0) return false;
  const { rows } = await db.query<{ held: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM outbox
        WHERE published_at IS NULL
          AND txid >= pg_snapshot_xmin(pg_current_snapshot())
          AND created_at >= statement_timestamp() - $3 * interval '1 millisecond'
          AND outbox_key_slot(key, $1) = ANY($2::int[])
     ) AS held`,
    [params.slotCount, params.slots, params.orderWaitMs],
  );
  return rows[0]?.held === true;
}
