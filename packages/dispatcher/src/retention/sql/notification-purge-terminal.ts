import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationPurgeTerminal`. */
export interface NotificationPurgeTerminalParams {
  /** Terminal notifications whose last change (`updated_at`) is before this instant go. */
  readonly before: Date;
  /** At most this many notifications per call: one short transaction, bounded locks and WAL. */
  readonly limit: number;
}

/**
 * Deletes up to `limit` terminal notifications (sent, dead, cancelled) last changed before
 * `before`, oldest first, with every row that references them: attempts and manual actions go by
 * their foreign keys' ON DELETE CASCADE (both indexed by notification id), refused outbox rows
 * and callback deliveries by id here. Rows another transaction holds are skipped (SKIP LOCKED),
 * so it never waits on a delivery or a manual action. Served by notifications_terminal_updated_idx.
 * Returns how many notifications it deleted; call again while it returns `limit`.
 */
export async function notificationPurgeTerminal(db: SqlExecutor, params: NotificationPurgeTerminalParams): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH doomed AS (
       SELECT id FROM notifications
        WHERE state <> 'queued' AND updated_at < $1::timestamptz
        ORDER BY updated_at
        LIMIT $2
          FOR UPDATE SKIP LOCKED),
     refused AS (
       DELETE FROM outbox_refused r USING doomed d WHERE r.notification_id = d.id),
     callbacks AS (
       DELETE FROM callback_deliveries c USING doomed d WHERE c.notification_id = d.id),
     gone AS (
       DELETE FROM notifications n USING doomed d WHERE n.id = d.id RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [params.before, params.limit],
  );
  return rows[0]?.n ?? 0;
}
