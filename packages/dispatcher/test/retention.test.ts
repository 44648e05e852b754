/**
 * Retention (NOTIFY_RETENTION_DAYS) against the real PostgreSQL: terminal notifications older
 * than the retention go with their attempts, actions and refused outbox rows; queued ones and
 * younger ones stay; a round is bounded; two processes do not both work (the lease).
 */
import { silentLogger } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { fromPgClient } from '@notify/outbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { createRetentionService } from '../src/index.js';

const DAY = 86_400_000;
let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await tdb?.close();
});

/** Seeds `count` notifications of `state`, last changed `ageDays` before `now`, each with one attempt and (dead ones) a retry action. */
async function seed(prefix: string, count: number, state: 'sent' | 'dead' | 'cancelled' | 'queued', now: Date, ageDays: number) {
  await tdb.pool.query(
    `INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, dead_reason, attempts, max_attempts,
                                next_attempt_at, expires_at, created_at, updated_at, sent_at)
     SELECT $1 || i, 't1', 'email', 'user' || i || '@example.com', 'hello', $2::text,
            CASE WHEN $2 = 'dead' THEN 'permanent' END, 1, 3,
            CASE WHEN $2 = 'queued' THEN at END, at + interval '1 day', at, at, CASE WHEN $2 = 'sent' THEN at END
       FROM generate_series(1, $3::int) AS i, (SELECT $4::timestamptz - make_interval(days => $5::int) AS at) t`,
    [prefix, state, count, now, ageDays],
  );
  await tdb.pool.query(
    `INSERT INTO attempts (notification_id, attempt, started_at, finished_at, outcome)
     SELECT id, 1, created_at, created_at, 'transient' FROM notifications WHERE id LIKE $1 || '%'`,
    [prefix],
  );
}

async function count(sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await tdb.pool.query<{ n: number }>(sql, values);
  return rows[0]!.n;
}

describe('retention', () => {
  it('deletes old terminal notifications with what references them, in bounded rounds, and keeps the rest', async () => {
    const clock = new ManualClock('2026-06-01T00:00:00Z');
    const now = clock.now();
    await seed('old-sent-', 25, 'sent', now, 31);
    await seed('old-dead-', 10, 'dead', now, 40);
    await seed('old-cancelled-', 5, 'cancelled', now, 31);
    await seed('old-queued-', 7, 'queued', now, 31); // not terminal: kept whatever its age
    await seed('young-sent-', 9, 'sent', now, 29);
    await tdb.pool.query(
      `INSERT INTO notification_actions (notification_id, action, from_state, to_state, previous_dead_reason, attempts, max_attempts, occurred_at)
       SELECT id, 'retry', 'dead', 'queued', 'permanent', 1, 3, updated_at FROM notifications WHERE id LIKE 'old-dead-%'`,
    );
    await tdb.pool.query(
      `INSERT INTO outbox_refused (outbox_id, topic, key, value, headers, notification_id, reason, refused_at)
       VALUES (1, 'requests', 'k', '{}', '{}', 'old-sent-1', 'message_too_large', now()),
              (2, 'requests', 'k', '{}', '{}', 'young-sent-1', 'message_too_large', now())`,
    );

    await tdb.pool.query(
      `INSERT INTO callback_deliveries (tenant_id, event_id, notification_id, event_type, payload, state, created_at, updated_at)
       VALUES ('t1', 'e1', 'old-sent-2', 'notification.sent', '{}', 'delivered', now(), now()),
              ('t1', 'e2', 'young-sent-2', 'notification.sent', '{}', 'delivered', now(), now())`,
    );
    const service = createRetentionService(
      { retentionDays: 30, batchSize: 10, maxStatementsPerRound: 2, instanceId: 'a' },
      { db: fromPgClient(tdb.pool), clock, logger: silentLogger },
    );
    // A round is bounded: 2 statements of 10.
    expect(await service.runOnce()).toEqual({ ran: true, deleted: 20 });
    expect(await service.runOnce()).toEqual({ ran: true, deleted: 20 });
    expect(await service.runOnce()).toEqual({ ran: true, deleted: 0 });

    const { rows } = await tdb.pool.query<{ kind: string; n: number }>(
      `SELECT regexp_replace(id, '-[0-9]+$', '') AS kind, count(*)::int AS n FROM notifications GROUP BY 1 ORDER BY 1`,
    );
    expect(rows).toEqual([
      { kind: 'old-queued', n: 7 },
      { kind: 'young-sent', n: 9 },
    ]);
    expect(await count('SELECT count(*)::int AS n FROM attempts')).toBe(16);
    expect(await count('SELECT count(*)::int AS n FROM notification_actions')).toBe(0);
    expect(await count('SELECT count(*)::int AS n FROM outbox_refused')).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM callback_deliveries WHERE notification_id = 'young-sent-2'`)).toBe(1);
    expect(await count('SELECT count(*)::int AS n FROM callback_deliveries')).toBe(1);
    // The state-count gauge's tables followed the deletes (its trigger runs on DELETE too): the 9
    // young sent ones. Seeded rows are counted in notification_state_count_imports until the gauge
    // folds them, and queued rows are counted from notifications when it reads (migration 0220).
    expect(
      await count(
        `SELECT ((SELECT coalesce(sum(count), 0) FROM notification_state_counts) + (SELECT count(*) FROM notification_state_count_imports))::int AS n`,
      ),
    ).toBe(9);

    // A day later the young ones are 30 days old (not older): still kept; one more day and they go.
    clock.advance(DAY);
    expect((await service.runOnce()).deleted).toBe(0);
    clock.advance(DAY);
    expect((await service.runOnce()).deleted).toBe(9);
  });

  it('only the holder of the lease works; another process takes over when the lease expired', async () => {
    const clock = new ManualClock('2026-07-01T00:00:00Z');
    await seed('lease-', 30, 'sent', clock.now(), 60);
    const deps = { db: fromPgClient(tdb.pool), clock, logger: silentLogger };
    const a = createRetentionService(
      { retentionDays: 30, batchSize: 10, maxStatementsPerRound: 1, intervalMs: 60_000, instanceId: 'a' },
      deps,
    );
    const b = createRetentionService(
      { retentionDays: 30, batchSize: 10, maxStatementsPerRound: 1, intervalMs: 60_000, instanceId: 'b' },
      deps,
    );
    expect(await a.runOnce()).toEqual({ ran: true, deleted: 10 });
    expect(await b.runOnce()).toEqual({ ran: false, deleted: 0 });
    // The lease lasts three intervals; a renews it while it runs.
    clock.advance(120_000);
    expect(await a.runOnce()).toEqual({ ran: true, deleted: 10 });
    expect(await b.runOnce()).toEqual({ ran: false, deleted: 0 });
    // a stops renewing (crashed): after three intervals b takes over.
    clock.advance(180_001);
    expect(await b.runOnce()).toEqual({ ran: true, deleted: 10 });
    expect(await a.runOnce()).toEqual({ ran: false, deleted: 0 });
  });

  it('retention 0 keeps everything and the periodic service starts and stops cleanly', async () => {
    const clock = new ManualClock('2026-08-01T00:00:00Z');
    const off = createRetentionService({ retentionDays: 0 }, { db: fromPgClient(tdb.pool), clock, logger: silentLogger });
    expect(await off.runOnce()).toEqual({ ran: false, deleted: 0 });
    off.start();
    expect(await off.stop(1_000)).toBe(true);
    expect(() => createRetentionService({ retentionDays: -1 }, { db: fromPgClient(tdb.pool), clock, logger: silentLogger })).toThrow(
      /retentionDays/,
    );
  });
});
