import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `notifySettingsWrite`. */
export interface NotifySettingsWriteParams {
  /** NOTIFY_MAX_ATTEMPTS */
  readonly maxAttempts: number;
  /** NOTIFY_DEFAULT_TTL_MS */
  readonly defaultTtlMs: number;
}

/**
 * Publishes the service's attempt budget and default expiry to `notify_settings` (migration
 * 0006), where every enqueuer reads them: `enqueue()` in a domain service and `notify_enqueue`
 * from any language queue with the same settings as the API. `notify start` runs it at start-up.
 */
export async function notifySettingsWrite(db: SqlExecutor, params: NotifySettingsWriteParams): Promise<void> {
  await db.query(
    `INSERT INTO notify_settings (id, max_attempts, default_ttl_ms, updated_at) VALUES (true, $1, $2, now())
     ON CONFLICT (id) DO UPDATE SET max_attempts = excluded.max_attempts, default_ttl_ms = excluded.default_ttl_ms, updated_at = now()`,
    [params.maxAttempts, params.defaultTtlMs],
  );
}
