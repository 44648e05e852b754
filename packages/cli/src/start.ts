import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Admin } from 'kafkajs';
import type { Kysely } from 'kysely';
import { type Clock, type Logger, createDb } from '@notify/runtime';
import type { Config } from './config.js';
import { type Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { TOPICS, topicName } from '@notify/contract';
import { type Relay, createRelay } from '@notify/relay';
import {
  type Dispatcher,
  createCallbackService,
  createContentPreparer,
  createDispatcher,
  createRetentionService,
  dispatcherTopicSuffixes,
} from '@notify/dispatcher';
import { type Provider, createEndpointGate, createFallbackProviders, createProviders, createTenantSecretSource } from '@notify/providers';
import { dispatcherConfigFrom, relayConfigFrom } from './role-configs.js';
import { answerClientError, createAdminApp, createApp } from '@notify/api';
import { watchDispatcher, watchRelay } from './observability/lifecycle-metrics.js';
import { createMetrics } from './observability/metrics.js';
import { createPipelineProbe, dispatcherLagGroups } from './observability/pipeline-probe.js';
import { CliError } from './cli-error.js';
import { createKafka } from './kafka-client.js';
import { autovacuumGaps, checkDatabase, checkMigrations, connectKafkaAdmin, ensureTopics, planTopicReplication } from './preflight.js';
import { seedApiKeys } from './seed-api-keys.js';
import { notifySettingsWrite } from './sql/notify-settings-write.js';

/** The parts `notify start` can run; any subset, so each can be scaled out on its own. */
export const ROLES = ['api', 'relay', 'dispatcher'] as const;
/** One role. */
export type Role = (typeof ROLES)[number];

/** Parses `--roles api,relay`; throws a usage `CliError` naming an unknown role. */
export function parseRoles(value: string | undefined): readonly Role[] {
  if (value === undefined) return ROLES;
  const roles = value
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (unknown.length > 0 || roles.length === 0) {
    throw new CliError(
      `--roles: unknown role ${unknown.map((u) => `"${u}"`).join(', ') || '(none given)'}; expected a comma-separated subset of ${ROLES.join(',')}`,
      2,
    );
  }
  return ROLES.filter((r) => roles.includes(r));
}

/** What `startNotify` needs besides the configuration. */
export interface StartDeps {
  readonly logger: Logger;
  readonly clock: Clock;
}

/** A running `notify start`. */
export interface RunningNotify {
  /** Where the public API listens (PORT), with the api role; undefined without it. */
  readonly url: string | undefined;
  /** Where /healthz, /readyz and /metrics listen (NOTIFY_ADMIN_HOST:NOTIFY_ADMIN_PORT), whatever the roles. */
  readonly adminUrl: string;
  readonly roles: readonly Role[];
  /** The topics it created because they were missing. */
  readonly createdTopics: readonly string[];
  /** Graceful shutdown of every role: HTTP stops accepting, the dispatcher finishes or aborts in-flight deliveries, the relay its batch. */
  stop(): Promise<void>;
}

/**
 * Starts the given roles in this process after checking, in order, that PostgreSQL answers, its
 * schema is migrated, and Kafka answers (each failure is a one-line `CliError` /
 * `DatabaseUnreachableError`). Creates missing topics, seeds NOTIFY_API_KEYS, then starts the
 * relay, the dispatcher, the admin HTTP server and, with the api role, the public one (last, so
 * "listening" means every role is up).
 */
export async function startNotify(config: Config, roles: readonly Role[], deps: StartDeps): Promise<RunningNotify> {
  const { logger, clock } = deps;
  await checkDatabase(config.databaseUrl);
  // A bounded wait for a connection: when the database falls behind, an API request is answered 503
  // (with Retry-After) within NOTIFY_DB_POOL_WAIT_MS instead of after the client gave up; the relay
  // and the dispatcher retry such a failure like any database error.
  const db: Kysely<Database> = createDb({
    connectionString: config.databaseUrl,
    max: 20,
    applicationName: `notify-${roles.join('-')}`,
    connectionWaitMs: config.dbPoolWaitMs,
  });
  const cleanup: (() => Promise<unknown>)[] = [() => db.destroy()];
  const closeAll = async () => {
    for (const fn of cleanup.reverse())
      await fn().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'shutdown step failed'));
  };
  try {
    await checkMigrations(db);
    const vacuumGaps = await autovacuumGaps(db);
    if (vacuumGaps.length > 0) {
      logger.warn(
        { autovacuum: vacuumGaps },
        'autovacuum does not look after the outbox and notifications: run VACUUM ANALYZE on them yourself (docs/operations.md, "Vacuum and statistics")',
      );
    }
    // Every enqueuer (the API, enqueue() in a domain service, notify_enqueue from SQL) reads these.
    await notifySettingsWrite(fromKysely(db), {
      maxAttempts: config.retry.maxAttempts,
      defaultTtlMs: config.retry.defaultTtlMs,
      events: config.events,
    });
    // Preflight: few retries, so an unreachable broker fails start in seconds, not after kafkajs's ~30 s default.
    const preflight = createKafka({
      brokers: config.kafkaBrokers,
      clientId: 'notify-preflight',
      logger,
      retry: { retries: 2, initialRetryTime: 300, maxRetryTime: 1_000 },
    });
    const preflightAdmin = await connectKafkaAdmin(preflight, config.kafkaBrokers);
    let createdTopics: string[];
    try {
      const suffixes = dispatcherTopicSuffixes(config.retry);
      const topics = suffixes.map((s) => topicName(config.topicPrefix, s));
      const plan = await planTopicReplication(preflightAdmin, topics, config.topicReplication, config.kafkaBrokers.join(','));
      if (plan.lowerExisting.length > 0) {
        logger.warn(
          { topics: plan.lowerExisting.map((t) => `${t.topic} (RF ${t.replicationFactor})`), replication: plan.replicationFactor },
          `existing Kafka topics have fewer replicas than ${plan.replicationFactor}: notify start never changes an existing topic; ` +
            'raise their replication with kafka-reassign-partitions, or they lose messages with their broker',
        );
      }
      // Delay topics get their own partition count (NOTIFY_RETRY_TOPIC_PARTITIONS, config.ts).
      const delayTopics = new Set(suffixes.filter((s) => s.startsWith(TOPICS.retry(''))).map((s) => topicName(config.topicPrefix, s)));
      const partitionsOf = (topic: string) => (delayTopics.has(topic) ? config.retryTopicPartitions : config.topicPartitions);
      createdTopics = await ensureTopics(preflightAdmin, topics, partitionsOf, { replication: plan });
      if (createdTopics.length > 0) {
        logger.info(
          {
            topics: createdTopics,
            partitions: config.topicPartitions,
            delay_topic_partitions: config.retryTopicPartitions,
            replication: plan.replicationFactor,
            min_insync_replicas: plan.minInsyncReplicas,
          },
          'created Kafka topics',
        );
      }
    } finally {
      await preflightAdmin.disconnect().catch(() => {});
    }

    const seeded = await seedApiKeys(fromKysely(db), config.seedApiKeys, clock.now(), logger);
    if (seeded > 0) logger.info({ count: seeded }, 'seeded API keys from NOTIFY_API_KEYS');

    const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: `notify-${roles.join('-')}`, logger });
    const readinessAdmin: Admin = kafka.admin();
    await readinessAdmin.connect();
    cleanup.push(() => readinessAdmin.disconnect());
    const readiness = {
      database: async () => {
        await db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
      },
      kafka: async () => {
        await readinessAdmin.describeCluster();
      },
    };
    const pipeline = createPipelineProbe({
      db,
      clock,
      admin: readinessAdmin,
      groups: dispatcherLagGroups(dispatcherConfigFrom(config, {})),
    });
    const metrics = createMetrics({ db, clock, logger, readiness, consumerLag: () => pipeline.consumerLag() });

    let relay: Relay | undefined;
    if (roles.includes('relay')) {
      relay = createRelay(
        { ...relayConfigFrom(config), stopTimeoutMs: Math.floor(config.shutdownTimeoutMs / 3) },
        { db, kafka, connectionString: config.databaseUrl, clock, logger: logger.child({ role: 'relay' }) },
      );
      watchRelay(metrics, relay);
      await relay.start();
      const r = relay;
      cleanup.push(() => r.stop());
    }

    let dispatcher: Dispatcher | undefined;
    let providers: Partial<Record<string, Provider>> = {};
    if (roles.includes('dispatcher')) {
      const dlogger = logger.child({ role: 'dispatcher' });
      providers = createProviders(config, { db, clock, logger: dlogger });
      const fallbacks = createFallbackProviders(config, { db, clock, logger: dlogger });
      cleanup.push(async () => {
        await Promise.all([...Object.values(providers), ...Object.values(fallbacks)].map(async (p) => p?.close?.()));
      });
      dispatcher = createDispatcher(dispatcherConfigFrom(config, { shutdownTimeoutMs: Math.floor(config.shutdownTimeoutMs / 2) }), {
        db,
        kafka,
        providers,
        fallbacks,
        endpoints: createEndpointGate(config.endpoints, { db, clock, logger: dlogger }),
        content: createContentPreparer({ db, clock }),
        clock,
        logger: dlogger,
      });
      watchDispatcher(metrics, dispatcher);
      await dispatcher.start();
      const d = dispatcher;
      cleanup.push(() => d.stop());
      // Retention (NOTIFY_RETENTION_DAYS): every dispatcher runs it, the holder of its lease works.
      const retention = createRetentionService({ retentionDays: config.retentionDays }, { db: fromKysely(db), clock, logger: dlogger });
      retention.start();
      cleanup.push(() => retention.stop(Math.floor(config.shutdownTimeoutMs / 3)));
      // Status callbacks (docs/callbacks.md): a consumer group of their own on <prefix>.events, sent from PostgreSQL.
      const callbacks = createCallbackService(
        {
          topicPrefix: config.topicPrefix,
          groupId: `${dispatcherConfigFrom(config, {}).groupId}.callbacks`,
          retry: config.retry,
          sendTimeoutMs: config.dispatcher.sendTimeoutMs,
          allowCidrs: config.webhook.allowCidrs,
          signingSecret: config.webhook.signingSecret,
          sessionTimeoutMs: config.dispatcher.sessionTimeoutMs,
        },
        {
          db: fromKysely(db),
          kafka,
          clock,
          logger: dlogger,
          tenantSecret: createTenantSecretSource({ db, clock, secretsKey: config.webhook.secretsKey }),
          observe: (outcome, count) => metrics.observeCallback(outcome, count),
        },
      );
      await callbacks.start();
      cleanup.push(() => callbacks.stop(Math.floor(config.shutdownTimeoutMs / 3)));
    }

    const admin = createAdminApp({
      metrics,
      logger: logger.child({ role: 'admin' }),
      readiness,
    });
    const adminServer = await listen(admin.fetch, config.adminPort, config.adminHost, 'NOTIFY_ADMIN_PORT');
    cleanup.push(() => closeServer(adminServer));
    const adminUrl = httpUrl(config.adminHost, (adminServer.address() as AddressInfo).port);

    let url: string | undefined;
    if (roles.includes('api')) {
      const app = createApp({
        db,
        config,
        clock,
        logger: logger.child({ role: 'api' }),
        metrics,
        secrets: { key: config.webhook.secretsKey, rotationGraceMs: config.secretRotationGraceMs },
        rateLimits: config.apiRateLimits,
        apiKeyCacheMs: config.apiKeyCacheMs,
        // A statement on a connection whose server stopped answering waits past the pool's bound.
        requestDeadlineMs: config.dbPoolWaitMs * 2,
        webhookAllowCidrs: config.webhook.allowCidrs,
        maxInFlight: config.apiMaxInFlight,
        enqueueGroup: config.apiGroupCommit,
        ...(config.apiMaxEventLoopDelayMs > 0 ? { maxEventLoopDelayMs: config.apiMaxEventLoopDelayMs } : {}),
        ...(config.apiMaxEventLoopDelayMs > 0 && config.apiMaxEventLoopUtilizationPct > 0
          ? { maxEventLoopUtilization: config.apiMaxEventLoopUtilizationPct / 100 }
          : {}),
        console: {
          showContent: config.consoleShowContent,
          pipeline,
        },
      });
      const server = await listen(app.fetch, config.port, undefined, 'PORT');
      cleanup.push(() => closeServer(server));
      url = httpUrl('127.0.0.1', (server.address() as AddressInfo).port);
    }
    logger.info({ url, adminUrl, roles }, url ? 'API listening' : 'admin endpoints listening');

    let stopping: Promise<void> | undefined;
    return {
      url,
      adminUrl,
      roles,
      createdTopics,
      stop: () => (stopping ??= closeAll()),
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

function listen(
  fetch: (req: Request) => Response | Promise<Response>,
  port: number,
  hostname: string | undefined,
  variable: string,
): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port, ...(hostname !== undefined ? { hostname } : {}) }, () => resolve(server));
    // A request Node's parser refuses is answered with problem+json too, not a bare 400.
    server.on('clientError', answerClientError);
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new CliError(`port ${port} is in use; set ${variable} to a free port (0 picks one)`, 1, { cause: err })
          : err,
      );
    });
  });
}

/** An http URL for a bound address (IPv6 literals in brackets; 0.0.0.0 and :: shown as loopback, where the machine itself reaches them). */
function httpUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

function closeServer(server: ServerType): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Keep-alive connections would hold close() open until they time out.
    if ('closeIdleConnections' in server) server.closeIdleConnections();
  });
}
