import type { Attempt } from '@notify/migrations';
import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `attemptList`. */
export interface AttemptListParams {
  /** The caller has already checked that the notification belongs to its tenant. */
  readonly notificationId: string;
}

/** Every attempt of one notification, first to last (the primary key serves the order). */
export async function attemptList(db: SqlExecutor, params: AttemptListParams): Promise<Attempt[]> {
  const { rows } = await db.query<Attempt>('SELECT * FROM attempts WHERE notification_id = $1 ORDER BY attempt', [params.notificationId]);
  return rows;
}
