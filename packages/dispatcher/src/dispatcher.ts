import { fromKysely, type Channel } from '@notify/outbox';
import { type Clock, type Logger } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import type { Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import type { DispatcherConfig } from './config.js';
import { createDeliveryConsumer, deliveryLanes, type ConsumerStopReport, type DeliveryConsumer } from './consumer.js';
import type { ContentPreparer } from './content/content.js';
import { createDispatcherEvents, type OnDispatcherEvent } from './events.js';
import { createDeliveryHandler, createNotificationLoader } from './handler.js';
import { compose } from './message.js';
import { createKafkaDeadLetterSink, deadLetter } from './middleware/dead-letter.js';
import { tracing } from './middleware/tracing.js';
import { createOutcomeWriter } from './outcome-writer.js';
import type { EndpointGate, Provider } from '@notify/providers';
import { createRepairSweep } from './repair.js';
import { createKafkaConsumerProgress } from './consumer-progress.js';
import { createScheduleService } from './schedule.js';

/** The dispatcher's collaborators: `(config, deps)` like every component. */
export interface DispatcherDeps {
  readonly db: Kysely<Database>;
  readonly kafka: Kafka;
  /** One provider per channel (`createProviders`); a notification for a channel without one ends dead (permanent). */
  readonly providers: Partial<Record<Channel, Provider>>;
  /** Each channel's fallback provider, if any (`createFallbackProviders`). */
  readonly fallbacks?: Partial<Record<Channel, Provider>>;
  /** Endpoint health (`createEndpointGate`); absent: no circuit breaker, auto-disable or shared rate limits. */
  readonly endpoints?: EndpointGate;
  readonly content: ContentPreparer;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Uniform in [0, 1) for jitter. Default Math.random. */
  readonly random?: () => number;
}

/** A running dispatcher. */
export interface Dispatcher {
  /** Connects, joins the consumer group and starts the repair sweep. Resolves once the group is joined. */
  start(): Promise<void>;
  /**
   * Graceful shutdown (wire it to SIGTERM): stops fetching, lets running deliveries finish within
   * `timeoutMs` (default `shutdownTimeoutMs`; those past their provider call wait for their
   * outcome's commit), aborts the provider calls still running (they stay queued), commits what
   * finished, leaves the group. Messages read but not started are read again by the next owner.
   * Does not close the providers, the database or the Kafka client: their owner does.
   */
  stop(options?: { readonly timeoutMs?: number }): Promise<ConsumerStopReport>;
  /** Lifecycle events for metrics and tests. Returns the unsubscribe function. */
  readonly on: OnDispatcherEvent;
  /** Runs one repair pass now (it also runs every `repairIntervalMs`); returns how many notifications it re-published. */
  repairNow(): Promise<number>;
  /** Runs one schedule pass now (it also runs every `scheduleIntervalMs`); returns how many scheduled notifications it released. */
  releaseScheduledNow(): Promise<number>;
  /**
   * Deliveries started and not finished, both lanes: before or in their provider call (at most
   * `maxInFlight` + `priorityMaxInFlight`), or after it waiting for their outcome's commit (all
   * of them at most the lanes' `maxUnfinished`).
   */
  readonly inFlight: number;
}

/**
 * Builds the dispatcher: two Kafka consumers (the normal lane over `<prefix>.requests` and the
 * delay topics, the high-priority lane over `<prefix>.requests.high`, each its own group), the
 * delivery pipeline `tracing → dead-letter → deliver`, the dead-letter producer, the repair sweep
 * and the schedule service (scheduled sends).
 */
export function createDispatcher(config: DispatcherConfig, deps: DispatcherDeps): Dispatcher {
  const logger = deps.logger.child({ component: 'dispatcher' });
  const events = createDispatcherEvents(logger);
  const dlq = createKafkaDeadLetterSink(deps.kafka, config.topicPrefix);
  // Group commit of outcomes and batched reads: one transaction and one query per group of
  // concurrently finishing (starting) deliveries instead of one each (docs/retries.md, "Batching").
  let consumers: DeliveryConsumer[] = [];
  const outcomes = createOutcomeWriter(fromKysely(deps.db), {
    maxBatch: config.outcomeBatchSize,
    maxDelayMs: config.outcomeBatchDelayMs,
    busyKeyDelayMs: config.outcomeBusyKeyDelayMs,
    onFlush: (flush) => events.emit('outcomesFlushed', flush),
    yetToRecord: () => consumers.reduce((n, c) => n + c.calling, 0),
  });
  const notifications = createNotificationLoader(deps.db, { maxBatch: config.readBatchSize, delayMs: config.readBatchDelayMs });
  const deliver = createDeliveryHandler({
    db: deps.db,
    providers: deps.providers,
    ...(deps.fallbacks ? { fallbacks: deps.fallbacks } : {}),
    ...(deps.endpoints ? { endpoints: deps.endpoints } : {}),
    content: deps.content,
    clock: deps.clock,
    logger,
    events,
    config,
    outcomes,
    notifications,
    ...(deps.random ? { random: deps.random } : {}),
  });
  const handler = compose(tracing(), deadLetter(dlq, { events, logger }))(deliver);
  consumers = deliveryLanes(config).map((lane) =>
    createDeliveryConsumer(config, { kafka: deps.kafka, handler, prefetch: deliver.prefetch, clock: deps.clock, logger, events }, lane),
  );
  const progress = createKafkaConsumerProgress(deps.kafka, config);
  const repair = createRepairSweep(config, { db: deps.db, clock: deps.clock, logger, events, progress });
  const schedule = createScheduleService(config, { db: deps.db, clock: deps.clock, logger, events });
  let state: 'new' | 'started' | 'stopped' = 'new';

  return {
    on: events.on,
    get inFlight() {
      return consumers.reduce((n, c) => n + c.inFlight, 0);
    },
    repairNow: () => repair.runOnce(),
    releaseScheduledNow: () => schedule.runOnce(),
    async start() {
      if (state !== 'new') throw new Error(`dispatcher cannot start: it is ${state}`);
      state = 'started';
      await dlq.connect();
      await Promise.all(consumers.map((c) => c.start()));
      repair.start();
      schedule.start();
      logger.info(
        {
          groupId: config.groupId,
          maxInFlight: config.maxInFlight,
          maxUnfinished: config.maxUnfinished,
          tiers: config.tiers.map((t) => t.name),
        },
        'dispatcher started',
      );
    },
    async stop(options = {}) {
      if (state !== 'started') return { notStarted: 0, abortedInFlight: false };
      state = 'stopped';
      await repair.stop();
      await progress.close().catch(() => {});
      await schedule.stop();
      // Outcomes waiting for company are written now rather than after the group delay, so the
      // deliveries waiting on them finish (and are acknowledged) sooner.
      const writing = outcomes.flush();
      const reports = await Promise.all(consumers.map((c) => c.stop(options.timeoutMs ?? config.shutdownTimeoutMs)));
      const report: ConsumerStopReport = {
        notStarted: reports.reduce((n, r) => n + r.notStarted, 0),
        abortedInFlight: reports.some((r) => r.abortedInFlight),
      };
      // Deliveries wait for their group's commit, so after the consumer stopped nothing should be
      // queued; an outcome of a delivery the consumer gave up waiting for is still written (it is
      // not acknowledged: the next owner re-reads it and skips it by the guard).
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([writing.then(() => outcomes.flush()), deps.endpoints?.flush()]),
        new Promise<void>((r) => (timer = setTimeout(r, 2_000))),
      ]);
      clearTimeout(timer);
      await dlq.disconnect().catch(() => undefined);
      logger.info(report, 'dispatcher stopped');
      return report;
    },
  };
}
