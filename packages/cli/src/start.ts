import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Admin } from 'kafkajs';
import type { Kysely } from 'kysely';
import { type Clock, type Logger, createDb } from '@notify/runtime';
import type { Config } from './config.js';
import { type Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { type Relay, createRelay } from '@notify/relay';
import {
  type Dispatcher,
  createCallbackService,
  createContentPreparer,
  createDispatcher,
  createRetentionService,
} from '@notify/dispatcher';
import {
  type Provider,
  createEndpointGate,
  createFallbackProviders,
  createProviders,
  createTenantSecretSource,
  providerOrigins,
} from '@notify/providers';
import { dispatcherConfigFrom, relayConfigFrom } from './role-configs.js';
import { NoContentServerResponse, answerClientError, createAdminApp, createApp } from '@notify/api';
import { watchDispatcher, watchRelay } from './observability/lifecycle-metrics.js';
import { createMetrics } from './observability/metrics.js';
import { createPipelineProbe, dispatcherLagGroups } from './observability/pipeline-probe.js';
import { CliError } from './cli-error.js';
import { capConnections } from './connection-cap.js';
import { type Role, needsKafka } from './roles.js';
import {
  autovacuumWarning,
  newerSchemaWarning,
  plaintextSecretsWarning,
  roleConfigWarnings,
  settingsChangeWarning,
  topicPlanWarnings,
} from './start-warnings.js';
import { createKafka, lazyKafkaAdmin } from './kafka-client.js';
import {
  autovacuumGaps,
  plaintextWebhookSecrets,
  checkDatabase,
  checkMigrations,
  connectKafkaAdmin,
  ensureTopics,
  notifyTopics,
  planTopics,
  unknownMigrations,
} from './preflight.js';
import { seedApiKeys } from './seed-api-keys.js';
import { notifySettingsRead } from './sql/notify-settings-read.js';
import { notifySettingsWrite } from './sql/notify-settings-write.js';
import { followStoredRetry, settingsChanges, storedSettingsOf } from './stored-settings.js';

/** What `startNotify` needs besides the configuration. */
export interface StartDeps {
  readonly logger: Logger;
  readonly clock: Clock;
  /** How often the API re-reads `notify_settings` (another process's start may have changed it); default 5000. */
  readonly settingsRefreshMs?: number;
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
 * schema is migrated, and, with the relay or the dispatcher, that Kafka answers (each failure is a
 * one-line `CliError` / `DatabaseUnreachableError`). With those roles it creates missing topics.
 * Seeds NOTIFY_API_KEYS, binds the admin HTTP server and, with the api role, the public one, and
 * only then starts the relay and the dispatcher: a port that cannot be bound fails the start
 * before they join their consumer groups (a needless rebalance for a running fleet). /readyz
 * answers 503 (`started: unavailable`) until every role is up, and `startNotify` resolves only
 * then, so the "listening" line still means every role is up.
 *
 * A process without the relay and the dispatcher needs no Kafka: it starts while Kafka is down,
 * its /readyz checks the database only, and its consumer-lag gauge and console pipeline page
 * connect to Kafka when first read (and report it unavailable, within 2 s, while it is down).
 */
export async function startNotify(config: Config, roles: readonly Role[], deps: StartDeps): Promise<RunningNotify> {
  const { logger, clock } = deps;
  const usesKafka = needsKafka(roles);
  for (const w of roleConfigWarnings(config, roles)) logger.warn(w.fields, w.message);
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
  // Bound before the roles start, closed before they stop: HTTP stops accepting first.
  const servers: ServerType[] = [];
  const closeAll = async () => {
    for (const server of servers.reverse()) await closeServer(server);
    for (const fn of cleanup.reverse())
      await fn().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'shutdown step failed'));
  };
  try {
    await checkMigrations(db);
    // A warning, not a refusal: during a rolling deploy the new version migrates first, and an
    // instance of the old one that restarts then (a crash, a scale-up) must still come up.
    const newer = newerSchemaWarning(await unknownMigrations(db));
    if (newer) logger.warn(newer.fields, newer.message);
    const vacuum = autovacuumWarning(await autovacuumGaps(db));
    if (vacuum) logger.warn(vacuum.fields, vacuum.message);
    const plaintext = plaintextSecretsWarning(await plaintextWebhookSecrets(db));
    if (plaintext) logger.warn(plaintext.fields, plaintext.message);
    // Every enqueuer (the API, enqueue() in a domain service, notify_enqueue from SQL) reads these,
    // and the last start wins: say so when this one changes them.
    const settings = storedSettingsOf(config);
    const changed = settingsChangeWarning(settingsChanges(await notifySettingsRead(fromKysely(db)), settings));
    if (changed) logger.warn(changed.fields, changed.message);
    await notifySettingsWrite(fromKysely(db), settings);
    const createdTopics = usesKafka ? await prepareTopics(config, logger) : [];

    const seeded = await seedApiKeys(fromKysely(db), config.seedApiKeys, clock.now(), logger);
    if (seeded > 0) logger.info({ count: seeded }, 'seeded API keys from NOTIFY_API_KEYS');

    // Without the relay and the dispatcher Kafka serves only the lag readings: few retries and a
    // short connect, so a reading while Kafka is down fails fast (the probe gives up after 2 s).
    const kafka = createKafka({
      brokers: config.kafkaBrokers,
      clientId: `notify-${roles.join('-')}`,
      logger,
      // Its kafkajs connection errors at debug: the pipeline probe logs once that Kafka is unreachable.
      ...(usesKafka ? {} : { retry: { retries: 1, initialRetryTime: 200, maxRetryTime: 500 }, connectionTimeoutMs: 1_000, quiet: true }),
    });
    let kafkaAdmin: () => Promise<Admin>;
    if (usesKafka) {
      const readinessAdmin = kafka.admin();
      await readinessAdmin.connect();
      cleanup.push(() => readinessAdmin.disconnect());
      kafkaAdmin = () => Promise.resolve(readinessAdmin);
    } else {
      const lazy = lazyKafkaAdmin(kafka);
      cleanup.push(() => lazy.disconnect());
      kafkaAdmin = () => lazy.get();
    }
    let started = false;
    // /readyz per role (docs/operations.md, "Readiness"): the database always; Kafka only where the
    // relay or the dispatcher needs it, so a Kafka outage does not take the API out of a load
    // balancer while it still accepts notifications into the outbox.
    const readiness = {
      database: async () => {
        await db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
      },
      ...(usesKafka
        ? {
            kafka: async () => {
              await (await kafkaAdmin()).describeCluster();
            },
          }
        : {}),
      started: async () => {
        if (!started) throw new Error('the roles are still starting');
      },
    };
    const pipeline = createPipelineProbe({
      db,
      clock,
      admin: kafkaAdmin,
      groups: dispatcherLagGroups(dispatcherConfigFrom(config, {})),
      logger,
    });
    const metrics = createMetrics({ db, clock, logger, readiness, consumerLag: () => pipeline.consumerLag() });

    const admin = createAdminApp({
      metrics,
      logger: logger.child({ role: 'admin' }),
      readiness,
    });
    const adminServer = await listen(admin.fetch, config.adminPort, config.adminHost, {
      port: 'NOTIFY_ADMIN_PORT',
      host: 'NOTIFY_ADMIN_HOST',
    });
    servers.push(adminServer);
    const adminUrl = httpUrl(config.adminHost, (adminServer.address() as AddressInfo).port);

    let url: string | undefined;
    if (roles.includes('api')) {
      const apiLogger = logger.child({ role: 'api' });
      const storedRetry = followStoredRetry(fromKysely(db), settings, {
        refreshMs: deps.settingsRefreshMs ?? 5_000,
        logger: apiLogger,
      });
      cleanup.push(async () => storedRetry.stop());
      const app = createApp({
        db,
        // The attempt budget and default expiry the API writes are notify_settings', not this process's own.
        config: { ...config, retry: storedRetry.retry },
        clock,
        logger: apiLogger,
        metrics,
        secrets: {
          key: config.webhook.secretsKey,
          rotationGraceMs: config.secretRotationGraceMs,
          globalSecret: config.webhook.signingSecret,
        },
        rateLimits: config.apiRateLimits,
        apiKeyCacheMs: config.apiKeyCacheMs,
        // A statement on a connection whose server stopped answering waits past the pool's bound.
        requestDeadlineMs: config.dbPoolWaitMs * 2,
        webhookAllowCidrs: config.webhook.allowCidrs,
        corsOrigins: config.corsOrigins,
        maxInFlight: config.apiMaxInFlight,
        enqueueGroup: config.apiGroupCommit,
        ...(config.apiMaxEventLoopDelayMs > 0 ? { maxEventLoopDelayMs: config.apiMaxEventLoopDelayMs } : {}),
        ...(config.apiMaxEventLoopDelayMs > 0 && config.apiMaxEventLoopUtilizationPct > 0
          ? { maxEventLoopUtilization: config.apiMaxEventLoopUtilizationPct / 100 }
          : {}),
        console: {
          showContent: config.consoleShowContent,
          pipeline,
          endpointOrigins: providerOrigins(config),
        },
      });
      const server = await listen(app.fetch, config.port, undefined, { port: 'PORT' }, (s) =>
        capConnections(
          s,
          { maxConnections: config.apiMaxConnections, variable: 'NOTIFY_API_MAX_CONNECTIONS' },
          { logger: apiLogger, onDrop: () => metrics.observeConnectionDropped() },
        ),
      );
      servers.push(server);
      url = httpUrl('127.0.0.1', (server.address() as AddressInfo).port);
    }

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
      dispatcher = createDispatcher(dispatcherConfigFrom(config), {
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

    started = true;
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

/**
 * With the relay or the dispatcher: checks that Kafka answers (a one-line `CliError` when it does
 * not, in seconds) and creates the missing topics. Returns the names it created.
 */
async function prepareTopics(config: Config, logger: Logger): Promise<string[]> {
  // Few retries, so an unreachable broker fails start in seconds, not after kafkajs's ~30 s default.
  const preflight = createKafka({
    brokers: config.kafkaBrokers,
    clientId: 'notify-preflight',
    logger,
    retry: { retries: 2, initialRetryTime: 300, maxRetryTime: 1_000 },
  });
  const preflightAdmin = await connectKafkaAdmin(preflight, config.kafkaBrokers);
  try {
    const expected = notifyTopics(config);
    const plan = await planTopics(preflightAdmin, config);
    // What config-check lists as warnings, at the same severity: existing topics are used as they are.
    for (const w of topicPlanWarnings(plan)) logger.warn(w.fields, w.message);
    const partitionsOf = (topic: string) => expected.find((t) => t.topic === topic)!.partitions;
    const createdTopics = await ensureTopics(
      preflightAdmin,
      expected.map((t) => t.topic),
      partitionsOf,
      { replication: plan },
    );
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
    return createdTopics;
  } finally {
    await preflightAdmin.disconnect().catch(() => {});
  }
}

// Listen errors that mean the address is wrong, not the port: a name that does not resolve, or not one of this machine's addresses.
const BAD_ADDRESS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EADDRNOTAVAIL']);

function listen(
  fetch: (req: Request) => Response | Promise<Response>,
  port: number,
  hostname: string | undefined,
  variables: { readonly port: string; readonly host?: string },
  // Runs before the first connection is accepted (serve() starts listening; accepting waits for the event loop).
  configure: (server: ServerType) => void = () => {},
): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch,
        port,
        ...(hostname !== undefined ? { hostname } : {}),
        // A 204 without the Content-Type @hono/node-server would give it.
        serverOptions: { ServerResponse: NoContentServerResponse },
      },
      () => resolve(server),
    );
    configure(server);
    // A request Node's parser refuses is answered with problem+json too, not a bare 400.
    server.on('clientError', answerClientError);
    server.once('error', (err: NodeJS.ErrnoException) => {
      const at = hostname === undefined ? `port ${port}` : `${hostname}:${port}`;
      const message =
        err.code === 'EADDRINUSE'
          ? `port ${port} is in use; set ${variables.port} to a free port (0 picks one)`
          : err.code === 'EACCES'
            ? `port ${port} needs privileges this process does not have; set ${variables.port} to a port above 1023`
            : err.code !== undefined && BAD_ADDRESS.has(err.code) && variables.host !== undefined
              ? `cannot listen on ${at} (${err.code}): ${variables.host}=${hostname} ${err.code === 'EADDRNOTAVAIL' ? 'is not an address of this machine' : 'does not resolve to an address'}; ` +
                `set ${variables.host} to an address of this machine (127.0.0.1, 0.0.0.0, or an interface's address)`
              : `cannot listen on ${at} (${err.code ?? err.message}); check ${[variables.host, variables.port].filter(Boolean).join(' and ')}`;
      reject(new CliError(message, 1, { cause: err }));
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
