import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '@notify/migrations';
import { enqueue, fromPgClient, outboxInsert } from '@notify/outbox';
import { silentLogger, systemClock } from '@notify/runtime';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { estimates } from '../../../test/support/plans.js';
import { createBatchSource } from '../src/batch-source.js';
import { createRelayEvents } from '../src/events.js';
import { resolveRelayConfig } from '../src/config.js';

// The claim transaction turns sequential scans and sorts off (relaySlotLock), which PostgreSQL
// does by costing them at 10^10. The set-aside of a refused row writes in that transaction, and
// its writes fire triggers whose statements can only scan or sort. PL/pgSQL keeps their plans for
// the session, so planned there they carried that cost into every later transaction on the
// pooled connection, and PostgreSQL, reading the cost, compiled them with LLVM at each execution:
// after one refused row, a transaction writing 50 status events on that connection took
// 800–980 ms instead of 2–4. auto_explain, at NOTICE level, shows this test every plan the
// connection runs, the triggers' statements included.

const DISABLED_COST = 1e9; // a disabled method adds 1e10 (disable_cost)

let tdb: TestDatabase;
let pool: pg.Pool;
let db: Kysely<Database>;
const plans: string[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  await tdb.pool.query(`UPDATE relay_leases SET owner = 'r1', expires_at = now() + interval '1 hour'`);
  // One connection, so the set-aside and what follows it share a session (and its cached plans).
  pool = new pg.Pool({ connectionString: tdb.url, max: 1 });
  pool.on('error', () => {}); // an idle connection ended by the database's drop at the end
  pool.on('connect', (client) => {
    client.on('notice', (notice) => {
      if (notice.message?.includes('plan:')) plans.push(notice.message);
    });
  });
  await pool.query("LOAD 'auto_explain'");
  await pool.query(
    `SELECT set_config('auto_explain.log_min_duration', '0', false), set_config('auto_explain.log_nested_statements', 'on', false),
            set_config('auto_explain.log_level', 'notice', false)`,
  );
  db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
});

afterAll(async () => {
  await db?.destroy();
  await tdb?.close();
});

/** The highest total cost in a logged plan. */
const maxCost = (plan: string) => Math.max(...estimates(plan).map((e) => e.cost));

describe('the set-aside of a refused row', () => {
  it('plans its writes with the session’s settings, and leaves no plan costed as disabled behind it', async () => {
    const client = await tdb.pool.connect();
    try {
      await client.query('BEGIN');
      await enqueue(client, { tenant_id: 'acme', channel: 'webhook', to: 'https://hooks.example.com/a', body: 'hi' });
      await client.query('COMMIT');
    } finally {
      client.release();
    }

    const source = createBatchSource(
      resolveRelayConfig({ instanceId: 'r1', topicPrefix: 'set-aside', batchSize: 50, pollIntervalMs: 100, retentionMs: 0 }),
      {
        db,
        clock: systemClock,
        events: createRelayEvents(silentLogger),
        slotCount: () => 64,
      },
    );
    const batch = await source.claim();
    expect(batch.rows).toHaveLength(1);
    await batch.commit(0, [{ row: batch.rows[0]!, reason: 'message_too_large: 2000000 bytes > 1000000' }]);
    const { rows } = await pool.query<{ state: string }>('SELECT state FROM notifications');
    expect(rows).toEqual([{ state: 'dead' }]);

    // Later, on the same connection, outside any claim: status events as a group commit writes them.
    const writer = await pool.connect();
    try {
      await writer.query('BEGIN');
      await outboxInsert(fromPgClient(writer), {
        messages: [{ topic: 'events', key: 'acme/webhook/k', value: '{}', headers: { 'message-type': 'notification.sent' } }],
      });
      await writer.query('COMMIT');
    } finally {
      writer.release();
    }

    // The triggers' statements were logged: the event policy's read of notify_settings, twice (the
    // dead event of the set-aside, then the later one), and the state counts' upsert.
    expect(plans.filter((p) => p.includes('FROM notify_settings')).length).toBeGreaterThanOrEqual(2);
    expect(plans.some((p) => p.includes('INSERT INTO notification_state_counts'))).toBe(true);
    const disabled = plans.filter((p) => maxCost(p) >= DISABLED_COST || p.includes('JIT:'));
    expect(disabled).toEqual([]);
  });
});
