import { TOPICS } from '@notify/contract';
import type { RetryConfig } from './retry-config.js';

/**
 * One delay topic, `<prefix>.retry.<name>`. A retry whose remaining delay is D waits on the tier
 * with the largest `delayMs` ≤ D (the smallest tier when D is below all of them), and is delivered
 * when its own `due_at` passes — never before.
 */
export interface DelayTier {
  /** `1s`, `1500ms`, `2m`, `1h`: the largest unit that divides the delay exactly. */
  readonly name: string;
  /** Topic suffix, `retry.<name>` (the relay adds the prefix). */
  readonly topic: string;
  readonly delayMs: number;
  /** Remaining delays in [`fromMs`, `toMs`) are routed here (`toMs` is Infinity for the top tier). */
  readonly fromMs: number;
  readonly toMs: number;
  /**
   * Worst-case lateness from waiting behind an earlier, later-due message of the same partition:
   * the width of the band of delays the tier carries. Processing lag comes on top. Zero for the
   * top tier (it only carries the max delay, so its partitions are in due order).
   */
  readonly latenessBoundMs: number;
}

const UNITS: readonly [number, string][] = [
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1000, 's'],
];

/** `1h`, `2m`, `90s`, `1500ms`: the largest unit that divides `ms` exactly. */
export function formatTierName(ms: number): string {
  for (const [size, unit] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/**
 * The delay tiers for a retry policy: every exact backoff delay `base × 2^k` below the max, the
 * midpoint `1.5 × base × 2^k` between each pair, and the max itself. For base 1 s and max 30 s:
 * 1s 1500ms 2s 3s 4s 6s 8s 12s 16s 24s 30s.
 *
 * Why this ladder: a partition of a delay topic is read in order, so a message can wait behind an
 * earlier one that is due later. Its lateness is below the width of its tier's band of delays.
 * - With jitter 0 and no Retry-After every retry's delay *is* a tier's delay, so each partition is
 *   in due order and nothing waits behind anything (the article's exact schedule).
 * - Otherwise adjacent tiers differ by at most 1.5×, so lateness stays below half the delay
 *   (below `1.5 × base − base × (1 − jitter)` on the smallest tier), whatever jitter or Retry-After do.
 */
export function delayTiers(retry: Pick<RetryConfig, 'baseDelayMs' | 'maxDelayMs' | 'jitter'>): DelayTier[] {
  const { baseDelayMs: base, maxDelayMs: max, jitter } = retry;
  if (!(base >= 1) || !(max >= base)) throw new RangeError(`need 1 ≤ baseDelayMs ≤ maxDelayMs, got ${base} and ${max}`);
  const delays = new Set<number>();
  for (let d = base; d < max; d *= 2) {
    delays.add(Math.round(d));
    const mid = Math.round(d * 1.5);
    if (mid < max) delays.add(mid);
  }
  delays.add(max);
  const sorted = [...delays].sort((a, b) => a - b);
  // The shortest delay a retry can have: the first backoff shrunk by jitter (Retry-After only raises it).
  const shortest = Math.max(0, Math.floor(base * (1 - jitter)));
  return sorted.map((delayMs, i) => {
    const next = sorted[i + 1];
    const fromMs = i === 0 ? 0 : delayMs;
    const toMs = next ?? Number.POSITIVE_INFINITY;
    const latenessBoundMs = next === undefined ? 0 : next - (i === 0 ? Math.min(shortest, delayMs) : delayMs);
    const name = formatTierName(delayMs);
    return { name, topic: TOPICS.retry(name), delayMs, fromMs, toMs, latenessBoundMs };
  });
}

/** The tier a retry with `remainingMs` to wait goes to: the largest tier delay ≤ remainingMs, else the smallest. */
export function tierFor(tiers: readonly DelayTier[], remainingMs: number): DelayTier {
  let chosen = tiers[0];
  if (!chosen) throw new RangeError('no delay tiers');
  for (const tier of tiers) {
    if (tier.delayMs <= remainingMs) chosen = tier;
    else break;
  }
  return chosen;
}

/**
 * How much later than its due time a clock may read a message's `due_at` as ahead of it: clocks
 * of the machines that write and read delivery requests disagree by less than this.
 */
const DUE_CLOCK_ALLOWANCE_MS = 60_000;

/**
 * Whether a delivery request read from `topic` (`<prefix>.retry.1s`, or the suffix alone) and due
 * `aheadMs` from now is further ahead than any dispatcher with these tiers writes one: a request
 * topic's messages are due when written (a retry, a deferral or a scheduled send waits on a delay
 * topic), a delay topic's within its band (`tierFor`; the top tier: its delay exactly), plus
 * `DUE_CLOCK_ALLOWANCE_MS`.
 * Such a message (hand-made, or from a bug) is dead-lettered, never held: a partition holds at its
 * first message that is not due, so it would stop every message behind it until then.
 */
export function dueOutOfRange(tiers: readonly DelayTier[], topic: string, aheadMs: number): boolean {
  let longestMs = 0;
  for (const t of tiers) if (topic === t.topic || topic.endsWith(`.${t.topic}`)) longestMs = Number.isFinite(t.toMs) ? t.toMs : t.delayMs;
  return aheadMs > longestMs + DUE_CLOCK_ALLOWANCE_MS;
}

/**
 * Every topic suffix the dispatcher reads or writes: `requests`, `requests.high`, each
 * `retry.<tier>`, `events` and `dlq`. `notify start` creates `<prefix>.<suffix>` for each.
 */
export function dispatcherTopicSuffixes(retry: Pick<RetryConfig, 'baseDelayMs' | 'maxDelayMs' | 'jitter'>): string[] {
  return [TOPICS.requests, TOPICS.requestsHigh, ...delayTiers(retry).map((t) => t.topic), TOPICS.events, TOPICS.dlq];
}
