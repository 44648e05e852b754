import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationDefer`. */
export interface NotificationDeferParams {
  readonly id: string;
  /** The attempt the deferred message asked for: the row must still have made `attempt - 1`. */
  readonly attempt: number;
  readonly nextAttemptAt: Date;
  readonly now: Date;
}

/**
 * Moves a queued notification's next attempt to `nextAttemptAt` without spending an attempt
 * (strict ordering: an earlier one to the same recipient is still queued). Guarded like an
 * outcome: nothing changes unless the row is queued with `attempt - 1` attempts made. Run it in
 * the transaction that writes the delivery request for that time. True when it changed the row.
 */
export async function notificationDefer(db: SqlExecutor, params: NotificationDeferParams): Promise<boolean> {
  const { rows } = await db.query(
    `UPDATE notifications SET next_attempt_at = $3::timestamptz, updated_at = $4::timestamptz
      WHERE id = $1 AND state = 'queued' AND attempts = $2::int - 1
     RETURNING 1`,
    [params.id, params.attempt, params.nextAttemptAt, params.now],
  );
  return rows.length > 0;
}
