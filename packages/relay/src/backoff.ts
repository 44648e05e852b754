/** Parameters of `relayBackoffMs`. Time and randomness are arguments, so the schedule is testable. */
export interface RelayBackoffParams {
  /** 1 for the first retry after a failure. */
  readonly attempt: number;
  readonly baseMs: number;
  readonly maxMs: number;
  /** Fraction in [0, 1]: the delay is drawn from delay × [1 − jitter, 1 + jitter], then capped. */
  readonly jitter: number;
  /** A number in [0, 1), e.g. `Math.random()`. */
  readonly random: number;
}

/**
 * How long the relay waits before retrying a failed batch: `base × 2^(attempt−1)`, jittered,
 * never above `maxMs`. Pure. With jitter 0 the schedule is exact (base, 2×base, 4×base, … max).
 */
export function relayBackoffMs({ attempt, baseMs, maxMs, jitter, random }: RelayBackoffParams): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 52); // 2^52 already exceeds any cap
  const exact = Math.min(maxMs, baseMs * 2 ** exponent);
  const factor = 1 - jitter + 2 * jitter * random;
  return Math.round(Math.min(maxMs, exact * factor));
}
