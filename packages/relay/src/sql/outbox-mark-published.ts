import { prepared, type SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxMarkPublished`. */
export interface OutboxMarkPublishedParams {
  /** Published delivery requests whose record the repair sweep needs for the retention: deleted, with a narrow row each in `outbox_published`, stamped `now`. Outbox ids (bigints as strings). */
  readonly kept: readonly string[];
  /** Published rows to delete now, with no record: nothing reads them once they are in Kafka. Outbox ids. */
  readonly deleted: readonly string[];
  readonly now: Date;
}

/**
 * Settles published rows, in one statement: every one leaves the outbox, and each of `kept` leaves
 * its record (outbox id, notification id, topic, key, `now`) in `outbox_published`, which the
 * repair sweep reads and the retention purge empties. Runs in the claim transaction after the
 * broker acknowledged the rows; the commit that follows makes it stick (a rollback leaves every
 * row unpublished). This is the transaction's first write, so it gets an xid only now, for the
 * few milliseconds until the commit.
 *
 * Why not mark the outbox row (`UPDATE outbox SET published_at`, before migration 0280): that
 * UPDATE cannot be HOT (published_at is in both outbox indexes' predicates), so it writes a whole
 * new row version (value, headers and event_value copied, in the WAL too) and two index entries,
 * and the purge deletes that version later. A DELETE only stamps the row; the record is a few
 * dozen bytes and one index entry. See docs/relay.md, "Retention".
 */
export async function outboxMarkPublished(db: SqlExecutor, params: OutboxMarkPublishedParams): Promise<void> {
  const { kept, deleted, now } = params;
  if (deleted.length === 0) {
    if (kept.length > 0) await db.query(MARK_SQL, [now, kept]);
  } else if (kept.length === 0) {
    await db.query(DELETE_SQL, [deleted]);
  } else {
    await db.query(MARK_AND_DELETE_SQL, [now, kept, deleted]);
  }
}

// Named prepared statements, one per case.
//
// Each finds its rows by primary key only. A row that a relay of an earlier version marked
// published (`published_at` set; none once every relay runs this version, and never one this
// relay claimed: the claim takes unpublished rows of its own slots) leaves the outbox without a
// second record. That guard is applied to the DELETE's RETURNING, not as `published_at IS NULL`
// in its WHERE: there it matched the predicate of outbox_unpublished_txid_idx, and under
// statistics taken before a backlog arrived (the relay's generic plans, no ANALYZE since) the
// planner ANDed a bitmap of that whole index (every unpublished row) with the ids' bitmap in every
// round: 500-570 ms of backend CPU to mark 100,000 rows in rounds of 1,000, 340-350 ms by primary
// key alone (session 34, a private database, the relay's transaction settings).
const KEPT = `kept AS (
    DELETE FROM outbox WHERE id = ANY($2::bigint[])
    RETURNING id, published_at IS NULL AS unmarked, headers->>'notification-id' AS notification_id, topic, key)`;
const RECORD = `INSERT INTO outbox_published (outbox_id, notification_id, topic, key, published_at)
  SELECT id, notification_id, topic, key, $1 FROM kept WHERE unmarked`;
const MARK_SQL = prepared('relay_mark_v3', `WITH ${KEPT} ${RECORD}`);
const DELETE_SQL = prepared('relay_delete_v1', `DELETE FROM outbox WHERE id = ANY($1::bigint[])`);
// One round trip: the other DELETE runs as one more data-modifying CTE (disjoint rows).
const MARK_AND_DELETE_SQL = prepared(
  'relay_mark_delete_v3',
  `WITH gone AS (DELETE FROM outbox WHERE id = ANY($3::bigint[])), ${KEPT} ${RECORD}`,
);
