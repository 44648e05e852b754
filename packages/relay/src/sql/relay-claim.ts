import { digitsLiteral, intArrayLiteral, intLiteral, numberLiteral, textLiteral, timeLiteral } from './literals.js';

/** Parameters of `relayClaimText`. */
export interface RelayClaimParams {
  readonly instanceId: string;
  readonly now: Date;
  /** Lock only these of its slots (a pipelined read continues the previous batch's slots only); omitted: every slot it leases. */
  readonly only?: readonly number[];
  /** Rows of `relay_leases`: the modulus of `outbox_key_slot`. */
  readonly slotCount: number;
  readonly limit: number;
  /**
   * A committed row whose transaction is not below xmin is read anyway once its transaction
   * started (`created_at`) this many milliseconds ago, by the database clock: the bound on the
   * snapshot rule's wait.
   */
  readonly orderWaitMs: number;
  /** `idle_in_transaction_session_timeout` for the rest of the transaction: it waits on Kafka holding the slot locks. */
  readonly idleTimeoutMs: number;
  /**
   * Only rows after this (txid, id): the previous batch, still in flight, when the relay
   * pipelines. Valid only with `only` a subset of the previous batch's slots: a slot that was not
   * in it may have unpublished rows below the cursor, which would be skipped and published later,
   * out of order.
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

/** What a claim read. */
export interface RelayClaimResult {
  /** The slots it locked. */
  readonly slots: number[];
  /** The batch, in (txid, id) order. */
  readonly rows: ClaimedRow[];
  /** Unpublished rows of these slots wait behind an older open transaction (only asked when the batch is short). */
  readonly heldBack: boolean;
}

/** A row `relay_claim` returns: a claimed row, or (the last one, `id` null) the slots and held-back answer. */
export type RelayClaimRow =
  | (ClaimedRow & { readonly slots: null; readonly held_back: null })
  | { readonly id: null; readonly slots: number[]; readonly held_back: boolean };

/**
 * The claim of one batch, as one statement with its values inlined (`literals.ts`), for the
 * claim transaction to send in the same message as its BEGIN: `relay_claim` (migration 0210)
 * takes a shared advisory lock on each slot this instance leases (the fence: nobody takes a slot
 * over while a batch of it is in flight), reads the next batch of unpublished rows of the slots
 * it still owns in (txid, id) order under the bounded snapshot rule, and for a short batch asks
 * whether rows wait behind an older open transaction. Reads only (no xid); the caller publishes
 * the rows, marks them (`outboxMarkPublishedText`) and commits. docs/relay.md has the rules.
 */
export function relayClaimText(params: RelayClaimParams): string {
  const args = [
    textLiteral(params.instanceId),
    timeLiteral(params.now),
    params.only ? intArrayLiteral(params.only) : 'NULL',
    intLiteral(params.slotCount),
    intLiteral(params.limit),
    numberLiteral(params.orderWaitMs),
    textLiteral(`${Math.max(1, Math.round(params.idleTimeoutMs))}ms`),
    params.after ? `'${digitsLiteral(params.after.txid)}'::xid8` : 'NULL',
    params.after ? `${digitsLiteral(params.after.id)}::bigint` : 'NULL',
  ];
  return `SELECT * FROM relay_claim(${args.join(', ')})`;
}

/** Splits what `relay_claim` returned into the batch and its last row's answers. */
export function relayClaimResult(rows: readonly RelayClaimRow[]): RelayClaimResult {
  const last = rows[rows.length - 1];
  if (!last || last.id !== null) throw new Error('relay_claim returned no closing row: is migration 0210 applied?');
  return { slots: last.slots, rows: rows.slice(0, -1) as ClaimedRow[], heldBack: last.held_back };
}
