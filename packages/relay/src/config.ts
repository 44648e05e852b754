import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError } from '@notify/runtime';

/**
 * What `createRelay` takes. The first four come from the service configuration;
 * the rest are tuning knobs with defaults (see `RELAY_DEFAULTS` and docs/relay.md).
 */
export interface RelayConfig {
  /** Prepended to each row's topic suffix (`<prefix>.<suffix>`). */
  readonly topicPrefix: string;
  /** Rows per claim and per Kafka `sendBatch`. */
  readonly batchSize: number;
  /** Polling fallback when no notification arrives. */
  readonly pollIntervalMs: number;
  /**
   * Published delivery requests are kept this long (the repair sweep reads them), then purged;
   * rows on `events` and `dlq` are deleted when published. 0: every row is deleted when published.
   */
  readonly retentionMs: number;
  /** Unique per running relay; default `relay-<host>-<pid>-<random>`. */
  readonly instanceId?: string;
  /** A lease not renewed for this long may be taken by another instance. Default 10 000. */
  readonly leaseTtlMs?: number;
  /** Lease renewal and rebalancing period. Default leaseTtlMs / 3. */
  readonly heartbeatIntervalMs?: number;
  /** Retry schedule after a failed batch. Defaults 100 ms doubling to 30 s, jitter 0.2. */
  readonly backoff?: { readonly baseMs?: number; readonly maxMs?: number; readonly jitter?: number };
  /** First re-poll delay while rows wait behind an open transaction; doubles up to min(1 s, orderWaitMs / 5). Default 20. */
  readonly heldBackRetryMs?: number;
  /**
   * The bound on the snapshot rule's wait (docs/relay.md, "Long transactions"): a committed row
   * whose transaction is not yet below xmin is published anyway once its transaction started
   * this long ago, so one long transaction elsewhere on the server delays others by about this
   * much rather than by its whole length. Nothing is skipped: the long transaction's own rows go
   * out when it commits. Default 500.
   */
  readonly orderWaitMs?: number;
  /**
   * After a round that published a short batch, the next claim waits this long, so that the rows
   * committed meanwhile (the next requests, the outcome events of those just delivered) go out
   * together instead of a round each (each round is five statements and a Kafka produce). Only
   * under a steady trickle: a relay woken from its sleep claims at once, and a full batch is
   * followed at once. Adds at most this much to the relay's latency. Default 5; 0: never waits.
   */
  readonly lingerMs?: number;
  /** Period of the retention purge. Default 60 000. */
  readonly purgeIntervalMs?: number;
  /** Rows deleted per purge statement. Default 1 000. */
  readonly purgeBatchSize?: number;
  /** A publish that takes longer fails the batch (rows stay unpublished). Default 30 000. */
  readonly publishTimeoutMs?: number;
  /** `stop()` waits this long for the in-flight batch. Default 10 000. */
  readonly stopTimeoutMs?: number;
  /**
   * A row whose message is larger (key + value + headers, `messageBytes`) is set aside without a
   * publish, as Kafka would refuse it. Keep it at or below the broker's and topics'
   * `message.max.bytes` (1 MiB by default). Default 1 000 000.
   */
  readonly maxMessageBytes?: number;
}

/** `RelayConfig` with every default applied and checked. */
export interface ResolvedRelayConfig {
  readonly topicPrefix: string;
  readonly batchSize: number;
  readonly pollIntervalMs: number;
  readonly retentionMs: number;
  readonly instanceId: string;
  readonly leaseTtlMs: number;
  readonly heartbeatIntervalMs: number;
  readonly backoff: { readonly baseMs: number; readonly maxMs: number; readonly jitter: number };
  readonly heldBackRetryMs: number;
  readonly heldBackMaxMs: number;
  readonly orderWaitMs: number;
  readonly lingerMs: number;
  readonly purgeIntervalMs: number;
  readonly purgeBatchSize: number;
  readonly publishTimeoutMs: number;
  readonly stopTimeoutMs: number;
  readonly maxMessageBytes: number;
}

/** Defaults of the tuning knobs. */
export const RELAY_DEFAULTS = {
  leaseTtlMs: 10_000,
  backoff: { baseMs: 100, maxMs: 30_000, jitter: 0.2 },
  heldBackRetryMs: 20,
  heldBackMaxMs: 1_000,
  orderWaitMs: 500,
  lingerMs: 5,
  purgeIntervalMs: 60_000,
  purgeBatchSize: 1_000,
  publishTimeoutMs: 30_000,
  stopTimeoutMs: 10_000,
  maxMessageBytes: 1_000_000,
} as const;

function check(name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new ConfigError(`relay.${name}`, `expected a number from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/** Applies defaults and validates; throws `ConfigError` naming the bad field (`relay.<field>`). */
export function resolveRelayConfig(config: RelayConfig): ResolvedRelayConfig {
  if (!/^[a-zA-Z0-9._-]{1,200}$/.test(config.topicPrefix)) {
    throw new ConfigError('relay.topicPrefix', 'expected letters, digits, ".", "_" or "-"');
  }
  const leaseTtlMs = check('leaseTtlMs', config.leaseTtlMs ?? RELAY_DEFAULTS.leaseTtlMs, 100);
  const heartbeatIntervalMs = check('heartbeatIntervalMs', config.heartbeatIntervalMs ?? Math.floor(leaseTtlMs / 3), 10, leaseTtlMs / 2);
  const baseMs = check('backoff.baseMs', config.backoff?.baseMs ?? RELAY_DEFAULTS.backoff.baseMs, 1);
  const maxMs = check('backoff.maxMs', config.backoff?.maxMs ?? RELAY_DEFAULTS.backoff.maxMs, baseMs);
  const jitter = check('backoff.jitter', config.backoff?.jitter ?? RELAY_DEFAULTS.backoff.jitter, 0, 1);
  const pollIntervalMs = check('pollIntervalMs', config.pollIntervalMs, 1);
  const heldBackRetryMs = check('heldBackRetryMs', config.heldBackRetryMs ?? RELAY_DEFAULTS.heldBackRetryMs, 1);
  const orderWaitMs = check('orderWaitMs', config.orderWaitMs ?? RELAY_DEFAULTS.orderWaitMs, 0, 86_400_000);
  const instanceId = config.instanceId ?? `relay-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  if (instanceId.length === 0 || instanceId.length > 200) throw new ConfigError('relay.instanceId', 'expected 1–200 characters');
  return {
    topicPrefix: config.topicPrefix,
    batchSize: check('batchSize', config.batchSize, 1, 100_000),
    pollIntervalMs,
    retentionMs: check('retentionMs', config.retentionMs, 0),
    instanceId,
    leaseTtlMs,
    heartbeatIntervalMs,
    backoff: { baseMs, maxMs, jitter },
    heldBackRetryMs,
    // Rows held back behind another open transaction are publishable as soon as it ends, and at the
    // latest orderWaitMs after their own started. Under load that wait is a few milliseconds of a
    // neighbour's commit, so the re-poll backs off only to a 25th of the bound (20 ms by default;
    // a fifth, 100 ms, added ~25 ms to p99 at 500/s), never below the first re-poll (a short bound
    // must not turn the re-poll into a busy loop), never above the idle poll.
    heldBackMaxMs: Math.min(
      pollIntervalMs,
      Math.max(heldBackRetryMs, Math.min(RELAY_DEFAULTS.heldBackMaxMs, Math.floor(orderWaitMs / 25))),
    ),
    orderWaitMs,
    lingerMs: check('lingerMs', config.lingerMs ?? RELAY_DEFAULTS.lingerMs, 0, 1_000),
    purgeIntervalMs: check('purgeIntervalMs', config.purgeIntervalMs ?? RELAY_DEFAULTS.purgeIntervalMs, 10),
    purgeBatchSize: check('purgeBatchSize', config.purgeBatchSize ?? RELAY_DEFAULTS.purgeBatchSize, 1, 100_000),
    publishTimeoutMs: check('publishTimeoutMs', config.publishTimeoutMs ?? RELAY_DEFAULTS.publishTimeoutMs, 10),
    stopTimeoutMs: check('stopTimeoutMs', config.stopTimeoutMs ?? RELAY_DEFAULTS.stopTimeoutMs, 0),
    maxMessageBytes: check('maxMessageBytes', config.maxMessageBytes ?? RELAY_DEFAULTS.maxMessageBytes, 1_024),
  };
}
