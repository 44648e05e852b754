import { describe, expect, it } from 'vitest';
import { dispatcherConfig } from './config.js';

const retry = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0, defaultTtlMs: 86_400_000 };
const base = { topicPrefix: 'p', retry, sendTimeoutMs: 2000, maxInFlight: 3, repairAfterMs: 1000 };

describe('dispatcherConfig', () => {
  it('derives the defaults from the required fields', () => {
    expect(dispatcherConfig(base)).toMatchObject({
      groupId: 'p.dispatcher',
      maxBuffered: 1000,
      repairIntervalMs: 500,
      outcomeBatchSize: 64,
      outcomeBatchDelayMs: 5,
      readBatchSize: 256,
      readBatchDelayMs: 0,
    });
  });

  it('accepts overrides and rejects nonsense', () => {
    expect(dispatcherConfig({ ...base, groupId: 'g', repairIntervalMs: 50 })).toMatchObject({
      groupId: 'g',
      repairIntervalMs: 50,
      repairAfterMs: 1000,
    });
    expect(() => dispatcherConfig({ ...base, maxInFlight: 0 })).toThrow(/maxInFlight/);
    expect(() => dispatcherConfig({ ...base, maxInFlight: 50, maxBuffered: 10 })).toThrow(/maxBuffered/);
    expect(() => dispatcherConfig({ ...base, outcomeBatchSize: 0 })).toThrow(/outcomeBatchSize/);
    expect(() => dispatcherConfig({ ...base, readBatchDelayMs: -1 })).toThrow(/readBatchDelayMs/);
  });
});
