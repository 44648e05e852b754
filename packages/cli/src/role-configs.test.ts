import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { dispatcherConfigFrom, relayConfigFrom } from './role-configs.js';

describe('dispatcherConfigFrom', () => {
  it('takes the service settings and derives the rest', () => {
    const c = dispatcherConfigFrom(
      loadConfig({
        NOTIFY_TOPIC_PREFIX: 'acme',
        NOTIFY_MAX_IN_FLIGHT: '3',
        NOTIFY_SEND_TIMEOUT_MS: '1500',
        NOTIFY_SHUTDOWN_TIMEOUT_MS: '15000',
      }),
    );
    expect(c).toMatchObject({
      topicPrefix: 'acme',
      groupId: 'acme.dispatcher',
      maxInFlight: 3,
      maxUnfinished: 12,
      sendTimeoutMs: 1500,
      repairAfterMs: 60_000,
      repairIntervalMs: 30_000,
      maxBuffered: 1000,
      // Half of NOTIFY_SHUTDOWN_TIMEOUT_MS, as notify start gives it and docs/configuration.md says.
      shutdownTimeoutMs: 7_500,
    });
    expect(c.retry).toMatchObject({ maxAttempts: 8, baseDelayMs: 1000, maxDelayMs: 3_600_000, jitter: 0.2 });
    expect(dispatcherConfigFrom(loadConfig({ NOTIFY_MAX_IN_FLIGHT: '3', NOTIFY_MAX_UNFINISHED: '3' }))).toMatchObject({ maxUnfinished: 3 });
    expect(c.tiers[0]?.name).toBe('1s');
    expect(c.tiers.at(-1)?.name).toBe('1h');
  });

  it('batches by default (64 outcomes or 5 ms; reads in the same event-loop turn) and reads NOTIFY_OUTCOME_BATCH_* and the session timeout', () => {
    expect(dispatcherConfigFrom(loadConfig({}))).toMatchObject({
      outcomeBatchSize: 64,
      outcomeBatchDelayMs: 5,
      readBatchSize: 256,
      readBatchDelayMs: 0,
    });
    expect(dispatcherConfigFrom(loadConfig({ NOTIFY_OUTCOME_BATCH_SIZE: '1', NOTIFY_OUTCOME_BATCH_DELAY_MS: '0' }))).toMatchObject({
      outcomeBatchSize: 1,
      outcomeBatchDelayMs: 0,
    });
    expect(dispatcherConfigFrom(loadConfig({}))).toMatchObject({ sessionTimeoutMs: 6_000, heartbeatIntervalMs: 1_000 });
    expect(dispatcherConfigFrom(loadConfig({ NOTIFY_KAFKA_SESSION_TIMEOUT_MS: '12000' }))).toMatchObject({
      sessionTimeoutMs: 12_000,
      heartbeatIntervalMs: 2_000,
    });
    expect(dispatcherConfigFrom(loadConfig({ NOTIFY_KAFKA_SESSION_TIMEOUT_MS: '30000' }))).toMatchObject({
      sessionTimeoutMs: 30_000,
      heartbeatIntervalMs: 3_000,
    });
  });
});

describe('relayConfigFrom', () => {
  it('takes prefix, batch size, poll interval, retention, the message size limit and the linger from the service config', () => {
    const c = relayConfigFrom(
      loadConfig({
        NOTIFY_TOPIC_PREFIX: 'acme',
        NOTIFY_RELAY_BATCH_SIZE: '250',
        NOTIFY_RELAY_POLL_MS: '500',
        NOTIFY_OUTBOX_RETENTION_MS: '1000',
        NOTIFY_KAFKA_MAX_MESSAGE_BYTES: '500000',
        NOTIFY_RELAY_LINGER_MS: '0',
      }),
    );
    expect(c).toEqual({
      topicPrefix: 'acme',
      batchSize: 250,
      pollIntervalMs: 500,
      retentionMs: 1000,
      maxMessageBytes: 500_000,
      orderWaitMs: 500,
      lingerMs: 0,
    });
  });
});
