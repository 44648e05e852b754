import { performance } from 'node:perf_hooks';
import type { Kafka } from 'kafkajs';
import type { ControlledTransaction, Kysely } from 'kysely';
import { type Clock, type Database, type Logger, fromKysely, silentLogger, systemClock, topicName } from '@notify/outbox';
import { relayBackoffMs } from './backoff.js';
import { type RelayConfig, resolveRelayConfig } from './config.js';
import { type BatchStage, type RelayEventName, type RelayListener, createRelayEvents } from './events.js';
import { createKafkaPublisher } from './kafka-publisher.js';
import { planLeases } from './lease-plan.js';
import { PublishError, type PublishMessage, type Publisher } from './publisher.js';
import { type ClaimedRow, outboxClaimBatch } from './sql/outbox-claim-batch.js';
import { outboxHeldBack } from './sql/outbox-held-back.js';
import { relayInstanceSleeping } from './sql/relay-instance-sleeping.js';
import { outboxMarkPublished } from './sql/outbox-mark-published.js';
import { outboxPurgePublished } from './sql/outbox-purge-published.js';
import { relayInstanceHeartbeat } from './sql/relay-instance-heartbeat.js';
import { relayInstanceRemove } from './sql/relay-instance-remove.js';
import { relayLeaseAcquire } from './sql/relay-lease-acquire.js';
import { relayLeaseRelease } from './sql/relay-lease-release.js';
import { relayLeaseRenew } from './sql/relay-lease-renew.js';
import { relaySlotCount } from './sql/relay-slot-count.js';
import { relaySlotLock } from './sql/relay-slot-lock.js';
import { WakeSignal } from './wake-signal.js';
import { type Wakeup, createWakeup } from './wakeup.js';

/** Test seams. Not for production use. */
export interface RelayHooks {
  /**
   * Runs after the broker acknowledged a batch and before the batch is marked published and
   * committed. The crash test pauses here and SIGKILLs the process.
   */
  readonly afterPublish?: (ids: readonly string[]) => void | Promise<void>;
}

interface RelayDepsBase {
  /** Claims, leases and purges run on this pool: up to three claim transactions (one being marked, one being published, one read ahead) plus one for leases or purge. */
  readonly db: Kysely<Database>;
  /** For the dedicated LISTEN connection. */
  readonly connectionString: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly hooks?: RelayHooks;
}

/**
 * What `createRelay` needs: the database, and either a kafkajs `Kafka` (the relay makes and
 * owns an idempotent producer) or a `Publisher` (the caller owns it and closes it).
 */
export type RelayDeps = RelayDepsBase & ({ readonly kafka: Kafka; readonly publisher?: undefined } | { readonly publisher: Publisher; readonly kafka?: undefined });

/** A running (or startable) relay instance. */
export interface Relay {
  readonly instanceId: string;
  /**
   * Takes its share of the slots, starts listening and publishing. Rejects only when the
   * database cannot be read at all at start; later database or Kafka outages are retried in the
   * background and reported as events, never thrown.
   */
  start(): Promise<void>;
  /** Finishes the in-flight batch (up to `stopTimeoutMs`), releases its leases, closes its clients. Idempotent. */
  stop(): Promise<void>;
  /** Subscribes to a lifecycle event; returns the unsubscribe function. */
  on<E extends RelayEventName>(event: E, listener: RelayListener<E>): () => void;
  /** Slots this instance holds now. */
  slots(): readonly number[];
}

/** A claimed batch, read in `trx`; `trx` marks it published and commits after the publish. */
interface Claim {
  readonly trx: ControlledTransaction<Database> | null;
  /** The slots it locked and read. */
  readonly slots: readonly number[];
  readonly rows: readonly ClaimedRow[];
  readonly heldBack: boolean;
  readonly startedAt: number;
}

// The server ends a claim session idle this much longer than the publish timeout (a hung process).
const IDLE_MARGIN_MS = 10_000;

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new PublishError('publish_timeout', message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function errorFields(err: unknown): { name: string; message: string; code?: string } {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { name: err.name, message: err.message, ...(typeof code === 'string' ? { code } : {}) };
  }
  return { name: 'Error', message: String(err) };
}

/**
 * Creates a relay instance: per batch, one transaction locks the hash slots it leases, reads
 * their next unpublished outbox rows, publishes them, marks them published and commits.
 * Several instances (in one process or many) split the slots between them; per-key order holds
 * across them. See docs/relay.md for the design and the guarantees.
 */
export function createRelay(config: RelayConfig, deps: RelayDeps): Relay {
  const cfg = resolveRelayConfig(config);
  const instanceId = cfg.instanceId;
  const clock = deps.clock ?? systemClock;
  const logger = (deps.logger ?? silentLogger).child({ component: 'relay', instanceId });
  const events = createRelayEvents(logger);
  const db = fromKysely(deps.db);
  const ownsPublisher = deps.publisher === undefined;
  const publisher: Publisher = deps.publisher ?? createKafkaPublisher(deps.kafka as Kafka, { logger });
  const signal = new WakeSignal();

  let state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  let slotCount = 0;
  let held: number[] = [];
  let loopDone: Promise<void> = Promise.resolve();
  let leaseRound: Promise<void> | null = null;
  let purgeRound: Promise<void> | null = null;
  let leaseTimer: NodeJS.Timeout | null = null;
  let purgeTimer: NodeJS.Timeout | null = null;
  let stopping: Promise<void> | null = null;

  const wakeup: Wakeup = createWakeup({
    connectionString: deps.connectionString,
    onNotify: () => signal.wake(),
    onConnected: (reconnect) => {
      events.emit('wakeupConnected', { reconnect });
      signal.wake();
    },
    onError: (error) => {
      logger.warn({ err: errorFields(error) }, 'relay LISTEN connection lost; reconnecting');
      events.emit('error', { error, stage: 'wakeup' });
    },
  });

  const toMessage = (row: ClaimedRow): PublishMessage => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(row.headers ?? {})) headers[k] = typeof v === 'string' ? v : JSON.stringify(v);
    return { topic: topicName(cfg.topicPrefix, row.topic), key: row.key, value: row.value, headers };
  };

  /**
   * Opens a transaction, locks this instance's slots (shared advisory locks) and reads the next
   * batch. When pipelining, `previous` is the batch still in flight: the read continues after
   * its last row and only within its slots (see `outboxClaimBatch`). `onSent` runs once the
   * read is on its way to the server.
   */
  async function claim(previous?: Claim, onSent?: () => void): Promise<Claim> {
    const startedAt = performance.now();
    // READ COMMITTED explicitly: the batch read must see a takeover committed before the locks.
    const trx = await deps.db.startTransaction().setIsolationLevel('read committed').execute();
    try {
      const tx = fromKysely(trx);
      const now = clock.now();
      const slots = await relaySlotLock(tx, {
        instanceId,
        now,
        idleTimeoutMs: cfg.publishTimeoutMs + IDLE_MARGIN_MS,
        ...(previous ? { only: previous.slots } : {}),
      });
      const after = previous?.rows[previous.rows.length - 1];
      const reading = outboxClaimBatch(tx, { instanceId, now, slots, slotCount, limit: cfg.batchSize, ...(after ? { after } : {}) });
      // Kysely reaches pg's client.query within microtasks; by the next macrotask it is sent.
      if (onSent) setImmediate(onSent);
      const rows = await reading;
      const heldBack = rows.length < cfg.batchSize ? await outboxHeldBack(tx, { slots, slotCount }) : false;
      events.emit('claimed', { count: rows.length, slots: slots.length, heldBack });
      if (rows.length === 0) {
        await trx.commit().execute();
        return { trx: null, slots, rows, heldBack, startedAt };
      }
      return { trx, slots, rows, heldBack, startedAt };
    } catch (error) {
      await trx.rollback().execute().catch(() => {});
      throw error;
    }
  }

  async function abandon(claimed: Claim | Promise<Claim> | null): Promise<void> {
    if (!claimed) return;
    const c = await Promise.resolve(claimed).catch(() => null);
    await c?.trx?.rollback().execute().catch(() => {});
  }

  /** Marks a published batch and commits it; on failure rolls it back and rethrows. */
  async function markAndCommit(c: Claim, publishMs: number): Promise<void> {
    const trx = c.trx!;
    try {
      await outboxMarkPublished(fromKysely(trx), { ids: c.rows.map((r) => r.id), now: clock.now() });
      await trx.commit().execute();
    } catch (error) {
      await trx.rollback().execute().catch(() => {});
      throw error;
    }
    events.emit('published', {
      count: c.rows.length,
      durationMs: performance.now() - c.startedAt,
      publishMs,
      firstId: c.rows[0]!.id,
      lastId: c.rows[c.rows.length - 1]!.id,
    });
  }

  /**
   * The batch loop. While there is a backlog it pipelines, with two batches in flight: batch
   * n+1 is read (after batch n's last row) while batch n is in Kafka, and batch n is marked and
   * committed while batch n+1 is in Kafka. Commits happen strictly in batch order, and a failed
   * commit rolls back every later batch, so the rows left unmarked after any failure are a
   * suffix of what was published: a replay repeats that suffix in order (at-least-once) and
   * never sends an older row after a newer one on its own. The publish itself is never
   * concurrent: batch n+1 is handed to Kafka only after batch n was acknowledged.
   */
  async function loop(): Promise<void> {
    let failures = 0;
    let heldBackDelay = cfg.heldBackRetryMs;
    let ahead: Promise<Claim> | null = null;
    let committing: Promise<void> | null = null; // mark + commit of the previous batch
    const fail = async (stage: BatchStage, error: unknown) => {
      failures++;
      const retryInMs = relayBackoffMs({ attempt: failures, ...cfg.backoff, random: Math.random() });
      logger.warn({ err: errorFields(error), stage, attempt: failures, retryInMs }, 'relay batch failed; rows stay unpublished');
      events.emit('publishError', { error, stage, attempt: failures, retryInMs });
      await signal.wait(retryInMs, { wakeable: false });
    };
    /** Waits for the previous batch's commit; false (after reporting) if it failed. */
    const settle = async (): Promise<boolean> => {
      if (!committing) return true;
      const pending = committing;
      committing = null;
      try {
        await pending;
        return true;
      } catch (error) {
        await abandon(ahead);
        ahead = null;
        await fail('mark', error);
        return false;
      }
    };
    /** Flags this instance as sleeping (the trigger then rings) or busy; only transitions touch the database. */
    let sleeping = false;
    const setSleeping = async (value: boolean) => {
      if (sleeping === value) return;
      try {
        await relayInstanceSleeping(db, { instanceId, sleeping: value });
        sleeping = value;
      } catch (error) {
        // Not fatal: without the flag the relay is woken by its poll interval instead.
        events.emit('error', { error, stage: 'wakeup' });
      }
    };
    const idle = async (heldBack: boolean) => {
      if (!heldBack && !sleeping) {
        // Ring first, then look once more before sleeping: a row committed before the flag
        // became visible did not ring, and the next claim catches it.
        await setSleeping(true);
        if (sleeping) return;
      }
      if (heldBack) {
        // Rows wait behind an older open transaction that may never notify: re-poll soon.
        await signal.wait(heldBackDelay);
        heldBackDelay = Math.min(heldBackDelay * 2, cfg.heldBackMaxMs);
      } else {
        heldBackDelay = cfg.heldBackRetryMs;
        await signal.wait(cfg.pollIntervalMs);
      }
    };

    while (state === 'running') {
      if (!ahead) {
        // A fresh claim reads from the first unpublished row: the previous batch must be
        // committed (marked) first, or it would be read and published again.
        if (!(await settle())) continue;
        signal.clear(); // this claim sees everything committed before now
      }
      let current: Claim;
      try {
        current = await (ahead ?? claim());
      } catch (error) {
        ahead = null;
        if (!(await settle())) continue;
        await fail('claim', error);
        continue;
      }
      ahead = null;
      if (current.rows.length > 0) await setSleeping(false);
      if (current.rows.length === 0) {
        if (!(await settle())) continue;
        failures = 0;
        if (state !== 'running') break;
        await idle(current.heldBack);
        continue;
      }
      const full = current.rows.length === cfg.batchSize;
      // Pipeline only while this batch covered every slot the instance holds; otherwise the next
      // claim starts afresh (no cursor), so newly taken slots are not starved by a long backlog.
      const coversHeld = held.every((s) => current.slots.includes(s));
      if (full && coversHeld && state === 'running') {
        // Read the next batch now, and let the read reach the server before kafkajs encodes
        // this batch: the encoding holds the event loop (about 50 ms per 1,000 messages,
        // measured), and the server runs the read meanwhile instead of after.
        let sent!: () => void;
        const onSent = new Promise<void>((r) => (sent = r));
        ahead = claim(current, sent);
        ahead.catch(() => {}); // handled when awaited
        await Promise.race([onSent, ahead.then(() => {}, () => {})]);
      }
      let publishMs = 0;
      try {
        const t0 = performance.now();
        const ids = current.rows.map((r) => r.id);
        await withTimeout(publisher.publish(current.rows.map(toMessage)), cfg.publishTimeoutMs, `publish of ${ids.length} rows took over ${cfg.publishTimeoutMs} ms`);
        publishMs = performance.now() - t0;
        if (deps.hooks?.afterPublish) await deps.hooks.afterPublish(ids);
      } catch (error) {
        await current.trx!.rollback().execute().catch(() => {});
        await abandon(ahead);
        ahead = null;
        if (!(await settle())) continue;
        await fail('publish', error);
        continue;
      }
      // The previous batch must have committed before this one may.
      if (!(await settle())) {
        await current.trx!.rollback().execute().catch(() => {});
        continue;
      }
      failures = 0;
      committing = markAndCommit(current, publishMs);
      committing.catch(() => {}); // handled by settle()
      if (state !== 'running') break;
      if (full) continue; // likely more: no sleep
      if (!(await settle())) continue;
      await idle(current.heldBack);
    }
    await settle().catch(() => {});
    await abandon(ahead);
  }

  async function renewAndRebalance(): Promise<void> {
    const now = clock.now();
    const expiresAt = new Date(now.getTime() + cfg.leaseTtlMs);
    const live = await relayInstanceHeartbeat(db, { instanceId, now, expiresAt });
    const mine = await relayLeaseRenew(db, { instanceId, expiresAt });
    if (state !== 'running') return;
    const plan = planLeases({ instanceId, liveInstances: live, slotCount, held: mine });
    const released = plan.release.length > 0 ? await relayLeaseRelease(db, { instanceId, slots: plan.release }) : [];
    const acquired = plan.acquire > 0 ? await relayLeaseAcquire(db, { instanceId, now, expiresAt, count: plan.acquire }) : [];
    const next = [...mine.filter((s) => !released.includes(s)), ...acquired].sort((a, b) => a - b);
    const changed = next.length !== held.length || next.some((s, i) => s !== held[i]);
    held = next;
    if (changed) {
      logger.info({ slots: next.length, acquired: acquired.length, released: released.length, live: live.length }, 'relay leases changed');
      events.emit('leaseChanged', { slots: next, acquired, released });
      if (acquired.length > 0) signal.wake();
    }
  }

  function scheduleLeases(delayMs: number): void {
    leaseTimer = setTimeout(() => {
      leaseTimer = null;
      leaseRound = renewAndRebalance()
        .catch((error: unknown) => {
          logger.warn({ err: errorFields(error) }, 'relay lease heartbeat failed');
          events.emit('error', { error, stage: 'lease' });
        })
        .finally(() => {
          leaseRound = null;
          if (state === 'running') scheduleLeases(cfg.heartbeatIntervalMs);
        });
    }, delayMs);
  }

  async function purge(): Promise<void> {
    // One purger is enough: the holder of slot 0 (there is always exactly one while relays run).
    if (!held.includes(0)) return;
    const before = new Date(clock.now().getTime() - cfg.retentionMs);
    const maxStatements = 100; // bounded work per round; the next round continues
    let total = 0;
    for (let i = 0; i < maxStatements && state === 'running'; i++) {
      const n = await outboxPurgePublished(db, { before, limit: cfg.purgeBatchSize });
      total += n;
      if (n < cfg.purgeBatchSize) break;
    }
    if (total > 0) logger.info({ count: total }, 'relay purged published outbox rows');
    events.emit('purged', { count: total });
  }

  function schedulePurge(delayMs: number): void {
    purgeTimer = setTimeout(() => {
      purgeTimer = null;
      purgeRound = purge()
        .catch((error: unknown) => {
          logger.warn({ err: errorFields(error) }, 'relay purge failed');
          events.emit('error', { error, stage: 'purge' });
        })
        .finally(() => {
          purgeRound = null;
          if (state === 'running') schedulePurge(cfg.purgeIntervalMs);
        });
    }, delayMs);
  }

  async function bounded(promise: Promise<unknown> | null, ms: number): Promise<boolean> {
    if (!promise) return true;
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), Math.max(0, ms)))),
    ]);
    clearTimeout(timer);
    return done;
  }

  async function shutdown(): Promise<void> {
    const deadline = performance.now() + cfg.stopTimeoutMs;
    const left = () => deadline - performance.now();
    if (leaseTimer) clearTimeout(leaseTimer);
    if (purgeTimer) clearTimeout(purgeTimer);
    leaseTimer = purgeTimer = null;
    signal.interrupt();
    const drained = await bounded(loopDone, left());
    if (!drained) logger.warn({ stopTimeoutMs: cfg.stopTimeoutMs }, 'relay stop: the in-flight batch did not finish in time; its rows stay unpublished');
    await bounded(leaseRound, left());
    await bounded(purgeRound, left());
    try {
      // Safe even if a batch is still in flight: its shared slot locks fence the next owner.
      await relayLeaseRelease(db, { instanceId });
      await relayInstanceRemove(db, { instanceId });
    } catch (error) {
      events.emit('error', { error, stage: 'stop' });
    }
    held = [];
    await wakeup.stop();
    if (ownsPublisher) await bounded(publisher.close(), Math.max(left(), 1_000));
    state = 'stopped';
    logger.info({ drained }, 'relay stopped');
    events.emit('stopped', { drained });
  }

  return {
    instanceId,
    async start() {
      if (state !== 'new') throw new Error(`relay ${instanceId} was already started`);
      state = 'running';
      try {
        slotCount = await relaySlotCount(db);
      } catch (error) {
        state = 'stopped';
        throw error;
      }
      if (slotCount === 0) {
        state = 'stopped';
        throw new Error('relay_leases is empty: run the migrations (0002_relay) before starting a relay');
      }
      try {
        await renewAndRebalance();
      } catch (error) {
        events.emit('error', { error, stage: 'lease' });
      }
      scheduleLeases(cfg.heartbeatIntervalMs);
      schedulePurge(Math.min(cfg.purgeIntervalMs, 1_000));
      await wakeup.start();
      loopDone = loop();
      logger.info({ slots: held.length, slotCount }, 'relay started');
    },
    stop() {
      if (state === 'new') {
        state = 'stopped';
        return Promise.resolve();
      }
      if (!stopping) {
        state = 'stopping';
        stopping = shutdown();
      }
      return stopping;
    },
    on: (event, listener) => events.on(event, listener),
    slots: () => held,
  };
}
