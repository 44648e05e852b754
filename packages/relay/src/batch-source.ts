import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { buildStatusEvent, HEADERS, type Channel } from '@notify/contract';
import { fromPgClient, outboxInsert, type SqlExecutor } from '@notify/outbox';
import type { Clock } from '@notify/runtime';
import type { ResolvedRelayConfig } from './config.js';
import type { RelayEvents } from './events.js';
import { type ClaimedRow, type RelayClaimRow, relayClaimResult, relayClaimText } from './sql/relay-claim.js';
import { outboxMarkPublishedText } from './sql/outbox-mark-published.js';
import { relayInstanceSleepingText } from './sql/relay-instance-sleeping.js';
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
   * `publish_failed` (with its status event in the outbox); one `refused` event each. `awake`:
   * also clear this instance's `sleeping` flag, in the same transaction.
   */
  commit(publishMs: number, refused?: readonly RefusedRow[], options?: { readonly awake?: boolean }): Promise<void>;
  /** Rolls the transaction back (errors ignored): the rows stay unpublished. A no-op for an empty batch. */
  rollback(): Promise<void>;
}

/** Options of `BatchSource.claim`. */
export interface ClaimOptions {
  /**
   * When pipelining, the batch still in flight: the read continues after its last row and only
   * within its slots (see `relayClaimText`).
   */
  readonly previous?: ClaimedBatch | undefined;
  /** Runs once the read is on its way to the server. */
  readonly onSent?: (() => void) | undefined;
  /** Rows at most; default `batchSize`. */
  readonly limit?: number | undefined;
  /**
   * First flag this instance `sleeping` (the outbox trigger then rings), committed on its own
   * before the read starts, so a row committed after the read's snapshot rings. Sent in the same
   * message as the claim. The flag counts as set even if the claim fails (it may have committed).
   */
  readonly sleep?: boolean | undefined;
  /**
   * First clear this instance's `sleeping` flag (woken: the trigger may stop ringing), committed
   * on its own before the read. Not with `sleep`.
   */
  readonly awake?: boolean | undefined;
}

/** Where the publish loop gets its batches (a port, so the loop's control flow is unit-tested without a database). */
export interface BatchSource {
  /** Opens a transaction, locks this instance's slots (shared advisory locks) and reads the next batch; emits `claimed`. */
  claim(options?: ClaimOptions): Promise<ClaimedBatch>;
}

/** The part of a `pg` Pool the batch source uses: each claim transaction holds one of its clients. */
export interface ClaimPool {
  connect(): Promise<pg.PoolClient>;
}

/** What `createBatchSource` needs. */
export interface BatchSourceDeps {
  /** Each claim is its own transaction on a client of this pool (raw `pg`: one message may carry several statements). */
  readonly pool: ClaimPool;
  readonly clock: Clock;
  readonly events: RelayEvents;
  /** Rows of `relay_leases` (the modulus of `outbox_key_slot`), read by the relay at start. */
  readonly slotCount: () => number;
}

// The server ends a claim session idle this much longer than the publish timeout (a hung process).
const IDLE_MARGIN_MS = 10_000;

/** Results of a message of several statements (pg returns one result per statement, or a single one for one statement). */
const resultsOf = (r: unknown): pg.QueryResult[] => (Array.isArray(r) ? (r as pg.QueryResult[]) : [r as pg.QueryResult]);

/**
 * Claim transactions on PostgreSQL, in two round trips per batch: BEGIN with `relay_claim` (slot
 * locks, read, held-back check) in one message; later the mark with COMMIT in another. A claim
 * that reads nothing commits at once (a third).
 */
export function createBatchSource(
  config: Pick<ResolvedRelayConfig, 'instanceId' | 'batchSize' | 'publishTimeoutMs' | 'orderWaitMs'>,
  deps: BatchSourceDeps,
): BatchSource {
  const { instanceId } = config;

  /** Ends the transaction with ROLLBACK and returns the client; a client whose ROLLBACK fails (or whose state is unknown) is destroyed. */
  const rollback = async (client: pg.PoolClient, cause?: unknown): Promise<void> => {
    if (cause !== undefined) {
      // After a failed message the transaction may be open, aborted or gone: drop the connection
      // (the server rolls back and frees the locks) rather than guess.
      client.release(cause instanceof Error ? cause : new Error('claim transaction failed'));
      return;
    }
    try {
      await client.query('ROLLBACK');
      client.release();
    } catch (error) {
      client.release(error instanceof Error ? error : new Error('ROLLBACK failed'));
    }
  };

  const batch = (client: pg.PoolClient | null, claimed: Pick<ClaimedBatch, 'slots' | 'rows' | 'heldBack' | 'startedAt'>): ClaimedBatch => {
    let open = client !== null;
    return {
      ...claimed,
      async commit(publishMs, refused = [], options = {}) {
        if (!client || !open) throw new Error('an empty or finished batch has nothing to mark published');
        open = false;
        const { rows } = claimed;
        let dead: Map<string, string> = new Map();
        try {
          const now = deps.clock.now();
          if (refused.length > 0) dead = await setAside(fromPgClient(client), refused, now);
          const statements = [outboxMarkPublishedText({ ids: rows.map((r) => r.id), now })];
          if (options.awake) statements.push(relayInstanceSleepingText({ instanceId, sleeping: false }));
          statements.push('COMMIT');
          const results = resultsOf(await client.query(statements.join('; ')));
          // Defensive: PostgreSQL reports COMMIT of an aborted transaction as ROLLBACK.
          if (results[results.length - 1]?.command !== 'COMMIT') throw new Error('the claim transaction did not commit');
        } catch (error) {
          await rollback(client, error);
          throw error;
        }
        client.release();
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
        if (!client || !open) return;
        open = false;
        await rollback(client);
      },
    };
  };

  return {
    async claim({ previous, onSent, limit = config.batchSize, sleep = false, awake = false } = {}) {
      const startedAt = performance.now();
      const after = previous?.rows[previous.rows.length - 1];
      const claimText = relayClaimText({
        instanceId,
        now: deps.clock.now(),
        slotCount: deps.slotCount(),
        limit,
        orderWaitMs: config.orderWaitMs,
        idleTimeoutMs: config.publishTimeoutMs + IDLE_MARGIN_MS,
        ...(previous ? { only: previous.slots } : {}),
        ...(after ? { after } : {}),
      });
      // A flag write commits on its own first (its COMMIT ends the implicit transaction the message
      // starts in); READ COMMITTED explicitly: the read must see a takeover committed before the locks.
      const flag = sleep || awake ? `${relayInstanceSleepingText({ instanceId, sleeping: sleep })}; COMMIT; ` : '';
      const text = `${flag}BEGIN ISOLATION LEVEL READ COMMITTED; ${claimText}`;
      const client = await deps.pool.connect();
      let claimed;
      try {
        const reading = client.query(text);
        // pg writes the message within this call when the client is idle; by the next macrotask it is sent.
        if (onSent) setImmediate(onSent);
        const results = resultsOf(await reading);
        claimed = relayClaimResult(results[results.length - 1]!.rows as RelayClaimRow[]);
      } catch (error) {
        await rollback(client, error);
        throw error;
      }
      const { slots, rows, heldBack } = claimed;
      deps.events.emit('claimed', { count: rows.length, slots: slots.length, heldBack });
      if (rows.length === 0) {
        try {
          await client.query('COMMIT');
        } catch (error) {
          await rollback(client, error);
          throw error;
        }
        client.release();
        return batch(null, { slots, rows, heldBack, startedAt });
      }
      return batch(client, { slots, rows, heldBack, startedAt });
    },
  };
}

/** Topics (suffixes) whose messages ask for a delivery attempt: a refused one means the attempt can never happen. */
const isDeliveryRequest = (topic: string) => topic === 'requests' || topic.startsWith('retry.');

/** The set-aside of `ClaimedBatch.commit`: returns the notifications it made dead, id → channel. */
async function setAside(tx: SqlExecutor, refused: readonly RefusedRow[], now: Date): Promise<Map<string, string>> {
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
