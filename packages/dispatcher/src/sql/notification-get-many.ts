import { type Notification, prepared, type SqlExecutor } from '@notify/outbox';
import type { SuppressionRecord } from '@notify/runtime';

/** Parameters of `notificationGetMany`. */
export interface NotificationGetManyParams {
  readonly ids: readonly string[];
}

/**
 * The columns of a notification that the delivery path reads (handler, content, outcome): not the
 * idempotency key, request hash, scheduling and bookkeeping columns, which nothing after the
 * read looks at (five fewer timestamps to parse per row).
 */
export type DeliveryNotification = Pick<
  Notification,
  | 'id'
  | 'tenant_id'
  | 'channel'
  | 'recipient'
  | 'subject'
  | 'body'
  | 'template'
  | 'template_version'
  | 'data'
  | 'category'
  | 'metadata'
  | 'state'
  | 'attempts'
  | 'max_attempts'
  | 'expires_at'
  | 'traceparent'
  | 'created_at'
  | 'ordering'
>;

/** A notification as `notificationGetMany` reads it: the delivery columns and the opt-out read with them (see `deliveryOptOut`). */
export interface DeliveryRow extends DeliveryNotification {
  /**
   * `next_attempt_at` in whole epoch milliseconds (rounded down), null unless queued: a number,
   * not a Date, since only the handler's "not due yet" check reads it.
   */
  readonly next_attempt_ms: number | null;
  /** The category of the opt-out that applies, null when none does (meaningful only when `deliveryOptOut` says so). */
  readonly opt_out_category: string | null;
  readonly opt_out_reason: string | null;
  readonly opt_out_created_at: Date | null;
}

// The opt-out check of `suppressionMatch`, joined to the read: one round trip instead of two per
// group of starting deliveries. The recipient is normalized in SQL as `normalizeRecipient` does
// (email: trimmed, lower-cased), which agrees with it exactly only for a recipient of printable
// ASCII without surrounding spaces (`lower` under "C" folds A-Z only, like `toLowerCase` on ASCII):
// for any other recipient `deliveryOptOut` says "not checked" and the content preparer checks on
// its own. A hot statement (one per group of starting deliveries: under a steady trickle, one per
// notification): parsed once per connection (`prepared`); it names its columns, so a migration
// adding one does not change its result.
//
// The ids come as a table (`unnest ... WITH ORDINALITY`) joined to notifications by primary key,
// and that table says it is one row: `ord` between 1 and 2^31 − 1, true of every row, is a range
// PostgreSQL has no statistics for and estimates at 0.5 % (its default selectivity of a range).
// So every plan is a Nested Loop of primary-key probes, one per id:
// - from an empty table on. The generic plan a connection settles on is kept for its life, until
//   an ANALYZE (or VACUUM, or DDL) of notifications. With `n.id = ANY(...)` (10 ids assumed) a
//   service started on a new database planned it while the table was empty, taken for ten pages
//   (never analyzed), as a sequential scan, and read the whole table for every group of starting
//   deliveries: 3.7 ms a read of ~10 at 15,000 rows, growing with it, until an ANALYZE
//   (pg_stat_statements over a 500/s p99-probe window, session 37; with autovacuum off, for ever).
//   Only statistics of an analyzed table of a few pages (a probe is costed at ~8 pages' reads) make
//   a scan per id look cheaper, and those are a small table's, which autovacuum's next ANALYZE
//   replaces as it grows (a never-analyzed table is taken for ten pages at least).
// - with the custom and the generic plan costed alike (one row either way), so PostgreSQL keeps
//   the generic one after its five custom ones. With `= ANY($1)` a custom plan for a few ids always
//   looked cheaper than the generic one, which guesses ten, so every read of one to nine ids was
//   planned again (1,039 plans in 1,035 reads, 296 ms of planning against 64 of execution, in a
//   100/s window of p99-probe; session 34).
const SQL = prepared(
  'dispatcher_notification_read_v4',
  `SELECT n.id, n.tenant_id, n.channel, n.recipient, n.subject, n.body, n.template, n.template_version, n.data,
       n.category, n.metadata, n.state, n.attempts, n.max_attempts, n.expires_at, n.traceparent, n.created_at, n.ordering,
       floor(extract(epoch FROM n.next_attempt_at) * 1000)::float8 AS next_attempt_ms,
       s.category AS opt_out_category, s.reason AS opt_out_reason, s.created_at AS opt_out_created_at
  FROM unnest($1::text[]) WITH ORDINALITY AS k(id, ord)
  JOIN notifications n ON n.id = k.id
  LEFT JOIN LATERAL (
    SELECT category, reason, created_at
      FROM suppressions
     WHERE tenant_id = n.tenant_id AND channel = n.channel
       AND recipient = (CASE WHEN n.channel = 'email' THEN lower(n.recipient COLLATE "C") ELSE n.recipient END) COLLATE "default"
       AND (category = '*' OR category = n.category)
     ORDER BY (category = '*') DESC
     LIMIT 1
  ) AS s ON true
 WHERE k.ord >= 1 AND k.ord <= 2147483647`,
);

/**
 * The notifications with these ids, one entry per id in the order given (undefined where there
 * is none), each with the opt-out that applies to it: one primary-key probe per id and one per
 * opt-out check, in one round trip. The dispatcher's notification loader serves concurrently
 * starting deliveries with it.
 */
export async function notificationGetMany(db: SqlExecutor, params: NotificationGetManyParams): Promise<(DeliveryRow | undefined)[]> {
  const { ids } = params;
  if (ids.length === 0) return [];
  const { rows } = await db.query<DeliveryRow>(SQL, [ids]);
  if (ids.length === 1) return [rows[0]];
  const byId = new Map<string, DeliveryRow>();
  for (const r of rows) byId.set(r.id, r);
  return ids.map((id) => byId.get(id));
}

/** Printable ASCII, no space at either end: a recipient the read's SQL normalizes exactly as `normalizeRecipient`. */
const SQL_NORMALIZED = /^[!-~](?:[ -~]*[!-~])?$/;

/**
 * The opt-out read with `row` (`suppressionMatch`'s answer: the record, or null for none), or
 * undefined when the read could not check it (a recipient beyond printable ASCII): the caller
 * checks it on its own then.
 */
export function deliveryOptOut(row: DeliveryRow): SuppressionRecord | null | undefined {
  if (!SQL_NORMALIZED.test(row.recipient)) return undefined;
  if (row.opt_out_category === null) return null;
  return { category: row.opt_out_category, reason: row.opt_out_reason, createdAt: row.opt_out_created_at! };
}
