import type { Notification, SqlExecutor } from '@notify/outbox';
import { type NotificationFilter, notificationFilterSql } from '../../sql/notification-search.js';
import { type KeysetCursor, type KeysetPage, keysetPage } from '../paging.js';

/** Parameters of `notificationPage`. */
export interface NotificationPageParams {
  readonly tenantId: string;
  readonly filter: NotificationFilter;
  /** `next`: older than the id; `previous`: newer than it. */
  readonly cursor?: KeysetCursor<string> | undefined;
  readonly limit: number;
}

/**
 * One page of the console's notification list, newest first, keyset-paged on id both ways (no
 * OFFSET: a page is an index range however deep, and rows inserted meanwhile shift no page). A
 * page toward newer ids reads them ascending from the cursor and is turned around; whether rows
 * lie beyond the cursor on the side the page came from is one index probe, so "Newer" is not
 * offered on the newest page however it was reached.
 */
export async function notificationPage(db: SqlExecutor, params: NotificationPageParams): Promise<KeysetPage<Notification>> {
  const { where, values, orderBy } = notificationFilterSql(params.filter);
  const all: unknown[] = [params.tenantId, ...values];
  const bind = (v: unknown) => `$${all.push(v)}`;
  const cursor = params.cursor;
  const toward = cursor?.toward ?? 'next';
  const at = cursor !== undefined ? bind(cursor.key) : '';
  // Newest first: "next" pages go down the ids, "previous" pages up.
  const [beyond, order, behind] = toward === 'next' ? (['<', 'DESC', '>='] as const) : (['>', 'ASC', '<='] as const);
  const text = `SELECT * FROM notifications WHERE ${where}${cursor ? ` AND id ${beyond} ${at}` : ''} ORDER BY ${orderBy(order)} LIMIT ${bind(params.limit + 1)}`;
  const { rows } = await db.query<Notification>(text, all);
  const back =
    cursor !== undefined &&
    (await db.query(`SELECT 1 FROM notifications WHERE ${where} AND id ${behind} ${at} LIMIT 1`, all.slice(0, -1))).rows.length > 0;
  return keysetPage(rows, params.limit, toward, back);
}
