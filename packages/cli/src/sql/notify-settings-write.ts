import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `notifySettingsWrite`. */
export interface NotifySettingsWriteParams {
  /** NOTIFY_MAX_ATTEMPTS */
  readonly maxAttempts: number;
  /** NOTIFY_DEFAULT_TTL_MS */
  readonly defaultTtlMs: number;
  /** NOTIFY_EVENTS: which status events are written (migration 0060). */
  readonly events: 'all' | 'terminal' | 'none';
}

/**
 * Publishes the service's attempt budget, default expiry (migration 0006) and event policy
 * (0060) to `notify_settings`, where every enqueuer reads them and the outbox trigger reads the
 * policy: `enqueue()` in a domain service and `notify_enqueue`
 * from any language queue with the same settings as the API. `notify start` runs it at start-up.
 */
export async function notifySettingsWrite(db: SqlExecutor, params: NotifySettingsWriteParams): Promise<void> {
  await db.query(
    `INSERT INTO notify_settings (id, max_attempts, default_ttl_ms, events, updated_at) VALUES (true, $1, $2, $3, now())
     ON CONFLICT (id) DO UPDATE SET max_attempts = excluded.max_attempts, default_ttl_ms = excluded.default_ttl_ms,
                                    events = excluded.events, updated_at = now()`,
    [params.maxAttempts, params.defaultTtlMs, params.events],
  );
}
