import { performance } from 'node:perf_hooks';
import type { Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { type Clock, type Logger, errorSummary, settlesWithin, silentLogger, systemClock } from '@notify/runtime';
import { createBatchSource } from './batch-source.js';
import { type RelayConfig, resolveRelayConfig } from './config.js';
import { type RelayEventName, type RelayListener, createRelayEvents } from './events.js';
import { createKafkaPublisher } from './kafka-publisher.js';
import { createLeaseService } from './lease-service.js';
import { createPublishLoop } from './publish-loop.js';
import type { Publisher } from './publisher.js';
import { createPurgeService } from './purge-service.js';
import { relaySlotCount } from './sql/relay-slot-count.js';
import { createWakeup } from './wakeup.js';

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
export type RelayDeps = RelayDepsBase &
  ({ readonly kafka: Kafka; readonly publisher?: undefined } | { readonly publisher: Publisher; readonly kafka?: undefined });

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
  readonly on: <E extends RelayEventName>(event: E, listener: RelayListener<E>) => () => void;
  /** Slots this instance holds now. */
  slots(): readonly number[];
}

/**
 * Creates a relay instance: per batch, one transaction locks the hash slots it leases, reads
 * their next unpublished outbox rows, publishes them, marks them published and commits.
 * Several instances (in one process or many) split the slots between them; per-key order holds
 * across them. See docs/relay.md for the design and the guarantees.
 *
 * Three small services do the work: the publish loop (`createPublishLoop`), the lease service
 * (`createLeaseService`, periodic) and the purge service (`createPurgeService`, periodic). This
 * function wires them (the held slots go from the lease service to the other two), owns the
 * wake-up (LISTEN/NOTIFY) and the publisher, and stops everything in order.
 */
export function createRelay(config: RelayConfig, deps: RelayDeps): Relay {
  const cfg = resolveRelayConfig(config);
  const instanceId = cfg.instanceId;
  const clock = deps.clock ?? systemClock;
  const logger = (deps.logger ?? silentLogger).child({ component: 'relay', instanceId });
  const events = createRelayEvents(logger);
  const db = fromKysely(deps.db);
  const ownsPublisher = deps.publisher === undefined;
  const publisher: Publisher = deps.publisher ?? createKafkaPublisher(deps.kafka, { logger });

  let state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  let slotCount = 0; // rows of relay_leases, read at start
  let stopping: Promise<void> | null = null;

  const leases = createLeaseService(cfg, { db, clock, logger, events, slotCount: () => slotCount, onAcquired: () => loop.wake() });
  const purge = createPurgeService(cfg, { db, clock, logger, events, heldSlots: leases.slots });
  const loop = createPublishLoop(cfg, {
    batches: createBatchSource(cfg, { db: deps.db, clock, events, slotCount: () => slotCount }),
    publisher,
    db,
    heldSlots: leases.slots,
    events,
    logger,
    afterPublish: deps.hooks?.afterPublish,
  });
  const wakeup = createWakeup({
    connectionString: deps.connectionString,
    onNotify: () => loop.wake(),
    onConnected: (reconnect) => {
      events.emit('wakeupConnected', { reconnect });
      loop.wake();
    },
    onError: (error) => {
      logger.warn({ err: errorSummary(error) }, 'relay LISTEN connection lost; reconnecting');
      events.emit('error', { error, stage: 'wakeup' });
    },
  });

  async function shutdown(): Promise<void> {
    const deadline = performance.now() + cfg.stopTimeoutMs;
    const left = () => deadline - performance.now();
    // No lease or purge round starts from here on; one already running is awaited after the
    // loop, within the same deadline.
    const leasesStopped = leases.stop(cfg.stopTimeoutMs);
    const purgeStopped = purge.stop(cfg.stopTimeoutMs);
    const drained = await settlesWithin(loop.stop(), left());
    if (!drained)
      logger.warn(
        { stopTimeoutMs: cfg.stopTimeoutMs },
        'relay stop: the in-flight batch did not finish in time; its rows stay unpublished',
      );
    await leasesStopped;
    await purgeStopped;
    await leases.releaseAll();
    await wakeup.stop();
    if (ownsPublisher) await settlesWithin(publisher.close(), Math.max(left(), 1_000));
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
        await leases.runOnce();
      } catch (error) {
        events.emit('error', { error, stage: 'lease' });
      }
      leases.start();
      purge.start();
      await wakeup.start();
      loop.start();
      logger.info({ slots: leases.slots().length, slotCount }, 'relay started');
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
    slots: leases.slots,
  };
}
