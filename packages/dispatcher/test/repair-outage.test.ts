/**
 * The repair sweep during a relay or Kafka outage: a notification whose delivery request is still
 * unpublished in the outbox is late, not lost, so the sweep leaves it alone instead of adding a
 * copy on every pass; once its request has left the outbox and it is still overdue, it is repaired.
 */
import { enqueue } from '@notify/outbox';
import { silentLogger, systemClock } from '@notify/runtime';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { createDispatcherEvents, createRepairSweep } from '../src/index.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

describe('repair sweep during an outage', () => {
  it('does not re-publish a notification whose request is still in the outbox', async () => {
    const { notification } = await t.db
      .transaction()
      .execute((trx) => enqueue(trx, { tenant_id: 't1', channel: 'webhook', to: 'https://example.com/h', body: 'b' }));
    await sql`UPDATE notifications SET next_attempt_at = now() - interval '1 hour' WHERE id = ${notification.id}`.execute(t.db);
    const sweep = createRepairSweep(
      { repairAfterMs: 1_000, repairIntervalMs: 3_600_000, repairBatchSize: 100 },
      { db: t.db, clock: systemClock, logger: silentLogger, events: createDispatcherEvents(silentLogger) },
    );
    const requests = async () =>
      (
        await sql<{
          n: number;
        }>`SELECT count(*)::int AS n FROM outbox WHERE topic = 'requests' AND headers->>'notification-id' = ${notification.id}`.execute(
          t.db,
        )
      ).rows[0]!.n;

    expect(await sweep.runOnce()).toBe(0);
    expect(await sweep.runOnce()).toBe(0);
    expect(await requests()).toBe(1);

    // The relay published it, yet the notification is still overdue: now its message counts as lost.
    await sql`UPDATE outbox SET published_at = now() WHERE headers->>'notification-id' = ${notification.id}`.execute(t.db);
    expect(await sweep.runOnce()).toBe(1);
    expect(await requests()).toBe(2);
  });
});
