import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { relayBackoffMs } from './backoff.js';

describe('relayBackoffMs', () => {
  it('doubles from the base up to the cap when jitter is 0', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((attempt) =>
      relayBackoffMs({ attempt, baseMs: 100, maxMs: 5_000, jitter: 0, random: 0.99 }),
    );
    expect(delays).toEqual([100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000]);
  });

  it('stays within the jitter band and never exceeds the cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, baseMs, extra, jitter, random) => {
          const maxMs = baseMs + extra;
          const exact = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 52));
          const d = relayBackoffMs({ attempt, baseMs, maxMs, jitter, random });
          expect(d).toBeLessThanOrEqual(maxMs);
          expect(d).toBeGreaterThanOrEqual(Math.floor(exact * (1 - jitter)));
          expect(d).toBeLessThanOrEqual(Math.ceil(exact * (1 + jitter)));
        },
      ),
    );
  });

  it('treats attempt 0 like attempt 1 and does not overflow on huge attempts', () => {
    expect(relayBackoffMs({ attempt: 0, baseMs: 50, maxMs: 1_000, jitter: 0, random: 0 })).toBe(50);
    expect(relayBackoffMs({ attempt: 10_000, baseMs: 50, maxMs: 1_000, jitter: 0, random: 0 })).toBe(1_000);
  });
});
