import { enqueue, type Channel, type NotificationIntent } from '@notify/outbox';
import { silentLogger, systemClock } from '@notify/runtime';
import { type RetryConfig } from '@notify/dispatcher';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/db.js';
import { createTestKafka, type TestKafka } from '../../../../test/support/kafka.js';
import {
  createDispatcher,
  dispatcherConfig,
  dispatcherTopicSuffixes,
  type Dispatcher,
  type DispatcherConfig,
  type DispatcherDeps,
  type DispatcherConfigOverrides,
  type DispatcherEventMap,
  type DispatcherEventName,
} from '../../src/index.js';
import type { Provider } from '@notify/providers';
import { plainContent } from '../../src/testing/index.js';
import { startOutboxDrain, type OutboxDrain } from './outbox-drain.js';

/** The real stack for one test file: a fresh database, its own topics, the outbox drain, and dispatchers on demand. */
export interface Harness {
  readonly db: TestDatabase;
  readonly kafka: TestKafka;
  readonly config: DispatcherConfig;
  readonly drain: OutboxDrain;
  /** Every dispatcher event, recorded in order, from every dispatcher this harness made. */
  readonly seen: { readonly [E in DispatcherEventName]: DispatcherEventMap[E][] };
  /** A new dispatcher in the harness' consumer group (started), with the harness' config and `overrides`. */
  startDispatcher(
    providers: Partial<Record<Channel, Provider>>,
    overrides?: DispatcherConfigOverrides,
    extra?: Pick<DispatcherDeps, 'endpoints' | 'fallbacks'>,
  ): Promise<Dispatcher>;
  /** Enqueues with the harness' retry policy. */
  enqueue(intent: NotificationIntent): Promise<string>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  readonly retry?: Partial<RetryConfig>;
  readonly partitions?: number;
  readonly dispatcher?: DispatcherConfigOverrides & { sendTimeoutMs?: number; maxInFlight?: number; repairAfterMs?: number };
}

const EVENTS: DispatcherEventName[] = [
  'assigned',
  'dispatched',
  'attempt',
  'stateChanged',
  'retryScheduled',
  'skipped',
  'deferred',
  'deadLettered',
  'consumerError',
  'repaired',
  'outcomesFlushed',
];

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const retry: RetryConfig = { maxAttempts: 4, baseDelayMs: 200, maxDelayMs: 2000, jitter: 0, defaultTtlMs: 3_600_000, ...options.retry };
  const db = await createTestDatabase();
  const kafka = await createTestKafka();
  const config = dispatcherConfig({
    topicPrefix: kafka.prefix,
    retry,
    sendTimeoutMs: 2000,
    maxInFlight: 8,
    repairAfterMs: 3_600_000,
    ...options.dispatcher,
  });
  await kafka.createTopics(dispatcherTopicSuffixes(retry), options.partitions ?? 3);
  const drain = await startOutboxDrain(db.db, kafka.kafka, kafka.prefix);
  const seen = Object.fromEntries(EVENTS.map((e) => [e, []])) as unknown as { [E in DispatcherEventName]: DispatcherEventMap[E][] };
  const dispatchers: Dispatcher[] = [];
  return {
    db,
    kafka,
    config,
    drain,
    seen,
    async startDispatcher(providers, overrides = {}, extra = {}) {
      const d = createDispatcher(
        { ...config, ...overrides },
        { db: db.db, kafka: kafka.kafka, providers, content: plainContent(), clock: systemClock, logger: silentLogger, ...extra },
      );
      for (const e of EVENTS) d.on(e, (payload) => (seen[e] as unknown[]).push(payload));
      dispatchers.push(d);
      await d.start();
      return d;
    },
    async enqueue(intent) {
      const r = await enqueue(db.db, intent, { maxAttempts: retry.maxAttempts, defaultTtlMs: retry.defaultTtlMs });
      return r.notification.id;
    },
    async close() {
      await Promise.all(dispatchers.map((d) => d.stop({ timeoutMs: 1000 }).catch(() => undefined)));
      await drain.stop();
      await kafka.close();
      await db.close();
    },
  };
}

/** The notification's row. */
export async function stateOf(h: Harness, id: string) {
  return h.db.db.selectFrom('notifications').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** How many notifications are in each state. */
export async function countByState(h: Harness): Promise<Record<string, number>> {
  const rows = await h.db.db
    .selectFrom('notifications')
    .select(['state'])
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .groupBy('state')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}
