import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NotificationIntent, enqueue, fromKysely } from '@notify/outbox';
import { createMetrics } from '@notify/cli';
import { notificationCountByState } from '../src/sql/notification-count-by-state.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';

// The notify_notifications gauge reads notification_state_counts (migration 0020), which triggers
// keep in the writing transactions, for every state but queued, and counts queued rows from their
// partial index in the same statement (migration 0220: an enqueue writes no counter). Before 0020,
// the gauge counted the whole table every refresh.

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

async function fullCount(): Promise<Record<string, number>> {
  const { rows } = await sql<{
    state: string;
    channel: string;
    c: number;
  }>`SELECT state, channel, count(*)::int AS c FROM notifications GROUP BY 1, 2`.execute(t.db);
  return Object.fromEntries(rows.map((r) => [`${r.state}/${r.channel}`, r.c]));
}
async function counterTable(): Promise<Record<string, number>> {
  const { rows } = await sql<{
    state: string;
    channel: string;
    c: number;
  }>`SELECT state, channel, sum(count)::int AS c FROM notification_state_counts GROUP BY 1, 2`.execute(t.db);
  return Object.fromEntries(rows.filter((r) => r.c !== 0).map((r) => [`${r.state}/${r.channel}`, r.c]));
}
async function gaugeCounts(): Promise<Record<string, number>> {
  const rows = await notificationCountByState(fromKysely(t.db));
  return Object.fromEntries(rows.filter((r) => r.count !== 0).map((r) => [`${r.state}/${r.channel}`, r.count]));
}

describe('notification state counts', () => {
  it('follow inserts, state changes and deletes, from concurrent sessions', async () => {
    const intents = (channel: 'webhook' | 'sms', n: number): NotificationIntent[] =>
      Array.from({ length: n }, (_, i) => ({
        tenant_id: 'acme',
        channel,
        to: channel === 'webhook' ? 'https://hooks.example.com/in' : '+15550000001',
        body: `b${i}`,
      }));
    const enqueueMany = async (trx: Parameters<typeof fromKysely>[0], list: NotificationIntent[]) => {
      for (const intent of list) await enqueue(fromKysely(trx), intent, { maxAttempts: 3, defaultTtlMs: 60_000 });
    };
    await Promise.all([
      t.db.transaction().execute((trx) => enqueueMany(trx, intents('webhook', 30))),
      t.db.transaction().execute((trx) => enqueueMany(trx, intents('sms', 12))),
      ...Array.from({ length: 5 }, () => t.db.transaction().execute((trx) => enqueueMany(trx, intents('webhook', 1)))),
    ]);
    await sql`UPDATE notifications SET state = 'sent', sent_at = now(), next_attempt_at = NULL WHERE id IN (SELECT id FROM notifications WHERE channel = 'webhook' ORDER BY id LIMIT 10)`.execute(
      t.db,
    );
    await sql`UPDATE notifications SET state = 'cancelled', next_attempt_at = NULL WHERE id IN (SELECT id FROM notifications WHERE channel = 'sms' ORDER BY id LIMIT 2)`.execute(
      t.db,
    );
    await sql`UPDATE notifications SET updated_at = now()`.execute(t.db); // no state change: no counter write
    await sql`DELETE FROM notification_actions`.execute(t.db);
    await sql`DELETE FROM attempts`.execute(t.db);
    await sql`DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE state = 'sent' ORDER BY id LIMIT 3)`.execute(t.db);
    expect(await gaugeCounts()).toEqual(await fullCount());
    expect(await gaugeCounts()).toEqual({ 'queued/webhook': 25, 'sent/webhook': 7, 'queued/sms': 10, 'cancelled/sms': 2 });
    // Queued rows are counted from notifications when the gauge reads, never in the counter table.
    expect(await counterTable()).toEqual({ 'sent/webhook': 7, 'cancelled/sms': 2 });

    const text = await createMetrics({ db: t.db, processMetrics: false }).render();
    expect(text).toContain('notify_notifications{state="queued",channel="webhook"} 25');
    expect(text).toContain('notify_notifications{state="cancelled",channel="sms"} 2');
    expect(text).toContain('notify_notifications{state="dead",channel="email"} 0');
  });

  it('an enqueue writes no counter row; a row inserted in another state than queued is counted', async () => {
    const before = await sql<{ n: number }>`SELECT count(*)::int AS n FROM notification_state_counts`.execute(t.db);
    const xminBefore = await sql<{
      x: string;
    }>`SELECT string_agg(xmin::text, ',' ORDER BY state, channel, shard) AS x FROM notification_state_counts`.execute(t.db);
    await t.db
      .transaction()
      .execute((trx) =>
        enqueue(
          fromKysely(trx),
          { tenant_id: 'acme', channel: 'email', to: 'ada@example.com', body: 'x' },
          { maxAttempts: 3, defaultTtlMs: 60_000 },
        ),
      );
    const after = await sql<{ n: number }>`SELECT count(*)::int AS n FROM notification_state_counts`.execute(t.db);
    const xminAfter = await sql<{
      x: string;
    }>`SELECT string_agg(xmin::text, ',' ORDER BY state, channel, shard) AS x FROM notification_state_counts`.execute(t.db);
    expect(after.rows[0]?.n).toBe(before.rows[0]?.n);
    expect(xminAfter.rows[0]?.x).toBe(xminBefore.rows[0]?.x); // no counter row was written either
    expect((await gaugeCounts())['queued/email']).toBe(1);

    // Fixtures and imports insert rows as they are: one statement, queued and terminal rows mixed.
    await sql`INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, dead_reason, attempts, max_attempts,
                                         next_attempt_at, expires_at, created_at, updated_at, sent_at)
              SELECT 'imported-' || i, 'acme', 'email', 'ada@example.com', 'x', st,
                     CASE WHEN st = 'dead' THEN 'permanent' END, 1, 3, CASE WHEN st = 'queued' THEN now() END,
                     now() + interval '1 day', now(), now(), CASE WHEN st = 'sent' THEN now() END
                FROM generate_series(1, 9) AS i,
                     LATERAL (SELECT (ARRAY['queued', 'sent', 'dead'])[1 + i % 3] AS st) s`.execute(t.db);
    expect(await gaugeCounts()).toEqual(await fullCount());
    expect(await gaugeCounts()).toMatchObject({ 'queued/email': 4, 'sent/email': 3, 'dead/email': 3 });
    const text = await createMetrics({ db: t.db, processMetrics: false }).render();
    expect(text).toContain('notify_notifications{state="queued",channel="email"} 4');
    expect(text).toContain('notify_notifications{state="dead",channel="email"} 3');
    // Each read folded the imported rows into the counter table; the answer stayed the same.
    const imports = await sql<{ n: number }>`SELECT count(*)::int AS n FROM notification_state_count_imports`.execute(t.db);
    expect(imports.rows[0]?.n).toBe(0);
    expect(await counterTable()).toMatchObject({ 'sent/email': 3, 'dead/email': 3 });
    expect(await gaugeCounts()).toEqual(await fullCount());
  });
});
