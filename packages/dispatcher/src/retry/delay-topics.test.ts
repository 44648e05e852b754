import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelayMs } from '@notify/runtime';
import { delayTiers, dispatcherTopicSuffixes, dueOutOfRange, formatTierName, tierFor } from './delay-topics.js';

const lab = { baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0 };
const defaults = { baseDelayMs: 1000, maxDelayMs: 3_600_000, jitter: 0.2 };

describe('delay tiers', () => {
  it('names tiers by the largest unit that divides them', () => {
    expect([1000, 1500, 90_000, 120_000, 3_600_000, 250].map(formatTierName)).toEqual(['1s', '1500ms', '90s', '2m', '1h', '250ms']);
  });

  it("derives the lab's ladder from base and max", () => {
    expect(delayTiers(lab).map((t) => t.name)).toEqual(['1s', '1500ms', '2s', '3s', '4s', '6s', '8s', '12s', '16s', '24s', '30s']);
    expect(delayTiers(defaults)).toHaveLength(25);
    expect(delayTiers(defaults).at(-1)?.name).toBe('1h');
  });

  it('lists every topic the service needs', () => {
    expect(dispatcherTopicSuffixes(lab)).toEqual([
      'requests',
      'requests.high',
      ...['1s', '1500ms', '2s', '3s', '4s', '6s', '8s', '12s', '16s', '24s', '30s'].map((n) => `retry.${n}`),
      'events',
      'dlq',
    ]);
  });

  it('routes an exact backoff delay to the tier of that delay (jitter 0: nothing waits behind anything)', () => {
    const tiers = delayTiers(lab);
    for (let attempt = 1; attempt <= 8; attempt++) {
      const d = backoffDelayMs({ now: new Date(0), attempt, baseMs: 1000, maxMs: 30_000, jitter: 0, random: Math.random });
      expect(tierFor(tiers, d).delayMs).toBe(d);
    }
  });

  it('routes to the largest tier ≤ the remaining delay, and to the smallest when below all', () => {
    const tiers = delayTiers(lab);
    expect(tierFor(tiers, 999).name).toBe('1s');
    expect(tierFor(tiers, 1499).name).toBe('1s');
    expect(tierFor(tiers, 7999).name).toBe('6s');
    expect(tierFor(tiers, 30_000).name).toBe('30s');
    expect(tierFor(tiers, 10_000_000).name).toBe('30s');
  });

  it('bounds lateness below half the delay on every tier above the smallest (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 0, max: 3_600_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (base, extra, jitter) => {
          const tiers = delayTiers({ baseDelayMs: base, maxDelayMs: base + extra, jitter });
          tiers.forEach((t, i) => {
            if (i > 0) expect(t.latenessBoundMs).toBeLessThanOrEqual(Math.ceil(t.delayMs / 2) + 1);
            expect(t.latenessBoundMs).toBeGreaterThanOrEqual(0);
            expect(t.topic).toBe(`retry.${t.name}`);
          });
          expect(new Set(tiers.map((t) => t.name)).size).toBe(tiers.length);
          expect(tiers.at(-1)?.latenessBoundMs).toBe(0);
        },
      ),
    );
  });
});

describe('how far ahead a delivery request may be due when read', () => {
  const tiers = delayTiers(lab);
  const slack = 60_000; // DUE_CLOCK_ALLOWANCE_MS

  it('is the clock allowance on a request topic, whose messages are due when written', () => {
    for (const topic of ['notify.requests', 'notify.requests.high', 'requests']) {
      expect(dueOutOfRange(tiers, topic, slack)).toBe(false);
      expect(dueOutOfRange(tiers, topic, slack + 1)).toBe(true);
    }
  });

  it('on a delay topic, the upper edge of its band (the top tier: its delay), plus the allowance', () => {
    // 1s carries waits in [0, 1500 ms), 24s in [24 s, 30 s), the top tier 30s exactly 30 s.
    const cases: [string, number][] = [
      ['notify.retry.1s', 1500],
      ['notify.retry.1500ms', 2000],
      ['notify.retry.24s', 30_000],
      ['notify.retry.30s', 30_000],
      ['retry.30s', 30_000],
    ];
    for (const [topic, edge] of cases) {
      expect(dueOutOfRange(tiers, topic, edge + slack)).toBe(false);
      expect(dueOutOfRange(tiers, topic, edge + slack + 1)).toBe(true);
    }
  });

  it('holds every wait tierFor routes to a tier, whatever the clock of the reader', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30_000 }), (waitMs) => {
        expect(dueOutOfRange(tiers, `notify.${tierFor(tiers, waitMs).topic}`, waitMs)).toBe(false);
      }),
    );
  });
});
