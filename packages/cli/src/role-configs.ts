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
    // Two thirds of the process' shutdown budget (NOTIFY_SHUTDOWN_TIMEOUT_MS) for running deliveries;
    // the rest is for aborting stragglers, committing and leaving the group.
    shutdownTimeoutMs: Math.max(100, Math.floor((config.shutdownTimeoutMs * 2) / 3)),
    ...overrides,
  });
}
