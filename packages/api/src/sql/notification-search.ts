import { type Channel, type NotificationState, newNotificationId } from '@notify/outbox';

/**
 * The filter of the notification lists (the API's and the console's) and of the bulk retry. The
 * dead fields (`deadReason`, `lastErrorPrefix`, `hasLastError`) select dead notifications only:
 * `deadReason` with `lastErrorPrefix` or `hasLastError: false` is exactly one group of the dead page.
 */
export interface NotificationFilter {
  readonly state?: NotificationState | undefined;
  readonly channel?: Channel | undefined;
  /** Exact recipient. */
  readonly recipient?: string | undefined;
  readonly deadReason?: string | undefined;
  /** The first 200 characters of the last error, exactly (a group of the dead page); null: no last error. */
  readonly lastErrorPrefix?: string | null | undefined;
  /** false: no last error (as `lastErrorPrefix: null`); true: one was recorded. */
  readonly hasLastError?: boolean | undefined;
  /** Created at or after. */
  readonly createdFrom?: Date | undefined;
  /** Created before. */
  readonly createdTo?: Date | undefined;
}

/** The lowest id a notification created at `at` can have; ids are ULIDs, so a time bound is an id bound. */
function idAtOrAfter(at: Date): string {
  return newNotificationId(at, (n) => new Uint8Array(n));
}

/**
 * The WHERE clause of a filter over `notifications`, with its values from `$2` on (`$1` is the
 * tenant). Time bounds become id bounds (ids are time-ordered ULIDs with the creation millisecond),
 * so every filter is a range on one of the (tenant_id, …, id) indexes of migrations 0031 and 0310.
 * A dead group (reason and last error, or reason and none) is a range of the partial index
 * notifications_tenant_dead_idx (0031) that ends in `id`: a page of it reads no row beyond the page.
 */
export function notificationFilterSql(
  filter: NotificationFilter,
  first = 2,
): { where: string; values: unknown[]; orderBy: (direction: 'ASC' | 'DESC') => string } {
  const clauses = ['tenant_id = $1'];
  const values: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    clauses.push(sql.replace('?', `$${first + values.length - 1}`));
  };
  // The dead fields hold only for dead notifications. `state = 'dead'` is the predicate of
  // notifications_tenant_dead_idx written as a literal, so that every plan, generic ones too, may use it.
  const dead = filter.deadReason !== undefined || filter.lastErrorPrefix !== undefined || filter.hasLastError !== undefined;
  if (dead) clauses.push(`state = 'dead'`);
  if (filter.state !== undefined && !(dead && filter.state === 'dead')) add('state = ?', filter.state);
  if (filter.channel !== undefined) add('channel = ?', filter.channel);
  if (filter.recipient !== undefined) add('recipient = ?', filter.recipient);
  if (filter.deadReason !== undefined) add('dead_reason = ?', filter.deadReason);
  // left(…) IS NULL is last_error IS NULL written as the index's expression, so it bounds the
  // range of notifications_tenant_dead_idx instead of filtering the rows it reads.
  if (filter.lastErrorPrefix === null || filter.hasLastError === false) clauses.push('left(last_error, 200) IS NULL');
  else if (filter.lastErrorPrefix !== undefined) add('left(last_error, 200) = ?', filter.lastErrorPrefix);
  else if (filter.hasLastError === true) clauses.push('left(last_error, 200) IS NOT NULL');
  if (filter.createdFrom !== undefined) add('id >= ?', idAtOrAfter(filter.createdFrom));
  if (filter.createdTo !== undefined) add('id < ?', idAtOrAfter(filter.createdTo));
  // The group without a last error is the index range `left(last_error, 200) IS NULL`, but IS NULL
  // is no equality to the planner: ordered by id alone, it read the whole group and sorted it (all
  // 143 rows for a page of 26, at 100,000 notifications). Ordered by the index's expression first,
  // the same order (it is null throughout), a page is the index read backward, as for an error.
  const none = filter.lastErrorPrefix === null || filter.hasLastError === false;
  const orderBy = (direction: 'ASC' | 'DESC') => `${none ? `left(last_error, 200) ${direction}, ` : ''}id ${direction}`;
  return { where: clauses.join(' AND '), values, orderBy };
}
