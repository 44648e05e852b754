import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationReschedule`. */
export interface NotificationRescheduleParams {
  readonly ids: readonly string[];
  /** The new `next_attempt_at` (and `updated_at`). */
  readonly nextAttemptAt: Date;
}

/**
 * Moves the next attempt of queued notifications to `nextAttemptAt` (the repair sweep: "due
 * now, a new message carries it"), so the next sweep does not re-publish them again at once.
 * A scheduled notification still held (its release is this late) is released by it too. Returns
 * how many rows changed.
 */
export async function notificationReschedule(db: SqlExecutor, params: NotificationRescheduleParams): Promise<number> {
  if (params.ids.length === 0) return 0;
  const { rows } = await db.query<{ n: number }>(
    `WITH u AS (
       UPDATE notifications SET next_attempt_at = $2::timestamptz, updated_at = $2::timestamptz, held_until = NULL
        WHERE id = ANY($1::text[]) AND state = 'queued'
       RETURNING 1
     ) SELECT count(*)::int AS n FROM u`,
    [params.ids, params.nextAttemptAt],
  );
  return rows[0]?.n ?? 0;
}
