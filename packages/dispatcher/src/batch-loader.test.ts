import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBatchLoader } from './batch-loader.js';

/** A loadMany that records its calls and answers `value:<key>`, failing for keys in `poison`. */
function recorder(poison: ReadonlySet<string> = new Set()) {
  const calls: string[][] = [];
  const loadMany = async (keys: readonly string[]) => {
    calls.push([...keys]);
    const bad = keys.find((k) => poison.has(k));
    if (bad) throw new Error(`refused ${bad}`);
    return keys.map((k) => `value:${k}`);
  };
  return { calls, loadMany };
}

describe('createBatchLoader', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('serves the requests of one event-loop turn with one call, each with its own value, duplicates once', async () => {
    const r = recorder();
    const loader = createBatchLoader({ loadMany: r.loadMany, maxBatch: 100, delayMs: 0 });
    const values = await Promise.all(['a', 'b', 'a', 'c'].map((k) => loader.load(k)));
    expect(values).toEqual(['value:a', 'value:b', 'value:a', 'value:c']);
    expect(r.calls).toEqual([['a', 'b', 'c']]);
    // A later turn is a new batch: nothing is cached.
    expect(await loader.load('a')).toBe('value:a');
    expect(r.calls).toHaveLength(2);
  });

  it('sends a full batch at once and the remainder after the delay', async () => {
    vi.useFakeTimers();
    const r = recorder();
    const loader = createBatchLoader({ loadMany: r.loadMany, maxBatch: 2, delayMs: 5 });
    const p = ['a', 'b', 'c'].map((k) => loader.load(k));
    expect(r.calls).toEqual([['a', 'b']]);
    await vi.advanceTimersByTimeAsync(4);
    expect(r.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.calls).toEqual([['a', 'b'], ['c']]);
    expect(await Promise.all(p)).toEqual(['value:a', 'value:b', 'value:c']);
  });

  it('isolates a failing key: its batch-mates are loaded again on their own and succeed', async () => {
    const r = recorder(new Set(['bad']));
    const loader = createBatchLoader({ loadMany: r.loadMany, maxBatch: 100, delayMs: 0 });
    const results = await Promise.allSettled(['a', 'bad', 'b', 'bad'].map((k) => loader.load(k)));
    expect(results.map((x) => (x.status === 'fulfilled' ? x.value : `rejected: ${(x.reason as Error).message}`))).toEqual([
      'value:a',
      'rejected: refused bad',
      'value:b',
      'rejected: refused bad',
    ]);
    expect(r.calls).toEqual([['a', 'bad', 'b'], ['a'], ['bad'], ['b']]);
  });

  it('fails every request when every key fails (the database is down)', async () => {
    const loader = createBatchLoader<string, string>({
      loadMany: async () => {
        throw new Error('connection refused');
      },
      maxBatch: 100,
      delayMs: 0,
    });
    const results = await Promise.allSettled(['a', 'b'].map((k) => loader.load(k)));
    expect(results.map((x) => x.status)).toEqual(['rejected', 'rejected']);
  });

  it('rejects a loadMany that answers the wrong number of values, and bad options', async () => {
    const loader = createBatchLoader<string, string>({ loadMany: async () => [], maxBatch: 10, delayMs: 0 });
    await expect(loader.load('a')).rejects.toThrow(/returned 0 values for 1 keys/);
    expect(() => createBatchLoader({ loadMany: async () => [], maxBatch: 0, delayMs: 0 })).toThrow(/maxBatch/);
    expect(() => createBatchLoader({ loadMany: async () => [], maxBatch: 1, delayMs: -1 })).toThrow(/delayMs/);
  });
});
