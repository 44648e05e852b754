import { type Channel, type NotificationState, newNotificationId } from '@notify/outbox';

/** The filter of the console's notification search and of the bulk retry. */
export interface NotificationFilter {
  readonly state?: NotificationState | undefined;
  readonly channel?: Channel | undefined;
  /** Exact recipient. */
  readonly recipient?: string | undefined;
  readonly deadReason?: string | undefined;
  /** The first 200 characters of the last error, exactly (a group of the dead page); null: no last error. */
  readonly lastErrorPrefix?: string | null | undefined;
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
 * so every filter is a range on one of the (tenant_id, …, id) indexes of migrations 0001 and 0031.
 */
export function notificationFilterSql(filter: NotificationFilter, first = 2): { where: string; values: unknown[] } {
  const clauses = ['tenant_id = $1'];
  const values: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    clauses.push(sql.replace('?', `$${first + values.length - 1}`));
  };
  if (filter.state !== undefined) add('state = ?', filter.state);
  if (filter.channel !== undefined) add('channel = ?', filter.channel);
  if (filter.recipient !== undefined) add('recipient = ?', filter.recipient);
  if (filter.deadReason !== undefined) add('dead_reason = ?', filter.deadReason);
  if (filter.lastErrorPrefix === null) clauses.push('last_error IS NULL');
  else if (filter.lastErrorPrefix !== undefined) add('left(last_error, 200) = ?', filter.lastErrorPrefix);
  if (filter.createdFrom !== undefined) add('id >= ?', idAtOrAfter(filter.createdFrom));
  if (filter.createdTo !== undefined) add('id < ?', idAtOrAfter(filter.createdTo));
  return { where: clauses.join(' AND '), values };
}
