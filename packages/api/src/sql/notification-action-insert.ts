import type { SqlExecutor } from '@notify/outbox';
import type { NotificationAction } from './notification-action-list.js';

/** Parameters of `notificationActionInsert`. */
export interface NotificationActionInsertParams {
  readonly notificationId: string;
  readonly action: NotificationAction['action'];
  readonly fromState: string;
  readonly toState: string;
  /** Why it was dead before a retry; null for a cancel. */
  readonly previousDeadReason: string | null;
  readonly attempts: number;
  readonly maxAttempts: number;
  /** The API key that asked (its id, never the key); null from the command line. */
  readonly apiKeyId: string | null;
  readonly now: Date;
}

/** Appends one manual action to a notification's history, in the transaction that made the change. */
export async function notificationActionInsert(db: SqlExecutor, params: NotificationActionInsertParams): Promise<void> {
  await db.query(
    `INSERT INTO notification_actions
       (notification_id, action, from_state, to_state, previous_dead_reason, attempts, max_attempts, api_key_id, occurred_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      params.notificationId,
      params.action,
      params.fromState,
      params.toState,
      params.previousDeadReason,
      params.attempts,
      params.maxAttempts,
      params.apiKeyId,
      params.now,
    ],
  );
}
