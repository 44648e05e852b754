import { prepared, type SqlExecutor } from '@notify/outbox';

/** The first key of the relay's advisory locks (ASCII "RELY"); the second is the slot. Per database. */
export const SLOT_LOCK_NAMESPACE = 0x52454c59;

/** Parameters of `relaySlotLock`. */
export interface RelaySlotLockParams {
  readonly instanceId: string;
  readonly now: Date;
  /** `idle_in_transaction_session_timeout` for this transaction (see below). */
  readonly idleTimeoutMs: number;
  /** Lock only these of its slots (a pipelined read continues the previous batch's slots only). */
  readonly only?: readonly number[];
}

/**
 * First statement of a claim transaction: takes a shared transaction-level advisory lock on
 * every slot this instance leases (unexpired), and returns the slots it locked.
 *
 * This is the fence that keeps per-key order across instances. Taking a slot over needs the
 * exclusive lock (`relayLeaseAcquire`), so while a batch of the slot is in flight (this
 * transaction is open) nobody can take it, even if the lease expires or is released meanwhile.
 * Advisory locks, unlike row locks, give the transaction no xid: an open claim transaction
 * does not hold back other sessions' snapshot xmin, so a relay stuck in a slow publish does not
 * stall every other relay (see docs/relay.md, "why not FOR UPDATE").
 *
 * The owner check here reads this statement's snapshot, which may predate a takeover that
 * committed just before the lock was granted; `outboxClaimBatch` re-checks ownership in a later
 * statement (a fresh snapshot), and only the slots that pass both are claimed.
 *
 * Also sets `idle_in_transaction_session_timeout` for the transaction: it waits on Kafka
 * holding these locks, and if this process hangs the server ends the session and frees them.
 *
 * And turns sorts off for the transaction's later plans (`enable_sort`, transaction-local): the
 * claim (`outboxClaimBatch`) must walk outbox_unpublished_txid_idx in (txid, id) order and stop
 * at its limit. The planner guesses its slot filter keeps about 5 % of the unpublished rows, so
 * with fewer than about 20 times the limit unpublished (a backlog of 10,000 with batches of
 * 1,000) it chose to read the whole table (published rows too) and sort every unpublished row
 * instead: 250–500 ms for the first claim of a 10,000-row backlog against 13–22 ms in index
 * order (EXPLAIN ANALYZE, load average 9). The other statements of the transaction sort nothing.
 * Sequential scans are off too (`enable_seqscan`, transaction-local): while a write transaction
 * anywhere on the server holds xmin back, the planner took every row for `txid >= xmin` and
 * checked for held-back rows by reading the whole outbox (retained published rows too) instead
 * of the unpublished rows' index. The transaction's statements all have an index to use (the
 * claim and its held-back check outbox_unpublished_txid_idx, the mark the primary key).
 *
 * And lets the transaction commit without waiting for its WAL flush (`synchronous_commit` off,
 * transaction-local). The commit (the mark, `outboxMarkPublished`) of every batch short of full
 * is awaited before the next claim, so a flush (2.5 ms of a 3 ms one-row commit here) was on
 * every such round's path. Visibility is unchanged: the mark is seen by every later claim at
 * commit. What a server crash (not a clean stop) can forget is the last commits before it, in
 * commit order: those rows are published again, a suffix of what was published, in order, as
 * after a relay crash (at-least-once; docs/relay.md, "Guarantees").
 *
 * And makes the transaction's prepared statements (the claim, the mark) run their generic plan
 * (`plan_cache_mode`, transaction-local). Left to choose, PostgreSQL kept planning the claim
 * again for every execution (0.20–0.52 ms of planning for a 0.1 ms read of a short batch): its
 * custom plans, which know the limit, always looked cheaper than the generic one. The generic
 * plan is made with sorts and sequential scans off (above), so it is the same walk of
 * outbox_unpublished_txid_idx.
 *
 * And turns JIT compilation off for the transaction (`jit`, transaction-local). Turning a planner
 * method off works by costing it at 10^10: a statement of this transaction that has no other way
 * (a sort, a scan of a table without a usable index) is estimated above every JIT threshold, and
 * PostgreSQL compiled it with LLVM at each execution: the set-aside of one refused row
 * (batch-source.ts, its triggers' statements) took 360–430 ms instead of ~21 (session 35). The
 * set-aside also restores the planner's settings first (`relayRestorePlanner`), so what it plans
 * is costed as anywhere else.
 */
export async function relaySlotLock(db: SqlExecutor, params: RelaySlotLockParams): Promise<number[]> {
  const values: unknown[] = [params.instanceId, params.now, SLOT_LOCK_NAMESPACE, `${Math.max(1, Math.round(params.idleTimeoutMs))}ms`];
  const { rows } = params.only
    ? await db.query<{ slots: string | null }>(SLOT_LOCK_ONLY_SQL, [...values, intArrayLiteral(params.only)])
    : await db.query<{ slots: string | null }>(SLOT_LOCK_SQL, values);
  const slots = rows[0]?.slots;
  // int[] as text: "{0,1,…}" (NULL when no slot was locked).
  return slots ? slots.slice(1, -1).split(',').map(Number) : [];
}

/**
 * Puts the planner settings `relaySlotLock` made for the claim transaction (`enable_seqscan`,
 * `enable_sort`, `plan_cache_mode`, `jit`) back to the session's values for the rest of it; the
 * idle timeout and asynchronous commit stay. For writes in the claim transaction that fire
 * triggers (the set-aside of refused rows, batch-source.ts): the triggers' statements (the event
 * policy's read of notify_settings, the outbox doorbell's of relay_instances, the state counts'
 * sorted upsert) can only scan or sort, and PL/pgSQL keeps their plans for the session. Planned
 * under the claim's settings they were costed at 10^10 and compiled by LLVM at every later
 * execution on that pooled connection, whatever transaction it served: after one refused row, a
 * transaction writing 50 status events there took 800–980 ms instead of 2–4 (session 35).
 */
export async function relayRestorePlanner(db: SqlExecutor): Promise<void> {
  await db.query(RESTORE_PLANNER_SQL, []);
}

/**
 * An array of integers as PostgreSQL's array literal (`{1,2,3}`), for an `int[]` parameter:
 * node-postgres would quote and escape each element (two regular expressions apiece), and the
 * relay sends its 64 slots twice a round.
 */
export function intArrayLiteral(values: readonly number[]): string {
  for (const v of values) if (!Number.isSafeInteger(v)) throw new RangeError(`intArrayLiteral: ${v} is not an integer`);
  return `{${values.join(',')}}`;
}

// A named prepared statement (parsed once per connection), as are the claim and the mark: a
// relay runs these three every round. One row: the locked slots as one array, the settings made
// once (with a row per slot, the statement made 5 settings and returned 6 columns per slot, 64
// slots each round: 0.16 ms of CPU per round in all, session 33). An aggregate without GROUP BY
// answers one row even when no slot was locked; the settings are then made for a transaction
// that claims nothing, which is harmless.
//
// Two statements, with and without `only`: one with `($5 IS NULL OR slot = ANY($5))` was planned
// again in every round (20 custom plans in 20 executions, pg_prepared_statements), since its
// generic plan, which keeps that test, was costed above the custom one, which folds it away: about
// as much PostgreSQL CPU as the statement's own execution (30 ms of planning and 32 of execution
// over a drain's 246 rounds; session 34), at every round of a relay at a low rate. The `only` form
// (the pipelined claim's: 42 of 220 rounds in a drain, none at a trickle) is still planned at
// each execution, its custom plan knowing the array.
const slotLockSql = (name: string, slots: string) =>
  prepared(
    name,
    `SELECT array_agg(slot ORDER BY slot)::text AS slots,
            set_config('idle_in_transaction_session_timeout', $4, true) AS timeout,
            set_config('enable_sort', 'off', true) AS sort,
            set_config('enable_seqscan', 'off', true) AS scan,
            set_config('synchronous_commit', 'off', true) AS durability,
            set_config('plan_cache_mode', 'force_generic_plan', true) AS plans,
            set_config('jit', 'off', true) AS jit
       FROM relay_leases
      WHERE CASE WHEN owner = $1 AND expires_at > $2${slots}
                 THEN pg_try_advisory_xact_lock_shared($3, slot) ELSE false END`,
  );
const SLOT_LOCK_SQL = slotLockSql('relay_slot_lock_v4', '');
const SLOT_LOCK_ONLY_SQL = slotLockSql('relay_slot_lock_only_v2', ' AND slot = ANY($5::int[])');

// The session's value of each planner setting slotLockSql makes (RESET's, read from pg_settings).
const RESTORE_PLANNER_SQL = `SELECT set_config(name, reset_val, true) FROM pg_settings
  WHERE name IN ('enable_seqscan', 'enable_sort', 'plan_cache_mode', 'jit')`;
