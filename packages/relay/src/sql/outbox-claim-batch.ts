import { prepared, type SqlExecutor } from '@notify/outbox';
import { intArrayLiteral } from './relay-slot-lock.js';

/** Parameters of `outboxClaimBatch`. */
export interface OutboxClaimBatchParams {
  readonly instanceId: string;
  readonly now: Date;
  /** Slots locked by `relaySlotLock` earlier in this transaction. */
  readonly slots: readonly number[];
  /** Rows of `relay_leases`: the modulus of `outbox_key_slot`. */
  readonly slotCount: number;
  readonly limit: number;
  /**
   * A committed row whose transaction is not below xmin is read anyway once its transaction
   * started (`created_at`) this many milliseconds ago, by the database clock: the bound on the
   * snapshot rule's wait.
   */
  readonly orderWaitMs: number;
  /**
   * Only rows after this (txid, id): the previous batch, still in flight, when the relay
   * pipelines. Valid only if `slots` is a subset of the previous batch's slots: a slot that was
   * not in the previous batch may have unpublished rows below the cursor, which would be
   * skipped and published later, out of order.
   */
  readonly after?: { readonly txid: string; readonly id: string };
}

/**
 * A claimed outbox row. `id` and `txid` are 64-bit integers as strings. An enqueue's request row
 * also carries its `notification.queued` event (migration 0150): `event_value`, published to
 * `events` right after the row's own message, with the headers `queuedEventHeaders` derives from
 * the row's (in the relay, not per row in the claim).
 */
export interface ClaimedRow {
  readonly id: string;
  readonly txid: string;
  readonly topic: string;
  readonly key: string;
  readonly value: string;
  readonly headers: Record<string, string>;
  readonly event_value: string | null;
}

/** What `outboxClaimBatch` read. */
export interface OutboxClaimBatchResult {
  /** The batch, in (txid, id) order. */
  readonly rows: ClaimedRow[];
  /**
   * A short batch only (fewer rows than the limit): committed, unpublished rows of these slots
   * wait behind an older open transaction (their transaction is not below xmin and started less
   * than `orderWaitMs` ago: older ones the read takes). The relay then re-polls soon instead of
   * sleeping a full poll interval: the open transaction may never write to the outbox, so no
   * notification would wake it. Always false for a full batch.
   */
  readonly heldBack: boolean;
}

/**
 * Second statement of a claim transaction: the next batch of unpublished rows of the slots
 * this instance locked and (checked again, with this statement's fresh snapshot) still owns,
 * in (txid, id) order, and for a short batch whether rows wait behind an older open transaction
 * (`heldBack`). Reads only; the caller publishes the rows, marks them (`outboxMarkPublished`) and
 * commits.
 *
 * Rows whose writing transaction is older than this snapshot's xmin are read: every
 * transaction below xmin has finished, so no row that sorts before a returned row can still
 * appear later (the rule Watermill's PostgreSQL forwarder uses). A slow transaction that wrote
 * a row of the same key holds back later transactions' rows instead of being overtaken, but
 * only for `orderWaitMs`: a committed row whose transaction started longer ago than that is read
 * too, so one long transaction anywhere on the server (which holds xmin back for every database)
 * delays others by the bound, not by its length. Such a row may overtake a row of the same key
 * that an older, still open transaction will commit later: beyond the bound, order is commit
 * order. Nothing is skipped: every unpublished row stays in the index until it is published.
 *
 * One range scan of outbox_unpublished_txid_idx (0.6 ms for 500 of 100,000 unpublished rows,
 * measured; joining the slots as a subquery instead made the planner sort every unpublished
 * row: 43 ms). The slot set is an array (an InitPlan), which keeps the index scan.
 *
 * The held-back check is a second range scan of the same index (from xmin up), in the same
 * statement and snapshot: it was a statement of its own, one more round trip in every round
 * that found less than a full batch (all of them at a steady rate). It runs only when the batch
 * came out short (a one-time filter on the batch's count), and answers in one extra row after the
 * batch, whose id is NULL. A materialized CTE is read back in the order it was written, and
 * UNION ALL appends its second part after the first.
 */
export async function outboxClaimBatch(db: SqlExecutor, params: OutboxClaimBatchParams): Promise<OutboxClaimBatchResult> {
  if (params.slots.length === 0 || params.limit <= 0) return { rows: [], heldBack: false };
  const { rows } = await db.query<ClaimedRow & { held: boolean | null }>(params.after ? CLAIM_AFTER_SQL : CLAIM_SQL, [
    params.instanceId,
    params.now,
    intArrayLiteral(params.slots),
    params.slotCount,
    params.limit,
    params.orderWaitMs,
    ...(params.after ? [params.after.txid, params.after.id] : []),
  ]);
  const last = rows[rows.length - 1];
  if (last === undefined || last.id !== null) return { rows, heldBack: false };
  rows.pop();
  return { rows, heldBack: last.held === true };
}

// The cursor is its own query text, not "$x IS NULL OR …": only a bare row comparison is an
// index condition, and without it each pipelined read walked the index from the start over
// every row marked earlier in the drain. Each text is a named prepared statement, run with its
// generic plan (`relaySlotLock` sets plan_cache_mode for the transaction).
// ORDER BY names the table's columns (o.txid), not a text output column "txid": that would
// sort by the text of the xid ("1000000" before "999999") and, no longer matching the index,
// sort every unpublished row for each batch.
const claimSql = (after: string) => `WITH batch AS MATERIALIZED (
       SELECT o.id, o.txid, o.topic, o.key, o.value, o.headers, o.event_value
         FROM outbox o
        WHERE o.published_at IS NULL
          AND (o.txid < pg_snapshot_xmin(pg_current_snapshot())
               OR o.created_at < statement_timestamp() - $6 * interval '1 millisecond')
          ${after}
          AND outbox_key_slot(o.key, $4) = ANY (ARRAY(
                SELECT l.slot FROM relay_leases l WHERE l.owner = $1 AND l.expires_at > $2 AND l.slot = ANY($3::int[])))
        ORDER BY o.txid, o.id
        LIMIT $5)
     SELECT b.id, b.txid::text AS txid, b.topic, b.key, b.value, b.headers, b.event_value, NULL::boolean AS held FROM batch b
     UNION ALL
     SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, EXISTS (
              SELECT 1 FROM outbox h
               WHERE h.published_at IS NULL
                 AND h.txid >= pg_snapshot_xmin(pg_current_snapshot())
                 AND h.created_at >= statement_timestamp() - $6 * interval '1 millisecond'
                 AND outbox_key_slot(h.key, $4) = ANY($3::int[]))
      WHERE (SELECT count(*) FROM batch) < $5`;
const CLAIM_SQL = prepared('relay_claim_v1', claimSql(''));
const CLAIM_AFTER_SQL = prepared('relay_claim_after_v1', claimSql('AND (o.txid, o.id) > ($7::xid8, $8::bigint)'));
