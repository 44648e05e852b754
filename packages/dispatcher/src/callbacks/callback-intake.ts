import { createHash } from 'node:crypto';
import { HEADERS, TOPICS, parseStatusEvent, topicName } from '@notify/contract';
import type { SqlExecutor } from '@notify/outbox';
import { type Clock, type Logger, errorSummary, failureBackoffMs } from '@notify/runtime';
import type { Admin, Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import { type DeadLetterSink, createKafkaDeadLetterSink, deadLetterFor } from '../middleware/dead-letter.js';
import { restartAfterFatalCrash } from '../consumer-restart.js';
import { fromKafkaMessage, headerText } from '../message.js';
import type { CallbackOutcomeObserver } from './callback-sender.js';
import { type CallbackEventRow, callbackDeliveryEnqueue } from './sql/callback-delivery-enqueue.js';
import { callbackEndpointEvents } from './sql/callback-endpoint-events.js';
import { callbackEndpointsExist } from './sql/callback-endpoints-exist.js';

/** Settings of the callback intake. */
export interface CallbackIntakeConfig {
  readonly topicPrefix: string;
  /** Its own consumer group on `<prefix>.events`, apart from the dispatcher's. */
  readonly groupId: string;
  /** Pending deliveries per tenant at most; further events are dropped and counted. Default 10,000. */
  readonly maxBacklogPerTenant?: number;
  /** Kafka session timeout of the group. Default 30 s. */
  readonly sessionTimeoutMs?: number;
  /**
   * How long what the intake read of a tenant's callback endpoint (its event types, or that it
   * has none) is trusted, ms. Default 1 s: a callback registered or changed applies to the events
   * read from at most this long after. 0: read for every batch.
   */
  readonly endpointCacheMs?: number;
  /**
   * How often the intake asks whether any tenant has a callback endpoint, ms. While none has, it
   * reads no events: it pauses its consumer and, at each check, moves its offsets to the end of
   * the topic (what reading and skipping every event would do). Default 1 s; 0: always read.
   */
  readonly idleCheckMs?: number;
}

/** What the intake needs. */
export interface CallbackIntakeDeps {
  readonly db: SqlExecutor;
  readonly kafka: Kafka;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where malformed events go. Default: `<prefix>.dlq` through its own producer. */
  readonly deadLetters?: DeadLetterSink;
  /** Told how many events a full backlog dropped (metrics). */
  readonly observe?: CallbackOutcomeObserver;
}

/** The callback intake: a Kafka consumer. */
export interface CallbackIntake {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** True while no tenant has a callback endpoint and the intake reads nothing. */
  paused(): boolean;
}

/** The webhook-id of an event: the same bytes (a re-read, a duplicate publish) give the same id. */
function eventIdOf(value: Buffer): string {
  return `evt_${createHash('sha256').update(value).digest('hex').slice(0, 32)}`;
}

/**
 * Offsets of handled batches are committed at most this often (and when the intake stops), not
 * after every batch: kafkajs' `autoCommit` commits after each batch, which on a stream of small
 * batches (one per status event on a hot key) is one OffsetCommit request per event.
 */
const COMMIT_INTERVAL_MS = 1_000;

/**
 * Reads `<prefix>.events` in a consumer group of its own and turns each status event a tenant's
 * callback asked for into a pending row of `callback_deliveries`, one INSERT per Kafka batch, and
 * commits the offsets of handled batches after them, at most once a second: at-least-once (a
 * crash re-reads at most the last second's batches), and a re-read batch is not queued twice
 * (unique event id). An event whose `tenant-id` header names a tenant without a callback endpoint
 * (or whose `message-type` header names a type its endpoint did not ask for) is skipped unread;
 * what a tenant's endpoint wants is read at most once per `endpointCacheMs` (1 s). While no tenant
 * has an endpoint at all, it reads nothing (`idleCheckMs`, see `checkIdle`). The dispatcher's consumers never wait
 * for it, and it never waits for a callback receiver (the sender does, from PostgreSQL). A
 * malformed event that is not skipped so goes to the DLQ.
 */
export function createCallbackIntake(config: CallbackIntakeConfig, deps: CallbackIntakeDeps): CallbackIntake {
  const topic = topicName(config.topicPrefix, TOPICS.events);
  const maxBacklog = config.maxBacklogPerTenant ?? 10_000;
  const endpointCacheMs = config.endpointCacheMs ?? 1_000;
  /** Per tenant: the event types its callback asked for (null: it has none), read at `at`. */
  const endpoints = new Map<string, { readonly types: ReadonlySet<string> | null; readonly at: number }>();
  const log = deps.logger.child({ component: 'callbacks' });
  const ownSink = deps.deadLetters ? undefined : createKafkaDeadLetterSink(deps.kafka, config.topicPrefix);
  const sink: DeadLetterSink = deps.deadLetters ?? ownSink!;
  let consumer: Consumer | undefined;
  /** The next offset to commit per `topic|partition`: every batch below it is handled. */
  const handled = new Map<string, { topic: string; partition: number; offset: string }>();
  let commitTimer: NodeJS.Timeout | undefined;
  let committing: Promise<void> = Promise.resolve();
  /** The batch being handled (settled). */
  let running: Promise<void> = Promise.resolve();
  let stopping = false;
  const idleCheckMs = config.idleCheckMs ?? 1_000;
  let admin: Admin | undefined;
  /** The partitions of `topic` this member owns (the last GROUP_JOIN's assignment). */
  let owned: readonly number[] = [];
  let idle = false;
  let idleTimer: NodeJS.Timeout | undefined;
  let checking: Promise<void> = Promise.resolve();
  /** Per partition: the offset the last idle check moved it to (nothing to commit when unchanged). */
  const skippedTo = new Map<number, string>();

  const commitHandled = (): Promise<void> => {
    clearTimeout(commitTimer);
    commitTimer = undefined;
    const c = consumer;
    if (!c || handled.size === 0) return committing;
    const offsets = [...handled.values()];
    handled.clear();
    committing = committing.then(() =>
      c.commitOffsets(offsets).catch((err: unknown) => {
        // Not fatal: the batches are read again after a restart or rebalance, and not queued twice.
        log.warn({ err: errorSummary(err) }, 'callback offset commit failed');
      }),
    );
    return committing;
  };

  /** One batch: its wanted events queued in one statement, malformed ones dead-lettered; its offset noted for the next commit. */
  const handleBatch = async (payload: EachBatchPayload): Promise<void> => {
    const { batch } = payload;
    // Fetched before the consumer paused, or by a consumer that restarted after a crash without
    // its pause: paused (again), and left unresolved; the idle check moves the offsets past it, or
    // the consumer resumes from it when an endpoint has appeared meanwhile.
    if (idle) {
      payload.pause();
      return;
    }
    const rows: CallbackEventRow[] = [];
    // Which of the tenants the batch's `tenant-id` headers name have a callback, and for which
    // types: read at most `endpointCacheMs` before the batch is handled.
    const now = deps.clock.now().getTime();
    const tenants = batch.messages.map((message) => headerText(message.headers, HEADERS.tenantId));
    const stale = new Set<string>();
    for (const tenant of tenants) {
      if (tenant === undefined || stale.has(tenant)) continue;
      const cached = endpoints.get(tenant);
      if (!cached || now - cached.at >= endpointCacheMs) stale.add(tenant);
    }
    if (stale.size > 0) {
      const read = await callbackEndpointEvents(deps.db, { tenantIds: [...stale] });
      for (const tenant of stale) {
        endpoints.delete(tenant);
        endpoints.set(tenant, { types: read.get(tenant) ?? null, at: now });
      }
      while (endpoints.size > 10_000) endpoints.delete(endpoints.keys().next().value!);
    }
    for (const [i, message] of batch.messages.entries()) {
      // An event whose headers name a tenant without a callback, or a type its callback did not
      // ask for, would queue nothing: it is skipped unread (no parse, no hash, no bytes sent to
      // PostgreSQL). Parsing and hashing every event cost ~1.5 % of the service's CPU in a drain
      // where no tenant had a callback.
      const tenant = tenants[i];
      if (tenant !== undefined) {
        const types = endpoints.get(tenant)?.types;
        if (!types) continue;
        const type = headerText(message.headers, HEADERS.messageType);
        if (type !== undefined && !types.has(type)) continue;
      }
      const parsed = parseStatusEvent(message.value);
      if (!parsed.ok || message.value === null) {
        const reason = parsed.ok ? 'empty value' : parsed.reason;
        await sink.send(deadLetterFor(fromKafkaMessage(batch.topic, batch.partition, message), `callbacks: ${reason}`));
        log.warn({ topic: batch.topic, partition: batch.partition, offset: message.offset }, 'malformed status event dead-lettered');
        continue;
      }
      const e = parsed.message;
      rows.push({
        tenantId: e.tenant_id,
        eventId: eventIdOf(message.value),
        notificationId: e.id,
        type: e.type,
        payload: message.value.toString('utf8'),
      });
    }
    const result = await callbackDeliveryEnqueue(deps.db, { events: rows, now: deps.clock.now(), maxBacklog });
    if (result.dropped > 0) {
      log.warn({ dropped: result.dropped }, 'callback backlog full: events dropped');
      deps.observe?.('dropped', result.dropped);
    }
    const last = batch.messages[batch.messages.length - 1];
    if (last) {
      payload.resolveOffset(last.offset);
      const offset = (BigInt(last.offset) + 1n).toString();
      handled.set(`${batch.topic}|${batch.partition}`, { topic: batch.topic, partition: batch.partition, offset });
      commitTimer ??= setTimeout(() => void commitHandled(), COMMIT_INTERVAL_MS).unref();
    }
    await payload.heartbeat();
  };

  /**
   * While no tenant has a callback endpoint the events would all be skipped: the consumer is paused
   * (no fetch, no decoding: two status events per notification; in a warm drain the service's
   * CPU per notification fell from 0.192 to 0.166 ms, BENCHMARKS.md session 23) and, at each check, every owned
   * partition is moved to the topic's end and that offset committed, which is what reading and
   * skipping them would have done. When an endpoint appears the consumer resumes from the last
   * check's offsets, so the events of at most `idleCheckMs` before it appeared are read, with it.
   */
  const checkIdle = async (c: Consumer, a: Admin): Promise<boolean> => {
    try {
      if (await callbackEndpointsExist(deps.db)) {
        if (idle && !stopping) {
          idle = false;
          skippedTo.clear();
          c.resume([{ topic }]);
          log.info({ topic }, 'callback intake resumed: a tenant has a callback endpoint');
        }
        return true;
      }
      c.pause([{ topic }]); // again at each check: a consumer restarted after a crash forgot it
      if (!idle) {
        idle = true;
        await running; // a batch in hand finishes (and notes its offset) before the offsets move past it
        log.info({ topic }, 'callback intake paused: no tenant has a callback endpoint');
      }
      const ends = await a.fetchTopicOffsets(topic);
      // Asked again after the ends were read: an endpoint registered before that may want events
      // below them; the next check resumes from the offsets already committed. With none now, every
      // event below the ends was published before any endpoint existed.
      if (stopping || (await callbackEndpointsExist(deps.db))) return true;
      for (const { partition, offset } of ends) {
        if (!owned.includes(partition) || skippedTo.get(partition) === offset) continue;
        c.seek({ topic, partition, offset });
        skippedTo.set(partition, offset);
        handled.set(`${topic}|${partition}`, { topic, partition, offset });
      }
      if (handled.size > 0) await commitHandled();
      return true;
    } catch (err) {
      log.warn({ err: errorSummary(err) }, 'callback intake idle check failed');
      return false;
    }
  };

  /** One check now, the next `idleCheckMs` after it ends (until the intake stops), later after failures in a row. */
  let idleCheckFailures = 0;
  const runIdleCheck = (c: Consumer, a: Admin): void => {
    checking = checkIdle(c, a).then((ok) => {
      idleCheckFailures = ok ? 0 : idleCheckFailures + 1;
      if (!stopping) idleTimer = setTimeout(() => runIdleCheck(c, a), failureBackoffMs(idleCheckMs, idleCheckFailures)).unref();
    });
  };

  return {
    paused: () => idle,
    async start() {
      await ownSink?.connect();
      const c = deps.kafka.consumer({
        groupId: config.groupId,
        allowAutoTopicCreation: false,
        sessionTimeout: config.sessionTimeoutMs ?? 30_000,
        // A fetch waits up to 250 ms for a full MiB of events instead of returning with the first
        // one: under a trickle each fetch carried an event or two. At 100/s the data segments the
        // service sent to Kafka per notification fell from 1.85-2.16 to 1.40-1.46 with it
        // (BENCHMARKS.md, session 18). The sender claims every 250 ms anyway; a callback is at most this much later.
        maxWaitTimeInMs: 250,
        minBytes: 1_048_576,
      });
      consumer = c;
      // A partition handed to another member is its owner's to commit from now on.
      c.on(c.events.GROUP_JOIN, (e) => {
        const assignment = e.payload.memberAssignment as Record<string, number[]>;
        for (const [k, o] of handled) if (!assignment[o.topic]?.includes(o.partition)) handled.delete(k);
        owned = assignment[topic] ?? [];
        skippedTo.clear(); // a partition handed back may have moved on meanwhile
      });
      const run = () =>
        c.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          eachBatch: (payload) => {
            const handling = handleBatch(payload);
            running = handling.catch(() => {});
            return handling;
          },
        });
      restartAfterFatalCrash(c, { run, stopped: () => stopping, logger: log });
      await c.connect();
      // From the beginning for a new group: an event published before the first start is not lost
      // (only tenants with a registered callback get anything).
      await c.subscribe({ topic, fromBeginning: true });
      await run();
      if (idleCheckMs > 0) {
        const a = deps.kafka.admin();
        await a.connect();
        admin = a;
        runIdleCheck(c, a);
      }
    },
    async stop() {
      stopping = true;
      try {
        // Commit what was handled while still in the group: no new batch, the running one, then the commit.
        try {
          consumer?.pause([{ topic }]);
        } catch {
          // not running: nothing to pause
        }
        clearTimeout(idleTimer);
        await checking;
        await running;
        await commitHandled();
        await consumer?.disconnect();
      } catch (err) {
        log.warn({ err: errorSummary(err) }, 'callback consumer disconnect failed');
      }
      await admin?.disconnect().catch(() => {});
      await ownSink?.disconnect();
    },
  };
}
