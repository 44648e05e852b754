import { performance } from 'node:perf_hooks';
import type { ControlledTransaction, Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { buildStatusEvent, HEADERS, TOPICS, type Channel } from '@notify/contract';
import { fromKysely, outboxInsert, type SqlExecutor } from '@notify/outbox';
import type { Clock } from '@notify/runtime';
import type { ResolvedRelayConfig } from './config.js';
import type { RelayEvents } from './events.js';
import { type ClaimedRow, outboxClaimBatch } from './sql/outbox-claim-batch.js';
import { outboxMarkPublished } from './sql/outbox-mark-published.js';
import { relayRestorePlanner, relaySlotLock } from './sql/relay-slot-lock.js';
import { notificationFailPublish } from './sql/notification-fail-publish.js';
import { outboxRefusedInsert } from './sql/outbox-refused-insert.js';

/** A claimed row Kafka refused for good, and why (see refusal.ts). */
export interface RefusedRow {
  readonly row: ClaimedRow;
  readonly reason: string;
}

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
  /**
   * Marks the rows published, commits and emits `published`; on failure rolls back and rethrows.
   * Only after the publish was acknowledged. `refused` rows (a subset of `rows`, not published)
   * are set aside in the same transaction: copied to `outbox_refused`, marked published so their
   * key slot moves on, and a notification whose delivery request it was ends `dead` with reason
   * `publish_failed` (with its status event in the outbox); one `refused` event each.
   */
  commit(publishMs: number, refused?: readonly RefusedRow[]): Promise<void>;
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
  claim(previous?: ClaimedBatch, onSent?: () => void, limit?: number): Promise<ClaimedBatch>;
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

/** Claim transactions on PostgreSQL: `relaySlotLock`, `outboxClaimBatch` (with its held-back check); later `outboxMarkPublished` and COMMIT. */
export function createBatchSource(
  config: Pick<ResolvedRelayConfig, 'instanceId' | 'batchSize' | 'publishTimeoutMs' | 'orderWaitMs' | 'retentionMs'>,
  deps: BatchSourceDeps,
): BatchSource {
  const { instanceId } = config;

  const batch = (
    trx: ControlledTransaction<Database> | null,
    claimed: Pick<ClaimedBatch, 'slots' | 'rows' | 'heldBack' | 'startedAt'>,
  ): ClaimedBatch => ({
    ...claimed,
    async commit(publishMs, refused = []) {
      if (!trx) throw new Error('an empty batch has nothing to mark published');
      const { rows } = claimed;
      let dead: Map<string, string> = new Map();
      try {
        const now = deps.clock.now();
        await outboxMarkPublished(fromKysely(trx), { ...settledRows(rows, config.retentionMs), now });
        if (refused.length > 0) dead = await setAside(fromKysely(trx), refused, now);
        await trx.commit().execute();
      } catch (error) {
        await rollBackQuietly(trx);
        throw error;
      }
      for (const { row, reason } of refused) {
        const notificationId = row.headers[HEADERS.notificationId];
        deps.events.emit('refused', {
          outboxId: row.id,
          topic: row.topic,
          reason,
          notificationId,
          deadChannel: notificationId ? dead.get(notificationId) : undefined,
        });
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
      if (trx) await rollBackQuietly(trx);
    },
  });

  return {
    async claim(previous, onSent, limit = config.batchSize) {
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
        const reading = outboxClaimBatch(tx, {
          instanceId,
          now,
          slots,
          slotCount,
          limit,
          orderWaitMs: config.orderWaitMs,
          ...(after ? { after } : {}),
        });
        // Kysely reaches pg's client.query within microtasks; by the next macrotask it is sent.
        if (onSent) setImmediate(onSent);
        const { rows, heldBack } = await reading;
        deps.events.emit('claimed', { count: rows.length, slots: slots.length, heldBack });
        if (rows.length === 0) {
          await trx.commit().execute();
          return batch(null, { slots, rows, heldBack, startedAt });
        }
        return batch(trx, { slots, rows, heldBack, startedAt });
      } catch (error) {
        await rollBackQuietly(trx);
        throw error;
      }
    },
  };
}

/** Rolls a claim transaction back, ignoring errors: the caller already has the error that matters, or none. */
const rollBackQuietly = (trx: ControlledTransaction<Database>): Promise<void> =>
  trx
    .rollback()
    .execute()
    .catch(() => {});

/** Topics (suffixes) whose messages ask for a delivery attempt: a refused one means the attempt can never happen. */
const isDeliveryRequest = (topic: string) =>
  topic === TOPICS.requests || topic === TOPICS.requestsHigh || topic.startsWith(TOPICS.retry(''));

/** Topics (suffixes) whose published rows nothing reads: the repair sweep skips them too (`outboxLatestRequests`). */
const UNREAD_ONCE_PUBLISHED: ReadonlySet<string> = new Set([TOPICS.events, TOPICS.dlq]);

/**
 * Which published rows are kept (marked, purged after `retentionMs`) and which are deleted at
 * once. The one reader of published rows is the dispatcher's repair sweep (`outboxLatestRequests`):
 * it reads a notification's newest published delivery request to tell consumer lag from a lost
 * message. So status events and dead letters are deleted on publish, and the other rows (delivery
 * requests) are kept for the retention; with `retentionMs` 0 every row is deleted. docs/relay.md,
 * "Retention".
 */
function settledRows(rows: readonly ClaimedRow[], retentionMs: number): { kept: string[]; deleted: string[] } {
  const kept: string[] = [];
  const deleted: string[] = [];
  for (const r of rows) (retentionMs === 0 || UNREAD_ONCE_PUBLISHED.has(r.topic) ? deleted : kept).push(r.id);
  return { kept, deleted };
}

/** The set-aside of `ClaimedBatch.commit`: returns the notifications it made dead, id → channel. */
async function setAside(tx: SqlExecutor, refused: readonly RefusedRow[], now: Date): Promise<Map<string, string>> {
  // Its writes fire triggers whose plans PL/pgSQL keeps for the session: planned with the claim's
  // settings, they would keep a disabled method's cost on this pooled connection.
  await relayRestorePlanner(tx);
  await outboxRefusedInsert(tx, {
    now,
    rows: refused.map(({ row, reason }) => ({ ...row, notificationId: row.headers[HEADERS.notificationId], reason })),
  });
  const requests = new Map<string, string>();
  for (const { row, reason } of refused) {
    const id = row.headers[HEADERS.notificationId];
    if (id && isDeliveryRequest(row.topic)) requests.set(id, `publish_failed: Kafka refused the delivery request (${reason})`);
  }
  const failed = await notificationFailPublish(tx, { notifications: [...requests].map(([id, error]) => ({ id, error })), now });
  await outboxInsert(tx, {
    messages: failed.map((n) =>
      buildStatusEvent(
        { id: n.id, tenant_id: n.tenant_id, channel: n.channel as Channel, recipient: n.recipient, traceparent: n.traceparent },
        {
          type: 'notification.dead',
          state: 'dead',
          attempts: n.attempts,
          dead_reason: 'publish_failed',
          last_error: n.last_error,
          next_attempt_at: null,
          occurred_at: now,
        },
      ),
    ),
  });
  return new Map(failed.map((n) => [n.id, n.channel]));
}
