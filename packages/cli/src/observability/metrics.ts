import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CHANNELS, NOTIFICATION_STATES, fromKysely } from '@notify/outbox';
import { type Clock, type Logger, silentLogger, systemClock, withTimeout } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import { type OutboxLag, outboxLag } from '@notify/relay';
import type { Kysely } from 'kysely';
import { notificationCountByState } from '../sql/notification-count-by-state.js';
import { notificationQueueAge } from '../sql/notification-queue-age.js';
import { callbackDeliveryCountPending } from '../sql/callback-delivery-count-pending.js';
import { endpointCountNotOk } from '../sql/endpoint-count-not-ok.js';

/** Buckets of the provider latency histogram, in seconds: 5 ms to the 30 s send-timeout range. */
export const PROVIDER_LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];
/** Buckets of the HTTP request duration histogram, in seconds. */
export const HTTP_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Buckets of `notify_api_enqueue_group_size` (requests per group; NOTIFY_API_GROUP_COMMIT is 100 by default). */
const ENQUEUE_GROUP_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128];

/** One delivery attempt as the metrics see it. */
export interface AttemptObservation {
  readonly channel: string;
  /** sent | transient | permanent | expired | suppressed */
  readonly outcome: string;
  /** Time spent in the provider call; omitted when no provider was called (suppressed, expired). */
  readonly latencySeconds?: number | undefined;
}

/** Options of `createMetrics`. */
export interface CreateMetricsOptions {
  /** Source of the SQL-backed gauges (notifications by state, queue age, outbox lag). Omit to leave them out. */
  readonly db?: Kysely<Database>;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** The SQL gauges are re-read at scrape time, at most once per this many ms. Default 5000. */
  readonly refreshMs?: number;
  /** Node.js process metrics (heap, event loop lag, …). Default true. */
  readonly processMetrics?: boolean;
  /**
   * The dispatcher group's lag per topic, in messages (the console's `consumerLag`), read at
   * scrape time at most once per refreshMs: `notify_kafka_consumer_lag_messages`. Omit to leave it out.
   */
  readonly consumerLag?: () => Promise<readonly { readonly topic: string; readonly lag: number }[]>;
  /**
   * The checks behind /readyz, run at scrape time at most once per refreshMs, each within 2 s:
   * `notify_ready{check}` is 1 when it passed. Omit to leave it out.
   */
  readonly readiness?: Readonly<Record<string, () => Promise<void>>>;
}

/**
 * The service's Prometheus metrics, on their own registry (never prom-client's global one, so
 * several instances can live in one test process). Counters are fed by the relay's and the
 * dispatcher's lifecycle events (`watchRelay`, `watchDispatcher` in lifecycle-metrics.ts);
 * gauges about stored state are read from PostgreSQL at scrape time.
 * Names and labels are documented in docs/observability.md.
 */
export interface Metrics {
  readonly registry: Registry;
  /** The text exposition format, for GET /metrics. */
  render(): Promise<string>;
  /** The content type of `render()`'s output. */
  readonly contentType: string;
  observeHttp(labels: { method: string; route: string; status: number }, seconds: number): void;
  /** A request the API shed with 503 `overloaded`, by reason (event_loop_delay, event_loop_utilization, in_flight). */
  observeShed(reason: string): void;
  /** A connection to the API port closed as soon as it was accepted: NOTIFY_API_MAX_CONNECTIONS were open. */
  observeConnectionDropped(): void;
  /** A group of POST /v1/notifications requests written in one statement; `isolated`: it failed and each was written on its own. */
  observeEnqueueGroup(size: number, isolated: boolean): void;
  observeAttempt(attempt: AttemptObservation): void;
  /** Messages the relay published. */
  observePublished(count: number): void;
  /** A relay failure; `stage` is where (claim, publish, mark, lease, wakeup, purge). */
  observeRelayError(stage: string): void;
  /** A dispatcher failure it survives; `phase` is where (handler, commit, consumer, repair, schedule, dead-letter). */
  observeConsumerError(phase: string): void;
  /** The dispatcher's consumer of `lane` joined its group (start, rebalance, restart after a crash). */
  observeGroupJoin(lane: string): void;
  /** A delivery started this long after it was due. */
  observeLateness(seconds: number): void;
  /** A retry was scheduled on a delay topic (suffix, e.g. retry.5s). */
  observeRetryScheduled(topic: string): void;
  /** The repair sweep re-published overdue notifications. */
  observeRepaired(count: number): void;
  /** A message moved to `<prefix>.dlq`. */
  observeDeadLetter(code: string): void;
  /** A notification became dead (terminal), by channel and dead_reason. */
  observeDead(channel: string, reason: string): void;
  /** The relay set aside an outbox row Kafka refuses for good (`reason`: message_too_large, invalid_record, …). */
  observeRefused(reason: string): void;
  /** What became of status callbacks (docs/callbacks.md): delivered, retried, failed, dropped; `count` of them. */
  observeCallback(outcome: 'delivered' | 'retried' | 'failed' | 'dropped', count: number): void;
}

/** Builds the registry and every metric. */
export function createMetrics(options: CreateMetricsOptions = {}): Metrics {
  const registry = new Registry();
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const refreshMs = options.refreshMs ?? 5_000;
  // Standard names (process_*, nodejs_*), so stock Node.js dashboards and alerts work unchanged.
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });

  const httpRequests = new Counter({
    name: 'notify_http_requests_total',
    help: 'HTTP requests by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const shed = new Counter({
    name: 'notify_api_requests_shed_total',
    help: 'Requests the API answered 503 overloaded before any work, by reason (event_loop_delay, event_loop_utilization, in_flight)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const connectionsDropped = new Counter({
    name: 'notify_api_connections_dropped_total',
    help: 'Connections to the API port closed as soon as they were accepted, because NOTIFY_API_MAX_CONNECTIONS were open',
    registers: [registry],
  });
  const enqueueGroupSize = new Histogram({
    name: 'notify_api_enqueue_group_size',
    help: 'POST /v1/notifications requests written together in one statement (group commit), per group',
    buckets: ENQUEUE_GROUP_BUCKETS,
    registers: [registry],
  });
  const enqueueGroupsIsolated = new Counter({
    name: 'notify_api_enqueue_groups_isolated_total',
    help: 'Groups of POST /v1/notifications whose statement failed, so that each request was written on its own',
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'notify_http_request_duration_seconds',
    help: 'HTTP request duration by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: HTTP_DURATION_BUCKETS,
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'notify_attempts_total',
    help: 'Delivery attempts by outcome and channel',
    labelNames: ['outcome', 'channel'] as const,
    registers: [registry],
  });
  const providerLatency = new Histogram({
    name: 'notify_provider_latency_seconds',
    help: 'Provider call duration by channel and outcome',
    labelNames: ['channel', 'outcome'] as const,
    buckets: PROVIDER_LATENCY_BUCKETS,
    registers: [registry],
  });
  const published = new Counter({
    name: 'notify_relay_published_total',
    help: 'Messages the relay published to Kafka',
    registers: [registry],
  });
  const relayErrors = new Counter({
    name: 'notify_relay_errors_total',
    help: 'Relay failures by stage (claim, publish, mark, lease, wakeup, purge); the relay retries them',
    labelNames: ['stage'] as const,
    registers: [registry],
  });
  const consumerErrors = new Counter({
    name: 'notify_consumer_errors_total',
    help: 'Dispatcher failures by phase (handler, commit, consumer, repair, schedule, dead-letter); the dispatcher survives them',
    labelNames: ['phase'] as const,
    registers: [registry],
  });
  const groupJoins = new Counter({
    name: 'notify_kafka_group_joins_total',
    help: 'Times the dispatcher joined its Kafka consumer group, by lane: 1 at start, +1 per rebalance or consumer restart',
    labelNames: ['lane'] as const,
    registers: [registry],
  });
  const lateness = new Histogram({
    name: 'notify_dispatch_lateness_seconds',
    help: 'How long after its due time a delivery started',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const retriesScheduled = new Counter({
    name: 'notify_retries_scheduled_total',
    help: 'Retries scheduled, by delay topic',
    labelNames: ['topic'] as const,
    registers: [registry],
  });
  const repaired = new Counter({
    name: 'notify_repaired_total',
    help: 'Overdue queued notifications re-published by the repair sweep',
    registers: [registry],
  });
  const deadLetters = new Counter({
    name: 'notify_dead_letters_total',
    help: 'Messages moved to <prefix>.dlq, by dead-letter code (DEAD_LETTER_CODES)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const dead = new Counter({
    name: 'notify_dead_total',
    help: 'Notifications that became dead, by channel and dead_reason',
    labelNames: ['channel', 'reason'] as const,
    registers: [registry],
  });
  const refused = new Counter({
    name: 'notify_outbox_refused_total',
    help: 'Outbox rows Kafka refuses for good, set aside in outbox_refused, by reason (message_too_large, record_list_too_large, invalid_record)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const callbacks = new Counter({
    name: 'notify_callback_deliveries_total',
    help: 'Status callbacks by outcome: delivered, retried (a transient failure, attempts left), failed (for good), dropped (the tenant backlog was full)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const collectErrors = new Counter({
    name: 'notify_metrics_collect_errors_total',
    help: 'Failures reading the SQL-backed gauges (the last good values are kept)',
    registers: [registry],
  });

  if (options.consumerLag) {
    const lagOf = options.consumerLag;
    // Bounded, as the readiness checks are: with Kafka down, kafkajs's own retries took a scrape
    // past Prometheus's 10-s scrape timeout, so every gauge of the process went stale with it.
    const read = cachedRead(
      () => withTimeout(lagOf(), READ_TIMEOUT_MS, () => new Error(`Kafka did not answer within ${READ_TIMEOUT_MS} ms`)),
      {
        clock,
        refreshMs,
      },
    );
    new Gauge({
      name: 'notify_kafka_consumer_lag_messages',
      help: 'Messages the dispatcher consumer group has not consumed yet, by topic (requests and retry tiers)',
      labelNames: ['topic'] as const,
      registers: [registry],
      async collect() {
        try {
          const lags = await read();
          this.reset();
          for (const l of lags) this.set({ topic: l.topic }, l.lag);
        } catch (err) {
          collectErrors.inc();
          // Debug: the lag source says when Kafka stops and starts answering (createPipelineProbe's
          // logger), where a line per scrape said it every 15 s for the whole outage.
          logger.debug({ err: (err as Error).message }, 'metrics: reading the consumer lag failed');
        }
      },
    });
  }

  if (options.readiness) {
    const checks = Object.entries(options.readiness);
    const read = cachedRead(
      () =>
        Promise.all(
          checks.map(async ([check, run]) => {
            const ok = await withTimeout(
              run(),
              READ_TIMEOUT_MS,
              () => new Error(`${check} did not answer within ${READ_TIMEOUT_MS} ms`),
            ).then(
              () => true,
              () => false,
            );
            return { check, ok };
          }),
        ),
      { clock, refreshMs },
    );
    new Gauge({
      name: 'notify_ready',
      help: 'Whether each readiness check (the ones behind /readyz: database, kafka) passed at the last scrape: 1 yes, 0 no',
      labelNames: ['check'] as const,
      registers: [registry],
      async collect() {
        for (const r of await read()) this.set({ check: r.check }, r.ok ? 1 : 0);
      },
    });
  }

  if (options.db) {
    const executor = fromKysely(options.db);
    let snapshot: Promise<Snapshot> | undefined;
    let snapshotAt = -Infinity;
    let last: Snapshot | undefined;
    // Every SQL gauge reads one shared snapshot, so a scrape costs five queries at most, and
    // none when the last snapshot is younger than refreshMs.
    const read = async (): Promise<Snapshot | undefined> => {
      const now = clock.now();
      if (!snapshot || now.getTime() - snapshotAt >= refreshMs) {
        snapshotAt = now.getTime();
        // Bounded: a query on a connection whose server stopped answering (not refusing) waits
        // for ever, past the pool's wait for a connection.
        const reading = withTimeout(
          (async () => {
            const [counts, ages, backlog, endpoints, callbacksPending] = await Promise.all([
              notificationCountByState(executor),
              notificationQueueAge(executor),
              outboxLag(executor, { now }),
              endpointCountNotOk(executor),
              callbackDeliveryCountPending(executor),
            ]);
            return { now, counts, ages, backlog, endpoints, callbacksPending };
          })(),
          READ_TIMEOUT_MS,
          () => new Error(`PostgreSQL did not answer within ${READ_TIMEOUT_MS} ms`),
        );
        // Counted and logged once per failed snapshot, not once per gauge that reads it.
        reading.catch((err: unknown) => {
          if (snapshot === reading) snapshot = undefined;
          collectErrors.inc();
          logger.warn({ err: (err as Error).message }, 'metrics: reading the SQL gauges failed');
        });
        snapshot = reading;
      }
      try {
        last = await snapshot;
      } catch {
        // counted above; the last good values stay
      }
      return last;
    };

    new Gauge({
      name: 'notify_notifications',
      help: 'Stored notifications by state and channel',
      labelNames: ['state', 'channel'] as const,
      registers: [registry],
      async collect() {
        const s = await read();
        if (!s) return;
        this.reset();
        // Every known (state, channel) is exported, 0 included, so a series never just vanishes.
        for (const state of NOTIFICATION_STATES) for (const channel of CHANNELS) this.set({ state, channel }, 0);
        for (const c of s.counts) this.set({ state: c.state, channel: c.channel }, c.count);
      },
    });
    // Per-channel gauges export every channel, 0 included, so a series never just vanishes.
    const perChannel = (name: string, help: string, values: (s: Snapshot) => Iterable<readonly [string, number]>) =>
      new Gauge({
        name,
        help,
        labelNames: ['channel'] as const,
        registers: [registry],
        async collect() {
          const s = await read();
          if (!s) return;
          this.reset();
          for (const channel of CHANNELS) this.set({ channel }, 0);
          for (const [channel, value] of values(s)) this.set({ channel }, value);
        },
      });
    perChannel('notify_oldest_queued_age_seconds', 'Age of the oldest queued notification, by channel (0 when none is queued)', (s) =>
      s.ages.map((a) => [a.channel, seconds(s.now, a.oldest_created_at)] as const),
    );
    perChannel('notify_queued_overdue_seconds', 'How late the most overdue queued attempt is, by channel (0 when nothing is due)', (s) =>
      s.ages.map((a) => [a.channel, seconds(s.now, a.earliest_due_at)] as const),
    );
    new Gauge({
      name: 'notify_outbox_lag_seconds',
      help: 'Age of the oldest unpublished outbox row (0 when the relay is caught up)',
      registers: [registry],
      async collect() {
        const s = await read();
        if (s) this.set((s.backlog.oldestAgeMs ?? 0) / 1000);
      },
    });
    // Endpoint health (docs/endpoints.md). From the shared `endpoints` table, so every process
    // reports the same number: aggregate with max(), not sum().
    for (const [name, state, help] of [
      ['notify_endpoint_circuits_open', 'open', 'Endpoints whose circuit is open now (deliveries to them wait), by channel'],
      ['notify_endpoints_disabled', 'disabled', 'Endpoints disabled now (automatically or by an operator), by channel'],
    ] as const) {
      perChannel(name, help, (s) => s.endpoints.filter((e) => e.state === state).map((e) => [e.channel, e.count] as const));
    }
    new Gauge({
      name: 'notify_callback_pending',
      help: 'Status callbacks waiting to be sent, first try or retry (every tenant)',
      registers: [registry],
      async collect() {
        const s = await read();
        if (s) this.set(s.callbacksPending);
      },
    });
    new Gauge({
      name: 'notify_outbox_unpublished',
      help: 'Outbox rows the relay has not published yet',
      registers: [registry],
      async collect() {
        const s = await read();
        if (s) this.set(s.backlog.unpublished);
      },
    });
  }

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    observeHttp(labels, secs) {
      httpRequests.inc({ method: labels.method, route: labels.route, status: String(labels.status) });
      httpDuration.observe({ method: labels.method, route: labels.route }, secs);
    },
    observeShed(reason) {
      shed.inc({ reason });
    },
    observeConnectionDropped() {
      connectionsDropped.inc();
    },
    observeEnqueueGroup(size, isolated) {
      enqueueGroupSize.observe(size);
      if (isolated) enqueueGroupsIsolated.inc();
    },
    observeAttempt(a) {
      attempts.inc({ outcome: a.outcome, channel: a.channel });
      if (a.latencySeconds !== undefined) providerLatency.observe({ channel: a.channel, outcome: a.outcome }, a.latencySeconds);
    },
    observePublished(count) {
      published.inc(count);
    },
    observeRelayError(stage) {
      relayErrors.inc({ stage });
    },
    observeConsumerError(phase) {
      consumerErrors.inc({ phase });
    },
    observeGroupJoin(lane) {
      groupJoins.inc({ lane });
    },
    observeLateness(secs) {
      lateness.observe(Math.max(0, secs));
    },
    observeRetryScheduled(topic) {
      retriesScheduled.inc({ topic });
    },
    observeRepaired(count) {
      repaired.inc(count);
    },
    observeDeadLetter(reason) {
      // The dispatcher's stable dead-letter code (DEAD_LETTER_CODES): a bounded set of label values.
      deadLetters.inc({ reason });
    },
    observeDead(channel, reason) {
      dead.inc({ channel, reason });
    },
    observeRefused(reason) {
      refused.inc({ reason });
    },
    observeCallback(outcome, count) {
      callbacks.inc({ outcome }, count);
    },
  };
}

interface Snapshot {
  readonly now: Date;
  readonly counts: Awaited<ReturnType<typeof notificationCountByState>>;
  readonly ages: Awaited<ReturnType<typeof notificationQueueAge>>;
  readonly backlog: OutboxLag;
  readonly endpoints: Awaited<ReturnType<typeof endpointCountNotOk>>;
  readonly callbacksPending: number;
}

/** `fn`, called at most once per `refreshMs`; callers in between share its last promise. A failed call is not kept. */
/**
 * The longest a scrape waits for one of its reads (Kafka's consumer lag, a readiness check, the
 * SQL snapshot), so a scrape stays well inside Prometheus's default 10-s timeout whatever is down.
 */
const READ_TIMEOUT_MS = 2_000;

function cachedRead<T>(fn: () => Promise<T>, { clock, refreshMs }: { clock: Clock; refreshMs: number }): () => Promise<T> {
  let pending: Promise<T> | undefined;
  let at = -Infinity;
  return () => {
    const now = clock.now().getTime();
    if (!pending || now - at >= refreshMs) {
      at = now;
      const p = fn();
      pending = p;
      p.catch(() => {
        if (pending === p) pending = undefined;
      });
    }
    return pending;
  };
}

function seconds(now: Date, then: Date | string): number {
  return Math.max(0, (now.getTime() - new Date(then).getTime()) / 1000);
}
