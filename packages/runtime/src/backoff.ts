/** Inputs of `backoffDelayMs`. Time and randomness are arguments, so the function is pure. */
export interface BackoffParams {
  /** The attempt that just failed (1 for the first). */
  readonly attempt: number;
  /** The delay after the first failure. */
  readonly baseMs: number;
  /** No delay is longer, jitter and "not before" included. */
  readonly maxMs: number;
  /** Fraction in [0, 1]: the delay is drawn from delay × [1 − jitter, 1 + jitter]. 0 gives the exact schedule. */
  readonly jitter: number;
  /** Uniform in [0, 1), like `Math.random`. Only called when `jitter > 0`. */
  readonly random: () => number;
  /** With `notBefore`: the instant the failure was recorded. */
  readonly now?: Date | undefined;
  /** A provider's "not before" (Retry-After): raises the delay, still capped by `maxMs`. Needs `now`. */
  readonly notBefore?: Date | undefined;
}

/**
 * The delay before the next try, in whole milliseconds: `base × 2^(attempt − 1)` capped at
 * `max`, spread by `jitter`, capped again, then raised to `notBefore` and capped again. With
 * jitter 0 and base 1 s the schedule is the article's 1 s, 2 s, 4 s, … The one backoff rule of
 * the service: the dispatcher's retries and the relay's batch retries both use it.
 */
export function backoffDelayMs(params: BackoffParams): number {
  const { attempt, baseMs, maxMs, jitter } = params;
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be a whole number ≥ 1, got ${attempt}`);
  if (!(baseMs > 0) || !(maxMs >= baseMs)) throw new RangeError(`need 0 < baseMs ≤ maxMs, got ${baseMs} and ${maxMs}`);
  if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`jitter must be a fraction from 0 to 1, got ${jitter}`);
  // 2^(attempt-1) overflows to Infinity for huge attempts; Math.min keeps the cap.
  let delay = Math.min(baseMs * 2 ** (attempt - 1), maxMs);
  if (jitter > 0) {
    const r = params.random();
    delay = Math.min(delay * (1 - jitter + 2 * jitter * r), maxMs);
  }
  if (params.notBefore !== undefined && params.now !== undefined) {
    const wanted = params.notBefore.getTime() - params.now.getTime();
    if (wanted > delay) delay = Math.min(wanted, maxMs);
  }
  return Math.max(0, Math.round(delay));
}
