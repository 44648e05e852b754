import { delayTiers, type DelayTier } from './retry/delay-topics.js';
import type { RetryConfig } from './retry/retry-config.js';

export type { RetryConfig } from './retry/retry-config.js';

/** Everything the dispatcher needs to know, built once by `dispatcherConfig` (the service's `notify start` derives it from its configuration). */
export interface DispatcherConfig {
  /** NOTIFY_TOPIC_PREFIX: topics are `<prefix>.requests`, `<prefix>.retry.<tier>`, `<prefix>.dlq`. */
  readonly topicPrefix: string;
  /** Kafka consumer group; default `<prefix>.dispatcher`. Every dispatcher instance of a deployment shares it. */
  readonly groupId: string;
  readonly retry: RetryConfig;
  /** The delay topics, derived from `retry` (see `delayTiers`). */
  readonly tiers: readonly DelayTier[];
  /** NOTIFY_SEND_TIMEOUT_MS: one provider call is aborted after this. */
  readonly sendTimeoutMs: number;
  /**
   * NOTIFY_MAX_IN_FLIGHT: deliveries before or in their provider call at once, across all
   * partitions of the normal lane (so it bounds concurrent provider calls). A delivery gives its
   * permit back when its provider call returns (or when it ends without one); its outcome then
   * commits without a permit, within `maxUnfinished`.
   */
  readonly maxInFlight: number;
  /**
   * NOTIFY_MAX_UNFINISHED: deliveries started and not finished in the normal lane at most: in
   * their provider call, or after it waiting for their outcome's commit. While this many are
   * unfinished no new delivery starts, which bounds the outcomes queued for the writer. At least
   * `maxInFlight`; equal to it, a delivery in effect keeps its permit until its outcome committed
   * (the behaviour before permits were given back at the provider's return). Default
   * 4 × maxInFlight. The high-priority lane gets the same multiple of `priorityMaxInFlight`.
   */
  readonly maxUnfinished: number;
  /**
   * Deliveries of the high-priority lane (`requests.high`) running at once, on top of
   * `maxInFlight`. Default max(1, ⌈maxInFlight / 4⌉).
   */
  readonly priorityMaxInFlight: number;
  /**
   * Messages read from Kafka but not finished (running or waiting behind their key) held in
   * memory at most; fetching waits when it is reached. Default max(1000, 10 × maxInFlight).
   */
  readonly maxBuffered: number;
  /** NOTIFY_REPAIR_AFTER_MS: a queued notification overdue by more than this is re-published. */
  readonly repairAfterMs: number;
  /** How often the repair sweep runs. Default repairAfterMs / 2, at most 30 s. */
  readonly repairIntervalMs: number;
  /** Most notifications one sweep re-publishes. */
  readonly repairBatchSize: number;
  /** How often the schedule service hands due scheduled notifications (`send_at`) to Kafka. Default 1 s. */
  readonly scheduleIntervalMs: number;
  /**
   * How far ahead of `send_at` a scheduled notification is released onto a delay topic (where it
   * waits until due, never less). At least one interval, so a pass never releases one late.
   * Default 2 × scheduleIntervalMs.
   */
  readonly scheduleLookaheadMs: number;
  /** Most scheduled notifications one pass releases. Default 500. */
  readonly scheduleBatchSize: number;
  /**
   * A strict-order notification whose predecessor is still queued is looked at again this long
   * after the predecessor's next attempt is due (or after now, if that is past). Default 500 ms.
   */
  readonly strictRecheckMs: number;
  /**
   * `stop()` waits this long for running deliveries before aborting them (they stay queued).
   * Default 10 s; from the service config, half of NOTIFY_SHUTDOWN_TIMEOUT_MS.
   */
  readonly shutdownTimeoutMs: number;
  /**
   * kafkajs `maxWaitTimeInMs`: how long a fetch waits for data. It also bounds how late a paused
   * delay-topic partition is noticed after it is resumed, so it is short. Default 100 ms.
   */
  readonly fetchMaxWaitMs: number;
  /** kafkajs `sessionTimeout`: a member silent this long is removed from the group. Default 6 s (the failover time after a crash). */
  readonly sessionTimeoutMs: number;
  /** kafkajs `heartbeatInterval`. Default 1 s. */
  readonly heartbeatIntervalMs: number;
  /**
   * NOTIFY_OUTCOME_BATCH_SIZE: delivery outcomes written in one transaction at most (group
   * commit, `createOutcomeWriter`). Default 64. 1 writes every outcome in its own transaction.
   */
  readonly outcomeBatchSize: number;
  /**
   * NOTIFY_OUTCOME_BATCH_DELAY_MS: how long the first outcome of a group waits for others before
   * the group is written (0: until the end of the event-loop turn). Default 5 ms. It adds at most
   * this much to each delivery's duration (after its provider call, so it holds a place in
   * `maxUnfinished`, not a permit); the dispatcher's writer does not wait once no running
   * delivery is left to record an outcome (`OutcomeWriterOptions.yetToRecord`), so the delay only
   * holds outcomes that company may still join.
   */
  readonly outcomeBatchDelayMs: number;
  /**
   * How long in all a group of outcomes may wait while one of its outcomes' keys has its next
   * delivery running (one busy key, pipelined): that key's next outcome is one provider call away.
   * Default 20 ms; at least `outcomeBatchDelayMs` in effect (`OutcomeWriterOptions.busyKeyDelayMs`).
   */
  readonly outcomeBusyKeyDelayMs: number;
  /** Notifications read per query at most (the loader behind concurrently starting deliveries). Default 256. */
  readonly readBatchSize: number;
  /** How long the first read of a batch waits for others (0: until the end of the event-loop turn). Default 0. */
  readonly readBatchDelayMs: number;
}

/** The defaults of the batching settings (also used by a handler given a config without them). */
export const BATCHING_DEFAULTS = {
  outcomeBatchSize: 64,
  outcomeBatchDelayMs: 5,
  outcomeBusyKeyDelayMs: 20,
  readBatchSize: 256,
  readBatchDelayMs: 0,
} as const satisfies Pick<
  DispatcherConfig,
  'outcomeBatchSize' | 'outcomeBatchDelayMs' | 'outcomeBusyKeyDelayMs' | 'readBatchSize' | 'readBatchDelayMs'
>;

/** Optional overrides for `dispatcherConfigFrom`. */
export type DispatcherConfigOverrides = Partial<Omit<DispatcherConfig, 'tiers' | 'retry'>>;

/** Builds a `DispatcherConfig` from the required fields, deriving every other one. */
export function dispatcherConfig(
  fields: Pick<DispatcherConfig, 'topicPrefix' | 'retry' | 'sendTimeoutMs' | 'maxInFlight' | 'repairAfterMs'> & DispatcherConfigOverrides,
): DispatcherConfig {
  const check = (name: string, value: number, min: number) => {
    if (!Number.isFinite(value) || value < min) throw new RangeError(`dispatcher config ${name} must be a number ≥ ${min}, got ${value}`);
  };
  check('maxInFlight', fields.maxInFlight, 1);
  check('sendTimeoutMs', fields.sendTimeoutMs, 1);
  check('repairAfterMs', fields.repairAfterMs, 1);
  const config: DispatcherConfig = {
    groupId: `${fields.topicPrefix}.dispatcher`,
    maxUnfinished: 4 * fields.maxInFlight,
    maxBuffered: Math.max(1000, 10 * fields.maxInFlight),
    priorityMaxInFlight: Math.max(1, Math.ceil(fields.maxInFlight / 4)),
    repairIntervalMs: Math.max(10, Math.min(30_000, Math.floor(fields.repairAfterMs / 2))),
    repairBatchSize: 500,
    scheduleIntervalMs: 1_000,
    scheduleLookaheadMs: 2 * (fields.scheduleIntervalMs ?? 1_000),
    scheduleBatchSize: 500,
    strictRecheckMs: 500,
    shutdownTimeoutMs: 10_000,
    fetchMaxWaitMs: 100,
    sessionTimeoutMs: 6_000,
    heartbeatIntervalMs: 1_000,
    ...BATCHING_DEFAULTS,
    ...fields,
    tiers: delayTiers(fields.retry),
  };
  check('maxUnfinished', config.maxUnfinished, config.maxInFlight);
  check('maxBuffered', config.maxBuffered, config.maxInFlight);
  check('priorityMaxInFlight', config.priorityMaxInFlight, 1);
  check('scheduleIntervalMs', config.scheduleIntervalMs, 10);
  check('scheduleLookaheadMs', config.scheduleLookaheadMs, config.scheduleIntervalMs);
  check('scheduleBatchSize', config.scheduleBatchSize, 1);
  check('strictRecheckMs', config.strictRecheckMs, 1);
  check('outcomeBatchSize', config.outcomeBatchSize, 1);
  check('outcomeBatchDelayMs', config.outcomeBatchDelayMs, 0);
  check('outcomeBusyKeyDelayMs', config.outcomeBusyKeyDelayMs, 0);
  check('readBatchSize', config.readBatchSize, 1);
  check('readBatchDelayMs', config.readBatchDelayMs, 0);
  return config;
}
