import { type DispatcherConfig, type DispatcherConfigOverrides, dispatcherConfig } from '@notify/dispatcher';
import type { RelayConfig } from '@notify/relay';
import type { Config } from './config.js';

/** The relay's part of the service configuration. */
export function relayConfigFrom(config: Config): RelayConfig {
  return {
    topicPrefix: config.topicPrefix,
    batchSize: config.relay.batchSize,
    pollIntervalMs: config.relay.pollIntervalMs,
    retentionMs: config.relay.retentionMs,
    maxMessageBytes: config.relay.maxMessageBytes,
    orderWaitMs: config.relay.orderWaitMs,
    lingerMs: config.relay.lingerMs,
  };
}

/** The dispatcher's settings from the service configuration (`loadConfig(env)`), with derived defaults. */
export function dispatcherConfigFrom(config: Config, overrides: DispatcherConfigOverrides = {}): DispatcherConfig {
  return dispatcherConfig({
    topicPrefix: config.topicPrefix,
    retry: config.retry,
    sendTimeoutMs: config.dispatcher.sendTimeoutMs,
    maxInFlight: config.dispatcher.maxInFlight,
    ...(config.dispatcher.maxUnfinished === undefined ? {} : { maxUnfinished: config.dispatcher.maxUnfinished }),
    repairAfterMs: config.dispatcher.repairAfterMs,
    outcomeBatchSize: config.dispatcher.outcomeBatchSize,
    outcomeBatchDelayMs: config.dispatcher.outcomeBatchDelayMs,
    sessionTimeoutMs: config.dispatcher.sessionTimeoutMs,
    // Heartbeats well inside the session: a sixth of it (1 s at the 6 s default), at most kafkajs'
    // 3 s default, so one late heartbeat on a loaded machine does not cost the member its partitions.
    heartbeatIntervalMs: Math.min(3_000, Math.floor(config.dispatcher.sessionTimeoutMs / 6)),
    shutdownTimeoutMs: dispatcherShutdownShareMs(config),
    ...overrides,
  });
}

/**
 * The dispatcher's share of NOTIFY_SHUTDOWN_TIMEOUT_MS for running deliveries: half of it (at least
 * 100 ms). The rest is for aborting stragglers, committing, leaving the group, and the other roles
 * of the process (the relay has a third for its batch). A delivery still running after it is
 * aborted and re-sent after the restart.
 */
export function dispatcherShutdownShareMs(config: Pick<Config, 'shutdownTimeoutMs'>): number {
  return Math.max(100, Math.floor(config.shutdownTimeoutMs / 2));
}
