import type { SqlExecutor } from '@notify/outbox';

/** One group of `notificationCountByState`. */
export interface NotificationStateCount {
  readonly state: string;
  readonly channel: string;
  readonly count: number;
}

/** Parameters of `notificationCountByState` (none: it counts every tenant). */
export type NotificationCountByStateParams = Record<string, never>;

// One statement, so one snapshot: the queued rows, the counter rows and the imported rows not yet
// folded are read as they were at its start, each change either in all three or in none. The
// fold moves the imported rows into the counter table (in sorted order, as the triggers lock
// counter rows); its changes are not visible to this statement's own reads, and the next read
// sees them already folded. Two concurrent folds cannot both take a row: the second one's DELETE
// waits for the first to commit and skips what it deleted.
const COUNT_BY_STATE_SQL = `WITH folded AS (
  DELETE FROM notification_state_count_imports RETURNING state, channel
), kept AS (
  INSERT INTO notification_state_counts AS c (state, channel, shard, count)
    SELECT state, channel, pg_backend_pid() % 16, count(*) FROM folded GROUP BY state, channel ORDER BY state, channel
    ON CONFLICT (state, channel, shard) DO UPDATE SET count = c.count + excluded.count
)
SELECT state, channel, sum(n) AS count
  FROM (SELECT 'queued' AS state, channel, count(*) AS n FROM notifications WHERE state = 'queued' GROUP BY channel
        UNION ALL SELECT state, channel, count FROM notification_state_counts
        UNION ALL SELECT state, channel, 1 FROM notification_state_count_imports) AS parts
 GROUP BY state, channel`;

/**
 * How many notifications are in each (state, channel), in one statement (one snapshot): queued
 * ones counted from the partial index of queued rows (migration 0120), the others summed from the
 * counter table the triggers of migrations 0020 and 0220 keep in the writing transactions (at most
 * 144 shard rows) and from the rows inserted in a terminal state (imports, fixtures), which this
 * read folds into the counter table. The cost follows the queued backlog, not the size of
 * `notifications` (measured in docs/observability.md). An enqueue writes no counter (0220).
 */
export async function notificationCountByState(
  db: SqlExecutor,
  _params: NotificationCountByStateParams = {},
): Promise<NotificationStateCount[]> {
  const { rows } = await db.query<{ state: string; channel: string; count: string }>(COUNT_BY_STATE_SQL, []);
  return rows.map((r) => ({ state: r.state, channel: r.channel, count: Number(r.count) }));
}
