import type { Notification, SqlExecutor } from '@notify/outbox';

/** Parameters of `notificationGetMany`. */
export interface NotificationGetManyParams {
  readonly ids: readonly string[];
}

/**
 * The notifications with these ids, one entry per id in the order given (undefined where there
 * is none): `notificationGet` for a batch, one primary-key probe per id in one round trip. The
 * dispatcher's notification loader serves concurrently starting deliveries with it.
 */
export async function notificationGetMany(db: SqlExecutor, params: NotificationGetManyParams): Promise<(Notification | undefined)[]> {
  if (params.ids.length === 0) return [];
  // Not a named prepared statement: `SELECT *` of a prepared statement fails ("cached plan must
  // not change result type") once a migration adds a column while the service runs.
  const { rows } = await db.query<Notification>('SELECT * FROM notifications WHERE id = ANY($1::text[])', [params.ids]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return params.ids.map((id) => byId.get(id));
}
