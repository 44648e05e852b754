/** What `enqueue` needs besides the transaction. */
export interface EnqueueOptions {
  /** When the notification is created and first due (a test clock's now), truncated to milliseconds. Default: the database clock; for a plain intent (enqueue-plain.ts) this process's clock. */
  readonly now?: Date;
  /** Attempts before a notification is declared dead. Default: `notify_settings.max_attempts` (the service's NOTIFY_MAX_ATTEMPTS). */
  readonly maxAttempts?: number;
  /** Expiry when the intent names none. Default: `notify_settings.default_ttl_ms` (the service's NOTIFY_DEFAULT_TTL_MS). */
  readonly defaultTtlMs?: number;
}
