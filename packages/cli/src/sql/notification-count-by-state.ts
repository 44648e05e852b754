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
 * How many notifications are in each (state, channel). A full count: the metrics module runs it
 * at most once per refresh interval, not on every scrape.
 */
export async function notificationCountByState(db: SqlExecutor, _params: NotificationCountByStateParams = {}): Promise<NotificationStateCount[]> {
  const { rows } = await db.query<{ state: string; channel: string; count: string }>(
    'SELECT state, channel, count(*) AS count FROM notifications GROUP BY state, channel',
    [],
  );
  return rows.map((r) => ({ state: r.state, channel: r.channel, count: Number(r.count) }));
}
