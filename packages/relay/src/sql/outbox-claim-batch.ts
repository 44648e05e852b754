import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxClaimBatch`. */
export interface OutboxClaimBatchParams {
  /** Slots whose leases this transaction holds (from `relayLeaseLockHeld`). */
  readonly slots: readonly number[];
  /** Rows of `relay_leases`: the modulus of `outbox_key_slot`. */
  readonly slotCount: number;
  readonly limit: number;
  /** Becomes `published_at`; it is committed only after the broker acknowledged the rows. */
  readonly now: Date;
}

/** A claimed outbox row. `id` and `txid` are 64-bit integers as strings. */
export interface ClaimedRow {
  readonly id: string;
  readonly txid: string;
  readonly topic: string;
  readonly key: string;
  readonly value: string;
  readonly headers: Record<string, string>;
}

/**
 * Claims up to `limit` unpublished rows of the given slots, in (txid, id) order, skipping rows
 * another transaction has locked, and sets their `published_at` to `now` in the same statement.
 * The caller publishes them and then commits; if the publish fails (or the process dies) the
 * transaction rolls back and the rows are unpublished again. One statement instead of SELECT
 * then UPDATE: one pass over the rows and a round trip less per batch.
 *
 * Only rows whose writing transaction is older than this snapshot's xmin are read: every
 * transaction below xmin has finished, so no row that sorts before a returned row can still
 * appear later (the rule Watermill's PostgreSQL forwarder uses). A slow transaction that wrote
 * a row of the same key holds back every later transaction's rows instead of being overtaken.
 *
 * The inner SELECT is one range scan of outbox_unpublished_txid_idx (0.6 ms for 500 of 100,000
 * unpublished rows, measured; with the slots joined as a subquery instead of an array the
 * planner sorted every unpublished row: 43 ms). Rows come back sorted in claim order.
 */
export async function outboxClaimBatch(db: SqlExecutor, params: OutboxClaimBatchParams): Promise<ClaimedRow[]> {
  if (params.slots.length === 0 || params.limit <= 0) return [];
  const { rows } = await db.query<ClaimedRow>(
    `WITH batch AS (
       SELECT id FROM outbox
        WHERE published_at IS NULL
          AND txid < pg_snapshot_xmin(pg_current_snapshot())
          AND outbox_key_slot(key, $1) = ANY($2::int[])
        ORDER BY txid, id
        LIMIT $3
        FOR UPDATE SKIP LOCKED)
     UPDATE outbox o SET published_at = $4
       FROM batch
      WHERE o.id = batch.id
     RETURNING o.id, o.txid::text AS txid, o.topic, o.key, o.value, o.headers`,
    [params.slotCount, params.slots, params.limit, params.now],
  );
  // RETURNING has no defined order.
  return rows.sort((a, b) => compareBig(a.txid, b.txid) || compareBig(a.id, b.id));
}

function compareBig(a: string, b: string): number {
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
}
