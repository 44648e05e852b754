import { performance } from 'node:perf_hooks';
import type { ControlledTransaction, Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import type { Clock } from '@notify/runtime';
import type { ResolvedRelayConfig } from './config.js';
import type { RelayEvents } from './events.js';
import { type ClaimedRow, outboxClaimBatch } from './sql/outbox-claim-batch.js';
import { outboxHeldBack } from './sql/outbox-held-back.js';
import { outboxMarkPublished } from './sql/outbox-mark-published.js';
import { relaySlotLock } from './sql/relay-slot-lock.js';

/**
 * One claimed batch. Its transaction stays open, holding the shared advisory locks of its slots
 * (the fence, see docs/relay.md), until `commit` or `rollback`. An empty batch's transaction is
 * already committed.
 */
export interface ClaimedBatch {
  /** The slots it locked and read. */
  readonly slots: readonly number[];
  /** Its rows in (txid, id) order; empty when there was nothing to publish. */
  readonly rows: readonly ClaimedRow[];
  /** Unpublished rows of these slots wait behind an older open transaction (the snapshot rule). */
  readonly heldBack: boolean;
  /** `performance.now()` when the claim began: the `published` event's `durationMs` counts from here. */
  readonly startedAt: number;
  /** Marks the rows published, commits and emits `published`; on failure rolls back and rethrows. Only after the publish was acknowledged. */
  commit(publishMs: number): Promise<void>;
  /** Rolls the transaction back (errors ignored): the rows stay unpublished. A no-op for an empty batch. */
  rollback(): Promise<void>;
}

/** Where the publish loop gets its batches (a port, so the loop's control flow is unit-tested without a database). */
export interface BatchSource {
  /**
   * Opens a transaction, locks this instance's slots (shared advisory locks) and reads the next
   * batch; emits `claimed`. When pipelining, `previous` is the batch still in flight: the read
   * continues after its last row and only within its slots (see `outboxClaimBatch`). `onSent`
   * runs once the read is on its way to the server.
   */
  claim(previous?: ClaimedBatch, onSent?: () => void): Promise<ClaimedBatch>;
}

/** What `createBatchSource` needs. */
export interface BatchSourceDeps {
  /** Each claim is its own transaction on this pool. */
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly events: RelayEvents;
  /** Rows of `relay_leases` (the modulus of `outbox_key_slot`), read by the relay at start. */
  readonly slotCount: () => number;
}

// The server ends a claim session idle this much longer than the publish timeout (a hung process).
const IDLE_MARGIN_MS = 10_000;

/** Claim transactions on PostgreSQL: `relaySlotLock`, `outboxClaimBatch`, `outboxHeldBack`; later `outboxMarkPublished` and COMMIT. */
export function createBatchSource(config: Pick<ResolvedRelayConfig, 'instanceId' | 'batchSize' | 'publishTimeoutMs' | 'orderWaitMs'>, deps: BatchSourceDeps): BatchSource {
  const { instanceId } = config;

  const batch = (
    trx: ControlledTransaction<Database> | null,
    claimed: Pick<ClaimedBatch, 'slots' | 'rows' | 'heldBack' | 'startedAt'>,
  ): ClaimedBatch => ({
    ...claimed,
    async commit(publishMs) {
      if (!trx) throw new Error('an empty batch has nothing to mark published');
      const { rows } = claimed;
      try {
        await outboxMarkPublished(fromKysely(trx), { ids: rows.map((r) => r.id), now: deps.clock.now() });
        await trx.commit().execute();
      } catch (error) {
        await trx.rollback().execute().catch(() => {});
        throw error;
      }
      deps.events.emit('published', {
        count: rows.length,
        durationMs: performance.now() - claimed.startedAt,
        publishMs,
        firstId: rows[0]!.id,
        lastId: rows[rows.length - 1]!.id,
      });
    },
    async rollback() {
      await trx?.rollback().execute().catch(() => {});
    },
  });

  return {
    async claim(previous, onSent) {
      const startedAt = performance.now();
      // READ COMMITTED explicitly: the batch read must see a takeover committed before the locks.
      const trx = await deps.db.startTransaction().setIsolationLevel('read committed').execute();
      try {
        const tx = fromKysely(trx);
        const now = deps.clock.now();
        const slotCount = deps.slotCount();
        const slots = await relaySlotLock(tx, {
          instanceId,
          now,
          idleTimeoutMs: config.publishTimeoutMs + IDLE_MARGIN_MS,
          ...(previous ? { only: previous.slots } : {}),
        });
        const after = previous?.rows[previous.rows.length - 1];
        const reading = outboxClaimBatch(tx, { instanceId, now, slots, slotCount, limit: config.batchSize, orderWaitMs: config.orderWaitMs, ...(after ? { after } : {}) });
        // Kysely reaches pg's client.query within microtasks; by the next macrotask it is sent.
        if (onSent) setImmediate(onSent);
        const rows = await reading;
        const heldBack = rows.length < config.batchSize ? await outboxHeldBack(tx, { slots, slotCount, orderWaitMs: config.orderWaitMs }) : false;
        deps.events.emit('claimed', { count: rows.length, slots: slots.length, heldBack });
        if (rows.length === 0) {
          await trx.commit().execute();
          return batch(null, { slots, rows, heldBack, startedAt });
        }
        return batch(trx, { slots, rows, heldBack, startedAt });
      } catch (error) {
        await trx.rollback().execute().catch(() => {});
        throw error;
      }
    },
  };
}
