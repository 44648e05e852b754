import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelayMs } from './backoff.js';

const now = new Date('2026-05-01T12:00:00Z');
const noRandom = () => {
  throw new Error('random must not be called when jitter is 0');
};

describe('backoffDelayMs', () => {
  it("gives the article's 1 s, 2 s, 4 s schedule with jitter 0", () => {
    const delay = (attempt: number) => backoffDelayMs({ attempt, baseMs: 1000, maxMs: 30_000, jitter: 0, random: noRandom });
    expect([1, 2, 3, 4].map(delay)).toEqual([1000, 2000, 4000, 8000]);
  });

  it('caps the delay at max, even for huge attempt numbers', () => {
    const delay = (attempt: number) => backoffDelayMs({ now, attempt, baseMs: 1000, maxMs: 30_000, jitter: 0, random: noRandom });
    expect([5, 6, 7].map(delay)).toEqual([16_000, 30_000, 30_000]);
    expect(delay(5000)).toBe(30_000);
  });

  it('spreads the delay by ± jitter and never beyond max', () => {
    const base = { now, attempt: 3, baseMs: 1000, maxMs: 30_000, jitter: 0.2 };
    expect(backoffDelayMs({ ...base, random: () => 0 })).toBe(3200);
    expect(backoffDelayMs({ ...base, random: () => 0.5 })).toBe(4000);
    expect(backoffDelayMs({ ...base, random: () => 0.999_999 })).toBe(4800);
    expect(backoffDelayMs({ ...base, attempt: 6, random: () => 0.999_999 })).toBe(30_000);
  });

  it('lets a provider "not before" raise the delay, capped by max, and never lower it', () => {
    const base = { now, attempt: 1, baseMs: 1000, maxMs: 30_000, jitter: 0, random: noRandom };
    expect(backoffDelayMs({ ...base, notBefore: new Date(now.getTime() + 7000) })).toBe(7000);
    expect(backoffDelayMs({ ...base, notBefore: new Date(now.getTime() + 3_600_000) })).toBe(30_000);
    expect(backoffDelayMs({ ...base, notBefore: new Date(now.getTime() - 5000) })).toBe(1000);
  });

  it('rejects nonsense inputs with a clear error', () => {
    const base = { now, attempt: 1, baseMs: 1000, maxMs: 30_000, jitter: 0, random: noRandom };
    expect(() => backoffDelayMs({ ...base, attempt: 0 })).toThrow(/attempt/);
    expect(() => backoffDelayMs({ ...base, maxMs: 10 })).toThrow(/baseMs/);
    expect(() => backoffDelayMs({ ...base, jitter: 2 })).toThrow(/jitter/);
  });

  it('always lies within [base·2^(n−1)·(1−j), max] (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 0.999_999, noNaN: true }),
        (attempt, baseMs, extra, jitter, r) => {
          const maxMs = baseMs + extra;
          const d = backoffDelayMs({ now, attempt, baseMs, maxMs, jitter, random: () => r });
          const exact = Math.min(baseMs * 2 ** (attempt - 1), maxMs);
          expect(d).toBeLessThanOrEqual(maxMs);
          expect(d).toBeGreaterThanOrEqual(Math.floor(exact * (1 - jitter)));
        },
      ),
    );
  });
});
