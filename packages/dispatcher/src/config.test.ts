import { loadConfig } from '@notify/outbox';
import { describe, expect, it } from 'vitest';
import { dispatcherConfig, dispatcherConfigFrom } from './config.js';

describe('dispatcherConfigFrom', () => {
  it('takes the service settings and derives the rest', () => {
    const c = dispatcherConfigFrom(loadConfig({ NOTIFY_TOPIC_PREFIX: 'acme', NOTIFY_MAX_IN_FLIGHT: '3', NOTIFY_SEND_TIMEOUT_MS: '1500', NOTIFY_SHUTDOWN_TIMEOUT_MS: '15000' }));
    expect(c).toMatchObject({
      topicPrefix: 'acme',
      groupId: 'acme.dispatcher',
      maxInFlight: 3,
      sendTimeoutMs: 1500,
      repairAfterMs: 60_000,
      repairIntervalMs: 30_000,
      maxBuffered: 1000,
      shutdownTimeoutMs: 10_000,
    });
    expect(c.retry).toMatchObject({ maxAttempts: 8, baseDelayMs: 1000, maxDelayMs: 3_600_000, jitter: 0.2 });
    expect(c.tiers[0]?.name).toBe('1s');
    expect(c.tiers.at(-1)?.name).toBe('1h');
  });

  it('accepts overrides and rejects nonsense', () => {
    const retry = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0, defaultTtlMs: 86_400_000 };
    const base = { topicPrefix: 'p', retry, sendTimeoutMs: 2000, maxInFlight: 3, repairAfterMs: 1000 };
    expect(dispatcherConfig({ ...base, groupId: 'g', repairIntervalMs: 50 })).toMatchObject({ groupId: 'g', repairIntervalMs: 50, repairAfterMs: 1000 });
    expect(() => dispatcherConfig({ ...base, maxInFlight: 0 })).toThrow(/maxInFlight/);
    expect(() => dispatcherConfig({ ...base, maxInFlight: 50, maxBuffered: 10 })).toThrow(/maxBuffered/);
  });

  it('batches by default (64 outcomes or 5 ms; reads in the same event-loop turn), from NOTIFY_OUTCOME_BATCH_*, and rejects nonsense', () => {
    expect(dispatcherConfigFrom(loadConfig({}))).toMatchObject({ outcomeBatchSize: 64, outcomeBatchDelayMs: 5, readBatchSize: 256, readBatchDelayMs: 0 });
    expect(dispatcherConfigFrom(loadConfig({ NOTIFY_OUTCOME_BATCH_SIZE: '1', NOTIFY_OUTCOME_BATCH_DELAY_MS: '0' }))).toMatchObject({ outcomeBatchSize: 1, outcomeBatchDelayMs: 0 });
    expect(dispatcherConfigFrom(loadConfig({}))).toMatchObject({ sessionTimeoutMs: 30_000, heartbeatIntervalMs: 3_000 });
    expect(dispatcherConfigFrom(loadConfig({ NOTIFY_KAFKA_SESSION_TIMEOUT_MS: '6000' }))).toMatchObject({ sessionTimeoutMs: 6_000, heartbeatIntervalMs: 2_000 });
    const retry = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0, defaultTtlMs: 86_400_000 };
    const base = { topicPrefix: 'p', retry, sendTimeoutMs: 2000, maxInFlight: 3, repairAfterMs: 1000 };
    expect(() => dispatcherConfig({ ...base, outcomeBatchSize: 0 })).toThrow(/outcomeBatchSize/);
    expect(() => dispatcherConfig({ ...base, readBatchDelayMs: -1 })).toThrow(/readBatchDelayMs/);
  });
});
