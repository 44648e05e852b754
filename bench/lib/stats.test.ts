import { describe, expect, it } from 'vitest';
import { latencySummary, measuredOffers, median, outOfOrder, pairedRatio, percentile, round } from './stats.js';

describe('percentile', () => {
  it('uses the nearest rank and leaves its input alone', () => {
    const xs = [5, 1, 4, 2, 3];
    expect(percentile(xs, 0.5)).toBe(3);
    expect(percentile(xs, 0.99)).toBe(5);
    expect(percentile(xs, 0)).toBe(1);
    expect(xs).toEqual([5, 1, 4, 2, 3]);
  });

  it('puts p99 of 1..100 at 99, not 100', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 0.99)).toBe(99);
    expect(latencySummary(xs)).toEqual({ count: 100, p50: 50, p90: 90, p99: 99, max: 100 });
  });

  it('is NaN for no samples rather than 0 (an empty window must not look fast)', () => {
    expect(percentile([], 0.5)).toBeNaN();
    expect(latencySummary([]).p99).toBeNaN();
  });
});

describe('median and round', () => {
  it('takes the middle round', () => {
    expect(median([300, 100, 200])).toBe(200);
  });
  it('pairs rounds: a slow round slows both sides and leaves the ratio alone', () => {
    // The ratio of the medians would be 300 / 1000 = 0.3; two of three rounds' own ratios are 0.8.
    expect(pairedRatio([80, 800, 300], [100, 1000, 1000])).toBeCloseTo(0.8);
  });
  it('keeps three significant figures below 100 and whole numbers above', () => {
    expect(round(0.123456)).toBe(0.123);
    expect(round(1234.56)).toBe(1235);
  });
});

describe('outOfOrder', () => {
  it('counts arrivals earlier than one enqueued before them, skipping ids that never arrived', () => {
    const at = new Map([
      ['a', 1],
      ['b', 3],
      ['c', 2],
      ['e', 4],
    ]);
    expect(outOfOrder(['a', 'b', 'c', 'd', 'e'], at)).toBe(1);
    expect(outOfOrder(['a', 'c', 'b', 'e'], at)).toBe(0);
  });
});

describe('measuredOffers', () => {
  it('measures the offers issued between the lead-in and the lead-out: rate × span of them', () => {
    expect(measuredOffers(500, 2_000, 10_000)).toEqual({ first: 1_000, end: 6_000 });
    expect(measuredOffers(100, 2_000, 3_000)).toEqual({ first: 200, end: 500 });
  });
  it('measures from the first offer without a lead-in', () => {
    expect(measuredOffers(1_000, 0, 10_000)).toEqual({ first: 0, end: 10_000 });
  });
});
