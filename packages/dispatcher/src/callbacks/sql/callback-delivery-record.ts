import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `callbackDeliveryRecord`: the outcome of one attempt. */
export interface CallbackDeliveryRecordParams {
  readonly id: string;
  /** `pending` with `nextAttemptAt` for a retry; `delivered` or `failed` end it. */
  readonly state: 'pending' | 'delivered' | 'failed';
  readonly nextAttemptAt: Date | null;
  /** Attempts made, this one included. */
  readonly attempts: number;
  readonly error: string | null;
  readonly status: string | null;
  readonly now: Date;
}

/** Writes the outcome of an attempt on a claimed delivery. */
export async function callbackDeliveryRecord(db: SqlExecutor, params: CallbackDeliveryRecordParams): Promise<void> {
  await db.query(
    `UPDATE callback_deliveries
        SET state = $2, next_attempt_at = $3, attempts = $4, last_error = $5, last_status = $6, updated_at = $7
      WHERE id = $1::bigint`,
    [params.id, params.state, params.nextAttemptAt, params.attempts, params.error, params.status, params.now],
  );
}
