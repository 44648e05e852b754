/** Retry policy: the article's rules. `jitter` 0 gives the exact schedule of the article's lab. */
export interface RetryConfig {
  /** NOTIFY_MAX_ATTEMPTS: attempts before a notification is dead (`exhausted`). */
  readonly maxAttempts: number;
  /** NOTIFY_BASE_DELAY_MS: the delay after the first failure. */
  readonly baseDelayMs: number;
  /** NOTIFY_MAX_DELAY_MS: no retry delay is longer. */
  readonly maxDelayMs: number;
  /** Fraction in [0, 1]: the delay is drawn uniformly from delay × [1 − jitter, 1 + jitter], then capped. */
  readonly jitter: number;
  /** NOTIFY_DEFAULT_TTL_MS: expiry applied when an intent names none. */
  readonly defaultTtlMs: number;
}
