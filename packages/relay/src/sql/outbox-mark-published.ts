import { prepared, type SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxMarkPublished`. */
export interface OutboxMarkPublishedParams {
  /** Published rows to keep, marked published at `now`; the retention purge deletes them later. Outbox ids (bigints as strings). */
  readonly kept: readonly string[];
  /** Published rows to delete now: nothing reads them once they are in Kafka. Outbox ids. */
  readonly deleted: readonly string[];
  readonly now: Date;
}

/**
 * Settles published rows, in one statement: marks `kept` published at `now` and deletes
 * `deleted`. Runs in the claim transaction after the broker acknowledged the rows; the commit that
 * follows makes it stick (a rollback leaves every row unpublished). This is the transaction's
 * first write, so it gets an xid only now, for the few milliseconds until the commit.
 *
 * Why delete: marking is an UPDATE that cannot be HOT (published_at is in both outbox indexes'
 * predicates), so it writes a whole new row version (value, headers and event_value copied, in
 * the WAL too) and two index entries, and the purge deletes that version later. A DELETE writes
 * neither, and leaves the purge nothing to do. The relay deletes what no reader needs once
 * published (see `settledRows` in batch-source.ts and docs/relay.md, "Retention").
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
const MARK = `UPDATE outbox SET published_at = $1 WHERE id = ANY($2::bigint[]) AND published_at IS NULL`;
const MARK_SQL = prepared('relay_mark_v1', MARK);
const DELETE_SQL = prepared('relay_delete_v1', `DELETE FROM outbox WHERE id = ANY($1::bigint[])`);
// One round trip: the DELETE runs as a data-modifying CTE of the UPDATE (disjoint rows).
const MARK_AND_DELETE_SQL = prepared('relay_mark_delete_v1', `WITH gone AS (DELETE FROM outbox WHERE id = ANY($3::bigint[])) ${MARK}`);
