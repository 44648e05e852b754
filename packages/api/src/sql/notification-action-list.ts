import type { SqlExecutor } from '@notify/outbox';

/** The manual actions the API records (migrations/sql/0005_api.sql). */
export const NOTIFICATION_ACTIONS = ['cancel', 'retry'] as const;

/** One row of `notification_actions`. */
export interface NotificationAction {
  readonly id: string;
  readonly notification_id: string;
  readonly action: (typeof NOTIFICATION_ACTIONS)[number];
  readonly from_state: string;
  readonly to_state: string;
  readonly previous_dead_reason: string | null;
  readonly attempts: number;
  readonly max_attempts: number;
  readonly api_key_id: string | null;
  /** The bulk retry that did it (migration 0031), or null. */
  readonly bulk_retry_id: string | null;
  readonly occurred_at: Date;
}

/** Parameters of `notificationActionList`. */
export interface NotificationActionListParams {
  /** The caller has already checked that the notification belongs to its tenant. */
  readonly notificationId: string;
}

/** One notification's manual actions, oldest first (notification_actions_notification_idx). */
export async function notificationActionList(db: SqlExecutor, params: NotificationActionListParams): Promise<NotificationAction[]> {
  const { rows } = await db.query<NotificationAction>('SELECT * FROM notification_actions WHERE notification_id = $1 ORDER BY id', [
    params.notificationId,
  ]);
  return rows;
}
