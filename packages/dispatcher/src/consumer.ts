import { TOPICS, topicName } from '@notify/contract';
import { type Clock, type Logger } from '@notify/runtime';
import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { DispatcherConfig } from './config.js';
import { errorMessage } from '@notify/runtime';
import type { DispatcherEvents } from './events.js';
import { fromKafkaMessage, messageDueAt, orderingKey, type InboundMessage, type MessageHandler } from './message.js';
import { PartitionOffsets } from './partition-offsets.js';
import { dueOutOfRange } from './retry/delay-topics.js';
import { createReadAhead } from './read-ahead.js';
import { restartAfterFatalCrash } from './consumer-restart.js';
import { createKeyedScheduler, type TaskResult } from './scheduler.js';

/** What the delivery consumer needs. */
export interface DeliveryConsumerDeps {
  readonly kafka: Kafka;
  /** The full pipeline (middleware included) each due message goes through. */
  readonly handler: MessageHandler;
  /**
   * Reads ahead for a message that is among the next in its key's line (`DeliveryHandler.prefetch`):
   * called when the key's current delivery starts, for up to `READ_AHEAD` messages behind it, so
   * their reads overlap the provider calls before them.
   */
  readonly prefetch?: (message: InboundMessage) => void;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: DispatcherEvents;
}

/** What `stop` did. */
export interface ConsumerStopReport {
  /** Messages read but never started: they stay unacknowledged and are read again by the next owner. */
  readonly notStarted: number;
  /** True when running deliveries did not finish within the deadline and were aborted (they stay queued). */
  readonly abortedInFlight: boolean;
}

/**
 * One lane of deliveries: a consumer group over some topics, with its own in-flight bound. The
 * dispatcher runs two: `normal` (`requests` and every delay topic) and `high` (`requests.high`),
 * so a backlog in one never holds up the other (docs/delivery-options.md, "Priority").
 */
export interface DeliveryLane {
  readonly name: 'normal' | 'high';
  /** Topic suffixes (the prefix is added). */
  readonly topics: readonly string[];
  readonly groupId: string;
  /** Deliveries before or in their provider call at once (`KeyedSchedulerOptions.maxInFlight`). */
  readonly maxInFlight: number;
  /** Deliveries started and not finished at once (`KeyedSchedulerOptions.maxRunning`). */
  readonly maxUnfinished: number;
  readonly maxBuffered: number;
}

/** The dispatcher's two lanes for `config`. */
export function deliveryLanes(config: DispatcherConfig): DeliveryLane[] {
  return [
    {
      name: 'normal',
      topics: [TOPICS.requests, ...config.tiers.map((t) => t.topic)],
      groupId: config.groupId,
      maxInFlight: config.maxInFlight,
      maxUnfinished: config.maxUnfinished,
      maxBuffered: config.maxBuffered,
    },
    {
      name: 'high',
      topics: [TOPICS.requestsHigh],
      groupId: `${config.groupId}.high`,
      maxInFlight: config.priorityMaxInFlight,
      // The same room for finishing deliveries as the normal lane, in proportion to its permits.
      maxUnfinished: Math.ceil((config.priorityMaxInFlight * config.maxUnfinished) / config.maxInFlight),
      maxBuffered: Math.max(100, 10 * config.priorityMaxInFlight),
    },
  ];
}

/** The Kafka side of the dispatcher: a consumer group on one lane's topics (by default `<prefix>.requests` and every delay topic). */
export interface DeliveryConsumer {
  start(): Promise<void>;
  /**
   * Stops fetching, lets running deliveries finish within `timeoutMs` (those past their provider
   * call too: their outcomes commit), then aborts the provider calls still running, commits what
   * finished, leaves the group.
   */
  stop(timeoutMs: number): Promise<ConsumerStopReport>;
  /** Deliveries started and not finished: before or in their provider call, or after it waiting for their outcome's commit. */
  readonly inFlight: number;
  /** Deliveries before or in their provider call (each holds one of the lane's `maxInFlight` permits); they may still record an outcome. */
  readonly calling: number;
}

/** The longest a paused partition waits before it is re-read and re-checked (guards against clock jumps). */
const MAX_PAUSE_MS = 30_000;
const COMMIT_DEBOUNCE_MS = 100;
const HANDLER_RETRY_MIN_MS = 500;
const HANDLER_RETRY_MAX_MS = 30_000;
/**
 * kafkajs retries of the consumer's own requests (fetch, heartbeat, commit): about as many seconds
 * of trying as kafkajs's default (5 retries, ~9 s), but at most 1 s apart. When they run out
 * (the broker that coordinated the group was SIGKILLed: kafkajs keeps heartbeating to it until
 * then), kafkajs restarts the consumer after the *last* wait: up to ~10 s with the default policy,
 * a second stall after the broker loss; at most 1 s with this one (RELIABILITY.md, _Replication_).
 */
const KAFKA_CONSUMER_RETRY = { initialRetryTime: 300, maxRetryTime: 1_000, retries: 10 } as const;

/**
 * Messages of one key read ahead at most (`DeliveryConsumerDeps.prefetch`), topped up in groups of
 * at least half this many. On a key with a backlog, one key's chain then costs a provider call per
 * message, and its reads one query per group. A read is used only while younger than 1 s (the
 * handler's bound), so this many should start within a second on a key worth reading ahead for.
 * Measured with `pnpm bench --quick hot-key` (one key, 500 notifications): see docs/retries.md.
 */
const READ_AHEAD = 16;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * Creates the consumer. How it meets the rules:
 * - **Due times.** A message is started only when its `due_at` has passed. When the head of a
 *   partition is not due, the partition is paused and sought back to that message, and resumed
 *   by a timer at the due time (kafka-notes: `pause()` in a handler would silently resolve it).
 *   No handler sleeps, so heartbeats and rebalances carry on.
 * - **Ordering and concurrency.** Due messages go to a `KeyedScheduler`: same Kafka key (tenant/
 *   channel/recipient) one at a time in order; different keys concurrently up to `maxInFlight`
 *   provider calls overall, however many partitions there are. A delivery gives its permit back
 *   and frees its key when its provider call returns; until its outcome is committed it still
 *   counts against `maxUnfinished`. `eachBatch` returns at once (it only enqueues),
 *   so one slow key never holds up a partition; it waits only when `maxBuffered` messages are open.
 * - **Offsets.** `eachBatchAutoResolve` and `autoCommit` are off. Per partition, the committed
 *   offset is the lowest unfinished one (`PartitionOffsets`), so a crash re-reads exactly what
 *   was not finished. Re-read messages that are already running are recognised and skipped.
 * - **Failures.** A handler that throws (database down) is retried with backoff, key blocked,
 *   offset held; nothing crashes and nothing is dropped.
 */
export function createDeliveryConsumer(
  config: DispatcherConfig,
  deps: DeliveryConsumerDeps,
  lane: DeliveryLane = deliveryLanes(config)[0]!,
): DeliveryConsumer {
  const { clock, events, logger } = deps;
  const topics = lane.topics.map((s) => topicName(config.topicPrefix, s));
  const consumer: Consumer = deps.kafka.consumer({
    groupId: lane.groupId,
    allowAutoTopicCreation: false,
    maxWaitTimeInMs: config.fetchMaxWaitMs,
    sessionTimeout: config.sessionTimeoutMs,
    heartbeatInterval: config.heartbeatIntervalMs,
    retry: KAFKA_CONSUMER_RETRY,
  });
  const scheduler = createKeyedScheduler({
    maxInFlight: lane.maxInFlight,
    maxRunning: lane.maxUnfinished,
    onError: (error) => events.emit('consumerError', { phase: 'handler', error }),
  });
  const offsets = new Map<string, PartitionOffsets>();
  /** Each key's messages pushed to the scheduler and not yet started, for `prefetch`. */
  const readAhead = deps.prefetch ? createReadAhead<InboundMessage>({ depth: READ_AHEAD, prefetch: deps.prefetch }) : undefined;
  const resumeTimers = new Map<string, NodeJS.Timeout>();
  const shutdown = new AbortController();
  let stopping = false;
  let stopped: () => void = () => {};
  const whenStopping = new Promise<void>((r) => (stopped = r));
  let commitTimer: NodeJS.Timeout | undefined;
  let commitChain: Promise<void> = Promise.resolve();

  const tpKey = (topic: string, partition: number) => `${topic}|${partition}`;
  const offsetsFor = (topic: string, partition: number) => {
    const k = tpKey(topic, partition);
    let p = offsets.get(k);
    if (!p) offsets.set(k, (p = new PartitionOffsets()));
    return p;
  };

  const commitNow = async () => {
    const pending: { topic: string; partition: number; offset: number; tracker: PartitionOffsets }[] = [];
    for (const [k, tracker] of offsets) {
      const point = tracker.commitPoint();
      if (point === undefined) continue;
      const i = k.lastIndexOf('|');
      pending.push({ topic: k.slice(0, i), partition: Number(k.slice(i + 1)), offset: point, tracker });
    }
    if (pending.length === 0) return;
    try {
      await consumer.commitOffsets(pending.map(({ topic, partition, offset }) => ({ topic, partition, offset: String(offset) })));
      for (const p of pending) p.tracker.committed(p.offset);
    } catch (error) {
      // Not fatal: the offsets are committed with the next finished message, or re-read after a rebalance (and skipped).
      events.emit('consumerError', { phase: 'commit', error });
      logger.warn({ err: errorMessage(error) }, 'offset commit failed; will retry');
    }
  };
  const commitSoon = () => {
    if (commitTimer) return;
    commitTimer = setTimeout(() => {
      commitTimer = undefined;
      commitChain = commitChain.then(commitNow);
    }, COMMIT_DEBOUNCE_MS);
  };

  const holdUntilDue = (topic: string, partition: number, offset: string, waitMs: number) => {
    consumer.pause([{ topic, partitions: [partition] }]);
    consumer.seek({ topic, partition, offset });
    const k = tpKey(topic, partition);
    clearTimeout(resumeTimers.get(k));
    // The re-read message is checked again, so a timer firing a little early can never deliver early.
    const timer = setTimeout(
      () => {
        resumeTimers.delete(k);
        if (!stopping) consumer.resume([{ topic, partitions: [partition] }]);
      },
      Math.min(Math.max(1, waitMs), MAX_PAUSE_MS),
    );
    resumeTimers.set(k, timer);
  };

  const runTask = (key: string, message: InboundMessage, tracker: PartitionOffsets, offset: number) => {
    let failures = 0;
    return async (release: () => void): Promise<TaskResult> => {
      readAhead?.started(key, message);
      // The partition moved to another consumer while this waited: the new owner re-reads it.
      if (tracker.revoked) return undefined;
      try {
        // The key's next message may start, and this one's permit goes back, once its provider
        // call returned; this one's offset stays unfinished until its outcome is written (PartitionOffsets).
        const result = await deps.handler(message, shutdown.signal, { providerReturned: release });
        if (result.kind === 'not-due') return { retryInMs: Math.max(1, result.dueAt.getTime() - clock.now().getTime()) };
        if (result.kind === 'abandoned') return undefined; // offset stays open: the message is read again
        tracker.finish(offset);
        // While stopping, `stop` commits what finished; a commit scheduled after that would hit a left group.
        if (!tracker.revoked && !stopping) commitSoon();
        return undefined;
      } catch (error) {
        if (stopping) return undefined;
        failures++;
        const retryInMs = Math.min(HANDLER_RETRY_MAX_MS, HANDLER_RETRY_MIN_MS * 2 ** (failures - 1));
        events.emit('consumerError', { phase: 'handler', error });
        logger.error(
          { topic: message.topic, partition: message.partition, offset: message.offset, failures, retryInMs, err: errorMessage(error) },
          'delivery failed; retrying the same message',
        );
        return { retryInMs };
      }
    };
  };

  // kafkajs passes these as plain closures (no `this`), so destructuring them is safe.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const eachBatch = async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload) => {
    const { topic, partition } = batch;
    const tracker = offsetsFor(topic, partition);
    for (const m of batch.messages) {
      if (stopping || !isRunning() || isStale()) break;
      const offset = Number(m.offset);
      if (tracker.isDuplicate(offset)) {
        resolveOffset(m.offset);
        continue;
      }
      while (scheduler.size >= lane.maxBuffered && !stopping) {
        await Promise.race([scheduler.whenSizeBelow(lane.maxBuffered), whenStopping, sleep(1000)]);
        await heartbeat();
      }
      if (stopping) break;
      const message = fromKafkaMessage(topic, partition, m);
      const due = messageDueAt(message);
      const waitMs = due ? due.getTime() - clock.now().getTime() : 0;
      // Out of range, it goes to the handler, which dead-letters it, instead of holding the partition.
      if (waitMs > 0 && !dueOutOfRange(config.tiers, topic, waitMs)) {
        tracker.rewindTo(offset);
        holdUntilDue(topic, partition, m.offset, waitMs);
        break;
      }
      tracker.accept(offset);
      resolveOffset(m.offset);
      const key = orderingKey(message);
      readAhead?.push(key, message);
      scheduler.push(key, runTask(key, message, tracker, offset));
    }
    await heartbeat();
  };

  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const assignment = e.payload.memberAssignment as Record<string, number[]>;
    const assigned = new Set(Object.entries(assignment).flatMap(([t, ps]) => ps.map((p) => tpKey(t, p))));
    for (const [k, tracker] of offsets) {
      if (!assigned.has(k)) {
        tracker.revoked = true;
        offsets.delete(k);
      }
    }
    events.emit('assigned', { partitions: assigned.size, lane: lane.name });
    logger.info({ partitions: assigned.size, lane: lane.name }, 'dispatcher joined the consumer group');
  });
  consumer.on(consumer.events.CRASH, (e) => {
    events.emit('consumerError', { phase: 'consumer', error: e.payload.error });
    logger.error({ err: errorMessage(e.payload.error), restart: e.payload.restart }, 'kafka consumer crashed');
  });
  const run = () => consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1, eachBatch });
  // A crash kafkajs does not restart from (restart: false) would leave the lane unread for good.
  restartAfterFatalCrash(consumer, { run, stopped: () => stopping, logger });

  return {
    get inFlight() {
      return scheduler.running;
    },
    get calling() {
      return scheduler.holdingPermits;
    },
    async start() {
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: true });
      await run();
    },
    async stop(timeoutMs) {
      stopping = true;
      stopped();
      for (const t of resumeTimers.values()) clearTimeout(t);
      resumeTimers.clear();
      try {
        consumer.pause(topics.map((topic) => ({ topic })));
      } catch {
        // not running: nothing to pause
      }
      const notStarted = scheduler.close();
      readAhead?.clear();
      let abortedInFlight = false;
      const finished = await Promise.race([scheduler.whenIdle().then(() => true), sleep(timeoutMs).then(() => false)]);
      if (!finished) {
        abortedInFlight = true;
        shutdown.abort();
        await Promise.race([scheduler.whenIdle(), sleep(2000)]);
      }
      clearTimeout(commitTimer);
      commitTimer = undefined;
      await commitChain;
      await commitNow();
      // kafkajs' disconnect waits for the running batch and then leaves the group; bound it.
      await Promise.race([consumer.disconnect().catch(() => undefined), sleep(5_000)]);
      return { notStarted, abortedInFlight };
    },
  };
}
