import type { SqlExecutor } from '@notify/outbox';
import type { NotifySettingsWriteParams } from './notify-settings-write.js';

/**
 * The settings every enqueuer reads (`notify_settings`, one row), or undefined before the first
 * `notify start` wrote them.
 */
export async function notifySettingsRead(db: SqlExecutor): Promise<NotifySettingsWriteParams | undefined> {
  const { rows } = await db.query<{ max_attempts: number; default_ttl_ms: string; events: NotifySettingsWriteParams['events'] }>(
    'SELECT max_attempts, default_ttl_ms::text AS default_ttl_ms, events FROM notify_settings LIMIT 1',
    [],
  );
  const row = rows[0];
  return row && { maxAttempts: row.max_attempts, defaultTtlMs: Number(row.default_ttl_ms), events: row.events };
}
