import pg, { type PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPgClient, type SqlExecutor } from '@notify/outbox';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { explain, preparedPlanCounts, recordStatements } from '../../../test/support/plans.js';
import { outboxClaimBatch } from '../src/sql/outbox-claim-batch.js';
import { relaySlotLock } from '../src/sql/relay-slot-lock.js';

// The claim must read its batch in index order and stop at the limit. With a backlog of 10,000
// and batches of 1,000 the planner used to read the whole table and sort every unpublished row
// for the first claim (250–500 ms instead of 13–22 ms); relaySlotLock turns sorts off for the
// claim transaction (see its comment).

let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase();
  await tdb.pool.query(
    // Older than the claim's order wait (500 ms), so they are claimable even while a write
    // transaction elsewhere on the server holds xmin back (another test file, a bench): then the
    // planner also sees every row pass `txid >= xmin`, the case that once chose a Seq Scan.
    `INSERT INTO outbox (topic, key, value, headers, created_at)
     SELECT 'requests', 'tenant/email/' || (g % 2000), '{}', '{}', now() - interval '1 minute' FROM generate_series(1, 10000) g`,
  );
  await tdb.pool.query('VACUUM ANALYZE outbox');
  await tdb.pool.query(`UPDATE relay_leases SET owner = 'r1', expires_at = now() + interval '1 hour'`);
});

afterAll(async () => {
  await tdb?.close();
});

describe('the claim of a 10,000-row backlog in batches of 1,000', () => {
  it('walks outbox_unpublished_txid_idx in order, without a sort', async () => {
    const client = await tdb.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      const tx = fromPgClient(client);
      const now = new Date();
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM relay_leases');
      const slotCount = rows[0]!.n;
      const slots = await relaySlotLock(tx, { instanceId: 'r1', now, idleTimeoutMs: 60_000 });
      expect(slots).toHaveLength(slotCount);
      // The claim's own statement (with its held-back check), explained instead of run.
      const statements = await recordStatements((recorder) =>
        outboxClaimBatch(recorder, { instanceId: 'r1', now, slots, slotCount, limit: 1_000, orderWaitMs: 500 }),
      );
      expect(statements).toHaveLength(1);
      const plan = await explain(client, statements[0]!.text, statements[0]!.values);
      expect(plan).toContain('Index Scan using outbox_unpublished_txid_idx');
      expect(plan).not.toMatch(/Sort|Seq Scan on outbox/);
      const claimed = await outboxClaimBatch(tx, { instanceId: 'r1', now, slots, slotCount, limit: 1_000, orderWaitMs: 500 });
      expect(claimed.rows).toHaveLength(1_000);
      expect(claimed.heldBack).toBe(false);
      // That claim ran as a named prepared statement, and relaySlotLock made the transaction use
      // generic plans: the generic plan (its filters name the parameters) is the same walk.
      const genericPlan = await explain(client, `EXECUTE relay_claim_v1('r1', now(), '{${slots.join(',')}}', ${slotCount}, 1000, 500)`);
      expect(genericPlan).toContain('$6');
      expect(genericPlan).toContain('Index Scan using outbox_unpublished_txid_idx');
      expect(genericPlan).not.toMatch(/Sort|Seq Scan on outbox/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});

describe('relaySlotLock', () => {
  const inTransaction = async <T>(fn: (tx: SqlExecutor, client: PoolClient) => Promise<T>): Promise<T> => {
    const client = await tdb.pool.connect();
    try {
      await client.query('BEGIN');
      return await fn(fromPgClient(client), client);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  };

  it('locks the leased slots, answers them in order and makes the claim transaction’s settings', async () => {
    await inTransaction(async (tx, client) => {
      const slots = await relaySlotLock(tx, { instanceId: 'r1', now: new Date(), idleTimeoutMs: 45_000 });
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM relay_leases');
      expect(slots).toEqual(Array.from({ length: rows[0]!.n }, (_, i) => i));
      const held = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND pid = pg_backend_pid()",
      );
      expect(held.rows[0]!.n).toBe(slots.length);
      const settings = await client.query<Record<string, string>>(
        `SELECT current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('enable_sort') AS sort,
                current_setting('enable_seqscan') AS scan, current_setting('synchronous_commit') AS durability,
                current_setting('plan_cache_mode') AS plans, current_setting('jit') AS jit`,
      );
      expect(settings.rows[0]).toEqual({
        idle: '45s',
        sort: 'off',
        scan: 'off',
        durability: 'off',
        plans: 'force_generic_plan',
        jit: 'off',
      });
    });
  });

  it('settles on its generic plan: a relay round does not plan it again', async () => {
    // A connection of its own, so that no other test's executions count.
    const client = new pg.Client({ connectionString: tdb.url });
    await client.connect();
    try {
      const tx = fromPgClient(client);
      for (let round = 0; round < 12; round++) {
        await client.query('BEGIN');
        await relaySlotLock(tx, { instanceId: 'r1', now: new Date(), idleTimeoutMs: 60_000 });
        await client.query('ROLLBACK');
      }
      // PostgreSQL tries five custom plans before it weighs the generic one.
      expect(await preparedPlanCounts(client, 'relay\\_slot\\_lock%')).toEqual([{ generic: 7, custom: 5 }]);
    } finally {
      await client.end();
    }
  });

  it('locks only the slots asked for, and none for an instance that leases none', async () => {
    await inTransaction(async (tx) => {
      expect(await relaySlotLock(tx, { instanceId: 'r1', now: new Date(), idleTimeoutMs: 60_000, only: [40, 3, 17] })).toEqual([3, 17, 40]);
      expect(await relaySlotLock(tx, { instanceId: 'nobody', now: new Date(), idleTimeoutMs: 60_000 })).toEqual([]);
    });
  });
});
