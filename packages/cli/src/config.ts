import type { RetryConfig } from '@notify/dispatcher';
import {
  DEFAULT_CONNECTIONS_PER_ORIGIN,
  DEFAULT_FAILURE_RATIO,
  parseAllowCidrs,
  parseRateLimit,
  type EndpointHealthConfig,
  type ProvidersConfig,
  type RateLimit,
  webhookSecretKey,
} from '@notify/providers';
import { ConfigError, parseSecretsKey } from '@notify/runtime';

/**
 * Every setting of the service. Built once by `loadConfig` at the entry point; each role takes
 * its part (`relayConfigFrom`, `dispatcherConfigFrom`, the `ProvidersConfig` fields, …).
 */
export interface Config extends ProvidersConfig {
  /** NOTIFY_ENDPOINT_*, NOTIFY_TENANT_RATE_LIMIT: endpoint health (docs/endpoints.md). */
  readonly endpoints: EndpointHealthConfig;
  readonly databaseUrl: string;
  readonly kafkaBrokers: readonly string[];
  /** PORT: the public HTTP port (the API, /openapi.json, /docs), with the api role only. */
  readonly port: number;
  /** NOTIFY_ADMIN_PORT: /healthz, /readyz and /metrics, served by every role (default 9464). */
  readonly adminPort: number;
  /** NOTIFY_ADMIN_HOST: the address the admin port binds (default 127.0.0.1: the machine only). */
  readonly adminHost: string;
  /** NOTIFY_API_RATE_LIMIT / NOTIFY_API_TENANT_RATE_LIMIT: token buckets per API key and per tenant, shared by every API process; unset: no limit. */
  readonly apiRateLimits: { readonly perKey: RateLimit | undefined; readonly perTenant: RateLimit | undefined };
  /** NOTIFY_API_KEY_CACHE_MS: how long the API remembers a looked-up key, the bound on how long a revoked key still works (0: no cache). */
  readonly apiKeyCacheMs: number;
  /** NOTIFY_API_MAX_IN_FLIGHT: /v1 requests one API process works on at once; more are shed with 503 `overloaded`. */
  readonly apiMaxInFlight: number;
  /**
   * NOTIFY_API_MAX_CONNECTIONS: open connections the API port keeps at most; past it, each new one
   * is closed as soon as it is accepted (0: no cap).
   */
  readonly apiMaxConnections: number;
  /** NOTIFY_CORS_ORIGINS: origins (`https://admin.example.com`, or `*`) whose pages may call /v1 from a browser; empty: no CORS. */
  readonly corsOrigins: readonly string[];
  /**
   * NOTIFY_API_GROUP_COMMIT (requests per statement at most; 1: off) and NOTIFY_API_GROUP_COMMIT_IN_FLIGHT
   * (groups written at once at most): group commit of POST /v1/notifications (docs/api.md).
   */
  readonly apiGroupCommit: { readonly maxGroupSize: number; readonly maxInFlight: number };
  /** NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS: while the API process's event loop runs later than this, requests are shed with 503 `overloaded` (0: off). */
  readonly apiMaxEventLoopDelayMs: number;
  /** NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION: percent; while the API's event loop is busier than this, requests are shed (0: off). */
  readonly apiMaxEventLoopUtilizationPct: number;
  /** NOTIFY_DB_POOL_WAIT_MS: the longest a query waits for a connection of the process's pool (0: no bound). */
  readonly dbPoolWaitMs: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** NOTIFY_EVENTS: which status events are written (migration 0060): every one, only those of a final state, or none. */
  readonly events: 'all' | 'terminal' | 'none';
  readonly topicPrefix: string;
  readonly topicPartitions: number;
  /**
   * NOTIFY_RETRY_TOPIC_PARTITIONS: partitions of each delay topic (`retry.<tier>`) `notify start`
   * creates. Default 1: the normal lane's consumer fetches every partition of every delay topic
   * with each fetch, and with one tier every 1–1.5× of the backoff there are 25 of them by default.
   */
  readonly retryTopicPartitions: number;
  /** NOTIFY_TOPIC_REPLICATION: replicas of each topic `notify start` creates; unset: min(3, brokers the cluster lists). */
  readonly topicReplication: number | undefined;
  readonly retry: RetryConfig;
  readonly dispatcher: {
    readonly sendTimeoutMs: number;
    readonly maxInFlight: number;
    /** NOTIFY_MAX_UNFINISHED: deliveries started and not finished (in a provider call or waiting for their outcome's commit); unset: 4 × maxInFlight. */
    readonly maxUnfinished: number | undefined;
    /** A queued notification overdue by more than this is re-published by the repair sweep. */
    readonly repairAfterMs: number;
    /** NOTIFY_OUTCOME_BATCH_SIZE: delivery outcomes written per transaction at most (group commit). */
    readonly outcomeBatchSize: number;
    /** NOTIFY_OUTCOME_BATCH_DELAY_MS: how long the first outcome of a group waits for others (0: the same event-loop turn). */
    readonly outcomeBatchDelayMs: number;
    /** NOTIFY_KAFKA_SESSION_TIMEOUT_MS: a dispatcher silent this long leaves the consumer group; its partitions move to the others (failover time after a crash). */
    readonly sessionTimeoutMs: number;
  };
  readonly relay: {
    readonly batchSize: number;
    readonly pollIntervalMs: number;
    /** NOTIFY_OUTBOX_RETENTION_MS: published delivery requests are kept this long, then purged; events and dlq rows are deleted when published (0: every row is). */
    readonly retentionMs: number;
    /** NOTIFY_KAFKA_MAX_MESSAGE_BYTES: a larger outbox row is set aside (outbox_refused), not published. */
    readonly maxMessageBytes: number;
    /** NOTIFY_RELAY_ORDER_WAIT_MS: the bound on how long a committed row waits behind an older open transaction (docs/relay.md, "Long transactions"). */
    readonly orderWaitMs: number;
    /** NOTIFY_RELAY_LINGER_MS: under a steady trickle, how long the relay waits after a short batch so the next rows share a round. */
    readonly lingerMs: number;
  };
  /** `tenant:key,…` seeded at start, for development and tests. */
  readonly seedApiKeys: readonly { readonly tenantId: string; readonly key: string }[];
  /** NOTIFY_SECRET_ROTATION_GRACE_MS: after a rotation the old webhook secret keeps signing this long, next to the new one. */
  readonly secretRotationGraceMs: number;
  /** NOTIFY_CONSOLE_SHOW_CONTENT=1: the console shows notification bodies and data (default: recipients only). */
  readonly consoleShowContent: boolean;
  /** `notify start`: how long a graceful shutdown (SIGTERM/SIGINT) may take before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
  /** NOTIFY_RETENTION_DAYS: terminal notifications (with their attempts and actions) are deleted this many days after their last change; 0 keeps them. */
  readonly retentionDays: number;
  /** `notify migrate` (docs/operations.md, "Upgrading"). */
  readonly migrate: {
    /** NOTIFY_MIGRATE_LOCK_TIMEOUT_MS: how long a migration waits for a lock (`lock_timeout`) before it is rolled back and tried again. */
    readonly lockTimeoutMs: number;
    /** NOTIFY_MIGRATE_LOCK_ATTEMPTS: tries per migration whose lock wait timed out; then `notify migrate` fails, saying why. */
    readonly lockAttempts: number;
  };
}

/** The environment as a plain record (process.env fits). */
export type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/notify';
export const DEFAULT_KAFKA_BROKERS = '127.0.0.1:19092';

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/**
 * The From address of emails: `notify@example.com` or `Acme <notify@example.com>`. Its domain is
 * the Message-ID's (smtp.ts), so a value without one is refused here rather than sent with
 * `notify.invalid` ids.
 */
function smtpFrom(env: Env, name: string): string {
  const raw = str(env, name);
  if (raw === undefined) return 'notify@localhost';
  if (!/^[^\s@<>]+@[^\s@<>]+$|^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(raw)) {
    throw new ConfigError(name, `expected an address, notify@example.com or "Acme <notify@example.com>", got "${raw}"`);
  }
  return raw;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `expected a number from ${min} to ${max}, got ${n}`);
  return n;
}

/** Like `int`, but undefined when the variable is unset (the library then picks its default). */
function optionalInt(env: Env, name: string, min: number, max: number): number | undefined {
  return str(env, name) === undefined ? undefined : int(env, name, min, min, max);
}

function fraction(env: Env, name: string, fallback: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  // Plain decimals only: Number() also takes 0x1, 1e-1 and 0b1.
  const n = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 0 && n <= 1)) throw new ConfigError(name, `expected a fraction from 0 to 1 written as a decimal (e.g. 0.2), got "${raw}"`);
  return n;
}

function list(env: Env, name: string, fallback: string): string[] {
  return (str(env, name) ?? fallback)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * NOTIFY_CORS_ORIGINS: `*`, or origins as a browser sends them in `Origin` (scheme, host, and a
 * port other than the scheme's default; no path, no trailing slash), compared exactly.
 */
function origins(env: Env, name: string): string[] {
  const entries = list(env, name, '');
  for (const entry of entries) {
    if (entry === '*') continue;
    let origin: string | undefined;
    try {
      const u = new URL(entry);
      origin = u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : undefined;
    } catch {
      origin = undefined;
    }
    if (origin !== entry) {
      throw new ConfigError(
        name,
        `${JSON.stringify(entry)} is not an origin: write it as a browser sends it, e.g. https://admin.example.com or http://localhost:5173${origin ? ` (here: ${origin})` : ''}, or * for any`,
      );
    }
  }
  if (entries.includes('*') && entries.length > 1) throw new ConfigError(name, '* already allows every origin: give it alone');
  return entries;
}

/** NOTIFY_WEBHOOK_ALLOW_CIDRS, checked here so a bad entry stops `notify start` before any role starts. */
function cidrs(env: Env, name: string): string[] {
  const entries = list(env, name, '');
  try {
    parseAllowCidrs(entries);
  } catch (err) {
    throw new ConfigError(name, (err as Error).message);
  }
  return entries;
}

/** NOTIFY_WEBHOOK_SECRET, checked here as the providers will read it, so config-check and every command refuse a bad one up front. */
function webhookSecret(env: Env, name: string): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  try {
    webhookSecretKey(raw);
  } catch (err) {
    throw new ConfigError(name, (err as Error).message);
  }
  return raw;
}

function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'expected a URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `expected a ${protocols.join(' or ')} URL, got ${parsed.protocol}`);
  }
  return raw;
}

/** `50/s`, `600/m`, `1000/h`, optionally `,burst=100` (`parseRateLimit`). */
function rateLimit(env: Env, name: string): RateLimit | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  try {
    return parseRateLimit(raw);
  } catch (err) {
    throw new ConfigError(name, (err as Error).message);
  }
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration: `5d`, `12h`, `30m`, `10s`, `500ms` or a number of milliseconds. */
function duration(env: Env, name: string, fallbackMs: number, minMs: number, maxMs: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallbackMs;
  const m = /^(\d+)\s*(ms|s|m|h|d)?$/.exec(raw);
  if (!m) throw new ConfigError(name, `expected a duration such as 5d, 12h, 30m, 10s or 500ms, got "${raw}"`);
  const ms = Number(m[1]) * DURATION_UNITS[m[2] ?? 'ms']!;
  if (ms < minMs || ms > maxMs) throw new ConfigError(name, `must be from ${minMs} ms to ${maxMs} ms, got ${ms} ms`);
  return ms;
}

function secretsKey(env: Env): Buffer | undefined {
  const raw = str(env, 'NOTIFY_SECRETS_KEY');
  if (raw === undefined) return undefined;
  try {
    return parseSecretsKey(raw);
  } catch (err) {
    throw new ConfigError('NOTIFY_SECRETS_KEY', (err as Error).message);
  }
}

function flag(env: Env, name: string): boolean {
  const raw = str(env, name);
  if (raw === undefined || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(name, `expected 1 or 0, got "${raw}"`);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const EVENT_POLICIES = ['all', 'terminal', 'none'] as const;

/**
 * Reads and validates the whole configuration. Pure: it takes the environment as an argument,
 * applies defaults, and throws a `ConfigError` naming the first bad variable.
 */
export function loadConfig(env: Env): Config {
  const logLevel = str(env, 'LOG_LEVEL') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const events = str(env, 'NOTIFY_EVENTS') ?? 'all';
  if (!(EVENT_POLICIES as readonly string[]).includes(events)) {
    throw new ConfigError('NOTIFY_EVENTS', `expected one of ${EVENT_POLICIES.join(', ')}, got "${events}"`);
  }
  if (
    int(env, 'NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION', 0, 0, 100) > 0 &&
    int(env, 'NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS', 250, 0, 60_000) === 0
  ) {
    throw new ConfigError(
      'NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION',
      'needs NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS > 0 (the same sampler measures both)',
    );
  }
  const topicPrefix = str(env, 'NOTIFY_TOPIC_PREFIX') ?? 'notify';
  if (!/^[a-zA-Z0-9._-]{1,100}$/.test(topicPrefix)) {
    throw new ConfigError('NOTIFY_TOPIC_PREFIX', 'expected 1–100 letters, digits, ".", "_" or "-"');
  }
  const baseDelayMs = int(env, 'NOTIFY_BASE_DELAY_MS', 1_000, 1, 86_400_000);
  const maxDelayMs = int(env, 'NOTIFY_MAX_DELAY_MS', 3_600_000, 1, 7 * 86_400_000);
  if (maxDelayMs < baseDelayMs) {
    throw new ConfigError('NOTIFY_MAX_DELAY_MS', `must be at least NOTIFY_BASE_DELAY_MS (${baseDelayMs})`);
  }
  const maxInFlight = int(env, 'NOTIFY_MAX_IN_FLIGHT', 32, 1, 10_000);
  const maxUnfinished = optionalInt(env, 'NOTIFY_MAX_UNFINISHED', 1, 100_000);
  if (maxUnfinished !== undefined && maxUnfinished < maxInFlight) {
    throw new ConfigError('NOTIFY_MAX_UNFINISHED', `must be at least NOTIFY_MAX_IN_FLIGHT (${maxInFlight})`);
  }
  const kafkaBrokers = list(env, 'KAFKA_BROKERS', DEFAULT_KAFKA_BROKERS);
  for (const b of kafkaBrokers) {
    if (!/^[^\s:]+:\d{1,5}$/.test(b)) throw new ConfigError('KAFKA_BROKERS', `expected host:port[,host:port], got "${b}"`);
  }
  const port = int(env, 'PORT', 3000, 0, 65_535);
  const adminPort = int(env, 'NOTIFY_ADMIN_PORT', 9464, 0, 65_535);
  if (port === adminPort && port !== 0) {
    throw new ConfigError('NOTIFY_ADMIN_PORT', `must differ from PORT (both are ${port}): the admin endpoints need a port of their own`);
  }
  const seedApiKeys = list(env, 'NOTIFY_API_KEYS', '').map((pair) => {
    const i = pair.indexOf(':');
    if (i <= 0 || i === pair.length - 1) {
      throw new ConfigError('NOTIFY_API_KEYS', 'expected tenant:key[,tenant:key]');
    }
    return { tenantId: pair.slice(0, i), key: pair.slice(i + 1) };
  });
  return {
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']) ?? DEFAULT_DATABASE_URL,
    kafkaBrokers,
    port,
    adminPort,
    adminHost: str(env, 'NOTIFY_ADMIN_HOST') ?? '127.0.0.1',
    apiRateLimits: { perKey: rateLimit(env, 'NOTIFY_API_RATE_LIMIT'), perTenant: rateLimit(env, 'NOTIFY_API_TENANT_RATE_LIMIT') },
    apiKeyCacheMs: int(env, 'NOTIFY_API_KEY_CACHE_MS', 5_000, 0, 300_000),
    apiMaxInFlight: int(env, 'NOTIFY_API_MAX_IN_FLIGHT', 64, 1, 100_000),
    // 1024: 16 × NOTIFY_API_MAX_IN_FLIGHT, room for keep-alive pools and load balancers, yet a
    // bound on the sockets (and file descriptors) idle or slow clients can hold (docs/configuration.md).
    apiMaxConnections: int(env, 'NOTIFY_API_MAX_CONNECTIONS', 1_024, 0, 1_000_000),
    corsOrigins: origins(env, 'NOTIFY_CORS_ORIGINS'),
    apiGroupCommit: {
      maxGroupSize: int(env, 'NOTIFY_API_GROUP_COMMIT', 100, 1, 1_000),
      maxInFlight: int(env, 'NOTIFY_API_GROUP_COMMIT_IN_FLIGHT', 1, 1, 100),
    },
    apiMaxEventLoopDelayMs: int(env, 'NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS', 250, 0, 60_000),
    apiMaxEventLoopUtilizationPct: int(env, 'NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION', 0, 0, 100),
    dbPoolWaitMs: int(env, 'NOTIFY_DB_POOL_WAIT_MS', 5_000, 0, 600_000),
    logLevel: logLevel as Config['logLevel'],
    events: events as Config['events'],
    topicPrefix,
    topicPartitions: int(env, 'NOTIFY_TOPIC_PARTITIONS', 6, 1, 1_000),
    retryTopicPartitions: int(env, 'NOTIFY_RETRY_TOPIC_PARTITIONS', 1, 1, 1_000),
    topicReplication: optionalInt(env, 'NOTIFY_TOPIC_REPLICATION', 1, 100),
    retry: {
      maxAttempts: int(env, 'NOTIFY_MAX_ATTEMPTS', 8, 1, 100),
      baseDelayMs,
      maxDelayMs,
      jitter: fraction(env, 'NOTIFY_JITTER', 0.2),
      defaultTtlMs: int(env, 'NOTIFY_DEFAULT_TTL_MS', 86_400_000, 1_000, 30 * 86_400_000),
    },
    dispatcher: {
      sendTimeoutMs: int(env, 'NOTIFY_SEND_TIMEOUT_MS', 2_000, 1, 600_000),
      maxInFlight,
      maxUnfinished,
      repairAfterMs: int(env, 'NOTIFY_REPAIR_AFTER_MS', 60_000, 1_000, 86_400_000),
      outcomeBatchSize: int(env, 'NOTIFY_OUTCOME_BATCH_SIZE', 64, 1, 1_000),
      outcomeBatchDelayMs: int(env, 'NOTIFY_OUTCOME_BATCH_DELAY_MS', 5, 0, 1_000),
      // The broker refuses sessions outside group.min/max.session.timeout.ms (6 s – 30 min by default).
      sessionTimeoutMs: int(env, 'NOTIFY_KAFKA_SESSION_TIMEOUT_MS', 6_000, 6_000, 1_800_000),
    },
    relay: {
      batchSize: int(env, 'NOTIFY_RELAY_BATCH_SIZE', 500, 1, 10_000),
      pollIntervalMs: int(env, 'NOTIFY_RELAY_POLL_MS', 1_000, 10, 600_000),
      retentionMs: int(env, 'NOTIFY_OUTBOX_RETENTION_MS', 3_600_000, 0, 30 * 86_400_000),
      maxMessageBytes: int(env, 'NOTIFY_KAFKA_MAX_MESSAGE_BYTES', 1_000_000, 1_024, 100_000_000),
      orderWaitMs: int(env, 'NOTIFY_RELAY_ORDER_WAIT_MS', 500, 0, 86_400_000),
      lingerMs: int(env, 'NOTIFY_RELAY_LINGER_MS', 5, 0, 1_000),
    },
    webhook: {
      allowCidrs: cidrs(env, 'NOTIFY_WEBHOOK_ALLOW_CIDRS'),
      signingSecret: webhookSecret(env, 'NOTIFY_WEBHOOK_SECRET'),
      secretsKey: secretsKey(env),
    },
    http: {
      connectionsPerOrigin: int(env, 'NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN', DEFAULT_CONNECTIONS_PER_ORIGIN, 1, 10_000),
    },
    smtp: {
      url: url(env, 'NOTIFY_SMTP_URL', ['smtp:', 'smtps:']),
      from: smtpFrom(env, 'NOTIFY_SMTP_FROM'),
      poolSize: int(env, 'NOTIFY_SMTP_POOL_SIZE', 5, 1, 100),
      fallbackUrl: url(env, 'NOTIFY_SMTP_FALLBACK_URL', ['smtp:', 'smtps:']),
    },
    sms: {
      url: url(env, 'NOTIFY_SMS_URL', ['http:', 'https:']),
      accountId: str(env, 'NOTIFY_SMS_ACCOUNT_ID'),
      authToken: str(env, 'NOTIFY_SMS_AUTH_TOKEN'),
      from: str(env, 'NOTIFY_SMS_FROM'),
      fallbackUrl: url(env, 'NOTIFY_SMS_FALLBACK_URL', ['http:', 'https:']),
    },
    endpoints: {
      failureThreshold: int(env, 'NOTIFY_ENDPOINT_FAILURE_THRESHOLD', 5, 0, 1_000_000),
      failureRatio: fraction(env, 'NOTIFY_ENDPOINT_FAILURE_RATIO', DEFAULT_FAILURE_RATIO),
      cooldownMs: duration(env, 'NOTIFY_ENDPOINT_COOLDOWN', 10_000, 100, 86_400_000),
      disableAfterMs: duration(env, 'NOTIFY_ENDPOINT_DISABLE_AFTER', 5 * 86_400_000, 1_000, 365 * 86_400_000),
      endpointRateLimit: rateLimit(env, 'NOTIFY_ENDPOINT_RATE_LIMIT'),
      tenantRateLimit: rateLimit(env, 'NOTIFY_TENANT_RATE_LIMIT'),
    },
    rateLimits: {
      email: rateLimit(env, 'NOTIFY_RATE_LIMIT_EMAIL'),
      sms: rateLimit(env, 'NOTIFY_RATE_LIMIT_SMS'),
      webhook: rateLimit(env, 'NOTIFY_RATE_LIMIT_WEBHOOK'),
    },
    seedApiKeys,
    secretRotationGraceMs: int(env, 'NOTIFY_SECRET_ROTATION_GRACE_MS', 86_400_000, 0, 30 * 86_400_000),
    consoleShowContent: flag(env, 'NOTIFY_CONSOLE_SHOW_CONTENT'),
    shutdownTimeoutMs: int(env, 'NOTIFY_SHUTDOWN_TIMEOUT_MS', 15_000, 100, 600_000),
    retentionDays: int(env, 'NOTIFY_RETENTION_DAYS', 30, 0, 36_500),
    migrate: {
      // Not 0: lock_timeout = 0 waits for ever, the queue-behind-a-long-transaction this bound exists to prevent.
      lockTimeoutMs: int(env, 'NOTIFY_MIGRATE_LOCK_TIMEOUT_MS', 5_000, 1, 600_000),
      lockAttempts: int(env, 'NOTIFY_MIGRATE_LOCK_ATTEMPTS', 5, 1, 100),
    },
  };
}

// Read from process.env outside loadConfig (packages/relay/src/trace.ts), or by the tooling only.
const OTHER_VARIABLES = ['NOTIFY_RELAY_TRACE', 'NOTIFY_UPDATE_SCREENSHOTS'];

/** Every NOTIFY_* variable notify reads: those `loadConfig` reads (recorded from a run on defaults, so the list cannot drift), and OTHER_VARIABLES. */
function knownVariables(): ReadonlySet<string> {
  const read = new Set(OTHER_VARIABLES);
  loadConfig(
    new Proxy(
      {},
      {
        get: (_, name) => {
          if (typeof name === 'string') read.add(name);
          return undefined;
        },
      },
    ),
  );
  return read;
}

/** An environment variable that looks like notify's and is not, with the known name it is closest to (within two edits), if any. */
export interface UnknownVariable {
  readonly name: string;
  readonly closest: string | undefined;
}

/**
 * The NOTIFY_* variables of `env` that notify does not read (a typo such as NOTIFY_MAX_ATEMPTS
 * would otherwise be ignored silently), each with the closest known name. `notify start` logs them
 * as one warning.
 */
export function unknownVariables(env: Env): UnknownVariable[] {
  const known = [...knownVariables()];
  return Object.keys(env)
    .filter((name) => name.startsWith('NOTIFY_') && !known.includes(name))
    .sort()
    .map((name) => {
      let closest: string | undefined;
      let best = 3;
      for (const k of known) {
        const d = editDistance(name, k);
        if (d < best) [closest, best] = [k, d];
      }
      return { name, closest };
    });
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length]!;
}
