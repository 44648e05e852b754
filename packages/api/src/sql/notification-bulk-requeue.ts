import type { Notification, SqlExecutor } from '@notify/outbox';
import { type NotificationFilter, notificationFilterSql } from './notification-search.js';

/** Parameters of `notificationBulkRequeue`. */
export interface NotificationBulkRequeueParams {
  readonly tenantId: string;
  /** `state` is forced to dead. */
  readonly filter: NotificationFilter;
  readonly now: Date;
  /** Attempts each retry grants (NOTIFY_MAX_ATTEMPTS). */
  readonly budget: number;
  readonly limit: number;
}

/**
 * dead → queued, due now, for up to `limit` of the tenant's dead notifications matching the
 * filter, oldest first, skipping expired ones and rows another transaction holds. One statement;
 * each row also returns the dead reason it had. A dead group's oldest are read from its index
 * range forward (`orderBy`: the group without a last error is ordered on the index's expression
 * too, else its every row was read and sorted), up to `limit` and those skipped.
 */
export async function notificationBulkRequeue(
  db: SqlExecutor,
  params: NotificationBulkRequeueParams,
): Promise<(Notification & { previous_dead_reason: string })[]> {
  const { where, values, orderBy } = notificationFilterSql({ ...params.filter, state: 'dead' }, 5);
  const { rows } = await db.query<Notification & { previous_dead_reason: string }>(
    `WITH picked AS (
       SELECT id, dead_reason FROM notifications
        WHERE ${where} AND expires_at > $2
        ORDER BY ${orderBy('ASC')}
        LIMIT $3
        FOR UPDATE SKIP LOCKED)
     UPDATE notifications n
        SET state = 'queued', dead_reason = NULL, next_attempt_at = $2, max_attempts = n.attempts + $4, updated_at = $2
       FROM picked
      WHERE n.id = picked.id AND n.state = 'dead'
     RETURNING n.*, picked.dead_reason AS previous_dead_reason`,
    [params.tenantId, params.now, params.limit, params.budget, ...values],
  );
  return rows;
}

/** How many of the tenant's notifications match the filter (state forced to dead), counting at most `cap`. */
export async function notificationDeadCount(
  db: SqlExecutor,
  params: { tenantId: string; filter: NotificationFilter; cap: number },
): Promise<number> {
  const { where, values } = notificationFilterSql({ ...params.filter, state: 'dead' }, 3);
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 FROM notifications WHERE ${where} LIMIT $2) m`, [
    params.tenantId,
    params.cap,
    ...values,
  ]);
  return rows[0]!.n;
}
