import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NotificationIntent, enqueue, fromKysely } from '@notify/outbox';
import { createMetrics } from '@notify/cli';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';

// The notify_notifications gauge reads notification_state_counts (migration 0020), which triggers
// keep in the writing transactions. Before it, the gauge counted the whole table every refresh.

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
    expect(await counterTable()).toEqual(await fullCount());
    expect(await counterTable()).toEqual({ 'queued/webhook': 25, 'sent/webhook': 7, 'queued/sms': 10, 'cancelled/sms': 2 });

    const text = await createMetrics({ db: t.db, processMetrics: false }).render();
    expect(text).toContain('notify_notifications{state="queued",channel="webhook"} 25');
    expect(text).toContain('notify_notifications{state="cancelled",channel="sms"} 2');
    expect(text).toContain('notify_notifications{state="dead",channel="email"} 0');
  });

  it('the gauge does not count the notifications table', async () => {
    // Rows written with the counting triggers disabled are invisible to the gauge: it reads the counter table only.
    await sql`ALTER TABLE notifications DISABLE TRIGGER notification_state_counts_insert`.execute(t.db);
    try {
      await t.db
        .transaction()
        .execute((trx) =>
          enqueue(
            fromKysely(trx),
            { tenant_id: 'acme', channel: 'webhook', to: 'https://hooks.example.com/x', body: 'x' },
            { maxAttempts: 3, defaultTtlMs: 60_000 },
          ),
        );
    } finally {
      await sql`ALTER TABLE notifications ENABLE TRIGGER notification_state_counts_insert`.execute(t.db);
    }
    const text = await createMetrics({ db: t.db, processMetrics: false }).render();
    expect(text).toContain('notify_notifications{state="queued",channel="webhook"} 25');
  });
});
