import { describe, expect, it } from 'vitest';
import { ConfigError } from '@notify/runtime';
import { resolveRelayConfig } from './config.js';

describe('relay config', () => {
  it('fills the tuning defaults', () => {
    const r = resolveRelayConfig({ topicPrefix: 'p', batchSize: 10, pollIntervalMs: 1000, retentionMs: 0, instanceId: 'a' });
    expect(r).toMatchObject({
      instanceId: 'a',
      leaseTtlMs: 10_000,
      heartbeatIntervalMs: 3_333,
      backoff: { baseMs: 100, maxMs: 30_000, jitter: 0.2 },
      orderWaitMs: 500,
      heldBackMaxMs: 20, // a 25th of the order wait: held-back rows are re-polled soon after a neighbour commits
    });
    expect(resolveRelayConfig({ topicPrefix: 'p', batchSize: 10, pollIntervalMs: 1000, retentionMs: 0 }).instanceId).toMatch(/^relay-/);
  });

  it.each([
    [{ batchSize: 0 }, /relay\.batchSize/],
    [{ heartbeatIntervalMs: 9_000 }, /relay\.heartbeatIntervalMs/],
    [{ backoff: { baseMs: 500, maxMs: 100 } }, /relay\.backoff\.maxMs/],
    [{ topicPrefix: 'bad prefix' }, /relay\.topicPrefix/],
  ])('rejects %o naming the field', (override, message) => {
    const base = { topicPrefix: 'p', batchSize: 10, pollIntervalMs: 1000, retentionMs: 0 };
    expect(() => resolveRelayConfig({ ...base, ...override })).toThrow(message);
    expect(() => resolveRelayConfig({ ...base, ...override })).toThrow(ConfigError);
  });
});
