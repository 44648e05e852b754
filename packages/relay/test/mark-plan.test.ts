import type { PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPgClient, type SqlExecutor } from '@notify/outbox';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { explainPrepared, recordStatements } from '../../../test/support/plans.js';
import { outboxMarkPublished } from '../src/sql/outbox-mark-published.js';
import { relaySlotLock } from '../src/sql/relay-slot-lock.js';

// Marking a round's rows published must find them by primary key, whatever the statistics say.
// The case that once went wrong: statistics taken while the outbox was empty, then a backlog
// arrives (no ANALYZE since). The mark's `published_at IS NULL` matched the predicate of
// outbox_unpublished_txid_idx, and the planner ANDed a bitmap of that whole index (every
// unpublished row) with the ids' bitmap in every round.

const BACKLOG = 10_000;
const ROUND = 500;

let tdb: TestDatabase;
let firstId: number;

beforeAll(async () => {
  tdb = await createTestDatabase();
  await tdb.pool.query('ANALYZE outbox');
  await tdb.pool.query(
    `INSERT INTO outbox (topic, key, value, headers)
     SELECT 'requests', 'tenant/email/' || (g % 2000), '{}', jsonb_build_object('notification-id', 'ntf_' || g)
       FROM generate_series(1, $1) g`,
    [BACKLOG],
  );
  const { rows } = await tdb.pool.query<{ id: number }>('SELECT min(id)::int AS id FROM outbox');
  firstId = rows[0]!.id;
  await tdb.pool.query(`UPDATE relay_leases SET owner = 'r1', expires_at = now() + interval '1 hour'`);
});

afterAll(async () => {
  await tdb?.close();
});

const ids = (from: number, n: number) => Array.from({ length: n }, (_, k) => String(firstId + from + k));

/** Runs `fn` in a relay claim transaction (its settings made by relaySlotLock), rolled back unless `commit`. */
async function inClaimTransaction(fn: (tx: SqlExecutor, client: PoolClient) => Promise<void>, commit = false) {
  const client = await tdb.pool.connect();
  try {
    await client.query('BEGIN');
    const tx = fromPgClient(client);
    await relaySlotLock(tx, { instanceId: 'r1', now: new Date(), idleTimeoutMs: 60_000 });
    await fn(tx, client);
    await client.query(commit ? 'COMMIT' : 'ROLLBACK');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

describe('marking a round published after a backlog arrived under stale statistics', () => {
  it('finds the rows by primary key alone, in each of the three statements', async () => {
    const now = new Date();
    const statements = await recordStatements(async (recorder) => {
      await outboxMarkPublished(recorder, { kept: ids(0, ROUND), deleted: [], now });
      await outboxMarkPublished(recorder, { kept: [], deleted: ids(0, ROUND), now });
      await outboxMarkPublished(recorder, { kept: ids(0, ROUND), deleted: ids(ROUND, ROUND), now });
    });
    expect(statements).toHaveLength(3);
    await inClaimTransaction(async (_tx, client) => {
      for (const [i, statement] of statements.entries()) {
        // The relay's transaction uses generic plans (relaySlotLock).
        const plan = await explainPrepared(client, `mark_${i}`, statement);
        expect(plan).toContain('outbox_pkey');
        expect(plan).not.toMatch(/outbox_unpublished_txid_idx|Seq Scan on outbox/);
      }
    });
  });

  it('deletes every row given, and records the kept ones that no earlier relay marked', async () => {
    // One kept row as a relay of an earlier version left it: marked published in place.
    const [legacy] = ids(2 * ROUND, 1);
    await tdb.pool.query(`UPDATE outbox SET published_at = now() - interval '1 minute' WHERE id = $1`, [legacy]);
    const kept = ids(2 * ROUND, ROUND);
    const deleted = ids(3 * ROUND, ROUND);
    await inClaimTransaction(async (tx) => outboxMarkPublished(tx, { kept, deleted, now: new Date() }), true);
    const left = await tdb.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE id = ANY($1::bigint[])', [
      [...kept, ...deleted],
    ]);
    expect(left.rows[0]!.n).toBe(0);
    const records = await tdb.pool.query<{ outbox_id: string; notification_id: string }>(
      'SELECT outbox_id::text, notification_id FROM outbox_published ORDER BY outbox_id',
    );
    expect(records.rows.map((r) => r.outbox_id)).toEqual(kept.filter((id) => id !== legacy));
    expect(records.rows[0]!.notification_id).toBe(`ntf_${2 * ROUND + 2}`);
    expect(await tdb.pool.query('SELECT 1 FROM outbox')).toHaveProperty('rowCount', BACKLOG - 2 * ROUND);
  });
});
