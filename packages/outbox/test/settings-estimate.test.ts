import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimates, explain } from '../../../test/support/plans.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { PLAIN_BATCH_SQL, PLAIN_ENQUEUE_SQL, plainBatch, plainWrite } from '../src/enqueue-plain.js';
import type { NotificationIntent } from '../src/model/intent.js';

// The plain statements read notify_settings (one row, or none) in their settings CTE. Autovacuum
// never analyzes that table (one row never reaches its threshold), and PostgreSQL estimates a
// never-analyzed table from its size: 1,000 rows here. A batch of n intents was then planned
// as n × 1,000 rows, and from ~170 intents its estimated cost passed jit_above_cost (100,000),
// so PostgreSQL compiled each custom plan with LLVM: 1,000 intents cost ~290 ms per call instead
// of ~55 ms, for the first five calls on every connection (BENCHMARKS.md, session 35).

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const intents = (n: number): NotificationIntent[] =>
  Array.from({ length: n }, (_, i) => ({ tenant_id: 'plan', channel: 'webhook', to: `http://127.0.0.1:9/hook/${i}`, body: 'Shipped.' }));

/** The estimated total cost and rows of a plan's top node. */
function top(plan: string): { cost: number; rows: number } {
  const [first] = estimates(plan);
  if (!first) throw new Error(`no estimate in ${plan}`);
  return first;
}

describe('the settings row, as the planner sees it', () => {
  it('is one row whatever the statistics, so a batch of 1,000 is planned as 1,000 rows, under the JIT threshold', async () => {
    // The case under test: notify_settings never analyzed (a new database, and every database autovacuum looks after).
    const { rows } = await t.pool.query<{ reltuples: number }>("SELECT reltuples FROM pg_class WHERE relname = 'notify_settings'");
    expect(rows[0]!.reltuples).toBe(-1);

    const batch = plainBatch(intents(1000), {})!;
    const batchPlan = top(await explain(t.pool, PLAIN_BATCH_SQL, batch.values));
    expect(batchPlan.rows).toBe(1);
    // ~225 with one settings row; 738,772 when the planner took notify_settings for 1,000 rows,
    // against jit_above_cost's default of 100,000.
    expect(batchPlan.cost).toBeLessThan(1_000);

    const single = top(await explain(t.pool, PLAIN_ENQUEUE_SQL, plainWrite(intents(1)[0]!, {})!.values));
    expect(single.rows).toBe(1);
  });

  it('still applies the row when there is one, and the built-in defaults when there is none', async () => {
    // The LIMIT added for the planner changes nothing the statement returns.
    await t.pool.query('UPDATE notify_settings SET max_attempts = 3, default_ttl_ms = 60000');
    const now = new Date('2026-12-06T12:00:00Z');
    const batch = plainBatch(intents(2), { now })!;
    const { rows } = await t.pool.query<{ max_attempts: number; expires_at: Date }>(PLAIN_BATCH_SQL, [...batch.values]);
    expect(rows).toEqual([{ max_attempts: 3, expires_at: new Date(now.getTime() + 60_000) }]);
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('ALTER TABLE notify_settings DISABLE TRIGGER USER');
      await client.query('DELETE FROM notify_settings');
      const single = await client.query<{ max_attempts: number; expires_at: Date }>(PLAIN_ENQUEUE_SQL, [
        ...plainWrite(intents(1)[0]!, { now })!.values,
      ]);
      expect(single.rows).toEqual([{ max_attempts: 8, expires_at: new Date(now.getTime() + 86_400_000) }]);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
