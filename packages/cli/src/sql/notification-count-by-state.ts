import type { SqlExecutor } from '@notify/outbox';

/** One group of `notificationCountByState`. */
export interface NotificationStateCount {
  readonly state: string;
  readonly channel: string;
  readonly count: number;
}

/** Parameters of `notificationCountByState` (none: it counts every tenant). */
export type NotificationCountByStateParams = Record<string, never>;

/**
 * How many notifications are in each (state, channel), from the counter table the triggers of
 * migration 0020 keep in the writing transactions: a sum over at most 192 shard rows, whatever
 * the size of `notifications` (measured at 1,000,000 rows in docs/observability.md).
 */
export async function notificationCountByState(
  db: SqlExecutor,
  _params: NotificationCountByStateParams = {},
): Promise<NotificationStateCount[]> {
  const { rows } = await db.query<{ state: string; channel: string; count: string }>(
    'SELECT state, channel, sum(count) AS count FROM notification_state_counts GROUP BY state, channel',
    [],
  );
  return rows.map((r) => ({ state: r.state, channel: r.channel, count: Number(r.count) }));
}
