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
    [500, 1_000, 20], // the default: a 25th of the bound
    [100, 1_000, 20], // a short bound: never below the first re-poll (20 ms), not a 4-ms busy loop
    [0, 1_000, 20],
    [5_000, 1_000, 200],
    [60_000, 1_000, 1_000], // a long bound: at most a second
    [60_000, 50, 50], // and never above the idle poll
  ])('re-polls held-back rows at most every orderWaitMs %i / 25 ms (poll %i ms): %i ms', (orderWaitMs, pollIntervalMs, heldBackMaxMs) => {
    const r = resolveRelayConfig({ topicPrefix: 'p', batchSize: 10, pollIntervalMs, retentionMs: 0, orderWaitMs });
    expect(r.heldBackMaxMs).toBe(heldBackMaxMs);
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
